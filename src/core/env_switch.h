// An on/off setting that starts from an environment variable, off only when it is "0", and that tests
// and benchmarks may set: KILN_FUSION, KILN_FUSION_TILES, KILN_PATTERNS, KILN_PROGRAMS, KILN_MMAP,
// KILN_BATCH, KILN_PROGRAM_PREFETCH. Hold one in a function-local static, so the variable is read once,
// at first use.
#pragma once

#include <atomic>
#include <cstdlib>
#include <cstring>

namespace kiln::detail {

class EnvSwitch {
 public:
  explicit EnvSwitch(const char* var) : on_(!is_zero(std::getenv(var))) {}
  bool on() const { return on_.load(std::memory_order_relaxed); }
  void set(bool on) { on_.store(on, std::memory_order_relaxed); }

 private:
  static bool is_zero(const char* v) { return v && std::strcmp(v, "0") == 0; }
  std::atomic<bool> on_;
};

}  // namespace kiln::detail
