// CPU kernels of the matrix-product variants and the Hadamard transform (BlockMaskedMM, GatherMM,
// Hadamard). Products go through BLAS as in matmul.cpp; 16-bit floats compute in float32.
#include "backend/cpu/kernels/linalg/linalg_internal.h"
#include "core/kernels.h"
#include "primitives/linalg/linalg_checks.h"

namespace kiln {

namespace {

using namespace linalg_detail;

// ---- Hadamard ----

// Hadamard matrices of orders 12, 20 and 28 (Sloane's library, the ones MLX uses), one row per entry:
// bit k set means +1 in column k, clear means -1.
constexpr uint32_t kH12[12] = {0x0000ffd, 0x0000554, 0x0000c37, 0x0000691, 0x00000df, 0x0000a45,
                               0x0000373, 0x0000919, 0x0000dc3, 0x0000469, 0x000070f, 0x00001a5};
constexpr uint32_t kH20[20] = {0x006cc21, 0x00d1c42, 0x00ab884, 0x005f108, 0x00b6610, 0x009c83e, 0x003945d,
                               0x007289b, 0x00e5117, 0x00ca60f, 0x00f05ac, 0x00e8b58, 0x00d92b1, 0x00ba163,
                               0x007c2c6, 0x0008592, 0x0010b05, 0x002122a, 0x0042074, 0x00840c9};
constexpr uint32_t kH28[28] = {0x3296181, 0x6528382, 0xc854704, 0x92a8e08, 0x2751c10, 0x4ca7820, 0x994b0c0,
                               0x4b980bc, 0x9534178, 0x2a6c271, 0x54d8463, 0xa9b0847, 0x536500f, 0xa4ce01e,
                               0x7804cda, 0xf009935, 0xe21326a, 0xc6224d5, 0x8e409ab, 0x1e81356, 0x3d0262d,
                               0x030ed66, 0x041dacd, 0x083b51b, 0x1072ab6, 0x20e15ec, 0x41c2b59, 0x81856b3};

const uint32_t* small_hadamard(int m) { return m == 12 ? kH12 : m == 20 ? kH20 : m == 28 ? kH28 : nullptr; }

// In-place transform of one row of length n·m: a fast Walsh–Hadamard transform of each length-n
// block, then the order-m matrix across blocks (that is, kron(H_m, H_n)), then the scale.
template <typename C>
void hadamard_row(C* x, int n, int m, C scale, std::vector<C>& tmp) {
  for (int blk = 0; blk < m; ++blk) {
    C* p = x + static_cast<size_t>(blk) * n;
    for (int h = 1; h < n; h <<= 1) {
      for (int i = 0; i < n; i += 2 * h) {
        for (int j = i; j < i + h; ++j) {
          C u = p[j], v = p[j + h];
          p[j] = u + v;
          p[j + h] = u - v;
        }
      }
    }
  }
  if (m > 1) {
    const uint32_t* H = small_hadamard(m);
    tmp.resize(m);
    for (int i = 0; i < n; ++i) {
      for (int j = 0; j < m; ++j) {
        C s(0);
        for (int k = 0; k < m; ++k) {
          C v = x[static_cast<size_t>(k) * n + i];
          s += (H[j] >> k) & 1u ? v : -v;
        }
        tmp[j] = s;
      }
      for (int j = 0; j < m; ++j) x[static_cast<size_t>(j) * n + i] = tmp[j];
    }
  }
  const size_t len = static_cast<size_t>(n) * m;
  if (scale != C(1)) {
    for (size_t i = 0; i < len; ++i) x[i] *= scale;
  }
}

template <typename T>
void hadamard_impl(const array& in, array& out, float scale) {
  using C = compute_t<T>;
  out.alloc();
  if (out.size() == 0) return;
  const int len = out.ndim() ? out.shape().back() : 1;
  auto [n, m] = split_hadamard_size(len);
  std::shared_ptr<detail::Data> tmp;
  C* buf = compute_dst<C, T>(out, tmp);
  strided_cast_copy<T, C>(base_ptr<T>(in), in.shape(), in.strides(), buf, row_major_strides(in.shape()));
  const size_t rows = out.size() / len;
  const size_t grain = std::max<size_t>(1, cpu::kGrainMedium / len);
  cpu::parallel_for(rows, grain, [&, n = n, m = m](size_t s, size_t e) {
    std::vector<C> scratch;
    for (size_t r = s; r < e; ++r) hadamard_row<C>(buf + r * len, n, m, C(scale), scratch);
  });
  if constexpr (!std::is_same_v<C, T>) {
    T* o = out.data<T>();
    for (size_t i = 0; i < out.size(); ++i) o[i] = T(buf[i]);
  }
}

void hadamard_cpu(const Node& node, const std::vector<array>& in, std::vector<array>& out) {
  detail::dispatch_float(out[0].dtype(), "hadamard", [&](auto tag) {
    hadamard_impl<decltype(tag)>(in[0], out[0], node.state.f(0));
  });
}

// ---- BlockMaskedMM ----

// Zero (bool mask false) or scale (float mask != 1) the tiles of a rows × cols row-major matrix.
template <typename C, typename T>
void apply_block_mask(C* data, int rows, int cols, int64_t ld, int bs, const array& mask, int64_t mask_off) {
  const int nd = static_cast<int>(mask.ndim());
  const int64_t sr = mask.strides()[nd - 2], sc = mask.strides()[nd - 1];
  const int tr = mask.shape()[nd - 2], tc = mask.shape()[nd - 1];
  for (int i = 0; i < tr; ++i) {
    for (int j = 0; j < tc; ++j) {
      // A false bool tile is zeroed; a float tile is multiplied unless its value is exactly 1.
      bool zero = false;
      C factor(1);
      if (mask.dtype() == bool_) {
        zero = !base_ptr<bool>(mask)[mask_off + i * sr + j * sc];
      } else {
        factor = static_cast<C>(base_ptr<T>(mask)[mask_off + i * sr + j * sc]);
      }
      if (!zero && factor == C(1)) continue;
      for (int r = i * bs; r < std::min(rows, (i + 1) * bs); ++r) {
        C* row = data + r * ld;
        for (int c = j * bs; c < std::min(cols, (j + 1) * bs); ++c) row[c] = zero ? C(0) : row[c] * factor;
      }
    }
  }
}

template <typename T>
void block_masked_impl(const std::vector<array>& in, array& out, int bs) {
  using C = compute_t<T>;
  out.alloc();
  if (out.size() == 0) return;
  const array& A = in[0];
  const array& B = in[1];
  const int nd = static_cast<int>(out.ndim());
  const int M = out.shape()[nd - 2], N = out.shape()[nd - 1], K = A.shape()[nd - 1];
  const Shape batch(out.shape().begin(), out.shape().end() - 2);
  const int64_t nbatch = static_cast<int64_t>(out.size() / (static_cast<size_t>(M) * N));
  const size_t n = in.size();
  const array* out_mask = (n == 3 || n == 5) ? &in[2] : nullptr;
  const array* lhs_mask = n >= 4 ? &in[n - 2] : nullptr;
  const array* rhs_mask = n >= 4 ? &in[n - 1] : nullptr;
  auto mask_strides = [&](const array* mk) {
    return mk ? aligned_batch_strides(mk->shape(), mk->strides(), batch) : std::vector<int64_t>{};
  };
  const auto om_st = mask_strides(out_mask), lm_st = mask_strides(lhs_mask), rm_st = mask_strides(rhs_mask);

  std::shared_ptr<detail::Data> tmp;
  C* dst = compute_dst<C, T>(out, tmp);
  // Operand masks change the operands, so each batch entry works on private copies.
  std::vector<C> a_buf, b_buf;
  MatOperand<C> a, b;
  if (lhs_mask) {
    a_buf.resize(static_cast<size_t>(M) * K);
    b_buf.resize(static_cast<size_t>(K) * N);
  } else if (K > 0) {
    a = prepare_operand<T, C>(A, batch);
    b = prepare_operand<T, C>(B, batch);
  }
  const auto a_st = aligned_batch_strides(A.shape(), A.strides(), batch);
  const auto b_st = aligned_batch_strides(B.shape(), B.strides(), batch);
  for (int64_t i = 0; i < nbatch; ++i) {
    C* o = dst + i * M * N;
    if (K == 0) {
      std::fill(o, o + static_cast<size_t>(M) * N, C(0));
    } else if (lhs_mask) {
      const T* ap = base_ptr<T>(A) + batch_offset(i, batch, a_st);
      const T* bp = base_ptr<T>(B) + batch_offset(i, batch, b_st);
      strided_cast_copy<T, C>(ap, {M, K}, {A.strides()[nd - 2], A.strides()[nd - 1]}, a_buf.data(), {K, 1});
      strided_cast_copy<T, C>(bp, {K, N}, {B.strides()[nd - 2], B.strides()[nd - 1]}, b_buf.data(), {N, 1});
      apply_block_mask<C, T>(a_buf.data(), M, K, K, bs, *lhs_mask, batch_offset(i, batch, lm_st));
      apply_block_mask<C, T>(b_buf.data(), K, N, N, bs, *rhs_mask, batch_offset(i, batch, rm_st));
      cpu::gemm(false, false, M, N, K, C(1), a_buf.data(), K, b_buf.data(), N, C(0), o, N);
    } else {
      cpu::gemm(a.trans, b.trans, M, N, K, C(1), a.ptr + batch_offset(i, batch, a.batch_strides), a.ld,
                b.ptr + batch_offset(i, batch, b.batch_strides), b.ld, C(0), o, N);
    }
    if (out_mask) apply_block_mask<C, T>(o, M, N, N, bs, *out_mask, batch_offset(i, batch, om_st));
  }
  if constexpr (!std::is_same_v<C, T>) {
    T* o = out.data<T>();
    for (size_t i = 0; i < out.size(); ++i) o[i] = T(dst[i]);
  }
}

void block_masked_cpu(const Node& node, const std::vector<array>& in, std::vector<array>& out) {
  detail::dispatch_float(out[0].dtype(), "block_masked_mm", [&](auto tag) {
    block_masked_impl<decltype(tag)>(in, out[0], node.state.i(0));
  });
}

// ---- GatherMM ----

// The indices of `idx` (any integer dtype, any strides) in row-major order, clamped to [0, limit).
std::vector<int64_t> read_indices(const array& idx, int64_t limit) {
  std::vector<int64_t> out(idx.size());
  detail::dispatch_all(idx.dtype(), [&](auto tag) {
    using I = decltype(tag);
    if constexpr (std::is_integral_v<I>) {
      strided_cast_copy<I, int64_t>(base_ptr<I>(idx), idx.shape(), idx.strides(), out.data(),
                                    row_major_strides(idx.shape()));
    }
  });
  // Out-of-range indices are clamped, as gathers are, so a bad file cannot read out of bounds.
  for (auto& v : out) v = std::clamp<int64_t>(v, 0, std::max<int64_t>(limit - 1, 0));
  return out;
}

template <typename T>
void gather_mm_impl(const std::vector<array>& in, array& out) {
  using C = compute_t<T>;
  out.alloc();
  if (out.size() == 0) return;
  const array& A = in[0];
  const array& B = in[1];
  const int M = A.shape(-2), K = A.shape(-1), N = B.shape(-1);
  const Shape a_batch(A.shape().begin(), A.shape().end() - 2), b_batch(B.shape().begin(), B.shape().end() - 2);
  const int64_t na = static_cast<int64_t>(shape_size(a_batch)), nb = static_cast<int64_t>(shape_size(b_batch));
  const int64_t nbatch = static_cast<int64_t>(in[2].size());
  std::shared_ptr<detail::Data> tmp;
  C* dst = compute_dst<C, T>(out, tmp);
  if (K == 0 || na == 0 || nb == 0) {
    std::fill(dst, dst + out.size(), C(0));
  } else {
    auto li = read_indices(in[2], na), ri = read_indices(in[3], nb);
    MatOperand<C> a = prepare_operand<T, C>(A, a_batch);
    MatOperand<C> b = prepare_operand<T, C>(B, b_batch);
    batched_gemm<C>(
        nbatch, M, N, K, C(1), a, b, C(0), dst, [&](int64_t i) { return batch_offset(li[i], a_batch, a.batch_strides); },
        [&](int64_t i) { return batch_offset(ri[i], b_batch, b.batch_strides); });
  }
  if constexpr (!std::is_same_v<C, T>) {
    T* o = out.data<T>();
    for (size_t i = 0; i < out.size(); ++i) o[i] = T(dst[i]);
  }
}

void gather_mm_cpu(const Node&, const std::vector<array>& in, std::vector<array>& out) {
  detail::dispatch_float(out[0].dtype(), "gather_mm", [&](auto tag) { gather_mm_impl<decltype(tag)>(in, out[0]); });
}

}  // namespace

namespace linalg_detail {
void register_linalg_mm_kernels(detail::KernelTable& table) {
  table.add({{"Hadamard", hadamard_cpu}, {"BlockMaskedMM", block_masked_cpu}, {"GatherMM", gather_mm_cpu}});
}
}  // namespace linalg_detail

}  // namespace kiln
