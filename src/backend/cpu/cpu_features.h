// CPU feature checks that every compiler accepts (clang's __builtin_cpu_supports has no "f16c"), and the
// instruction-set level that run-time dispatched kernels use (which KILN_CPU_ISA can lower, for tests).
#pragma once

#include <cstdlib>
#include <cstring>

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

// Instruction-set levels of the dispatched kernels, ordered. avx2 means AVX2 + FMA + F16C; avx512 means
// AVX-512 F, BW, DQ and VL (with the OS saving the zmm state).
enum class Isa : int { scalar = 0, avx2 = 1, avx512 = 2 };

inline const char* isa_name(Isa i) { return i == Isa::avx512 ? "avx512" : i == Isa::avx2 ? "avx2" : "scalar"; }

// The highest level this CPU (and OS) supports.
inline Isa isa_detected() {
#if defined(__x86_64__) || defined(__i386__)
  static const Isa level = [] {
    unsigned a = 0, b = 0, c = 0, d = 0;
    if (!__get_cpuid(1, &a, &b, &c, &d)) return Isa::scalar;
    const bool osxsave = (c & bit_OSXSAVE) != 0, fma = (c & bit_FMA) != 0, f16c = (c & bit_F16C) != 0;
    if (!osxsave) return Isa::scalar;
    unsigned lo = 0, hi = 0;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    (void)hi;
    const bool ymm_os = (lo & 0x6) == 0x6, zmm_os = (lo & 0xe6) == 0xe6;
    unsigned a7 = 0, b7 = 0, c7 = 0, d7 = 0;
    if (!__get_cpuid_count(7, 0, &a7, &b7, &c7, &d7)) return Isa::scalar;
    const bool avx2 = (b7 & bit_AVX2) != 0;
    const bool avx512 = (b7 & bit_AVX512F) && (b7 & bit_AVX512BW) && (b7 & bit_AVX512DQ) && (b7 & bit_AVX512VL);
    if (avx2 && fma && f16c && ymm_os) return avx512 && zmm_os ? Isa::avx512 : Isa::avx2;
    return Isa::scalar;
  }();
  return level;
#else
  return Isa::scalar;
#endif
}

// "scalar", "avx2" or "avx512" (case as written) to a level; anything else (or null) is no limit.
inline Isa parse_isa(const char* s) {
  if (s && std::strcmp(s, "scalar") == 0) return Isa::scalar;
  if (s && std::strcmp(s, "avx2") == 0) return Isa::avx2;
  return Isa::avx512;
}

// The level forced by KILN_CPU_ISA=scalar|avx2|avx512 (read once), Isa::avx512 (no limit) when unset.
inline Isa isa_override() {
  static const Isa forced = parse_isa(std::getenv("KILN_CPU_ISA"));
  return forced;
}

// The level dispatched kernels use: the CPU's, lowered by KILN_CPU_ISA.
inline Isa isa_level() {
  const Isa d = isa_detected(), o = isa_override();
  return static_cast<int>(o) < static_cast<int>(d) ? o : d;
}

}  // namespace kiln::cpu
