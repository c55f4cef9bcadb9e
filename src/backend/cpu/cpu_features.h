// CPU feature checks that every compiler accepts (clang's __builtin_cpu_supports has no "f16c").
#pragma once

#include <cstdlib>
#include <stdexcept>
#include <string>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

namespace kiln::cpu {

// F16C (half <-> float conversion instructions): CPUID leaf 1, ECX bit 29.
inline bool has_f16c() {
#if defined(__x86_64__) || defined(__i386__)
  unsigned a = 0, b = 0, c = 0, d = 0;
  return __get_cpuid(1, &a, &b, &c, &d) && (c & bit_F16C) != 0;
#else
  return false;
#endif
}

// The vector instruction set kernels may use: 0 portable code, 1 AVX2 with FMA and F16C, 2 AVX-512
// (F, BW, DQ, VL) as well. KILN_CPU_ISA=scalar|avx2|avx512 lowers it (it never raises it above what the
// CPU has); read once, on the first call.
inline int isa_level() {
  static const int level = [] {
    int hw = 0;
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && has_f16c()) hw = 1;
    if (hw == 1 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl")) {
      hw = 2;
    }
#endif
    if (const char* env = std::getenv("KILN_CPU_ISA"); env && *env) {
      const std::string v(env);
      const int cap = v == "scalar" ? 0 : v == "avx2" ? 1 : v == "avx512" ? 2 : -1;
      if (cap < 0) {
        throw std::invalid_argument("[KILN_CPU_ISA] Expected scalar, avx2 or avx512 but found '" + v + "'.");
      }
      hw = cap < hw ? cap : hw;
    }
    return hw;
  }();
  return level;
}

}  // namespace kiln::cpu
