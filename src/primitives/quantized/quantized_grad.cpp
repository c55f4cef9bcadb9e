// Derivative rules of the quantized rows (autodiff_rules.h). QuantizedMatmul is linear in x: its vjp is
// the product with the transposed quantized matrix (as MLX); the quantized matrix itself has no
// gradient (MLX's error). Quantize is not differentiable.
#include "kiln/ops.h"
#include "primitives/autodiff_rules.h"

namespace kiln {

namespace {

using detail::autodiff::Application;
using detail::autodiff::RuleTable;
using detail::autodiff::tangent_of;
using Arrays = std::vector<array>;
using Ints = std::vector<int>;

// QuantizedMatmul(x, w, scales[, biases]); state (group_size, bits, mode, transpose).
array qmm_with(const Application& app, const array& x, bool flip) {
  const auto& st = app.state();
  std::optional<array> biases;
  if (app.inputs.size() > 3) biases = app.inputs[3];
  const std::string mode = quantization_mode_to_string(static_cast<QuantizationMode>(st.i(2)));
  return quantized_matmul(x, app.inputs[1], app.inputs[2], biases, flip ? !st.b(3) : st.b(3), st.i(0), st.i(1), mode,
                          app.s());
}

void only_x(const Ints& argnums, const char* mode) {
  for (int i : argnums) {
    if (i == 1) throw std::invalid_argument(std::string("[QuantizedMatmul::") + mode + "] no gradient wrt the quantized weights.");
    if (i > 1) {
      throw std::invalid_argument(std::string("[") + mode + "] Not implemented for QuantizedMatmul with respect to "
                                  "scales and biases in kiln yet.");
    }
  }
}

Arrays qmm_vjp(const Application& app, const Arrays& cot, const Ints& argnums) {
  only_x(argnums, "vjp");
  return {qmm_with(app, cot[0], true)};
}
Arrays qmm_jvp(const Application& app, const Arrays& tan, const Ints& argnums) {
  only_x(argnums, "jvp");
  return {qmm_with(app, tan[0], false)};
}

}  // namespace

namespace primitives {
void register_quantized_grad(RuleTable& t) {
  t.none("Quantize", "integer codes; MLX 0.30.1's Quantize has no vjp or jvp");
  t.add("QuantizedMatmul", qmm_vjp, qmm_jvp);
}
}  // namespace primitives

}  // namespace kiln
