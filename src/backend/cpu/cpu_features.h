// CPU feature checks that every compiler accepts (clang's __builtin_cpu_supports has no "f16c"), and the
// instruction-set level that run-time dispatched kernels use (which KILN_CPU_ISA can lower, for tests).
#pragma once

#include <cstdlib>
#include <cstring>
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

// Instruction-set levels of the dispatched kernels, ordered. avx2 means AVX2 + FMA + F16C; avx512 means
// AVX-512 F, BW, DQ and VL (with the OS saving the zmm state); avx512bf16 adds AVX512_BF16 (vdpbf16ps); amx
// adds AMX-TILE and AMX-BF16 with the OS saving the tile state (the process still asks Linux for it before
// the first tile instruction: gemm_amx.cpp).
enum class Isa : int { scalar = 0, avx2 = 1, avx512 = 2, avx512bf16 = 3, amx = 4 };

inline const char* isa_name(Isa i) {
  switch (i) {
    case Isa::amx: return "amx";
    case Isa::avx512bf16: return "avx512bf16";
    case Isa::avx512: return "avx512";
    case Isa::avx2: return "avx2";
    default: return "scalar";
  }
}

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
    if (!(avx2 && fma && f16c && ymm_os)) return Isa::scalar;
    if (!(avx512 && zmm_os)) return Isa::avx2;
    unsigned a71 = 0, b71 = 0, c71 = 0, d71 = 0;
    const bool bf16 = __get_cpuid_count(7, 1, &a71, &b71, &c71, &d71) && (a71 & (1u << 5)) != 0;
    if (!bf16) return Isa::avx512;
    // AMX-TILE (EDX bit 24) and AMX-BF16 (bit 22), the tile config and data states in XCR0 (bits 17, 18).
    const bool amx = (d7 & (1u << 24)) && (d7 & (1u << 22)) && (lo & 0x60000) == 0x60000;
    return amx ? Isa::amx : Isa::avx512bf16;
  }();
  return level;
#else
  return Isa::scalar;
#endif
}

// A KILN_CPU_ISA value to a level: "scalar", "avx2", "avx512", "avx512bf16" or "amx"; null or empty is no
// limit (the highest level); anything else throws std::invalid_argument naming it.
inline Isa parse_isa(const char* s) {
  if (s == nullptr || *s == '\0') return Isa::amx;
  for (Isa i : {Isa::scalar, Isa::avx2, Isa::avx512, Isa::avx512bf16, Isa::amx}) {
    if (std::strcmp(s, isa_name(i)) == 0) return i;
  }
  throw std::invalid_argument(
      std::string("[KILN_CPU_ISA] Expected scalar, avx2, avx512, avx512bf16 or amx but found '") + s + "'.");
}

// The level forced by KILN_CPU_ISA (read once); the highest level (no limit) when unset. An unknown value
// throws on every call.
inline Isa isa_override() {
  static const Isa forced = parse_isa(std::getenv("KILN_CPU_ISA"));
  return forced;
}

// AVX512_VNNI (vpdpbusd; CPUID leaf 7, ECX bit 11), on top of the avx512 level. Kernels that use it check
// isa_level() >= Isa::avx512 as well, so KILN_CPU_ISA=avx2 turns them off too.
inline bool has_avx512_vnni() {
#if defined(__x86_64__) || defined(__i386__)
  static const bool vnni = [] {
    unsigned a = 0, b = 0, c = 0, d = 0;
    return isa_detected() >= Isa::avx512 && __get_cpuid_count(7, 0, &a, &b, &c, &d) && (c & (1u << 11)) != 0;
  }();
  return vnni;
#else
  return false;
#endif
}

// The level dispatched kernels use: the CPU's, lowered by KILN_CPU_ISA.
inline Isa isa_level() {
  const Isa d = isa_detected(), o = isa_override();
  return o < d ? o : d;
}

}  // namespace kiln::cpu
