#include "backend/cpu/threading.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace kiln::cpu {

namespace {

thread_local bool t_in_parallel = false;

class Pool {
 public:
  explicit Pool(int n) {
    for (int i = 0; i < n; ++i) workers_.emplace_back([this] { work(); });
  }
  ~Pool() {
    {
      std::lock_guard<std::mutex> lk(m_);
      stop_ = true;
    }
    cv_.notify_all();
    for (auto& t : workers_) t.join();
  }
  int size() const { return static_cast<int>(workers_.size()); }

  // Returns false when another caller is using the pool; the caller then runs serially.
  bool run(size_t nchunks, const std::function<void(size_t)>& chunk) {
    std::unique_lock<std::mutex> busy(busy_, std::try_to_lock);
    if (!busy.owns_lock()) return false;
    {
      std::lock_guard<std::mutex> lk(m_);
      job_ = &chunk;
      nchunks_ = nchunks;
      next_.store(0);
      active_ = static_cast<int>(workers_.size());
      ++generation_;
    }
    cv_.notify_all();
    drain();
    std::unique_lock<std::mutex> lk(m_);
    done_cv_.wait(lk, [&] { return active_ == 0; });
    job_ = nullptr;
    return true;
  }

 private:
  void drain() {
    t_in_parallel = true;
    for (size_t i; (i = next_.fetch_add(1)) < nchunks_;) (*job_)(i);
    t_in_parallel = false;
  }
  void work() {
    uint64_t seen = 0;
    for (;;) {
      {
        std::unique_lock<std::mutex> lk(m_);
        cv_.wait(lk, [&] { return stop_ || generation_ != seen; });
        if (stop_) return;
        seen = generation_;
      }
      drain();
      std::lock_guard<std::mutex> lk(m_);
      if (--active_ == 0) done_cv_.notify_all();
    }
  }
  std::vector<std::thread> workers_;
  std::mutex m_, busy_;
  std::condition_variable cv_, done_cv_;
  const std::function<void(size_t)>* job_ = nullptr;
  size_t nchunks_ = 0;
  std::atomic<size_t> next_{0};
  int active_ = 0;
  uint64_t generation_ = 0;
  bool stop_ = false;
};

int detect_threads() {
  if (const char* e = std::getenv("KILN_NUM_THREADS")) {
    int n = std::atoi(e);
    if (n >= 1 && n <= 1024) return n;
  }
  unsigned hc = std::thread::hardware_concurrency();
  return hc == 0 ? 1 : static_cast<int>(std::min(hc, 64u));
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
  size_t nchunks = std::min<size_t>((n + grain - 1) / grain, static_cast<size_t>(nt) * 4);
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
