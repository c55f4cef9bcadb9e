// The CPU backend's fork-join pool (src/backend/cpu/threading.h): work is split and joined, nested
// calls run serially, and an exception thrown in any chunk, on any thread, reaches the caller; short jobs
// back to back (workers entering late, or after the caller closed the job) lose and repeat no chunk. The
// ctest entry threads.one_cpu reruns these and the fusion suites with every thread on one CPU
// (KILN_TEST_ONE_CPU=1, KILN_NUM_THREADS=2), where the worker is rarely running when a job comes.
#include <gtest/gtest.h>

#if defined(__linux__)
#include <sched.h>
#endif

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <mutex>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "backend/cpu/threading.h"

namespace {

// KILN_TEST_ONE_CPU=1: the process's threads all on the first CPU it may use, set before main (so before
// the pool's workers start: they inherit it).
[[maybe_unused]] const bool kPinned = [] {
#if defined(__linux__)
  const char* e = std::getenv("KILN_TEST_ONE_CPU");
  if (!e || std::string(e) != "1") return false;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return false;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (!CPU_ISSET(c, &set)) continue;
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(c, &one);
    return sched_setaffinity(0, sizeof(one), &one) == 0;
  }
#endif
  return false;
}();

using kiln::cpu::parallel_for;

TEST(Threads, EveryIndexOnce) {
  for (size_t n : {size_t(0), size_t(1), size_t(7), size_t(1000), size_t(100003)}) {
    std::vector<std::atomic<int>> hits(n);
    parallel_for(n, 16, [&](size_t b, size_t e) {
      for (size_t i = b; i < e; ++i) hits[i].fetch_add(1);
    });
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(hits[i].load(), 1) << "n " << n << " index " << i;
  }
}

// Chunks are at least `grain` long (the last may be shorter), and there are at most kChunksPerThread per
// thread: enough for the threads to even out their ends, few enough to keep each chunk's setup small.
TEST(Threads, ChunksOfAtLeastTheGrainAndAFewPerThread) {
  const size_t nt = static_cast<size_t>(kiln::cpu::num_threads());
  for (size_t n : {size_t(40), size_t(1000), size_t(100003)}) {
    std::mutex mu;
    std::vector<std::pair<size_t, size_t>> chunks;
    parallel_for(n, 16, [&](size_t b, size_t e) {
      std::lock_guard<std::mutex> lk(mu);
      chunks.emplace_back(b, e);
    });
    std::sort(chunks.begin(), chunks.end());
    // n / 16 chunks, at most kChunksPerThread a thread, of equal length rounded up (which may make fewer).
    size_t want = 1;
    if (nt > 1 && n >= 32) {
      const size_t first = std::min(n / 16, nt * kiln::cpu::kChunksPerThread);
      const size_t per = (n + first - 1) / first;
      want = (n + per - 1) / per;
    }
    EXPECT_EQ(chunks.size(), want) << "n " << n;
    EXPECT_LE(chunks.size(), std::max<size_t>(1, nt * kiln::cpu::kChunksPerThread)) << "n " << n;
    for (size_t i = 0; i < chunks.size(); ++i) {
      if (i + 1 < chunks.size()) EXPECT_GE(chunks[i].second - chunks[i].first, 16u) << "n " << n << " chunk " << i;
    }
  }
}

TEST(Threads, NestedCallsRunInline) {
  std::atomic<size_t> total{0};
  parallel_for(64, 1, [&](size_t b, size_t e) {
    for (size_t i = b; i < e; ++i) {
      parallel_for(1000, 1, [&](size_t ib, size_t ie) { total.fetch_add(ie - ib); });
    }
  });
  EXPECT_EQ(total.load(), 64u * 1000u);
}

TEST(Threads, AnExceptionInAChunkReachesTheCaller) {
  // Every chunk but one succeeds; whichever thread runs the failing one, the caller gets its exception
  // (not std::terminate), and the pool is usable afterwards.
  for (size_t bad : {size_t(0), size_t(500), size_t(999)}) {
    try {
      parallel_for(1000, 10, [&](size_t b, size_t e) {
        if (bad >= b && bad < e) throw std::runtime_error("chunk " + std::to_string(bad));
      });
      FAIL() << "expected a throw";
    } catch (const std::runtime_error& e) {
      EXPECT_EQ(std::string(e.what()), "chunk " + std::to_string(bad));
    }
  }
  std::atomic<size_t> count{0};
  parallel_for(1000, 10, [&](size_t b, size_t e) { count.fetch_add(e - b); });
  EXPECT_EQ(count.load(), 1000u);
}

// Thousands of short jobs back to back, some after a pause long enough for the workers to fall asleep:
// every index of every job once, whichever thread took it and whenever it came in.
TEST(Threads, ShortJobsBackToBackLoseNoChunk) {
  std::mt19937 rng(77);
  for (int job = 0; job < 3000; ++job) {
    const size_t n = 2 + rng() % 300;
    std::vector<std::atomic<int>> hits(n);
    parallel_for(n, 1 + rng() % 4, [&](size_t b, size_t e) {
      for (size_t i = b; i < e; ++i) hits[i].fetch_add(1);
    });
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(hits[i].load(), 1) << "job " << job << " index " << i;
    if (job % 500 == 499) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

}  // namespace
