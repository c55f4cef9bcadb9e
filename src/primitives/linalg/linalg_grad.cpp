// Derivative rules of the linear-algebra rows (autodiff_rules.h): Matmul, AddMM, Hadamard, GatherMM, BlockMaskedMM
// (through its fallback). MLX 0.30.1
// differentiates none of the decompositions (QRF, SVD, Inverse, Cholesky, Eig, Eigh, LUF): they are
// declared not differentiable here too.
#include "kiln/ops.h"
#include "primitives/autodiff_rules.h"

namespace kiln {

namespace {

using detail::autodiff::Application;
using detail::autodiff::RuleTable;
using detail::autodiff::tangent_of;
using detail::autodiff::unbroadcast;
using Arrays = std::vector<array>;
using Ints = std::vector<int>;

array mT(const array& a, StreamOrDevice s) { return swapaxes(a, -1, -2, s); }

// The cotangent of a @ b for input k (0: a, 1: b), reduced over broadcast batch dimensions.
array product_vjp(const Application& app, const array& g, int k) {
  const array& a = app.inputs[0];
  const array& b = app.inputs[1];
  auto s = app.s();
  array r = k == 0 ? matmul(g, mT(b, s), s) : matmul(mT(a, s), g, s);
  return unbroadcast(r, app.inputs[k].shape(), s);
}

// ta @ b + a @ tb over the inputs that have tangents.
array product_jvp(const Application& app, const Arrays& tan, const Ints& argnums) {
  array ta = tangent_of(tan, argnums, 0), tb = tangent_of(tan, argnums, 1);
  array acc;
  if (ta.valid()) acc = matmul(ta, app.inputs[1], app.s());
  if (tb.valid()) {
    array t = matmul(app.inputs[0], tb, app.s());
    acc = acc.valid() ? add(acc, t, app.s()) : t;
  }
  return acc;
}

Arrays matmul_vjp(const Application& app, const Arrays& cot, const Ints& argnums) {
  Arrays out;
  for (int k : argnums) out.push_back(product_vjp(app, cot[0], k));
  return out;
}
Arrays matmul_jvp(const Application& app, const Arrays& tan, const Ints& argnums) {
  return {product_jvp(app, tan, argnums)};
}

// AddMM(a, b, c) = alpha a @ b + beta c.
Arrays addmm_vjp(const Application& app, const Arrays& cot, const Ints& argnums) {
  const float alpha = app.state().f(0), beta = app.state().f(1);
  const Dtype t = app.outputs[0].dtype();
  auto s = app.s();
  Arrays out;
  for (int k : argnums) {
    if (k == 2) {
      out.push_back(unbroadcast(multiply(array(beta, t), cot[0], s), app.inputs[2].shape(), s));
    } else {
      out.push_back(product_vjp(app, multiply(array(alpha, t), cot[0], s), k));
    }
  }
  return out;
}
Arrays addmm_jvp(const Application& app, const Arrays& tan, const Ints& argnums) {
  const float alpha = app.state().f(0), beta = app.state().f(1);
  const Dtype t = app.outputs[0].dtype();
  auto s = app.s();
  array acc;
  Ints mm;
  Arrays mm_tan;
  for (size_t j = 0; j < argnums.size(); ++j) {
    if (argnums[j] < 2) {
      mm.push_back(argnums[j]);
      mm_tan.push_back(tan[j]);
    }
  }
  if (!mm.empty()) acc = multiply(array(alpha, t), product_jvp(app, mm_tan, mm), s);
  array tc = tangent_of(tan, argnums, 2);
  if (tc.valid()) {
    array c = multiply(array(beta, t), tc, s);
    acc = acc.valid() ? add(acc, c, s) : broadcast_to(c, app.outputs[0].shape(), s);
  }
  return {acc};
}

// The (scaled) Walsh-Hadamard matrix is symmetric: the transform is its own transpose.
Arrays hadamard_vjp(const Application& app, const Arrays& cot, const Ints&) {
  return {hadamard_transform(cot[0], app.state().f(0), app.s())};
}
Arrays hadamard_jvp(const Application& app, const Arrays& tan, const Ints&) {
  return {hadamard_transform(tan[0], app.state().f(0), app.s())};
}

// GatherMM(a, b, lhs, rhs): out[i] = A[lhs[i]] @ B[rhs[i]], with A and B the matrices of a and b's
// flattened batch dimensions. The products' cotangents are added back into the matrices they read.
array flat_batch(const array& x, StreamOrDevice s) {
  int n = 1;
  for (size_t d = 0; d + 2 < x.ndim(); ++d) n *= x.shape(static_cast<int>(d));
  return reshape(x, {n, x.shape(-2), x.shape(-1)}, s);
}
Arrays gather_mm_vjp(const Application& app, const Arrays& cot, const Ints& argnums) {
  auto s = app.s();
  const array &a = app.inputs[0], &b = app.inputs[1];
  array lhs = flatten(app.inputs[2], s), rhs = flatten(app.inputs[3], s);
  const int n = static_cast<int>(lhs.size());
  array A = flat_batch(a, s), B = flat_batch(b, s);
  array g = reshape(cot[0], {n, cot[0].shape(-2), cot[0].shape(-1)}, s);
  Arrays out;
  for (int k : argnums) {
    if (k >= 2) throw std::invalid_argument("[GatherMM] Cannot calculate VJP with respect to indices.");
    array contrib, where_to, dest;
    if (k == 0) {  // dA[lhs[i]] += g[i] @ B[rhs[i]]^T
      contrib = matmul(g, mT(take(B, rhs, 0, s), s), s);
      where_to = lhs;
      dest = zeros(A.shape(), a.dtype(), s);
    } else {  // dB[rhs[i]] += A[lhs[i]]^T @ g[i]
      contrib = matmul(mT(take(A, lhs, 0, s), s), g, s);
      where_to = rhs;
      dest = zeros(B.shape(), b.dtype(), s);
    }
    Shape upd = contrib.shape();
    upd.insert(upd.begin() + 1, 1);
    array r = scatter_add(dest, where_to, reshape(contrib, upd, s), 0, s);
    out.push_back(reshape(r, app.inputs[k].shape(), s));
  }
  return out;
}
Arrays gather_mm_jvp(const Application& app, const Arrays& tan, const Ints& argnums) {
  auto s = app.s();
  const array &lhs = app.inputs[2], &rhs = app.inputs[3];
  for (int k : argnums) {
    if (k >= 2) throw std::invalid_argument("[GatherMM] Cannot calculate JVP with respect to indices.");
  }
  array ta = tangent_of(tan, argnums, 0), tb = tangent_of(tan, argnums, 1);
  array acc;
  if (ta.valid()) acc = gather_mm(ta, app.inputs[1], lhs, rhs, false, s);
  if (tb.valid()) {
    array t = gather_mm(app.inputs[0], tb, lhs, rhs, false, s);
    acc = acc.valid() ? add(acc, t, s) : t;
  }
  return {acc};
}

// BlockMaskedMM(a, b[, mask_out][, mask_lhs, mask_rhs]): the product of the block-masked operands,
// block-masked. Its fallback writes that with element-wise masks, which the machinery differentiates.
array expand_blocks(const array& mask, int block, int rows, int cols, Dtype t, StreamOrDevice s) {
  array m = repeat(repeat(astype(mask, t, s), block, -2, s), block, -1, s);
  Shape start(m.ndim(), 0), stop = m.shape();
  stop[m.ndim() - 2] = rows;
  stop[m.ndim() - 1] = cols;
  return slice(m, start, stop, s);
}
Arrays block_masked_fallback(const Application& app, const Arrays& in) {
  auto s = app.s();
  const int bs = app.state().i(0);
  array a = in[0], b = in[1];
  const Dtype t = app.outputs[0].dtype();
  const int M = a.shape(-2), K = a.shape(-1), N = b.shape(-1);
  const size_t n = in.size();
  if (n == 4 || n == 5) {
    a = multiply(a, expand_blocks(in[n - 2], bs, M, K, t, s), s);
    b = multiply(b, expand_blocks(in[n - 1], bs, K, N, t, s), s);
  }
  array out = matmul(a, b, s);
  if (n == 3 || n == 5) out = multiply(out, expand_blocks(in[2], bs, M, N, t, s), s);
  return {broadcast_to(out, app.outputs[0].shape(), s)};
}

}  // namespace

namespace primitives {
void register_linalg_grad(RuleTable& t) {
  t.add("Matmul", matmul_vjp, matmul_jvp);
  t.add("AddMM", addmm_vjp, addmm_jvp);
  t.add("Hadamard", hadamard_vjp, hadamard_jvp);
  t.add("GatherMM", gather_mm_vjp, gather_mm_jvp);
  t.add("BlockMaskedMM", nullptr, nullptr, block_masked_fallback);
  for (const char* r : {"QRF", "SVD", "Inverse", "Cholesky", "Eig", "Eigh", "LUF"}) {
    t.none(r, "a decomposition; MLX 0.30.1 has no vjp or jvp for it");
  }
}
}  // namespace primitives

}  // namespace kiln
