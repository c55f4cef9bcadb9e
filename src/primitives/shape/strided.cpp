// AsStrided (a view with arbitrary element strides over the flattened input, bounds-checked) and
// Contiguous (a row-contiguous copy unless the input already is one; not serializable by MLX 0.30.1).
// CPU kernels: backend/cpu/kernels/shape/strided.cpp.
#include "kiln/ops/shape.h"
#include "primitives/common.h"
#include "primitives/shape/shape_internal.h"

namespace kiln {

namespace {

using detail::shape_str;

[[noreturn]] void fail(const std::string& msg) { throw std::invalid_argument(msg); }

// ---- AsStrided ----

// Every element the view can reach must lie inside the (flattened) input.
void check_strided_bounds(const Shape& shape, const Strides& strides, uint64_t offset, size_t in_size,
                          const char* api) {
  if (strides.size() != shape.size()) {
    fail(std::string("[") + api + "] Expected " + std::to_string(shape.size()) + " strides for shape " +
         shape_str(shape) + " but found " + std::to_string(strides.size()) + ".");
  }
  if (shape_size(shape, api) == 0) return;
  __int128 lo = static_cast<__int128>(offset), hi = lo;
  for (size_t i = 0; i < shape.size(); ++i) {
    __int128 span = static_cast<__int128>(shape[i] - 1) * strides[i];
    (span < 0 ? lo : hi) += span;
  }
  if (lo < 0 || hi >= static_cast<__int128>(in_size)) {
    fail(std::string("[") + api + "] The view of shape " + shape_str(shape) +
         " reaches outside the input array of size " + std::to_string(in_size) + ".");
  }
}

std::vector<ArraySpec> as_strided_infer(const State& st, const std::vector<ArraySpec>& in) {
  const Shape& shape = st.get<std::vector<int32_t>>(0);
  check_strided_bounds(shape, st.get<std::vector<int64_t>>(1), st.get<uint64_t>(2),
                       shape_size(in[0].shape, "as_strided"), "as_strided");
  return {{shape, in[0].dtype}};
}

// ---- Contiguous ----

std::vector<ArraySpec> same_infer(const State&, const std::vector<ArraySpec>& in) { return {in[0]}; }

const PrimitiveDef& def_of(const char* name) { return detail::def(name); }

}  // namespace

namespace primitives {
void register_strided() {
  registry::define(detail::row("AsStrided", 1,
                               {{"shape", FieldType::ShapeF}, {"strides", FieldType::StridesF},
                                {"offset", FieldType::Size}},
                               as_strided_infer, {.shapeless = false}));
  // kNoOp: an export drops it (it changes the layout, never the values), so kiln exports contiguous()
  // where MLX 0.30.1 refuses it, and the file stays readable by MLX.
  registry::define(detail::row("Contiguous", 1, {{"allow_col_major", FieldType::Bool}}, same_infer,
                               {.flags = kNotSerializable | kNoOp}));
}
}  // namespace primitives

array as_strided(array a, Shape shape, Strides strides, size_t offset, StreamOrDevice s) {
  array flat = flatten(a, s);
  check_strided_bounds(shape, strides, offset, flat.size(), "as_strided");
  static const PrimitiveDef& d = def_of("AsStrided");
  Shape out = shape;
  return make_array(d, State{std::vector<int32_t>(std::move(shape)), std::vector<int64_t>(std::move(strides)),
                             uint64_t(offset)},
                    {flat}, {{out, a.dtype()}}, to_stream(s));
}

array contiguous(const array& a, bool allow_col_major, StreamOrDevice s) {
  static const PrimitiveDef& d = def_of("Contiguous");
  return make_array(d, State{allow_col_major}, {a}, {{a.shape(), a.dtype()}}, to_stream(s));
}

}  // namespace kiln
