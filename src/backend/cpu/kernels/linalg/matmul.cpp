// CPU kernels of Matmul and AddMM through BLAS (cpu::gemm, which picks kiln's kernels or OpenBLAS).
// Operands whose strides BLAS can express (row- or column-major with any leading dimension) are passed
// without copies; 16-bit floats are computed in float32 and rounded once. 16-bit operands with such strides
// go straight to the float32-accumulating kernels (backend/cpu/gemm/gemm.h), which widen them in registers or
// while packing: no whole-matrix conversion per call (a decode step used to convert every weight matrix).
#include <limits>

#include "backend/cpu/gemm/gemm.h"
#include "backend/cpu/kernels/linalg/linalg_internal.h"
#include "core/kernels.h"

namespace kiln {

namespace {

using namespace linalg_detail;

// Strides of `x` broadcast (right-aligned) to `shape`.
Strides broadcast_strides(const array& x, const Shape& shape) {
  Strides st(shape.size(), 0);
  const int lead = static_cast<int>(shape.size() - x.ndim());
  for (int i = 0; i < static_cast<int>(x.ndim()); ++i) st[lead + i] = x.shape()[i] == 1 ? 0 : x.strides()[i];
  return st;
}

// Whether a's matrices follow one another row after row, so that with b shared by every batch entry
// the whole batch is one (batch·M × K) product.
template <typename C>
bool rows_stack(const MatOperand<C>& a, const MatOperand<C>& b, const Shape& batch, int M) {
  if (a.trans) return false;
  for (auto s : b.batch_strides) {
    if (s != 0) return false;
  }
  int64_t expect = static_cast<int64_t>(M) * a.ld;
  for (int d = static_cast<int>(batch.size()) - 1; d >= 0; --d) {
    if (batch[d] != 1 && a.batch_strides[d] != expect) return false;
    expect *= batch[d];
  }
  return true;
}

// How many of the innermost batch entries share one B and have their A rows stacked (row-contiguous
// after each other): the grouped-query attention of a decode step, where each key/value head's matrix
// is broadcast to the query heads that read it. Those entries are one product with that many times the
// rows, which reads B once instead of once per entry. 1 when there is nothing to fold.
template <typename C>
int64_t folded_entries(const MatOperand<C>& a, const MatOperand<C>& b, const Shape& batch, int M) {
  if (a.trans) return 1;
  int64_t fold = 1, expect = static_cast<int64_t>(M) * a.ld;
  for (int d = static_cast<int>(batch.size()) - 1; d >= 0; --d) {
    if (batch[d] == 1) continue;
    if (b.batch_strides[d] != 0 || a.batch_strides[d] != expect) break;
    fold *= batch[d];
    expect *= batch[d];
  }
  return fold;
}

// The matrices of `x` (storage type S) as they are, when BLAS-style strides describe them.
template <typename S>
bool native_operand(const array& x, const Shape& batch, MatOperand<S>& op) {
  const int nd = static_cast<int>(x.ndim());
  if (!blas_layout(x.shape()[nd - 2], x.shape()[nd - 1], x.strides()[nd - 2], x.strides()[nd - 1], op.trans, op.ld)) {
    return false;
  }
  op.ptr = base_ptr<S>(x);
  op.batch_strides = aligned_batch_strides(x.shape(), x.strides(), batch);
  return true;
}

// 16-bit operands in place: dst (nbatch × M × N, float) = alpha · A @ B + beta · dst by gemm_f32, when
// both operands have BLAS-style strides and the batch is one product or made of large ones (a batch of
// small matrices is faster through batched_gemm's parallel loop, converting the small operands). False
// when not taken.
template <typename T, typename C>
bool half_direct(const array& A, const array& B, const Shape& batch, int64_t nbatch, int M, int N, int K, float alpha,
                 C beta, C* dst) {
  if constexpr (!detail::is_half_v<T>) {
    return false;
  } else {
    MatOperand<T> a, b;
    if (!native_operand<T>(A, batch, a) || !native_operand<T>(B, batch, b)) return false;
    if (nbatch > 1 && rows_stack(a, b, batch, M)) {
      cpu::gemm_f32<T, T>(false, b.trans, nbatch * M, N, K, alpha, a.ptr, a.ld, b.ptr, b.ld, beta, dst, N);
      return true;
    }
    if (nbatch > 1 && static_cast<int64_t>(M) * N * K <= kSmallGemm) return false;
    for (int64_t i = 0; i < nbatch; ++i) {
      cpu::gemm_f32<T, T>(a.trans, b.trans, M, N, K, alpha, a.ptr + batch_offset(i, batch, a.batch_strides), a.ld,
                          b.ptr + batch_offset(i, batch, b.batch_strides), b.ld, beta, dst + i * M * N, N);
    }
    return true;
  }
}

// out = alpha · (A @ B) + beta · Cin (Cin optional), for storage type T.
template <typename T>
void product(const array& A, const array& B, const array* Cin, array& out, float alpha, float beta) {
  using C = compute_t<T>;
  out.alloc();
  if (out.size() == 0) return;
  const int nd = static_cast<int>(out.ndim());
  const int M = out.shape()[nd - 2], N = out.shape()[nd - 1], K = A.shape()[A.ndim() - 1];
  const Shape batch(out.shape().begin(), out.shape().end() - 2);
  const int64_t nbatch = static_cast<int64_t>(out.size() / (static_cast<size_t>(M) * N));

  std::shared_ptr<detail::Data> tmp;
  C* dst = compute_dst<C, T>(out, tmp);
  C cbeta(0);
  if (Cin) {
    strided_cast_copy<T, C>(base_ptr<T>(*Cin), out.shape(), broadcast_strides(*Cin, out.shape()), dst,
                            row_major_strides(out.shape()));
    cbeta = C(beta);
  }
  if (K == 0) {
    // The product is zero: the result is beta · c (or zeros).
    if (!Cin) {
      std::fill(dst, dst + out.size(), C(0));
    } else if (beta != 1.0f) {
      for (size_t i = 0; i < out.size(); ++i) dst[i] *= cbeta;
    }
  } else if (half_direct<T>(A, B, batch, nbatch, M, N, K, alpha, cbeta, dst)) {
    // done: 16-bit operands read in place
  } else {
    MatOperand<C> a = prepare_operand<T, C>(A, batch);
    MatOperand<C> b = prepare_operand<T, C>(B, batch);
    int64_t fold = 1;
    if (nbatch > 1 && nbatch * M <= std::numeric_limits<int>::max() && rows_stack(a, b, batch, M)) {
      cpu::gemm(false, b.trans, static_cast<int>(nbatch * M), N, K, C(alpha), a.ptr, a.ld, b.ptr, b.ld, cbeta, dst, N);
    } else if (std::is_same_v<C, float> && nbatch > 1 && (fold = folded_entries(a, b, batch, M)) > 1 &&
               fold * M <= cpu::kSkinnyMaxM) {
      // Decode-step attention: each group of `fold` entries (query heads sharing a key/value head) is one
      // product of fold · M rows, a.ld apart.
      batched_gemm<C>(
          nbatch / fold, static_cast<int>(fold * M), N, K, C(alpha), a, b, cbeta, dst,
          [&](int64_t i) { return batch_offset(i * fold, batch, a.batch_strides); },
          [&](int64_t i) { return batch_offset(i * fold, batch, b.batch_strides); });
    } else {
      batched_gemm<C>(
          nbatch, M, N, K, C(alpha), a, b, cbeta, dst,
          [&](int64_t i) { return batch_offset(i, batch, a.batch_strides); },
          [&](int64_t i) { return batch_offset(i, batch, b.batch_strides); });
    }
  }
  if constexpr (!std::is_same_v<C, T>) {
    T* o = out.data<T>();
    const size_t n = out.size();
    cpu::parallel_for(n, cpu::kGrainCheap, [&](size_t s, size_t e) {
      for (size_t i = s; i < e; ++i) o[i] = T(dst[i]);
    });
  }
}

template <typename F>
void dispatch_inexact(Dtype t, const char* api, F&& f) {
  switch (t.val) {
    case Dtype::Val::float16: return f(float16_t{});
    case Dtype::Val::bfloat16: return f(bfloat16_t{});
    case Dtype::Val::float32: return f(float{});
    case Dtype::Val::float64: return f(double{});
    case Dtype::Val::complex64: return f(complex64_t{});
    default:
      throw std::invalid_argument(std::string("[") + api + "] Only inexact types are supported but found " +
                                  dtype_name(t) + ".");
  }
}

void matmul_cpu(const Node&, const std::vector<array>& in, std::vector<array>& out) {
  dispatch_inexact(out[0].dtype(), "matmul", [&](auto tag) {
    product<decltype(tag)>(in[0], in[1], nullptr, out[0], 1.0f, 0.0f);
  });
}

void addmm_cpu(const Node& node, const std::vector<array>& in, std::vector<array>& out) {
  const float alpha = node.state.f(0), beta = node.state.f(1);
  dispatch_inexact(out[0].dtype(), "addmm", [&](auto tag) {
    product<decltype(tag)>(in[0], in[1], &in[2], out[0], alpha, beta);
  });
}

}  // namespace

namespace linalg_detail {
void register_matmul_kernels(detail::KernelTable& table) {
  table.add({{"Matmul", matmul_cpu}, {"AddMM", addmm_cpu}});
}
}  // namespace linalg_detail

}  // namespace kiln
