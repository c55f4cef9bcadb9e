// Element-wise binary primitives. Op builders promote and broadcast, so kernels see equal shapes.
#include "backend/cpu/loops.h"
#include "kiln/ops/elementwise.h"
#include "kiln/ops/shape.h"
#include "primitives/common.h"

namespace kiln {

namespace {

std::vector<ArraySpec> same_infer(const State&, const std::vector<ArraySpec>& in) { return {in[0]}; }

void add_cpu(const Node&, const std::vector<array>& in, std::vector<array>& out) {
  cpu::dispatch_all(out[0].dtype(), [&](auto tag) {
    using T = decltype(tag);
    using A = cpu::acc_t<T>;
    if constexpr (std::is_same_v<T, bool>) {
      cpu::binary_loop<T, T, T>(in[0], in[1], out[0], [](T x, T y) { return x || y; });
    } else {
      cpu::binary_loop<T, T, T>(in[0], in[1], out[0],
                                [](T x, T y) { return T(static_cast<A>(x) + static_cast<A>(y)); });
    }
  });
}

// Promote to one dtype and broadcast to one shape, as MLX's binary ops do.
std::pair<array, array> prepare(const array& a, const array& b, StreamOrDevice s) {
  Dtype t = promote_types(a.dtype(), b.dtype());
  auto bs = broadcast_arrays({astype(a, t, s), astype(b, t, s)}, s);
  return {bs[0], bs[1]};
}

}  // namespace

namespace primitives {
void register_binary() {
  registry::define({.name = "Add",
                    .min_inputs = 2,
                    .max_inputs = 2,
                    .flags = kBinary | kElementwise,
                    .infer = same_infer,
                    .cpu = add_cpu});
}
}  // namespace primitives

array add(const array& a, const array& b, StreamOrDevice s) {
  auto [x, y] = prepare(a, b, s);
  static const PrimitiveDef& d = detail::def("Add");
  return make_array(d, {}, {x, y}, {{x.shape(), x.dtype()}}, to_stream(s));
}

array operator+(const array& a, const array& b) { return add(a, b); }

}  // namespace kiln
