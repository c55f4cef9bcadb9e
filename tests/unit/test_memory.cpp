// The buffer cache and MLX's memory API (kiln/memory.h, src/core/allocator.cpp): size classes, reuse,
// the counters, the cache and memory limits, clear_cache, concurrent use, and that results do not
// depend on the cache.
#include <gtest/gtest.h>

#include <kiln/kiln.h>

#include <atomic>
#include <cstring>
#include <random>
#include <set>
#include <thread>
#include <vector>

#include "core/allocator.h"

namespace mx = kiln;

namespace {

constexpr size_t kMiB = size_t(1) << 20;

// Restores the limits a test changes and starts it with an empty cache.
struct MemoryState {
  size_t cache_limit = mx::set_cache_limit(size_t(1) << 40);
  size_t memory_limit = mx::get_memory_limit();
  MemoryState() {
    mx::set_cache_limit(cache_limit);
    mx::clear_cache();
  }
  ~MemoryState() {
    mx::set_cache_limit(cache_limit);
    mx::set_memory_limit(memory_limit);
    mx::clear_cache();
  }
};

mx::array chain(const mx::array& x, const mx::array& y) {
  auto a = mx::exp(x * 0.5f);
  auto b = mx::log1p(mx::abs(y));
  auto c = mx::tanh(a - b);
  auto d = c * x + y;
  auto e = mx::sqrt(mx::abs(d));
  auto f = 1.0f / (1.0f + mx::exp(mx::negative(e)));
  auto g = mx::maximum(f, c);
  auto h = mx::minimum(g * 2.0f, a);
  auto i = mx::sin(h) + mx::cos(b);
  auto j = mx::square(i) - d;
  auto k = mx::sigmoid(j);
  auto l = mx::abs(k - 0.5f) * 3.0f;
  auto m = mx::log1p(l) + mx::tanh(e);
  auto n = mx::maximum(m, mx::multiply(x, y));
  // Other dtypes and shapes too, so blocks of several classes are freed and reused dirty.
  auto q = mx::sum(mx::reshape(mx::astype(n, mx::float16), {-1, 64}), 1);
  auto r = mx::cumsum(mx::astype(n > 0.5f, mx::int32), 0);
  return mx::concatenate({mx::astype(q, mx::float32), mx::astype(r, mx::float32), n}, 0);
}

std::vector<uint8_t> bytes_of(const mx::array& a) {
  auto c = mx::contiguous(a);
  c.eval();
  auto* p = static_cast<const uint8_t*>(c.raw_data());
  return std::vector<uint8_t>(p, p + c.nbytes());
}

}  // namespace

TEST(Memory, SizeClasses) {
  using mx::detail::buffer_capacity;
  EXPECT_EQ(buffer_capacity(0), 64u);
  EXPECT_EQ(buffer_capacity(1), 64u);
  EXPECT_EQ(buffer_capacity(100), 128u);
  EXPECT_EQ(buffer_capacity(16383), 16384u);  // below the cache threshold: 64-byte rounding
  EXPECT_EQ(buffer_capacity(16384), 16384u);
  EXPECT_EQ(buffer_capacity(16385), 20480u);  // 4 classes between 16 KiB and 32 KiB
  EXPECT_EQ(buffer_capacity(kMiB), kMiB);
  EXPECT_EQ(buffer_capacity(kMiB + 1), kMiB + kMiB / 4);
  EXPECT_EQ(buffer_capacity(64 * kMiB), 64 * kMiB);
  std::mt19937_64 rng(7);
  for (int i = 0; i < 100000; ++i) {
    size_t n = mx::detail::kCacheMinBytes + rng() % (size_t(1) << (14 + i % 20));
    size_t c = buffer_capacity(n);
    ASSERT_GE(c, n);
    ASSERT_EQ(c % 4096, 0u) << n;
    ASSERT_LT(c - n, n / 4 + 1) << n;  // at most 25% more
  }
  EXPECT_THROW(buffer_capacity(~size_t(0)), std::bad_alloc);
  EXPECT_THROW(mx::detail::allocate(~size_t(0) - 5), std::bad_alloc);
}

