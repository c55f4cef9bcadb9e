// CPU feature checks that every compiler accepts (clang's __builtin_cpu_supports has no "f16c"), and
// the instruction-set level the vector kernels run at (isa_level).
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

// Instruction-set levels of the vector kernels, in increasing order.
inline constexpr int kIsaScalar = 0;  // portable C++ (what the compiler makes of it)
inline constexpr int kIsaAvx2 = 1;    // AVX2 + FMA, 8 float lanes
inline constexpr int kIsaAvx512 = 2;  // AVX-512 F/DQ/BW/VL, 16 float lanes

// The widest level this CPU supports (and the build has code for).
inline int hardware_isa_level() {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
      __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("fma"))
    return kIsaAvx512;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return kIsaAvx2;
#endif
  return kIsaScalar;
}

// Parses a KILN_CPU_ISA value: "scalar", "avx2" or "avx512"; anything else throws.
inline int parse_isa_level(const std::string& s) {
  if (s == "scalar") return kIsaScalar;
  if (s == "avx2") return kIsaAvx2;
  if (s == "avx512") return kIsaAvx512;
  throw std::invalid_argument("KILN_CPU_ISA: expected scalar, avx2 or avx512, found '" + s + "'");
}

inline const char* isa_name(int level) {
  return level >= kIsaAvx512 ? "avx512" : level == kIsaAvx2 ? "avx2" : "scalar";
}

// The level the vector kernels use: the hardware's, capped by the environment variable KILN_CPU_ISA
// (read once; it can lower the level, e.g. to test the AVX2 or portable paths on an AVX-512 machine,
// never raise it above what the CPU has). An unknown value throws on every call, naming it.
inline int isa_level() {
  static const int level = [] {
    int hw = hardware_isa_level();
    const char* env = std::getenv("KILN_CPU_ISA");
    if (env == nullptr || *env == '\0') return hw;
    int want = parse_isa_level(env);
    return want < hw ? want : hw;
  }();
  return level;
}

}  // namespace kiln::cpu
