// Heap accounting for the hostile-file tests: this executable replaces the global operator new and
// delete (and kiln's array buffers come from the aligned operator new, src/core/array.cpp), so every
// byte kiln allocates is counted. Not available under ASan/TSan, which own the allocator.
#pragma once

#include <cstdint>

namespace kiln_test {

// Whether the counters below are live in this build.
bool alloc_counting();
// Bytes allocated now, and the most allocated at once since the last reset_peak().
uint64_t live_bytes();
uint64_t peak_bytes();
void reset_peak();

}  // namespace kiln_test