TEST(Memory, ReuseTheSameSizeClass) {
  MemoryState s;
  auto a = mx::detail::allocate(kMiB);
  void* p = a->ptr;
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 64, 0u);
  a.reset();
  EXPECT_EQ(mx::get_cache_memory(), kMiB);
  auto b = mx::detail::allocate(kMiB - 1000);  // the same class
  EXPECT_EQ(b->ptr, p);
  EXPECT_EQ(mx::get_cache_memory(), 0u);
  // A block still in use is never handed out again.
  auto c = mx::detail::allocate(kMiB);
  EXPECT_NE(c->ptr, b->ptr);
  b.reset();
  auto d = mx::detail::allocate(2 * kMiB);  // another class: not the cached block
  EXPECT_NE(d->ptr, p);
  EXPECT_EQ(mx::get_cache_memory(), kMiB);

  // Arrays: an evaluated result's buffer is reused by the next result of its size.
  mx::clear_cache();
  auto x = mx::arange(0, 1 << 18, mx::float32);
  x.eval();
  const void* xp = x.raw_data();
  x = mx::array(0.0f);
  auto y = mx::arange(0, 1 << 18, mx::float32);
  y.eval();
  EXPECT_EQ(y.raw_data(), xp);
}

TEST(Memory, ActivePeakAndCacheCounters) {
  MemoryState s;
  size_t active0 = mx::get_active_memory();
  mx::reset_peak_memory();
  EXPECT_EQ(mx::get_peak_memory(), 0u);
  {
    auto a = mx::detail::allocate(3 * kMiB);
    EXPECT_EQ(mx::get_active_memory(), active0 + 3 * kMiB);
    EXPECT_EQ(mx::get_peak_memory(), active0 + 3 * kMiB);
    {
      auto b = mx::detail::allocate(1000);  // small: counted at its 64-byte rounding
      EXPECT_EQ(mx::get_active_memory(), active0 + 3 * kMiB + 1024);
    }
    EXPECT_EQ(mx::get_cache_memory(), 1024u);  // kept on this thread's small list
    EXPECT_EQ(mx::get_peak_memory(), active0 + 3 * kMiB + 1024);
  }
  EXPECT_EQ(mx::get_active_memory(), active0);
  EXPECT_EQ(mx::get_cache_memory(), 3 * kMiB + 1024);
  EXPECT_EQ(mx::get_peak_memory(), active0 + 3 * kMiB + 1024);  // the peak stays until reset
  mx::reset_peak_memory();
  EXPECT_EQ(mx::get_peak_memory(), 0u);
  auto c = mx::detail::allocate(3 * kMiB);  // from the cache: active again, the cache shrinks
  EXPECT_EQ(mx::get_cache_memory(), 1024u);
  EXPECT_EQ(mx::get_active_memory(), active0 + 3 * kMiB);
  EXPECT_EQ(mx::get_peak_memory(), active0 + 3 * kMiB);
}

// Small blocks (below kCacheMinBytes) freed on a thread come back to that thread's next allocation of
// their 64-byte class and count as cached memory; clear_cache and a cache limit of 0 give them back; a
// thread's blocks are given back when it exits.
TEST(Memory, SmallBlocksComeBackOnTheSameThread) {
  MemoryState s;
  const size_t active0 = mx::get_active_memory();
  void* p = mx::detail::buffer_malloc(1000);
  mx::detail::buffer_free(p, 1000);
  EXPECT_EQ(mx::get_cache_memory(), 1024u);
  EXPECT_EQ(mx::get_active_memory(), active0);
  void* q = mx::detail::buffer_malloc(1001);  // the same class
  EXPECT_EQ(q, p);
  EXPECT_EQ(mx::get_cache_memory(), 0u);
  EXPECT_EQ(mx::get_active_memory(), active0 + 1024);
  void* r = mx::detail::buffer_malloc(1100);  // another class: a new block
  EXPECT_NE(r, q);
  mx::detail::buffer_free(q, 1001);
  mx::detail::buffer_free(r, 1100);
  EXPECT_EQ(mx::get_cache_memory(), 1024u + 1152u);
  mx::clear_cache();
  EXPECT_EQ(mx::get_cache_memory(), 0u);
  EXPECT_EQ(mx::get_active_memory(), active0);
  // Another thread keeps its own blocks and gives them back when it exits.
  std::thread t([] {
    void* a = mx::detail::buffer_malloc(5000);
    mx::detail::buffer_free(a, 5000);
    EXPECT_EQ(mx::get_cache_memory(), 5056u);
  });
  t.join();
  EXPECT_EQ(mx::get_cache_memory(), 0u);
  // With the cache off nothing is kept.
  mx::set_cache_limit(0);
  void* b = mx::detail::buffer_malloc(64);
  mx::detail::buffer_free(b, 64);
  EXPECT_EQ(mx::get_cache_memory(), 0u);
  EXPECT_EQ(mx::get_active_memory(), active0);
}

