// Derivative rules of the quantized rows (autodiff_rules.h). QuantizedMatmul is linear in x: its vjp is
// the product with the transposed quantized matrix (as MLX); the quantized matrix itself has no
// gradient (MLX's error). GatherQMM likewise, with respect to x. In the affine mode the dequantized
// matrix is scales * q + biases per group, so both are differentiable (as MLX's vjp): the matrix's
// cotangent summed over each group (biases) or weighted by the codes q (scales); the jvp (kiln's own,
// MLX has none) is the product with dequantize(w, t_scales, t_biases). The other modes' scales are
// integer codes (MLX's error). Quantize is not differentiable.
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

// Refuses the quantized weights (argnum 1) and, outside the affine mode, the scales; `tag` is MLX's
// "QuantizedMatmul::vjp" and the like.
void check_argnums(const Application& app, const Ints& argnums, const std::string& tag) {
  const auto mode = static_cast<QuantizationMode>(app.state().i(2));
  for (int i : argnums) {
    if (i == 1) throw std::invalid_argument("[" + tag + "] no gradient wrt the quantized weights.");
    if (i > 1 && mode != QuantizationMode::Affine) {
      throw std::invalid_argument("[" + tag + "] no gradient wrt scales with " + quantization_mode_to_string(mode) +
                                  " quantization.");
    }
  }
}

// The codes q of w (the dequantized matrix with scales 1 and biases 0), split into groups on the last
// axis: (..., rows, cols / group, group).
array grouped_codes(const Application& app, StreamOrDevice s) {
  const auto& st = app.state();
  const array &w = app.inputs[1], &scales = app.inputs[2], &biases = app.inputs[3];
  array q = dequantize(w, ones_like(scales, s), zeros_like(biases, s), st.i(0), st.i(1), "affine", std::nullopt, s);
  return unflatten(q, -1, {-1, st.i(0)}, s);
}

// The scales' and biases' cotangents from the dequantized matrix's, dw (w's layout, unquantized).
void scales_biases_vjp(const Application& app, const array& dw, const Ints& argnums, Arrays& out, size_t from) {
  auto s = app.s();
  array groups = unflatten(dw, -1, {-1, app.state().i(0)}, s);
  for (size_t j = from; j < argnums.size(); ++j) {
    if (argnums[j] == 3) {
      out.push_back(sum(groups, -1, false, s));
    } else {
      out.push_back(sum(multiply(groups, grouped_codes(app, s), s), -1, false, s));
    }
  }
}

// dequantize(w, t_scales, t_biases): the dequantized matrix's tangent (a missing tangent is zero).
array dequantized_tangent(const Application& app, const Arrays& tan, const Ints& argnums, StreamOrDevice s) {
  const auto& st = app.state();
  array ts = tangent_of(tan, argnums, 2), tb = tangent_of(tan, argnums, 3);
  if (!ts.valid()) ts = zeros_like(app.inputs[2], s);
  if (!tb.valid()) tb = zeros_like(app.inputs[3], s);
  return dequantize(app.inputs[1], ts, tb, st.i(0), st.i(1), "affine", std::nullopt, s);
}

Arrays qmm_vjp(const Application& app, const Arrays& cot, const Ints& argnums) {
  check_argnums(app, argnums, "QuantizedMatmul::vjp");
  auto s = app.s();
  Arrays out;
  size_t j = 0;
  if (!argnums.empty() && argnums[0] == 0) {
    out.push_back(qmm_with(app, cot[0], true));
    j = 1;
  }
  if (j == argnums.size()) return out;
  // The quantized matrix is 2-D: the products over x's whole batch, (N, K) when transposed, else (K, N).
  const array& x = app.inputs[0];
  array fx = reshape(x, {-1, x.shape(-1)}, s), fg = reshape(cot[0], {-1, cot[0].shape(-1)}, s);
  array dw = app.state().b(3) ? matmul(transpose(fg, s), fx, s) : matmul(transpose(fx, s), fg, s);
  scales_biases_vjp(app, dw, argnums, out, j);
  return out;
}

