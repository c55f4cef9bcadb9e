// The array-buffer allocator (src/core/allocator.h, include/kiln/memory.h).
//
// Why a cache: a buffer of more than glibc's mmap threshold (128 KiB to 32 MiB, adaptive) is a fresh
// mmap, zero-filled by the kernel one page fault at a time, and munmap'd on free. An element-wise chain
// over 16M floats paid ~525,000 minor faults a call that way. Freed blocks of 16 KiB or more are now
// kept, by size class, and handed out again; the cache is bounded (set_cache_limit) and gives back the
// least recently freed blocks first.
#include "core/allocator.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstdint>
#include <deque>
#include <limits>
#include <list>
#include <mutex>
#include <new>
#include <unordered_map>
#include <vector>

#include "kiln/memory.h"

namespace kiln {
namespace detail {
namespace {

constexpr std::align_val_t kAlign{64};

size_t physical_memory() {
  long pages = ::sysconf(_SC_PHYS_PAGES);
  long page = ::sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page <= 0) return 0;
  return static_cast<size_t>(pages) * static_cast<size_t>(page);
}

struct Block {
  void* ptr;
  size_t size;
};

class BufferCache {
 public:
  BufferCache() {
    size_t phys = physical_memory();
    // MLX's CPU allocator: 80% of physical memory, 8 GiB when unknown (mlx/backend/no_gpu/allocator.cpp).
    memory_limit_ = phys ? static_cast<size_t>(0.8 * static_cast<double>(phys)) : (size_t(1) << 33);
    cache_limit_ = std::min(memory_limit_, phys ? phys / 4 : (size_t(1) << 31));
  }

  void* malloc(size_t cap) {
    std::vector<Block> evicted;
    if (cap >= kCacheMinBytes) {
      std::unique_lock lk(mu_);
      auto it = by_size_.find(cap);
      if (it != by_size_.end() && !it->second.empty()) {
        auto node = it->second.back();
        it->second.pop_back();
        void* p = node->ptr;
        lru_.erase(node);
        cache_ -= cap;
        note_active(cap);
        return p;
      }
      // A miss: keep within the (advisory) memory limit by giving back cached blocks first.
      const size_t limit = memory_limit_;
      evict_while(evicted, [&] { return active_ + cache_ > limit || cap > limit - active_ - cache_; });
    }
    release(evicted);
    void* p = ::operator new(cap, kAlign, std::nothrow);
    if (!p) {
      clear();
      p = ::operator new(cap, kAlign, std::nothrow);
      if (!p) throw std::bad_alloc();
    }
    std::lock_guard lk(mu_);
    note_active(cap);
    return p;
  }

  void free(void* p, size_t cap) noexcept {
    std::vector<Block> evicted;
    {
      std::lock_guard lk(mu_);
      active_ -= cap;
      // Cached when it is large enough and fits the limit; otherwise to the system below, unlocked.
      if (cap >= kCacheMinBytes && cap <= cache_limit_ && push(p, cap)) {
        p = nullptr;
        try {
          evicted.reserve(lru_.size());
        } catch (...) {
        }
        while (cache_ > cache_limit_) {
          Block b = pop_oldest();
          if (evicted.size() < evicted.capacity()) {
            evicted.push_back(b);
          } else {
            ::operator delete(b.ptr, kAlign);  // no room to defer it: free it under the lock
          }
        }
      }
    }
    if (p) ::operator delete(p, kAlign);
    release(evicted);
  }

  // Small blocks kept on a thread's list (SmallCache below) count as cached memory.
  bool keep_small(size_t cap) noexcept {
    std::lock_guard lk(mu_);
    if (cache_limit_ == 0) return false;
    active_ -= cap;
    cache_ += cap;
    return true;
  }
  void take_small(size_t cap) noexcept {
    std::lock_guard lk(mu_);
    cache_ -= cap;
    note_active(cap);
  }
  void drop_small(size_t bytes) noexcept {
    std::lock_guard lk(mu_);
    cache_ -= bytes;
  }

  void clear() {
    std::vector<Block> evicted;
    {
      std::lock_guard lk(mu_);
      evict_while(evicted, [] { return true; });
    }
    release(evicted);
  }

