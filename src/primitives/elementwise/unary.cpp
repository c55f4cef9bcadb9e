// Rows of the element-wise unary primitives without transcendental math: casts, views, sign and rounding
// ops, logical/bitwise negation and complex parts, and the element-wise family's register_elementwise.
// The math ones (Exp, Sin, ...) are in unary_math.cpp, the op builders in unary_ops.cpp, the kernels
// in src/backend/cpu/kernels/elementwise/unary.cpp.
#include <stdexcept>
#include <string>

#include "primitives/elementwise/rows.h"
#include "primitives/families.h"

namespace kiln {

namespace ew {

std::vector<ArraySpec> same_infer(const State&, const std::vector<ArraySpec>& in) { return {in[0]}; }

std::vector<ArraySpec> bool_unary_infer(const State&, const std::vector<ArraySpec>& in) {
  return {{in[0].shape, bool_}};
}

void check_dtype(bool ok, const char* name, const char* what, Dtype found) {
  if (!ok) {
    throw std::invalid_argument(std::string("[") + name + "] " + what + " but found " + dtype_name(found) + ".");
  }
}

}  // namespace ew

namespace {

using namespace ew;

// ---- infer rules ----

std::vector<ArraySpec> astype_infer(const State& st, const std::vector<ArraySpec>& in) {
  return {{in[0].shape, st.get<Dtype>(0)}};
}

// Shared rules take the op's name as a template argument, so that each reports its own "[name]".
template <const char* Api>
std::vector<ArraySpec> real_imag_infer(const State&, const std::vector<ArraySpec>& in) {
  check_dtype(in[0].dtype == complex64, Api, "Expected a complex64 input", in[0].dtype);
  return {{in[0].shape, float32}};
}

template <const char* Api>
std::vector<ArraySpec> no_complex_infer(const State&, const std::vector<ArraySpec>& in) {
  if (in[0].dtype == complex64) throw std::invalid_argument(std::string("[") + Api + "] Not supported for complex64.");
  return {in[0]};
}
constexpr char kReal[] = "real", kImag[] = "imag", kFloor[] = "floor";

std::vector<ArraySpec> invert_infer(const State&, const std::vector<ArraySpec>& in) {
  check_dtype(is_integral(in[0].dtype), "bitwise_invert", "Bitwise inverse only allowed on integer types",
              in[0].dtype);
  return {in[0]};
}

// The View output: the last dimension scaled by the itemsize ratio (MLX's rules and messages).
Shape view_shape(const Shape& in, Dtype from, Dtype to) {
  Shape out = in;
  const int ib = size_of(from), ob = size_of(to);
  if (ib == ob) return out;
  if (in.empty()) {
    throw std::invalid_argument("[view] Changing the type of a scalar is only allowed for types with the same size.");
  }
  if (ib < ob) {
    if (out.back() % (ob / ib) != 0) {
      throw std::invalid_argument(
          "[view] When viewing as a larger dtype, the size in bytes of the last axis must be a multiple of the "
          "requested type size.");
    }
    out.back() /= (ob / ib);
  } else {
    out.back() *= (ib / ob);
  }
  return out;
}

std::vector<ArraySpec> view_infer(const State& st, const std::vector<ArraySpec>& in) {
  Dtype to = st.get<Dtype>(0);
  return {{view_shape(in[0].shape, in[0].dtype, to), to}};
}

}  // namespace

namespace primitives {
void register_elementwise() {
  const unsigned U = kUnary | kElementwise;
  registry::define(detail::row("AsType", 1, {{"dtype", FieldType::DtypeF}}, astype_infer, {.flags = U}));
  registry::define(detail::row("View", 1, {{"dtype", FieldType::DtypeF}},
                               view_infer,
                               {.flags = kUnary,
                                .display = [](const State& s) { return "View " + dtype_name(s.get<Dtype>(0)); },
                                .shapeless = false}));
  auto simple = [&](const char* name, InferFn infer, unsigned extra = 0) {
    registry::define(detail::row(name, 1, {}, infer, {.flags = U | extra}));
  };
  simple("Copy", same_infer, kNoOp);
  simple("StopGradient", same_infer, kNoOp);
  simple("Abs", same_infer);
  simple("Negative", same_infer);
  simple("Sign", same_infer);
  simple("Square", same_infer);
  simple("Floor", no_complex_infer<kFloor>);
  simple("Ceil", no_complex_infer<kFloor>);  // MLX's message for ceil says [floor] too
  simple("Round", same_infer);
  simple("LogicalNot", bool_unary_infer);
  // MLX 0.30.1 has no serializer entry for BitwiseInvert (spec 3.6).
  simple("BitwiseInvert", invert_infer, kNotSerializable);
  simple("Conjugate", same_infer);
  simple("Real", real_imag_infer<kReal>);
  simple("Imag", real_imag_infer<kImag>);
  ew::register_unary_math();
  ew::register_binary();
}
}  // namespace primitives

}  // namespace kiln
