#include "backend/cpu/threading.h"

#if defined(__linux__)
#include <sched.h>
#endif

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace kiln::cpu {

namespace {

thread_local bool t_in_parallel = false;

// Workers wait for a job by spinning for a short while (kSpin) and then sleeping on a condition
// variable. Kernels run back to back during an evaluation, so a worker is usually still spinning when the
// next job comes and starts it within a microsecond, where a sleeping one takes a futex wake-up (tens of
// microseconds on a VM). After kSpin without work the threads sleep, so an idle process uses no CPU.
//
// The caller takes chunks too, and waits only for the workers that entered the job: a worker enters by
// counting itself in before it takes a chunk, and the caller, once no chunk is left, closes the entry and
// waits for the ones counted. A worker that was not running (descheduled, or sharing the caller's core) is
// not waited for at all; before, the caller spun for kSpin and then slept until that worker had run just
// to see the job was done, and some processes paid that on every call (a 256-row softmax at 0.45-0.65 ms
// instead of 0.12, with ~300 more context switches per 200 calls).
constexpr auto kSpin = std::chrono::microseconds(200);

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

// Spins until ready() or kSpin has passed; true when ready.
template <typename Ready>
bool spin_until(Ready ready) {
  auto deadline = std::chrono::steady_clock::now() + kSpin;
  for (;;) {
    for (int i = 0; i < 64; ++i) {
      if (ready()) return true;
      cpu_relax();
    }
    if (std::chrono::steady_clock::now() >= deadline) return ready();
  }
}

class Pool {
 public:
  explicit Pool(int n) {
    for (int i = 0; i < n; ++i) workers_.emplace_back([this] { work(); });
  }
  ~Pool() {
    {
      std::lock_guard<std::mutex> lk(m_);
      stop_.store(true);
    }
    cv_.notify_all();
    for (auto& t : workers_) t.join();
  }
  int size() const { return static_cast<int>(workers_.size()); }

  // Returns false when another caller is using the pool; the caller then runs serially.
  bool run(size_t nchunks, const std::function<void(size_t)>& chunk) {
    std::unique_lock<std::mutex> busy(busy_, std::try_to_lock);
    if (!busy.owns_lock()) return false;
    job_ = &chunk;
    nchunks_ = nchunks;
    next_.store(0, std::memory_order_relaxed);
    left_.store(0, std::memory_order_relaxed);
    entry_.store(0, std::memory_order_release);  // open: the job's fields above are visible to who enters
    {
      // Under the lock, so that a worker checking the generation before it sleeps cannot miss it.
      std::lock_guard<std::mutex> lk(m_);
      generation_.fetch_add(1, std::memory_order_release);
    }
    if (sleepers_.load(std::memory_order_acquire) > 0) cv_.notify_all();
    drain();
    // No chunk is left: close the entry, then wait for the workers that came in to finish theirs.
    const uint64_t entered = entry_.fetch_or(kClosed, std::memory_order_acq_rel) & ~kClosed;
    auto done = [&] { return left_.load(std::memory_order_acquire) == entered; };
    if (!done() && !spin_until(done)) {
      std::unique_lock<std::mutex> lk(m_);
      done_cv_.wait(lk, done);
    }
    job_ = nullptr;
    return true;
  }

 private:
  static constexpr uint64_t kClosed = uint64_t(1) << 63;

  void drain() {
    t_in_parallel = true;
    for (size_t i; (i = next_.fetch_add(1)) < nchunks_;) (*job_)(i);
    t_in_parallel = false;
  }
  // Counts this worker into the open job; false when its caller has closed it (nothing left to take).
  bool enter() {
    uint64_t e = entry_.load(std::memory_order_acquire);
    while (!(e & kClosed)) {
      if (entry_.compare_exchange_weak(e, e + 1, std::memory_order_acq_rel, std::memory_order_acquire)) return true;
    }
    return false;
  }
  void work() {
    uint64_t seen = 0;
    for (;;) {
      auto ready = [&] {
        return stop_.load(std::memory_order_acquire) || generation_.load(std::memory_order_acquire) != seen;
      };
      if (!spin_until(ready)) {
        std::unique_lock<std::mutex> lk(m_);
        sleepers_.fetch_add(1, std::memory_order_acq_rel);
        cv_.wait(lk, ready);
        sleepers_.fetch_sub(1, std::memory_order_acq_rel);
      }
      if (stop_.load(std::memory_order_acquire)) return;
      seen = generation_.load(std::memory_order_acquire);
      // The job entered may be a later one than `seen` (its caller reopened the entry meanwhile): that is
      // fine, the fields read after entering are that job's, and its caller waits for this worker.
      if (!enter()) continue;
      drain();
      left_.fetch_add(1, std::memory_order_acq_rel);
      std::lock_guard<std::mutex> lk(m_);  // the caller may be about to sleep: wake it after it has
      done_cv_.notify_all();
    }
  }
  std::vector<std::thread> workers_;
  std::mutex m_, busy_;
  std::condition_variable cv_, done_cv_;
  const std::function<void(size_t)>* job_ = nullptr;
  size_t nchunks_ = 0;
  std::atomic<size_t> next_{0};
  std::atomic<int> sleepers_{0};
  std::atomic<uint64_t> entry_{kClosed};  // workers in the current job; kClosed once its caller closed it
  std::atomic<uint64_t> left_{0};         // workers of the current job that have finished
  std::atomic<uint64_t> generation_{0};
  std::atomic<bool> stop_{false};
};

// KILN_NUM_THREADS when set (1..1024), else the CPUs this process may run on (its affinity mask, which
// containers and taskset narrow), else the hardware's count; at most 64.
int detect_threads() {
  if (const char* e = std::getenv("KILN_NUM_THREADS")) {
    int n = std::atoi(e);
    if (n >= 1 && n <= 1024) return n;
  }
  unsigned n = std::thread::hardware_concurrency();
#if defined(__linux__)
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 0) n = static_cast<unsigned>(CPU_COUNT(&set));
#endif
  return n == 0 ? 1 : static_cast<int>(std::min(n, 64u));
}

Pool& pool() {
  static Pool p(num_threads() - 1);
  return p;
}

}  // namespace

