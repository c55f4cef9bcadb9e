// CPU kernels of Softmax and LogSumExp, both over the last axis, one row at a time. Both subtract the row
// maximum before exponentiating, so large inputs do not overflow; a NaN anywhere in a row makes the
// maximum NaN and so the whole row's result NaN.
#include <algorithm>
#include <cmath>
#include <vector>
#include <limits>

#include "core/dispatch.h"
#include "backend/cpu/loops.h"
#include "backend/cpu/threading.h"
#include "backend/cpu/kernels/reduce/reduce_kernels.h"
#include "backend/cpu/kernels/reduce/reduce_simd.h"

namespace kiln {

namespace {

using reduce::extreme_contig;
using reduce::fast_exp;
using reduce::sum_contig;

// Softmax of a contiguous float or double row.
template <typename A>
void softmax_row(const A* x, A* y, int64_t m) {
  const A mx = extreme_contig<true>(x, m);
  reduce::exp_shifted(x, mx, y, m);
  const A inv = A(1) / sum_contig(y, m);
  for (int64_t i = 0; i < m; ++i) y[i] *= inv;
}

// Softmax of float16/bfloat16 without `precise`: like MLX, each intermediate (the shifted input, the
// exponentials, the running normalizer) is rounded to T, so results match MLX's, not a float computation.
template <typename T>
void softmax_row_lowp(const float* x, T* y, int64_t m) {
  const float mx = extreme_contig<true>(x, m);
  T sum(0.0f);
  for (int64_t i = 0; i < m; ++i) {
    T d(x[i] - mx);
    T e(fast_exp(static_cast<float>(d)));
    y[i] = e;
    sum = T(static_cast<float>(sum) + static_cast<float>(e));
  }
  const T inv(1.0f / static_cast<float>(sum));
  for (int64_t i = 0; i < m; ++i) y[i] = T(static_cast<float>(y[i]) * static_cast<float>(inv));
}

template <typename A>
A logsumexp_row(const A* x, int64_t m) {
  const A mx = extreme_contig<true>(x, m);
  if (std::isinf(mx)) return mx;
  // Exponentials in blocks, so both loops vectorize.
  constexpr int64_t B = 256;
  A buf[B];
  A sum = 0;
  for (int64_t i = 0; i < m; i += B) {
    const int64_t len = std::min(B, m - i);
    reduce::exp_shifted(x + i, mx, buf, len);
    sum += sum_contig(buf, len);
  }
  return std::log(sum) + mx;
}

}  // namespace

void reduce::softmax_cpu(const Node& node, const std::vector<array>& in, std::vector<array>& out) {
  const bool precise = node.state.b(0);
  const array x = cpu::contiguous_copy(in[0]);
  out[0].alloc();
  if (x.size() == 0) return;
  const int64_t m = x.shape().back();
  const int64_t rows = static_cast<int64_t>(x.size()) / m;
  const size_t grain = std::max<size_t>(1, cpu::kGrainMedium / static_cast<size_t>(m));
  detail::dispatch_float(x.dtype(), "softmax", [&](auto tag) {
    using T = decltype(tag);
    const T* src = x.data<T>();
    T* dst = out[0].data<T>();
    cpu::parallel_for(static_cast<size_t>(rows), grain, [&](size_t b, size_t e) {
      if constexpr (detail::is_half_v<T>) {
        // Rows go through float buffers; `precise` computes in float and rounds once.
        std::vector<float> xf(m), yf(m);
        for (size_t r = b; r < e; ++r) {
          const T* xr = src + r * m;
          T* yr = dst + r * m;
          for (int64_t i = 0; i < m; ++i) xf[i] = static_cast<float>(xr[i]);
          if (precise) {
            softmax_row(xf.data(), yf.data(), m);
            for (int64_t i = 0; i < m; ++i) yr[i] = T(yf[i]);
          } else {
            softmax_row_lowp<T>(xf.data(), yr, m);
          }
        }
      } else {
        for (size_t r = b; r < e; ++r) softmax_row(src + r * m, dst + r * m, m);
      }
    });
  });
}

void reduce::logsumexp_cpu(const Node& node, const std::vector<array>& in, std::vector<array>& out) {
  const array x = cpu::contiguous_copy(in[0]);
  out[0].alloc();
  if (out[0].size() == 0) return;
  const int64_t m = x.shape().back();
  const int64_t rows = static_cast<int64_t>(out[0].size());
  const size_t grain = std::max<size_t>(1, cpu::kGrainMedium / static_cast<size_t>(std::max<int64_t>(m, 1)));
  detail::dispatch_float(x.dtype(), "logsumexp", [&](auto tag) {
    using T = decltype(tag);
    const T* src = x.data<T>();
    T* dst = out[0].data<T>();
    cpu::parallel_for(static_cast<size_t>(rows), grain, [&](size_t b, size_t e) {
      if constexpr (detail::is_half_v<T>) {
        std::vector<float> xf(m);
        for (size_t r = b; r < e; ++r) {
          for (int64_t i = 0; i < m; ++i) xf[i] = static_cast<float>(src[r * m + i]);
          dst[r] = T(logsumexp_row(xf.data(), m));
        }
      } else {
        for (size_t r = b; r < e; ++r) dst[r] = logsumexp_row(src + r * m, m);
      }
    });
  });
}

}  // namespace kiln
