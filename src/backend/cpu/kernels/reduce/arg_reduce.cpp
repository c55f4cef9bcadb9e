// CPU kernel of ArgReduce (ArgMin, ArgMax) along one axis of any strided input. As in MLX, the first
// element is the starting candidate and only a strictly better value replaces it: ties keep the first
// index, a NaN in first place wins, and a later NaN is never chosen. Complex numbers compare
// lexicographically (real part, then imaginary part).
#include <algorithm>
#include <memory>

#include "core/dispatch.h"
#include "backend/cpu/ordering.h"
#include "backend/cpu/threading.h"
#include "backend/cpu/kernels/reduce/reduce_kernels.h"

namespace kiln {

namespace {

using reduce::Dim;
using reduce::kept_offset;

template <typename A, bool IsMax>
inline bool better(const A& x, const A& best) {
  return IsMax ? cpu::ordered_greater(x, best) : cpu::ordered_less(x, best);
}

template <typename T, bool IsMax>
void run_arg(const array& in, array& out, int axis) {
  using A = detail::acc_t<T>;
  out.alloc();
  uint32_t* dst = out.data<uint32_t>();
  const T* src = static_cast<const T*>(in.raw_data());
  reduce::ReducePlan plan = reduce::make_plan(in.shape(), in.strides(), {axis});
  if (plan.out_size == 0) return;
  if (plan.red.empty()) {  // axis of size 0 or 1: the first index
    std::fill(dst, dst + plan.out_size, 0u);
    return;
  }
  const Dim r = plan.red[0];
  const auto& kept = plan.kept;
  const int nk = static_cast<int>(kept.size());
  const int64_t nout = plan.out_size;
  const bool row_mode = kept.empty() || std::llabs(r.stride) < std::llabs(kept.back().stride);
  if (row_mode) {
    const size_t grain = std::max<size_t>(1, cpu::kGrainCheap / static_cast<size_t>(r.n));
    cpu::parallel_for(static_cast<size_t>(nout), grain, [&](size_t b, size_t e) {
      for (size_t o = b; o < e; ++o) {
        const T* p = src + kept_offset(static_cast<int64_t>(o), kept.data(), nk);
        A best = static_cast<A>(p[0]);
        uint32_t idx = 0;
        for (int64_t i = 1; i < r.n; ++i) {
          A v = static_cast<A>(p[i * r.stride]);
          if (better<A, IsMax>(v, best)) {
            best = v;
            idx = static_cast<uint32_t>(i);
          }
        }
        dst[o] = idx;
      }
    });
    return;
  }
  // Column mode: keep a block of candidates along the innermost kept dim and sweep the axis over it.
  const Dim inner = kept.back();
  const int64_t nouter = nout / inner.n;
  const int64_t chunk = reduce::column_chunk(inner.n, nouter, 512);
  const int64_t nchunks = (inner.n + chunk - 1) / chunk;
  const size_t grain = std::max<size_t>(1, cpu::kGrainCheap / static_cast<size_t>(chunk * r.n));
  cpu::parallel_for(static_cast<size_t>(nouter * nchunks), grain, [&](size_t b, size_t e) {
    std::unique_ptr<A[]> best(new A[static_cast<size_t>(chunk)]);  // not vector: A may be bool
    for (size_t t = b; t < e; ++t) {
      const int64_t o = static_cast<int64_t>(t) / nchunks;
      const int64_t j0 = (static_cast<int64_t>(t) % nchunks) * chunk;
      const int64_t len = std::min(chunk, inner.n - j0);
      const T* p = src + kept_offset(o, kept.data(), nk - 1) + j0 * inner.stride;
      uint32_t* idx = dst + o * inner.n + j0;
      for (int64_t j = 0; j < len; ++j) {
        best[j] = static_cast<A>(p[j * inner.stride]);
        idx[j] = 0;
      }
      for (int64_t i = 1; i < r.n; ++i) {
        const T* row = p + i * r.stride;
        for (int64_t j = 0; j < len; ++j) {
          A v = static_cast<A>(row[j * inner.stride]);
          if (better<A, IsMax>(v, best[j])) {
            best[j] = v;
            idx[j] = static_cast<uint32_t>(i);
          }
        }
      }
    }
  });
}

}  // namespace

void reduce::arg_reduce_cpu(const Node& node, const std::vector<array>& in, std::vector<array>& out) {
  const bool is_max = node.state.i(0) == ArgMax;
  const int axis = node.state.i(1);
  detail::dispatch_all(in[0].dtype(), [&](auto tag) {
    using T = decltype(tag);
    if (is_max) run_arg<T, true>(in[0], out[0], axis);
    else run_arg<T, false>(in[0], out[0], axis);
  });
}

}  // namespace kiln
