// The array-buffer allocator: size classes and a cache of freed blocks (include/kiln/memory.h is its
// public face). Blocks come from the aligned global operator new (64-byte alignment), so a program that
// replaces operator new (tests/hostile/alloc_counter.cpp) still sees every byte, cached ones included.
#pragma once

#include <cstddef>

namespace kiln::detail {

// Blocks below this many bytes bypass the cache.
inline constexpr size_t kCacheMinBytes = size_t(16) << 10;

// The bytes a buffer of `nbytes` occupies: below kCacheMinBytes, `nbytes` rounded up to 64; from there,
// rounded up to a multiple of 2^(k-2) where 2^k <= nbytes < 2^(k+1) (4 classes per power of two, at
// most 25% more, always whole 4 KiB pages). Throws std::bad_alloc when that does not fit in size_t.
size_t buffer_capacity(size_t nbytes);

// A 64-byte aligned block of buffer_capacity(nbytes) bytes: the most recently freed cached block of
// that class, or a new one. Throws std::bad_alloc.
void* buffer_malloc(size_t nbytes);

// Give back a block from buffer_malloc(nbytes) (the same nbytes): into the cache or to the system.
void buffer_free(void* ptr, size_t nbytes) noexcept;

// While a ScratchScope lives on a thread, the blocks of at most kScratchMaxBytes that the thread frees
// are kept on a short per-thread list (at most kScratchBlocks) and handed back by its next
// buffer_malloc of the same capacity, without the cache's lock: the tile buffers of the fused-group
// runner (src/backend/cpu/fusion.cpp) cycle there, hot in the core's cache. Leaving the outermost
// scope gives the kept blocks to the cache. Kept blocks count as active memory.
inline constexpr size_t kScratchMaxBytes = size_t(1) << 20;
inline constexpr size_t kScratchBlocks = 32;
class ScratchScope {
 public:
  ScratchScope();
  ~ScratchScope();
  ScratchScope(const ScratchScope&) = delete;
  ScratchScope& operator=(const ScratchScope&) = delete;
};

}  // namespace kiln::detail
