// CPU kernels of Softmax and LogSumExp, both over the last axis, one row at a time. Both subtract the row
// maximum before exponentiating, so large inputs do not overflow; a NaN anywhere in a row makes the
// maximum NaN and so the whole row's result NaN.
#include <cmath>
#include <limits>

#include "backend/cpu/dispatch.h"
#include "backend/cpu/loops.h"
#include "backend/cpu/threading.h"
#include "primitives/reduce.h"

namespace kiln {

namespace {

template <typename A, typename T>
inline A row_max(const T* x, int64_t m) {
  A mx = -std::numeric_limits<A>::infinity();
  for (int64_t i = 0; i < m; ++i) {
    A v = static_cast<A>(x[i]);
    mx = (v > mx || v != v) ? v : mx;
    if (mx != mx) break;
  }
  return mx;
}

// Accumulates in A (float for float16/bfloat16 inputs, the type itself otherwise).
template <typename T, typename A>
void softmax_row(const T* x, T* y, int64_t m) {
  const A mx = row_max<A>(x, m);
  A sum = 0;
  if constexpr (std::is_same_v<T, A>) {
    for (int64_t i = 0; i < m; ++i) {
      A e = std::exp(x[i] - mx);
      y[i] = e;
      sum += e;
    }
    const A inv = A(1) / sum;
    for (int64_t i = 0; i < m; ++i) y[i] *= inv;
  } else {
    for (int64_t i = 0; i < m; ++i) sum += std::exp(static_cast<A>(x[i]) - mx);
    const A inv = A(1) / sum;
    for (int64_t i = 0; i < m; ++i) y[i] = T(std::exp(static_cast<A>(x[i]) - mx) * inv);
  }
}

// Softmax of float16/bfloat16 without `precise`: like MLX, each intermediate (the shifted input, the
// exponentials, the running normalizer) is rounded to T, so results match MLX's, not a float computation.
template <typename T>
void softmax_row_lowp(const T* x, T* y, int64_t m) {
  const float mx = row_max<float>(x, m);
  T sum(0.0f);
  for (int64_t i = 0; i < m; ++i) {
    T d(static_cast<float>(x[i]) - mx);
    T e(std::exp(static_cast<float>(d)));
    y[i] = e;
    sum = T(static_cast<float>(sum) + static_cast<float>(e));
  }
  const T inv(1.0f / static_cast<float>(sum));
  for (int64_t i = 0; i < m; ++i) y[i] = T(static_cast<float>(y[i]) * static_cast<float>(inv));
}

template <typename T, typename A>
T logsumexp_row(const T* x, int64_t m) {
  const A mx = row_max<A>(x, m);
  if (std::isinf(mx)) return T(mx);
  A sum = 0;
  for (int64_t i = 0; i < m; ++i) sum += std::exp(static_cast<A>(x[i]) - mx);
  return T(std::log(sum) + mx);
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
  cpu::dispatch_float(x.dtype(), "softmax", [&](auto tag) {
    using T = decltype(tag);
    const T* src = x.data<T>();
    T* dst = out[0].data<T>();
    cpu::parallel_for(static_cast<size_t>(rows), grain, [&](size_t b, size_t e) {
      for (size_t r = b; r < e; ++r) {
        const T* xr = src + r * m;
        T* yr = dst + r * m;
        if constexpr (cpu::is_half_v<T>) {
          if (precise) softmax_row<T, float>(xr, yr, m);
          else softmax_row_lowp<T>(xr, yr, m);
        } else {
          softmax_row<T, T>(xr, yr, m);
        }
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
  cpu::dispatch_float(x.dtype(), "logsumexp", [&](auto tag) {
    using T = decltype(tag);
    using A = cpu::acc_t<T>;
    const T* src = x.data<T>();
    T* dst = out[0].data<T>();
    cpu::parallel_for(static_cast<size_t>(rows), grain, [&](size_t b, size_t e) {
      for (size_t r = b; r < e; ++r) dst[r] = logsumexp_row<T, A>(src + r * m, m);
    });
  });
}

}  // namespace kiln
