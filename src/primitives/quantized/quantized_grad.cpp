// Derivative rules of the quantized rows (autodiff_rules.h). QuantizedMatmul is linear in x: its vjp is
// the product with the transposed quantized matrix (as MLX); the quantized matrix itself has no
// gradient (MLX's error). GatherQMM likewise, with respect to x. Quantize is not differentiable.
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

// GatherQMM(x, w, scales[, biases], lhs, rhs): out[i] = X[lhs[i]] @ W[rhs[i]] (transposed or not), X the
// matrices of x's flattened batch. Linear in x: the cotangent goes through the other product and is
// added back at lhs.
array gather_qmm_node(const Application& app, const array& x, bool transpose, const array& lhs, const array& rhs) {
  State st = app.state();
  st.values[3] = transpose;
  st.values[4] = false;  // sortedness is a hint; the new indices are not promised sorted
  st.values[5] = false;
  const size_t nq = app.inputs.size() - 2;  // w, scales[, biases] end before the indices
  Arrays in{x};
  for (size_t i = 1; i < nq; ++i) in.push_back(app.inputs[i]);
  in.push_back(lhs);
  in.push_back(rhs);
  return make_array(*app.node.def, std::move(st), std::move(in), {}, app.node.stream);
}

void gather_qmm_only_x(const Ints& argnums, const char* mode) {
  for (int i : argnums) {
    if (i != 0) {
      throw std::invalid_argument(std::string("[GatherQMM::") + mode +
                                  "] Only the gradient with respect to x is supported (the quantized weights, "
                                  "scales and indices have none).");
    }
  }
}

Arrays gather_qmm_vjp(const Application& app, const Arrays& cot, const Ints& argnums) {
  gather_qmm_only_x(argnums, "vjp");
  auto s = app.s();
  const array& x = app.inputs[0];
  const size_t nin = app.inputs.size();
  array lhs = flatten(app.inputs[nin - 2], s), rhs = flatten(app.inputs[nin - 1], s);
  const int n = static_cast<int>(lhs.size());
  const int M = x.shape(-2), K = x.shape(-1);
  array g = reshape(cot[0], {n, cot[0].shape(-2), cot[0].shape(-1)}, s);
  array each = arange(0, n, uint32, s);
  array y = gather_qmm_node(app, g, !app.state().b(3), each, rhs);  // (n, M, K)
  int batches = static_cast<int>(x.size() / (static_cast<size_t>(M) * K));
  array dx = scatter_add(zeros({batches, M, K}, x.dtype(), s), lhs, reshape(y, {n, 1, M, K}, s), 0, s);
  return {reshape(dx, x.shape(), s)};
}
Arrays gather_qmm_jvp(const Application& app, const Arrays& tan, const Ints& argnums) {
  gather_qmm_only_x(argnums, "jvp");
  const size_t nin = app.inputs.size();
  return {gather_qmm_node(app, tan[0], app.state().b(3), app.inputs[nin - 2], app.inputs[nin - 1])};
}

}  // namespace

namespace primitives {
void register_quantized_grad(RuleTable& t) {
  t.none("Quantize", "integer codes; MLX 0.30.1's Quantize has no vjp or jvp");
  t.add("QuantizedMatmul", qmm_vjp, qmm_jvp);
  t.add("GatherQMM", gather_qmm_vjp, gather_qmm_jvp);
}
}  // namespace primitives

}  // namespace kiln
