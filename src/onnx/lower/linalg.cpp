// Linear algebra rows (src/primitives/linalg/): the matmul family as MatMul (half types in float32, as
// MLX accumulates them), the decompositions refused (ONNX has no operator for them).
#include "kiln/ops.h"
#include "onnx/lower/common.h"

namespace kiln::onnx_export {

namespace {

void matmul(Context& c) {
  no_complex(c);
  const Dtype t = compute_type(c.out.at(0).dtype);
  auto x = cast_all(c, {c.in.at(0), c.in.at(1)}, t);
  store(c, 0, c.op("MatMul", x), t);
}

void addmm(Context& c) {
  no_complex(c);
  const Dtype t = compute_type(c.out.at(0).dtype);
  auto x = cast_all(c, c.in, t);
  const float alpha = c.float_arg(0), beta = c.float_arg(1);
  std::string ab = c.op("MatMul", {x[0], x[1]});
  if (alpha != 1.0f) ab = c.op("Mul", {ab, c.scalar(alpha, t)});
  std::string cc = x[2];
  if (beta != 1.0f) cc = c.op("Mul", {cc, c.scalar(beta, t)});
  store(c, 0, c.op("Add", {ab, cc}), t);
}

// out[i...] = a[lhs[i...]] @ b[rhs[i...]], a and b with their batch dims flattened.
void gather_mm(Context& c) {
  no_complex(c);
  const Dtype t = compute_type(c.out.at(0).dtype);
  auto x = cast_all(c, {c.in.at(0), c.in.at(1)}, t);
  auto batched = [&](const std::string& v, const Tensor& src, const Tensor& idx) {
    const int nd = src.ndim();
    std::string flat = c.op("Reshape", {v, c.ints({-1, src.shape[nd - 2], src.shape[nd - 1]})});
    return c.op("Gather", {flat, c.cast(idx.name, int64)}, {{"axis", 0}});
  };
  std::string a = batched(x[0], c.in[0], c.in.at(2));
  std::string b = batched(x[1], c.in[1], c.in.at(3));
  store(c, 0, c.op("MatMul", {a, b}), t);
}

// A block mask (..., R/bs, C/bs) expanded to the elements (..., R, C).
std::string expand_mask(Context& c, const Tensor& m, int64_t rows, int64_t cols, int64_t bs, Dtype t) {
  const int nd = m.ndim();
  Shape s = m.shape;
  std::vector<int64_t> unsq, big, flat;
  for (int d = 0; d < nd - 2; ++d) {
    unsq.push_back(s[d]);
    big.push_back(s[d]);
    flat.push_back(s[d]);
  }
  const int64_t r = s[nd - 2], k = s[nd - 1];
  for (int64_t v : {r, int64_t(1), k, int64_t(1)}) unsq.push_back(v);
  for (int64_t v : {r, bs, k, bs}) big.push_back(v);
  flat.push_back(r * bs);
  flat.push_back(k * bs);
  std::string v = m.dtype == t ? m.name : c.cast(m.name, t);
  v = c.op("Reshape", {v, c.ints(unsq)});
  v = c.op("Expand", {v, c.ints(big)});
  v = c.op("Reshape", {v, c.ints(flat)});
  return c.op("Slice", {v, c.ints({0, 0}), c.ints({rows, cols}), c.ints({-2, -1})});
}

void block_masked_mm(Context& c) {
  no_complex(c);
  const Dtype t = compute_type(c.out.at(0).dtype);
  const int64_t bs = c.int_arg(0);
  const Tensor& ta = c.in.at(0);
  const Tensor& tb = c.in.at(1);
  const int64_t m = ta.shape[ta.ndim() - 2], k = ta.shape[ta.ndim() - 1], n = tb.shape[tb.ndim() - 1];
  auto x = cast_all(c, {ta, tb}, t);
  const size_t extra = c.in.size() - 2;
  const bool has_out = extra == 1 || extra == 3;
  const bool has_operands = extra >= 2;
  std::string a = x[0], b = x[1];
  if (has_operands) {
    const Tensor& lm = c.in.at(has_out ? 3 : 2);
    const Tensor& rm = c.in.at(has_out ? 4 : 3);
    a = c.op("Mul", {a, expand_mask(c, lm, m, k, bs, t)});
    b = c.op("Mul", {b, expand_mask(c, rm, k, n, bs, t)});
  }
  std::string r = c.op("MatMul", {a, b});
  if (has_out) r = c.op("Mul", {r, expand_mask(c, c.in.at(2), m, n, bs, t)});
  store(c, 0, r, t);
}

}  // namespace

void register_linalg_onnx(LoweringTable& table) {
  table.add({{"Matmul", matmul}, {"AddMM", addmm}, {"GatherMM", gather_mm}, {"BlockMaskedMM", block_masked_mm}});
  table.polymorphic({"Matmul", "AddMM"});
  const std::string none = " (ONNX has no operator for it, and no fixed decomposition of the iterative LAPACK "
                           "algorithm gives the same results)";
  table.refuse("Cholesky", "ONNX has no Cholesky factorization operator" + none);
  table.refuse("Inverse", "ONNX has no matrix inverse operator" + none);
  table.refuse("QRF", "ONNX has no QR factorization operator" + none);
  table.refuse("SVD", "ONNX has no singular value decomposition operator" + none);
  table.refuse("Eig", "ONNX has no eigen-decomposition operator" + none);
  table.refuse("Eigh", "ONNX has no eigen-decomposition operator" + none);
  table.refuse("LUF", "ONNX has no LU factorization operator" + none);
  table.add("Hadamard", [](Context& c) {
    // The Walsh-Hadamard transform along the last axis as a MatMul with the +-1 matrix (n a power of 2),
    // times the scale.
    const Tensor& x = c.in.at(0);
    const int64_t n = x.shape.back();
    if (n <= 0 || (n & (n - 1)) != 0) c.refuse("Hadamard of a size that is not a power of 2 (MLX's m*2^k forms)");
    if (n > 4096) c.refuse("Hadamard of size " + std::to_string(n) + " (the dense matrix would be too large)");
    no_complex(c);
    const Dtype t = compute_type(x.dtype);
    std::vector<float> h(static_cast<size_t>(n * n));
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t j = 0; j < n; ++j) h[i * n + j] = (__builtin_popcountll(static_cast<uint64_t>(i & j)) & 1) ? -1.f : 1.f;
    }
    std::string hm = c.constant(astype(array(h.data(), Shape{static_cast<int32_t>(n), static_cast<int32_t>(n)}), t));
    std::string xs = x.dtype == t ? x.name : c.cast(x.name, t);
    std::string r = c.op("MatMul", {xs, hm});
    r = c.op("Mul", {r, c.scalar(c.float_arg(0), t)});
    store(c, 0, r, t);
  });
}

}  // namespace kiln::onnx_export