Arrays qmm_jvp(const Application& app, const Arrays& tan, const Ints& argnums) {
  check_argnums(app, argnums, "QuantizedMatmul::jvp");
  auto s = app.s();
  array acc;
  array tx = tangent_of(tan, argnums, 0);
  if (tx.valid()) acc = qmm_with(app, tx, false);
  if (std::any_of(argnums.begin(), argnums.end(), [](int i) { return i > 1; })) {
    array dw = dequantized_tangent(app, tan, argnums, s);
    array t = matmul(app.inputs[0], app.state().b(3) ? transpose(dw, s) : dw, s);
    acc = acc.valid() ? add(acc, t, s) : t;
  }
  return {acc};
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

void gather_qmm_argnums(const Application& app, const Ints& argnums, const char* mode) {
  const int indices = static_cast<int>(app.inputs.size()) - 2;
  for (int i : argnums) {
    if (i >= indices) {
      throw std::invalid_argument(std::string("[GatherQMM::") + mode + "] cannot compute the gradient wrt the indices.");
    }
  }
  check_argnums(app, argnums, std::string("GatherQMM::") + mode);
}

// The index sets broadcast against each other and flattened (the output's batch, n matrices).
std::pair<array, array> flat_indices(const Application& app, StreamOrDevice s) {
  const size_t nin = app.inputs.size();
  auto b = broadcast_arrays({app.inputs[nin - 2], app.inputs[nin - 1]}, s);
  return {flatten(b[0], s), flatten(b[1], s)};
}

Arrays gather_qmm_vjp(const Application& app, const Arrays& cot, const Ints& argnums) {
  gather_qmm_argnums(app, argnums, "vjp");
  auto s = app.s();
  const array& x = app.inputs[0];
  auto [lhs, rhs] = flat_indices(app, s);
  const int n = static_cast<int>(lhs.size());
  const int M = x.shape(-2), K = x.shape(-1);
  array g = reshape(cot[0], {n, cot[0].shape(-2), cot[0].shape(-1)}, s);
  const int batches = static_cast<int>(x.size() / (static_cast<size_t>(M) * K));
  Arrays out;
  size_t j = 0;
  if (!argnums.empty() && argnums[0] == 0) {
    array each = arange(0, n, uint32, s);
    array y = gather_qmm_node(app, g, !app.state().b(3), each, rhs);  // (n, M, K)
    array dx = scatter_add(zeros({batches, M, K}, x.dtype(), s), lhs, reshape(y, {n, 1, M, K}, s), 0, s);
    out.push_back(reshape(dx, x.shape(), s));
    j = 1;
  }
  if (j == argnums.size()) return out;
  // Each product's share of its weight matrix's cotangent, added up per matrix at rhs.
  array xi = take(reshape(x, {batches, M, K}, s), lhs, 0, s);  // (n, M, K)
  array per = app.state().b(3) ? matmul(swapaxes(g, -1, -2, s), xi, s) : matmul(swapaxes(xi, -1, -2, s), g, s);
  const array& w = app.inputs[1];
  const int mats = static_cast<int>(app.inputs[2].size() / (static_cast<size_t>(app.inputs[2].shape(-2)) *
                                                            app.inputs[2].shape(-1)));
  const int r = per.shape(-2), c = per.shape(-1);
  array dw = scatter_add(zeros({mats, r, c}, per.dtype(), s), rhs, reshape(per, {n, 1, r, c}, s), 0, s);
  Shape full(w.shape().begin(), w.shape().end() - 2);
  full.push_back(r);
  full.push_back(c);
  scales_biases_vjp(app, reshape(dw, full, s), argnums, out, j);
  return out;
}

Arrays gather_qmm_jvp(const Application& app, const Arrays& tan, const Ints& argnums) {
  gather_qmm_argnums(app, argnums, "jvp");
  auto s = app.s();
  const size_t nin = app.inputs.size();
  const array &lhs = app.inputs[nin - 2], &rhs = app.inputs[nin - 1];
  array acc;
  array tx = tangent_of(tan, argnums, 0);
  if (tx.valid()) acc = gather_qmm_node(app, tx, app.state().b(3), lhs, rhs);
  if (std::any_of(argnums.begin(), argnums.end(), [](int i) { return i > 1; })) {
    array dw = dequantized_tangent(app, tan, argnums, s);
    array t = gather_mm(app.inputs[0], app.state().b(3) ? swapaxes(dw, -1, -2, s) : dw, lhs, rhs, false, s);
    acc = acc.valid() ? add(acc, t, s) : t;
  }
  return {acc};
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