  size_t set_cache_limit(size_t limit) {
    std::vector<Block> evicted;
    {
      std::lock_guard lk(mu_);
      std::swap(cache_limit_, limit);
      evict_while(evicted, [&] { return cache_ > cache_limit_; });
    }
    release(evicted);
    return limit;
  }

  size_t set_memory_limit(size_t limit) {
    std::lock_guard lk(mu_);
    std::swap(memory_limit_, limit);
    return limit;
  }

  size_t memory_limit() { return locked_read(memory_limit_); }
  size_t active() { return locked_read(active_); }
  size_t peak() { return locked_read(peak_); }
  size_t cached() { return locked_read(cache_); }
  void reset_peak() {
    std::lock_guard lk(mu_);
    peak_ = 0;
  }

 private:
  using List = std::list<Block>;

  void note_active(size_t cap) {
    active_ += cap;
    peak_ = std::max(peak_, active_);
  }

  // Into the cache as the most recently freed block; false when the bookkeeping could not allocate.
  bool push(void* p, size_t cap) noexcept {
    try {
      auto& stack = by_size_[cap];
      lru_.push_front(Block{p, cap});
      try {
        stack.push_back(lru_.begin());
      } catch (...) {
        lru_.pop_front();
        return false;
      }
    } catch (...) {
      return false;
    }
    cache_ += cap;
    return true;
  }

  // The least recently freed block, out of the cache (the caller frees it). Within a class, blocks are
  // stacked in the order they were freed, so the globally oldest one is the bottom of its class.
  Block pop_oldest() {
    Block b = lru_.back();
    auto& stack = by_size_[b.size];
    stack.pop_front();
    lru_.pop_back();
    cache_ -= b.size;
    return b;
  }

  size_t locked_read(const size_t& field) {
    std::lock_guard lk(mu_);
    return field;
  }

  // With mu_ held: moves the least recently freed blocks into `out` (freed by the caller, unlocked)
  // while the cache is not empty and `over()` holds.
  template <typename Over>
  void evict_while(std::vector<Block>& out, Over over) {
    if (lru_.empty() || !over()) return;
    out.reserve(out.size() + lru_.size());
    while (!lru_.empty() && over()) out.push_back(pop_oldest());
  }

  static void release(std::vector<Block>& blocks) noexcept {
    for (auto& b : blocks) ::operator delete(b.ptr, kAlign);
    blocks.clear();
  }

  std::mutex mu_;
  List lru_;  // front: most recently freed
  std::unordered_map<size_t, std::deque<List::iterator>> by_size_;  // back: most recently freed
  size_t active_ = 0, peak_ = 0, cache_ = 0;
  size_t memory_limit_ = 0, cache_limit_ = 0;
};

// Never destroyed: arrays in static storage may free their buffers after this file's statics are gone.
BufferCache& cache() {
  static BufferCache* c = new BufferCache();
  return *c;
}

struct ScratchList {
  int depth = 0;
  size_t count = 0;
  Block blocks[kScratchBlocks];
};
thread_local ScratchList t_scratch;

// Per-thread lists of freed small blocks (below kCacheMinBytes, 64-byte classes), handed back by the
// thread's next buffer_malloc of the same class. Without them every small buffer was a new aligned
// block from the C library (memalign), whose bookkeeping (and the fast-bin consolidation that its
// requests of 1 KiB or more trigger) cost ~0.17 ms of a 4-bit llama decode step's ~3 ms. Bounded per
// thread (kSmallPerClass blocks a class, kSmallThreadBytes in all); the blocks count as cached memory;
// clear_cache and set_cache_limit empty the calling thread's lists at once and the other threads' at
// their next small allocation or free (a generation count); a thread's lists are emptied when it exits.
constexpr size_t kSmallClasses = kCacheMinBytes / 64;
constexpr size_t kSmallPerClass = 64;
constexpr size_t kSmallThreadBytes = size_t(1) << 20;
std::atomic<uint64_t> g_small_generation{0};

struct SmallCache {
  std::vector<void*> lists[kSmallClasses];
  size_t bytes = 0;
  uint64_t generation = 0;

