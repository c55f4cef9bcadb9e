// CPU kernel of SearchSorted (its row and rules: src/primitives/sort/search_sorted.cpp): one binary
// search of the sequence per value, in the order of cpu::nan_last_less (backend/cpu/ordering.h).
#include <cmath>

#include "backend/cpu/loops.h"
#include "backend/cpu/ordering.h"
#include "kiln/primitive.h"

namespace kiln::cpu {

namespace {

using cpu::nan_last_less;

template <typename T, bool Right>
void search(const T* seq, uint32_t n, const T* v, uint32_t* out, size_t count) {
  cpu::parallel_for(count, cpu::kGrainMedium, [&](size_t b, size_t e) {
    for (size_t i = b; i < e; ++i) {
      uint32_t lo = 0, hi = n;
      const T x = v[i];
      while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        bool below = Right ? !nan_last_less(x, seq[mid]) : nan_last_less(seq[mid], x);
        if (below) lo = mid + 1;
        else hi = mid;
      }
      out[i] = lo;
    }
  });
}

}  // namespace

void search_sorted_cpu(const Node& node, const std::vector<array>& in, std::vector<array>& out) {
  out[0].alloc();
  if (out[0].size() == 0) return;
  array seq = in[0].row_contiguous() ? in[0] : cpu::contiguous_copy(in[0]);
  array v = in[1].row_contiguous() ? in[1] : cpu::contiguous_copy(in[1]);
  const bool right = node.state.b(0);
  const auto n = static_cast<uint32_t>(seq.size());
  detail::dispatch_all(seq.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if (right) search<T, true>(seq.data<T>(), n, v.data<T>(), out[0].data<uint32_t>(), v.size());
    else search<T, false>(seq.data<T>(), n, v.data<T>(), out[0].data<uint32_t>(), v.size());
  });
}

}  // namespace kiln::cpu