int num_threads() {
  static int n = detect_threads();
  return n;
}

void parallel_for(size_t n, size_t grain, const std::function<void(size_t, size_t)>& fn) {
  if (n == 0) return;
  grain = std::max<size_t>(grain, 1);
  int nt = num_threads();
  if (nt <= 1 || n < 2 * grain || t_in_parallel) {
    fn(0, n);
    return;
  }
  // n / grain (not rounded up): every chunk but the last holds at least `grain` items.
  size_t nchunks = std::min<size_t>(n / grain, static_cast<size_t>(nt) * kChunksPerThread);
  size_t per = (n + nchunks - 1) / nchunks;
  nchunks = (n + per - 1) / per;
  // An exception in any chunk (a worker's or the caller's) is caught, the remaining chunks are skipped,
  // and the first one is rethrown here once all threads are done.
  std::exception_ptr error;
  std::mutex error_mu;
  std::atomic<bool> failed{false};
  std::function<void(size_t)> chunk = [&](size_t i) {
    if (failed.load(std::memory_order_relaxed)) return;
    size_t b = i * per;
    size_t e = std::min(n, b + per);
    try {
      fn(b, e);
    } catch (...) {
      std::lock_guard<std::mutex> lk(error_mu);
      if (!error) error = std::current_exception();
      failed.store(true, std::memory_order_relaxed);
    }
  };
  if (!pool().run(nchunks, chunk)) return fn(0, n);
  if (error) std::rethrow_exception(error);
}

}  // namespace kiln::cpu
