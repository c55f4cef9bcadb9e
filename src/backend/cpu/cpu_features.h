// CPU feature checks that every compiler accepts (clang's __builtin_cpu_supports has no "f16c").
#pragma once

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

}  // namespace kiln::cpu
