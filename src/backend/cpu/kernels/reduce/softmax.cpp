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
#include "backend/cpu/kernels/fast/fast_kernels.h"
#include "backend/cpu/kernels/fast/row_kernels.h"

namespace kiln {

namespace {

using reduce::extreme_contig;
using reduce::sum_contig;

// Softmax of a contiguous double row (other types use fastk::rows).
template <typename A>
void softmax_row(const A* x, A* y, int64_t m) {
  const A mx = extreme_contig<true>(x, m);
  reduce::exp_shifted(x, mx, y, m);
  const A inv = A(1) / sum_contig(y, m);
  for (int64_t i = 0; i < m; ++i) y[i] *= inv;
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

// Rows of `x` (all axes but the last) with a unit last stride, without copying row-strided inputs.
struct RowView {
  array x;
  int64_t m = 0, rows = 0;
  bool contiguous = true;
  RowView(const array& in, int64_t nrows) : x(fastk::unit_last_stride(in)), m(in.shape().back()), rows(nrows) {
    contiguous = x.row_contiguous();
  }
  template <typename T>
  const T* row(int64_t r) const {
    return x.data<T>() + (contiguous ? r * m : fastk::row_offset(x, r));
  }
  // The row after r when this thread's range [.., e) has one (the row kernels prefetch it), else null.
  template <typename T>
  const T* next_row(size_t r, size_t e) const {
    return r + 1 < e ? row<T>(static_cast<int64_t>(r + 1)) : nullptr;
  }
};

}  // namespace

// float, float16 and bfloat16 rows run the vector loops of fastk::rows (two passes over each row: the
// maximum, then exp and the sum with the exponentials kept, then one scaling pass over the output; the
// exponentials' pass prefetches the thread's next row, so only the first row of each thread waits for
// memory); float64 rows the loops above. Rows run in parallel.
void reduce::softmax_cpu(const Node& node, const std::vector<array>& in, std::vector<array>& out) {
  const bool precise = node.state.b(0);
  out[0].alloc();
  if (in[0].size() == 0) return;
  const int64_t m = in[0].shape().back();
  const int64_t rows = static_cast<int64_t>(in[0].size()) / m;
  const RowView X(in[0], rows);
  const size_t grain = std::max<size_t>(1, cpu::kGrainMedium / static_cast<size_t>(m));
  detail::dispatch_float(in[0].dtype(), "softmax", [&](auto tag) {
    using T = decltype(tag);
    T* dst = out[0].data<T>();
    if constexpr (std::is_same_v<T, double>) {
      cpu::parallel_for(static_cast<size_t>(rows), grain, [&](size_t b, size_t e) {
        for (size_t r = b; r < e; ++r) softmax_row(X.row<T>(static_cast<int64_t>(r)), dst + r * m, m);
      });
    } else {
      const auto& f = fastk::rows::of<T>(fastk::rows::row_fns());
      // Outputs larger than the caches are written with streaming stores (the exponentials go to a
      // per-thread scratch row first): 4.7-5.0 -> 4.5-4.8 ms for 4096 x 4096 float32 rows, once the
      // exponentials had been shortened and the next row prefetched (before that, the exponentials
      // bound the loop and streaming gained nothing).
      const bool stream = out[0].nbytes() >= fastk::rows::kStreamBytes;
      cpu::parallel_for(static_cast<size_t>(rows), grain, [&](size_t b, size_t e) {
        std::vector<float> scratch(std::is_same_v<T, float> && !stream ? 0 : static_cast<size_t>(m));
        for (size_t r = b; r < e; ++r) {
          f.softmax(X.row<T>(static_cast<int64_t>(r)), dst + r * m, m, precise, scratch.data(), stream,
                    X.next_row<T>(r, e));
        }
      });
    }
  });
}

void reduce::logsumexp_cpu(const Node& node, const std::vector<array>& in, std::vector<array>& out) {
  (void)node;
  out[0].alloc();
  if (out[0].size() == 0) return;
  const int64_t m = in[0].shape().back();
  const int64_t rows = static_cast<int64_t>(out[0].size());
  const size_t grain = std::max<size_t>(1, cpu::kGrainMedium / static_cast<size_t>(std::max<int64_t>(m, 1)));
  if (m == 0) {
    detail::dispatch_float(in[0].dtype(), "logsumexp", [&](auto tag) {
      using T = decltype(tag);
      for (int64_t r = 0; r < rows; ++r) out[0].data<T>()[r] = T(-std::numeric_limits<float>::infinity());
    });
    return;
  }
  const RowView X(in[0], rows);
  detail::dispatch_float(in[0].dtype(), "logsumexp", [&](auto tag) {
    using T = decltype(tag);
    T* dst = out[0].data<T>();
    if constexpr (std::is_same_v<T, double>) {
      cpu::parallel_for(static_cast<size_t>(rows), grain, [&](size_t b, size_t e) {
        for (size_t r = b; r < e; ++r) dst[r] = logsumexp_row(X.row<T>(static_cast<int64_t>(r)), m);
      });
    } else {
      const auto& f = fastk::rows::of<T>(fastk::rows::row_fns());
      cpu::parallel_for(static_cast<size_t>(rows), grain, [&](size_t b, size_t e) {
        for (size_t r = b; r < e; ++r) dst[r] = T(f.logsumexp(X.row<T>(static_cast<int64_t>(r)), m, X.next_row<T>(r, e)));
      });
    }
  });
}

}  // namespace kiln
