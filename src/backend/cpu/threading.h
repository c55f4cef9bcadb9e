// A small fork-join pool: kernels split large loops across the machine's cores.
#pragma once

#include <cstddef>
#include <functional>

namespace kiln::cpu {

// Number of worker threads used (hardware concurrency, or KILN_NUM_THREADS).
int num_threads();

// Run fn(begin, end) over [0, n) in chunks of at least `grain` items, on several threads when n is
// large. Calls nested inside a parallel region run serially.
void parallel_for(size_t n, size_t grain, const std::function<void(size_t, size_t)>& fn);

// Grain sizes by cost per element.
inline constexpr size_t kGrainCheap = 1 << 15;
inline constexpr size_t kGrainMedium = 1 << 12;

}  // namespace kiln::cpu