TEST(Memory, CacheLimitZeroDisablesTheCache) {
  MemoryState s;
  size_t prev = mx::set_cache_limit(0);
  EXPECT_EQ(prev, s.cache_limit);
  EXPECT_GT(prev, 0u);
  for (int i = 0; i < 4; ++i) {
    auto a = mx::detail::allocate(kMiB);
    a.reset();
    EXPECT_EQ(mx::get_cache_memory(), 0u);
  }
  EXPECT_EQ(mx::set_cache_limit(prev), 0u);
}

TEST(Memory, CacheLimitEvictsTheLeastRecentlyFreed) {
  MemoryState s;
  mx::set_cache_limit(3 * kMiB);
  std::vector<std::shared_ptr<mx::detail::Data>> blocks;
  for (int i = 0; i < 4; ++i) blocks.push_back(mx::detail::allocate(kMiB));
  std::vector<void*> ptrs;
  for (auto& b : blocks) ptrs.push_back(b->ptr);
  for (auto& b : blocks) b.reset();  // freed in order 0, 1, 2, 3: block 0 is evicted
  EXPECT_EQ(mx::get_cache_memory(), 3 * kMiB);
  // The most recently freed comes back first.
  auto r3 = mx::detail::allocate(kMiB), r2 = mx::detail::allocate(kMiB), r1 = mx::detail::allocate(kMiB);
  EXPECT_EQ(r3->ptr, ptrs[3]);
  EXPECT_EQ(r2->ptr, ptrs[2]);
  EXPECT_EQ(r1->ptr, ptrs[1]);
  EXPECT_EQ(mx::get_cache_memory(), 0u);
  r1.reset();
  r2.reset();
  r3.reset();
  EXPECT_EQ(mx::get_cache_memory(), 3 * kMiB);
  // Lowering the limit trims at once, and a block larger than the limit is not cached.
  EXPECT_EQ(mx::set_cache_limit(kMiB), 3 * kMiB);
  EXPECT_EQ(mx::get_cache_memory(), kMiB);
  auto big = mx::detail::allocate(2 * kMiB);
  big.reset();
  EXPECT_EQ(mx::get_cache_memory(), kMiB);
  auto again = mx::detail::allocate(kMiB);
  EXPECT_EQ(again->ptr, ptrs[3]);  // the one kept is the most recently freed (r3, block 3)
}

TEST(Memory, ClearCacheEmptiesIt) {
  MemoryState s;
  {
    auto a = mx::detail::allocate(kMiB), b = mx::detail::allocate(5 * kMiB), c = mx::detail::allocate(100 * 1024);
  }
  EXPECT_EQ(mx::get_cache_memory(), kMiB + 5 * kMiB + 100 * 1024 + 12 * 1024);  // 100 KiB -> 112 KiB class
  mx::clear_cache();
  EXPECT_EQ(mx::get_cache_memory(), 0u);
  mx::clear_cache();
  EXPECT_EQ(mx::get_cache_memory(), 0u);
}

TEST(Memory, MemoryLimitIsAdvisoryAndReclaimsTheCache) {
  MemoryState s;
  size_t lim = mx::get_memory_limit();
  EXPECT_GT(lim, 0u);
  { auto a = mx::detail::allocate(2 * kMiB), b = mx::detail::allocate(2 * kMiB); }
  EXPECT_EQ(mx::get_cache_memory(), 4 * kMiB);
  // A miss that would go over the limit gives cached blocks back first...
  EXPECT_EQ(mx::set_memory_limit(mx::get_active_memory() + 4 * kMiB), lim);
  auto c = mx::detail::allocate(3 * kMiB);
  EXPECT_EQ(mx::get_cache_memory(), 0u);
  // ...and the limit never fails an allocation.
  auto d = mx::detail::allocate(8 * kMiB);
  EXPECT_NE(d->ptr, nullptr);
  mx::set_memory_limit(lim);
  EXPECT_EQ(mx::get_memory_limit(), lim);
}

