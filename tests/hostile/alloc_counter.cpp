#include "alloc_counter.h"

#include <malloc.h>

#include <atomic>
#include <cstdlib>
#include <new>

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define KILN_NO_ALLOC_COUNTING 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || __has_feature(memory_sanitizer)
#define KILN_NO_ALLOC_COUNTING 1
#endif
#endif

namespace kiln_test {
namespace {
std::atomic<uint64_t> g_live{0}, g_peak{0};
}

#ifndef KILN_NO_ALLOC_COUNTING
bool alloc_counting() { return true; }
#else
bool alloc_counting() { return false; }
#endif
uint64_t live_bytes() { return g_live.load(); }
uint64_t peak_bytes() { return g_peak.load(); }
void reset_peak() { g_peak.store(g_live.load()); }

}  // namespace kiln_test

#ifndef KILN_NO_ALLOC_COUNTING
namespace {

void* counted(void* p) {
  if (!p) return p;
  uint64_t now = kiln_test::g_live.fetch_add(malloc_usable_size(p), std::memory_order_relaxed) + malloc_usable_size(p);
  uint64_t peak = kiln_test::g_peak.load(std::memory_order_relaxed);
  while (now > peak && !kiln_test::g_peak.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
  }
  return p;
}

void release(void* p) {
  if (!p) return;
  kiln_test::g_live.fetch_sub(malloc_usable_size(p), std::memory_order_relaxed);
  std::free(p);
}

void* plain(std::size_t n) { return counted(std::malloc(n ? n : 1)); }
void* aligned(std::size_t n, std::align_val_t al) {
  std::size_t a = static_cast<std::size_t>(al);
  std::size_t size = (n + a - 1) / a * a;
  return counted(std::aligned_alloc(a, size ? size : a));
}

}  // namespace

void* operator new(std::size_t n) {
  if (void* p = plain(n)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t n) { return operator new(n); }
void* operator new(std::size_t n, const std::nothrow_t&) noexcept { return plain(n); }
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept { return plain(n); }
void* operator new(std::size_t n, std::align_val_t al) {
  if (void* p = aligned(n, al)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t n, std::align_val_t al) { return operator new(n, al); }
void* operator new(std::size_t n, std::align_val_t al, const std::nothrow_t&) noexcept { return aligned(n, al); }
void* operator new[](std::size_t n, std::align_val_t al, const std::nothrow_t&) noexcept { return aligned(n, al); }
void operator delete(void* p) noexcept { release(p); }
void operator delete[](void* p) noexcept { release(p); }
void operator delete(void* p, std::size_t) noexcept { release(p); }
void operator delete[](void* p, std::size_t) noexcept { release(p); }
void operator delete(void* p, std::align_val_t) noexcept { release(p); }
void operator delete[](void* p, std::align_val_t) noexcept { release(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { release(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { release(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { release(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { release(p); }
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept { release(p); }
void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept { release(p); }
#endif
