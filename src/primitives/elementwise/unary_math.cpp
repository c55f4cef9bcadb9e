// Rows of the element-wise unary math primitives (Exp, Log, Sin, Sqrt, Sigmoid, Erf, ...). MLX evaluates
// them on inexact dtypes only; the op builders cast integers to float32 first. The kernels (MLX's CPU
// values) are in src/backend/cpu/kernels/elementwise/unary_math.cpp.
#include <stdexcept>
#include <string>

#include "primitives/elementwise/rows.h"

namespace kiln {

namespace ew {

std::vector<ArraySpec> inexact_unary_infer(const State&, const std::vector<ArraySpec>& in) {
  check_dtype(is_inexact(in[0].dtype), "unary_fp", "Expected a floating point or complex input", in[0].dtype);
  return {in[0]};
}

std::vector<ArraySpec> float_unary_infer(const State&, const std::vector<ArraySpec>& in) {
  check_dtype(is_floating_point(in[0].dtype), "unary_real", "Expected a real floating point input", in[0].dtype);
  return {in[0]};
}

}  // namespace ew

namespace {

using namespace ew;

std::vector<ArraySpec> log_infer(const State& st, const std::vector<ArraySpec>& in) {
  int base = st.i(0);
  if (base < 0 || base > 2) {
    throw std::invalid_argument("[Log] Invalid base code " + std::to_string(base) + " (expected 0, 1 or 2).");
  }
  return inexact_unary_infer(st, in);
}

}  // namespace

namespace ew {

void register_unary_math() {
  const unsigned U = kUnary | kElementwise;
  auto fp = [&](const char* name, unsigned extra = 0) {
    registry::define(detail::row(name, 1, {}, inexact_unary_infer, {.flags = U | extra}));
  };
  fp("Exp");
  fp("Expm1", kNoCSE);
  fp("Log1p", kNoCSE);
  fp("Sin");
  fp("Cos");
  fp("Tan");
  fp("Sinh");
  fp("Cosh");
  fp("Tanh");
  fp("ArcSin");
  fp("ArcCos");
  fp("ArcTan");
  fp("ArcSinh");
  fp("ArcCosh");
  fp("ArcTanh");
  fp("Sigmoid");
  for (const char* name : {"Erf", "ErfInv"}) {
    registry::define(detail::row(name, 1, {}, float_unary_infer, {.flags = U}));
  }
  registry::define(detail::row("Log", 1, {{"base", FieldType::Int}}, log_infer,
                               {.flags = U, .display = [](const State& s) -> std::string {
                                  int b = s.i(0);
                                  return b == 0 ? "Log2" : (b == 1 ? "Log10" : "Log");
                                }}));
  registry::define(detail::row("Sqrt", 1, {{"recip", FieldType::Bool}}, inexact_unary_infer,
                               {.flags = U,
                                .display = [](const State& s) -> std::string { return s.b(0) ? "Rsqrt" : "Sqrt"; }}));
}

}  // namespace ew

}  // namespace kiln