TEST(Memory, ConcurrentAllocateAndFree) {
  MemoryState s;
  mx::set_cache_limit(64 * kMiB);
  size_t active0 = mx::get_active_memory();
  std::atomic<int> bad{0};
  std::vector<std::thread> ts;
  for (int t = 0; t < 8; ++t) {
    ts.emplace_back([t, &bad] {
      std::mt19937 rng(t);
      std::vector<std::shared_ptr<mx::detail::Data>> held;
      for (int i = 0; i < 400; ++i) {
        size_t n = size_t(1) << (10 + rng() % 11);  // 1 KiB .. 1 MiB: small and cached classes
        n += rng() % 5000;
        auto d = mx::detail::allocate(n);
        std::memset(d->ptr, t + 1, n);
        held.push_back(d);
        if (held.size() > 6 || rng() % 3 == 0) {
          size_t k = rng() % held.size();
          auto& h = held[k];
          auto* p = static_cast<const uint8_t*>(h->ptr);
          for (size_t j = 0; j < h->nbytes; j += 97) {
            if (p[j] != t + 1) {
              bad++;
              break;
            }
          }
          held.erase(held.begin() + k);
        }
      }
    });
  }
  {
    // Arrays evaluated at the same time on this thread.
    auto x = mx::arange(0, 1 << 16, mx::float32), y = mx::sin(x);
    for (int i = 0; i < 20; ++i) mx::eval({chain(x, y)});
  }
  for (auto& th : ts) th.join();
  EXPECT_EQ(bad.load(), 0);
  EXPECT_EQ(mx::get_active_memory(), active0);
  EXPECT_LE(mx::get_cache_memory(), 64 * kMiB);
}

TEST(Memory, ResultsAreTheSameWithAndWithoutTheCache) {
  MemoryState s;
  int n = 1 << 20;
  auto x = mx::sin(mx::arange(0, n, mx::float32) * 0.731f), y = mx::cos(mx::arange(0, n, mx::float32) * 0.37f);
  mx::eval({x, y});
  mx::set_cache_limit(0);
  auto off = bytes_of(chain(x, y));
  mx::set_cache_limit(s.cache_limit);
  auto on1 = bytes_of(chain(x, y));
  EXPECT_GT(mx::get_cache_memory(), 0u);
  // Again, on dirty reused blocks.
  auto on2 = bytes_of(chain(x, y));
  auto on3 = bytes_of(chain(y, x));
  mx::set_cache_limit(0);
  auto off3 = bytes_of(chain(y, x));
  EXPECT_TRUE(off == on1);
  EXPECT_TRUE(off == on2);
  EXPECT_TRUE(off3 == on3);
}

// MLX's allocator interface: a block from allocator::malloc, filled by the caller, used in place by an
// array; the deleter runs once, after the last array using it is gone, and frees it.
TEST(Memory, AllocatorBufferBecomesAnArrayWithoutACopy) {
  MemoryState s;
  const size_t active0 = mx::get_active_memory();
  int deleted = 0;
  {
    mx::allocator::Buffer buf = mx::allocator::malloc(3 * kMiB);
    EXPECT_EQ(buf.size(), 3 * kMiB);
    EXPECT_EQ(mx::get_active_memory(), active0 + 3 * kMiB);
    auto* f = static_cast<float*>(buf.raw_ptr());
    for (int i = 0; i < 4; ++i) f[i] = 2.0f + static_cast<float>(i);
    float* seen = nullptr;
    auto deleter = [&](mx::allocator::Buffer b) {
      seen = static_cast<float*>(b.raw_ptr());
      ++deleted;
      mx::allocator::free(b);
    };
    {
      mx::array b(buf, {2, 2}, mx::float32, deleter);
      EXPECT_EQ(b.data<float>(), f);  // no copy
      auto sum = mx::ones({2, 2}) + b;
      EXPECT_TRUE(mx::array_equal(sum, mx::array({3.0f, 4.0f, 5.0f, 6.0f}, {2, 2})).item<bool>());
      auto view = mx::slice(b, {1, 0}, {2, 2});
      view.eval();
      b = mx::array(0.0f);
      EXPECT_EQ(deleted, 0);  // the view still uses the buffer
      EXPECT_EQ(view.data<float>()[0], 4.0f);
    }
    EXPECT_EQ(deleted, 1);
    EXPECT_EQ(seen, f);
  }
  EXPECT_EQ(mx::get_active_memory(), active0);
  // A buffer smaller than the array is refused, and its deleter is not called.
  mx::allocator::Buffer small = mx::allocator::malloc(8);
  int small_deleted = 0;
  EXPECT_THROW(mx::array(small, {2, 2}, mx::float32, [&](mx::allocator::Buffer) { ++small_deleted; }),
               std::invalid_argument);
  EXPECT_EQ(small_deleted, 0);
  mx::allocator::free(small);
  mx::allocator::free(mx::allocator::Buffer{});  // ignored
}
