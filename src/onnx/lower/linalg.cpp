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

// Small matrices only: the factorizations below are unrolled over the columns (a few nodes per column).
constexpr int64_t kMaxUnrolled = 32;

int64_t square_size(Context& c, const char* what) {
  const Tensor& a = c.in.at(0);
  const int nd = a.ndim();
  if (nd < 2 || a.shape[nd - 1] != a.shape[nd - 2]) c.refuse(std::string(what) + " of a non-square matrix");
  const int64_t n = a.shape[nd - 1];
  if (n > kMaxUnrolled) {
    c.refuse(std::string(what) + " of a " + std::to_string(n) + "x" + std::to_string(n) +
             " matrix: ONNX has no operator for it, and kiln unrolls it only up to " + std::to_string(kMaxUnrolled) +
             "x" + std::to_string(kMaxUnrolled));
  }
  if (!is_float(a.dtype)) c.refuse(std::string(what) + " of " + dtype_name(a.dtype));
  return n;
}

std::string last2(Context& c, const std::string& v, int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
  return c.op("Slice", {v, c.ints({r0, c0}), c.ints({r1, c1}), c.ints({-2, -1})});
}

// A 0/1 column (n, 1) of dtype t that is 1 on rows `from` and below.
std::string rows_from(Context& c, int64_t n, int64_t from, Dtype t) {
  std::vector<float> m(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) m[i] = i >= from ? 1.0f : 0.0f;
  return c.constant(astype(array(m.data(), Shape{static_cast<int32_t>(n), 1}), t));
}

// Cholesky by outer products, column by column: L[:, j] = W[:, j] / sqrt(W[j, j]) below the diagonal,
// then W -= L[:, j] L[:, j]^T (LAPACK's potrf computes the same quantities in another order).
void cholesky(Context& c) {
  const int64_t n = square_size(c, "Cholesky");
  const bool upper = c.bool_arg(0);
  const Tensor& a = c.in.at(0);
  const Dtype t = compute_type(a.dtype);
  std::string w = a.dtype == t ? a.name : c.cast(a.name, t);
  const int nd = a.ndim();
  std::vector<int64_t> perm;
  for (int d = 0; d < nd - 2; ++d) perm.push_back(d);
  perm.push_back(nd - 1);
  perm.push_back(nd - 2);
  std::vector<std::string> cols;
  for (int64_t j = 0; j < n; ++j) {
    std::string d = c.op("Sqrt", {last2(c, w, j, j + 1, j, j + 1)});
    std::string col = c.op("Mul", {c.op("Div", {last2(c, w, 0, n, j, j + 1), d}), rows_from(c, n, j, t)});
    cols.push_back(col);
    if (j + 1 < n) w = c.op("Sub", {w, c.op("MatMul", {col, c.op("Transpose", {col}, {{"perm", perm}})})});
  }
  std::string l = n == 1 ? cols[0] : c.op("Concat", cols, {{"axis", -1}});
  if (upper) l = c.op("Transpose", {l}, {{"perm", perm}});
  store(c, 0, l, t);
}

// Gauss-Jordan elimination with partial pivoting (the largest magnitude in the column, the first on
// ties, as LAPACK's getrf picks) on [A | I].
void inverse(Context& c) {
  const int64_t n = square_size(c, "Inverse");
  const bool tri = c.bool_arg(0), upper = c.bool_arg(1);
  const Tensor& a = c.in.at(0);
  const Dtype t = compute_type(a.dtype);
  const int nd = a.ndim();
  std::string x = a.dtype == t ? a.name : c.cast(a.name, t);
  std::vector<float> eye(static_cast<size_t>(n * n), 0.0f);
  for (int64_t i = 0; i < n; ++i) eye[i * n + i] = 1.0f;
  std::vector<int64_t> big(a.shape.begin(), a.shape.end());
  std::string id = c.op("Expand", {c.constant(astype(array(eye.data(), Shape{static_cast<int32_t>(n), static_cast<int32_t>(n)}), t)),
                                   c.ints(big)});
  std::string m = c.op("Concat", {x, id}, {{"axis", -1}});
  big.back() = 2 * n;
  std::vector<int64_t> ar(n);
  for (int64_t i = 0; i < n; ++i) ar[i] = i;
  const std::string rows = c.ints(ar);
  for (int64_t k = 0; k < n; ++k) {
    // The pivot: the largest |m[i, k]| over rows i >= k.
    std::string col = c.op("Squeeze", {last2(c, m, 0, n, k, k + 1), c.ints({-1})});
    std::vector<uint8_t> below(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) below[i] = i < k;
    std::string cand = c.op("Where", {c.constant(astype(array(below.data(), Shape{static_cast<int32_t>(n)}), bool_)),
                                      c.scalar(-1, t), c.op("Abs", {col})});
    std::string p = c.op("ArgMax", {cand}, {{"axis", -1}, {"keepdims", 1}});
    // Rows k and p swapped: index[i] = p for i = k, k for i = p, else i.
    std::string kk = c.ints({k}, true);
    std::string idx = c.op("Where", {c.op("Equal", {rows, kk}), p, c.op("Where", {c.op("Equal", {rows, p}), kk, rows})});
    idx = c.op("Expand", {c.op("Unsqueeze", {idx, c.ints({-1})}), c.ints(big)});
    m = c.op("GatherElements", {m, idx}, {{"axis", static_cast<int64_t>(nd - 2)}});
    std::string r = c.op("Div", {last2(c, m, k, k + 1, 0, 2 * n), last2(c, m, k, k + 1, k, k + 1)});
    std::vector<float> notk(static_cast<size_t>(n), 1.0f);
    notk[k] = 0.0f;
    std::string f = c.op("Mul", {last2(c, m, 0, n, k, k + 1),
                                 c.constant(astype(array(notk.data(), Shape{static_cast<int32_t>(n), 1}), t))});
    m = c.op("Sub", {m, c.op("Mul", {f, r})});
    std::vector<uint8_t> isk(static_cast<size_t>(n), 0);
    isk[k] = 1;
    m = c.op("Where", {c.constant(astype(array(isk.data(), Shape{static_cast<int32_t>(n), 1}), bool_)), r, m});
  }
  std::string inv = last2(c, m, 0, n, n, 2 * n);
  if (tri) {
    // The inverse of a triangular matrix is triangular: the other triangle exactly zero, as MLX's.
    std::vector<uint8_t> keep(static_cast<size_t>(n * n));
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t j = 0; j < n; ++j) keep[i * n + j] = upper ? j >= i : j <= i;
    }
    inv = c.op("Where", {c.constant(astype(array(keep.data(), Shape{static_cast<int32_t>(n), static_cast<int32_t>(n)}), bool_)),
                         inv, c.scalar(0, t)});
  }
  store(c, 0, inv, t);
}

}  // namespace

void register_linalg_onnx(LoweringTable& table) {
  table.add({{"Matmul", matmul}, {"AddMM", addmm}, {"GatherMM", gather_mm}, {"BlockMaskedMM", block_masked_mm}});
  table.polymorphic({"Matmul", "AddMM"});
  const std::string none = " (ONNX has no operator for it, and no fixed decomposition of the iterative LAPACK "
                           "algorithm gives the same results)";
  table.add({{"Cholesky", cholesky}, {"Inverse", inverse}});
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
  table.refuse_shapeless("Hadamard", "its +-1 matrix is built for the recorded size of the last axis (a power of 2 "
                                     "checked at export), which a shapeless function leaves open");
}

}  // namespace kiln::onnx_export
