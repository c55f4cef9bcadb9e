// Shared by the matmul-like kernels (matmul.cpp, linalg_mm.cpp) and the LAPACK kernels (linalg.cpp):
// batched matrix operands handed to BLAS without copies when their strides allow it, strided copies
// with dtype conversion, and the loop over batch indices.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <type_traits>
#include <vector>

#include "backend/cpu/blas.h"
#include "backend/cpu/gemm/gemm.h"
#include "backend/cpu/loops.h"
#include "kiln/array.h"
#include "kiln/primitive.h"

namespace kiln::linalg_detail {

// The type a kernel computes in: float for the 16-bit floats, the storage type otherwise.
template <typename T>
using compute_t = detail::acc_t<T>;

// dst[...] = cast(src[...]) over `shape`, both strided (element strides).
template <typename S, typename D>
void strided_cast_copy(const S* src, const Shape& shape, const Strides& src_strides, D* dst, const Strides& dst_strides) {
  cpu::for_each_row<2>(shape, {&dst_strides, &src_strides}, {0, 0}, cpu::kGrainCheap,
                       [&](const std::array<int64_t, 2>& o, int64_t n, const std::array<int64_t, 2>& st) {
                         D* d = dst + o[0];
                         const S* s = src + o[1];
                         if (st[0] == 1 && st[1] == 1) {
                           for (int64_t i = 0; i < n; ++i) d[i] = detail::cast_to<D>(s[i]);
                         } else {
                           for (int64_t i = 0; i < n; ++i) d[i * st[0]] = detail::cast_to<D>(s[i * st[1]]);
                         }
                       });
}

// Where a kernel computing in C writes an output stored as T: the output's own memory when C is T,
// else a scratch block (held by `scratch`) that the kernel rounds into the output at the end.
template <typename C, typename T>
C* compute_dst(array& out, std::shared_ptr<detail::Data>& scratch) {
  if constexpr (std::is_same_v<C, T>) {
    return out.data<T>();
  } else {
    scratch = detail::allocate(out.size() * sizeof(C));
    return static_cast<C*>(scratch->ptr);
  }
}

// The element pointer of an evaluated array of storage type S (its offset applied).
template <typename S>
const S* base_ptr(const array& a) {
  return static_cast<const S*>(a.buffer()->ptr) + a.offset();
}

// Strides of `shape`'s batch dims (all but the last two) aligned to `batch` (the output's batch dims):
// missing leading dims and size-1 dims broadcast with stride 0.
inline std::vector<int64_t> aligned_batch_strides(const Shape& shape, const Strides& strides, const Shape& batch) {
  std::vector<int64_t> out(batch.size(), 0);
  const int nb = static_cast<int>(shape.size()) - 2;
  const int lead = static_cast<int>(batch.size()) - nb;
  for (int j = 0; j < nb; ++j) out[lead + j] = shape[j] == 1 ? 0 : strides[j];
  return out;
}

// Element offset of batch entry `i` (row-major over `batch`).
inline int64_t batch_offset(int64_t i, const Shape& batch, const std::vector<int64_t>& strides) {
  int64_t off = 0;
  for (int d = static_cast<int>(batch.size()) - 1; d >= 0 && i > 0; --d) {
    off += (i % batch[d]) * strides[d];
    i /= batch[d];
  }
  return off;
}

// A batch of matrices in the layout BLAS takes: row-major with leading dimension `ld`, or transposed.
template <typename C>
struct MatOperand {
  const C* ptr = nullptr;
  bool trans = false;
  int ld = 1;
  std::vector<int64_t> batch_strides;  // aligned to the output's batch dims
  std::shared_ptr<detail::Data> hold;  // a converted copy, when one was made
  // Element (r, c) of batch entry b, for the scalar fallbacks.
  int64_t row_stride() const { return trans ? 1 : ld; }
  int64_t col_stride() const { return trans ? ld : 1; }
};

// Whether a (rows × cols) matrix with strides (sr, sc) can be passed as is; sets trans and ld.
inline bool blas_layout(int rows, int cols, int64_t sr, int64_t sc, bool& trans, int& ld) {
  constexpr int64_t kMax = std::numeric_limits<int>::max();
  if ((sc == 1 || cols <= 1) && (rows <= 1 || (sr >= std::max(1, cols) && sr <= kMax))) {
    trans = false;
    ld = rows <= 1 ? std::max(1, cols) : static_cast<int>(sr);
    return true;
  }
  if ((sr == 1 || rows <= 1) && (cols <= 1 || (sc >= std::max(1, rows) && sc <= kMax))) {
    trans = true;
    ld = cols <= 1 ? std::max(1, rows) : static_cast<int>(sc);
    return true;
  }
  return false;
}

// Prepare the matrices of `x` (storage type S, shape (..., rows, cols)) for a gemm in type C. Data is
// used in place when S == C and the strides fit BLAS; otherwise the distinct matrices (broadcast batch
// dims are not expanded) are copied into a row-major buffer of type C.
template <typename S, typename C>
MatOperand<C> prepare_operand(const array& x, const Shape& batch, bool force_copy = false) {
  MatOperand<C> op;
  const int nd = static_cast<int>(x.ndim());
  const int rows = x.shape()[nd - 2], cols = x.shape()[nd - 1];
  if constexpr (std::is_same_v<S, C>) {
    if (!force_copy && blas_layout(rows, cols, x.strides()[nd - 2], x.strides()[nd - 1], op.trans, op.ld)) {
      op.ptr = base_ptr<S>(x);
      op.batch_strides = aligned_batch_strides(x.shape(), x.strides(), batch);
      return op;
    }
  }
  // Compact copy: broadcast (stride-0) batch dims keep one entry.
  Shape compact = x.shape();
  for (int j = 0; j < nd - 2; ++j) {
    if (x.strides()[j] == 0) compact[j] = 1;
  }
  size_t n = 1;
  for (auto d : compact) n *= static_cast<size_t>(d);
  op.hold = detail::allocate(n * sizeof(C));
  C* dst = static_cast<C*>(op.hold->ptr);
  strided_cast_copy<S, C>(base_ptr<S>(x), compact, x.strides(), dst, row_major_strides(compact));
  op.ptr = dst;
  op.trans = false;
  op.ld = std::max(1, cols);
  op.batch_strides = aligned_batch_strides(compact, row_major_strides(compact), batch);
  return op;
}

// Row-major C = alpha · A · B + beta · C for one matrix, by loops: used for small matrices in batches,
// where a BLAS call per matrix costs more than the arithmetic.
template <typename C>
void small_gemm(int M, int N, int K, C alpha, const C* A, int64_t ars, int64_t acs, const C* B, int64_t brs,
                int64_t bcs, C beta, C* out, int64_t ldc) {
  std::vector<C> acc(static_cast<size_t>(N));
  for (int i = 0; i < M; ++i) {
    std::fill(acc.begin(), acc.end(), C(0));
    for (int k = 0; k < K; ++k) {
      const C av = A[i * ars + k * acs];
      const C* brow = B + k * brs;
      if (bcs == 1) {
        for (int j = 0; j < N; ++j) acc[j] += av * brow[j];
      } else {
        for (int j = 0; j < N; ++j) acc[j] += av * brow[j * bcs];
      }
    }
    C* crow = out + i * ldc;
    if (beta == C(0)) {
      for (int j = 0; j < N; ++j) crow[j] = alpha * acc[j];
    } else {
      for (int j = 0; j < N; ++j) crow[j] = alpha * acc[j] + beta * crow[j];
    }
  }
}

// Above this many multiply-adds per matrix, batched products go to BLAS one matrix at a time.
inline constexpr int64_t kSmallGemm = 48 * 48 * 48;
// Up to this many multiply-adds per matrix, a batch of float32 products runs a matrix per thread.
inline constexpr int64_t kMidGemm = int64_t(1) << 24;

// out[b] = alpha · A[ia(b)] · B[ib(b)] + beta · out[b] for every batch entry b, with out row-major
// contiguous (M × N per entry). `a_off(b)` / `b_off(b)` give each entry's element offset.
template <typename C, typename AOff, typename BOff>
void batched_gemm(int64_t nbatch, int M, int N, int K, C alpha, const MatOperand<C>& a, const MatOperand<C>& b,
                  C beta, C* out, AOff a_off, BOff b_off) {
  const int64_t per = static_cast<int64_t>(M) * N * std::max(K, 1);
  if (nbatch > 1 && per <= kSmallGemm) {
    const size_t grain = static_cast<size_t>(std::max<int64_t>(1, (1 << 16) / std::max<int64_t>(per, 1)));
    cpu::parallel_for(static_cast<size_t>(nbatch), grain, [&](size_t s, size_t e) {
      for (size_t i = s; i < e; ++i) {
        if constexpr (std::is_same_v<C, float>) {
          // Few rows (attention scores and values in a decode step): the vectorized skinny kernels, which
          // also read a transposed B along k instead of striding across it.
          if (M <= cpu::kSkinnyMaxM) {
            cpu::gemm_skinny<float, float>(a.trans, b.trans, M, N, K, alpha, a.ptr + a_off(i), a.ld, b.ptr + b_off(i),
                                           b.ld, beta, out + static_cast<int64_t>(i) * M * N, N, cpu::isa_level());
            continue;
          }
        }
        small_gemm<C>(M, N, K, alpha, a.ptr + a_off(i), a.row_stride(), a.col_stride(), b.ptr + b_off(i),
                      b.row_stride(), b.col_stride(), beta, out + static_cast<int64_t>(i) * M * N, N);
      }
    });
    return;
  }
  if constexpr (std::is_same_v<C, float>) {
    // Mid-sized float32 matrices (a prefill's attention: 128 x 128 x 64 per head): whole matrices in
    // parallel, each through kiln's own kernels on one thread. One at a time through threaded BLAS, each
    // call's start-up and barrier left the cores waiting (16 heads x 8 layers of 128 x 128 x 64: 10 ms
    // at 53 GFLOP/s).
    if (nbatch >= cpu::num_threads() && per <= kMidGemm && cpu::isa_level() != cpu::Isa::scalar) {
      cpu::parallel_for(static_cast<size_t>(nbatch), 1, [&](size_t s, size_t e) {
        for (size_t i = s; i < e; ++i) {
          cpu::gemm_f32<float, float>(a.trans, b.trans, M, N, K, alpha, a.ptr + a_off(i), a.ld, b.ptr + b_off(i),
                                      b.ld, beta, out + static_cast<int64_t>(i) * M * N, N, cpu::isa_level());
        }
      });
      return;
    }
  }
  for (int64_t i = 0; i < nbatch; ++i) {
    cpu::gemm(a.trans, b.trans, M, N, K, alpha, a.ptr + a_off(i), a.ld, b.ptr + b_off(i), b.ld, beta,
              out + i * M * N, N);
  }
}

}  // namespace kiln::linalg_detail