  static size_t index(size_t cap) { return cap / 64 - 1; }
  void sync() noexcept {
    const uint64_t g = g_small_generation.load(std::memory_order_acquire);
    if (g != generation) {
      flush();
      generation = g;
    }
  }
  void* take(size_t cap) noexcept {
    sync();
    auto& l = lists[index(cap)];
    if (l.empty()) return nullptr;
    void* p = l.back();
    l.pop_back();
    bytes -= cap;
    cache().take_small(cap);
    return p;
  }
  bool keep(void* p, size_t cap) noexcept {
    sync();
    auto& l = lists[index(cap)];
    if (l.size() >= kSmallPerClass || bytes + cap > kSmallThreadBytes) return false;
    try {
      l.reserve(kSmallPerClass);
    } catch (...) {
      return false;
    }
    if (!cache().keep_small(cap)) return false;
    l.push_back(p);
    bytes += cap;
    return true;
  }
  void flush() noexcept {
    if (bytes == 0) return;
    for (size_t i = 0; i < kSmallClasses; ++i) {
      for (void* p : lists[i]) ::operator delete(p, kAlign);
      lists[i].clear();
    }
    cache().drop_small(bytes);
    bytes = 0;
  }
  ~SmallCache();
};
thread_local SmallCache t_small;
// Set when the thread's lists are gone (buffers freed later in the thread's exit, or by static
// destructors after the main thread's thread_locals, go straight to the cache).
thread_local bool t_small_gone = false;
SmallCache::~SmallCache() {
  flush();
  t_small_gone = true;
}

// Empties every thread's small lists (the caller's now, the others' lazily).
void forget_small() noexcept {
  g_small_generation.fetch_add(1, std::memory_order_acq_rel);
  if (!t_small_gone) t_small.sync();
}

}  // namespace

ScratchScope::ScratchScope() { ++t_scratch.depth; }

ScratchScope::~ScratchScope() {
  if (--t_scratch.depth > 0) return;
  while (t_scratch.count > 0) {
    Block b = t_scratch.blocks[--t_scratch.count];
    cache().free(b.ptr, b.size);
  }
}

size_t buffer_capacity(size_t nbytes) {
  size_t n = std::max<size_t>(nbytes, 1);
  size_t step = 64;
  if (n >= kCacheMinBytes) step = std::bit_floor(n) >> 2;
  if (n > std::numeric_limits<size_t>::max() - (step - 1)) throw std::bad_alloc();
  return (n + step - 1) / step * step;
}

void* buffer_malloc(size_t nbytes) {
  const size_t cap = buffer_capacity(nbytes);
  ScratchList& s = t_scratch;
  if (s.depth > 0) {
    for (size_t i = s.count; i-- > 0;) {
      if (s.blocks[i].size == cap) {
        void* p = s.blocks[i].ptr;
        s.blocks[i] = s.blocks[--s.count];
        return p;
      }
    }
  }
  if (cap < kCacheMinBytes && !t_small_gone) {
    if (void* p = t_small.take(cap)) return p;
  }
  return cache().malloc(cap);
}

void buffer_free(void* ptr, size_t nbytes) noexcept {
  if (!ptr) return;
  const size_t cap = buffer_capacity(nbytes);
  ScratchList& s = t_scratch;
  if (s.depth > 0 && cap <= kScratchMaxBytes && s.count < kScratchBlocks) {
    s.blocks[s.count++] = Block{ptr, cap};
    return;
  }
  if (cap < kCacheMinBytes && !t_small_gone && t_small.keep(ptr, cap)) return;
  cache().free(ptr, cap);
}

}  // namespace detail

size_t get_active_memory() { return detail::cache().active(); }

namespace allocator {
Buffer malloc(size_t size) { return Buffer(detail::buffer_malloc(size), size); }
void free(Buffer buffer) {
  if (buffer.raw_ptr()) detail::buffer_free(buffer.raw_ptr(), buffer.size());
}
}  // namespace allocator
size_t get_peak_memory() { return detail::cache().peak(); }
void reset_peak_memory() { detail::cache().reset_peak(); }
size_t get_cache_memory() { return detail::cache().cached(); }
size_t set_memory_limit(size_t limit) { return detail::cache().set_memory_limit(limit); }
size_t get_memory_limit() { return detail::cache().memory_limit(); }
size_t set_cache_limit(size_t limit) {
  detail::forget_small();
  return detail::cache().set_cache_limit(limit);
}
void clear_cache() {
  detail::forget_small();
  detail::cache().clear();
}
size_t set_wired_limit(size_t) { return 0; }

}  // namespace kiln
