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

// At most this many chunks per thread, of equal size, handed out as threads come free. With 4 a thread
// that finished first waited for the other's last chunk (up to an eighth of the job on 2 threads): in a
// 4-bit llama decode step the caller spun in parallel_for for 3.6-4.7% of the process's samples (`perf`),
// 2.1% with 16.
inline constexpr size_t kChunksPerThread = 16;

// Grain sizes by cost per element.
inline constexpr size_t kGrainCheap = 1 << 15;
inline constexpr size_t kGrainMedium = 1 << 12;

}  // namespace kiln::cpu
