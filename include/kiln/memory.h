// kiln's memory API, with MLX's names and semantics (mlx/memory.h). It reports on and controls the
// buffers kiln allocates for array data (src/core/allocator.cpp); memory an array only borrows (a file
// mapping, a caller's buffer) and kiln's small bookkeeping objects are not counted. All functions are
// thread-safe.
//
// Array buffers of 16 KiB or more are rounded up to a size class (4 classes per power of two, so at
// most 25% larger; always a multiple of the 4 KiB page) and, when freed, kept in a cache; a later
// allocation of the same class takes the most recently freed block of that class instead of asking the
// system for fresh pages. Smaller buffers are rounded to 64 bytes and go straight to the system
// allocator (glibc already caches those).
#pragma once

#include <cstddef>

namespace kiln {

// Bytes of array buffers in use now (size classes, so slightly above the arrays' nbytes). Does not
// include the cache.
size_t get_active_memory();

// The most active memory seen since the program started or the last reset_peak_memory().
size_t get_peak_memory();

// Set the peak to zero (as MLX; the next allocation raises it to the active memory).
void reset_peak_memory();

// Bytes held in the cache: freed buffers not yet returned to the system allocator.
size_t get_cache_memory();

// The memory limit is a guideline, as in MLX: kiln never fails an allocation because of it. When an
// allocation misses the cache and active + cache + the new block would exceed the limit, cached blocks
// (least recently freed first) are returned to the system before the new block is requested. Defaults
// to 80% of physical memory (MLX's CPU default), or 8 GiB when that cannot be read.
// Returns the previous limit.
size_t set_memory_limit(size_t limit);
size_t get_memory_limit();

// The most bytes the cache keeps. Blocks beyond it are returned to the system, least recently freed
// first, at once (when the limit is lowered) and whenever a free would exceed it. 0 disables the
// cache. Defaults to a quarter of physical memory (2 GiB when that cannot be read), and never above
// the memory limit's default. Returns the previous limit.
size_t set_cache_limit(size_t limit);

// Return every cached block to the system.
void clear_cache();

// The wired limit keeps memory resident for a GPU (Metal); kiln wires nothing, so, as in MLX's builds
// without a GPU, the limit has no effect and the previous limit reported is always 0.
size_t set_wired_limit(size_t limit);

// MLX's allocator interface (mlx/allocator.h), for code that hands kiln a buffer it filled itself:
// allocator::malloc gives a block of kiln's array allocator (counted and cached as above), which
// array(Buffer, shape, dtype, deleter) (kiln/array.h) uses without copying; allocator::free returns it.
namespace allocator {
class Buffer {
 public:
  Buffer() = default;
  Buffer(void* ptr, size_t size) : ptr_(ptr), size_(size) {}
  void* raw_ptr() const { return ptr_; }
  const void* ptr() const { return ptr_; }
  size_t size() const { return size_; }  // the bytes asked for

 private:
  void* ptr_ = nullptr;
  size_t size_ = 0;
};
// Throws std::bad_alloc when the system has no memory for it.
Buffer malloc(size_t size);
// Frees a block from allocator::malloc (a default-constructed Buffer is ignored).
void free(Buffer buffer);
}  // namespace allocator

}  // namespace kiln
