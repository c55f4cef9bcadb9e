// Shared by the quantized kernels (quantized.cpp, quantized_matmul.cpp here): the FP8 (E4M3) and FP4
// (E2M1) codecs, and code (un)packing.
//
// Packing: the codes of one row form a little-endian bit stream, code j in bits [j·b, (j+1)·b). Eight
// codes therefore fill exactly b bytes for every width b, which is how both the uint32 words of the
// power-of-two widths and MLX's byte packs of the 3-, 5- and 6-bit widths are laid out.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <string>

#include "core/kernels.h"
#include "kiln/array.h"
#include "kiln/ops/quantized.h"

namespace kiln::quant {

// E4M3 encoding as MLX's ToFP8: round to nearest even; magnitudes of 448 and above, infinities and NaN
// saturate to 448 (0x7E), so the NaN code 0x7F is never produced.
inline uint8_t to_fp8(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  const uint8_t sign = static_cast<uint8_t>((bits >> 24) & 0x80u);
  const uint32_t a = bits & 0x7fffffffu;
  uint8_t r;
  if (a >= 0x43e00000u) {  // >= 448, inf, nan
    r = 0x7e;
  } else if (a < (121u << 23)) {  // below 2^-6: subnormal codes, units of 2^-9
    float m;
    std::memcpy(&m, &a, 4);
    r = static_cast<uint8_t>(std::nearbyint(m * 512.0f));
  } else {  // rebias the exponent (127 -> 7) and round the mantissa to 3 bits, ties to even
    const uint32_t odd = (a >> 20) & 1u;
    r = static_cast<uint8_t>((a + 0xc407ffffu + odd) >> 20);
  }
  return static_cast<uint8_t>(r | sign);
}

inline float from_fp8(uint8_t c) {
  const float sign = (c & 0x80) ? -1.0f : 1.0f;
  const int e = (c >> 3) & 0xf, m = c & 7;
  if ((c & 0x7f) == 0x7f) return std::nanf("");
  if (e == 0) return sign * std::ldexp(static_cast<float>(m), -9);
  return sign * std::ldexp(1.0f + static_cast<float>(m) / 8.0f, e - 7);
}

// E2M1 values by code (bit 3 is the sign).
inline constexpr float kFp4[16] = {0.0f,  0.5f,  1.0f,  1.5f,  2.0f,  3.0f,  4.0f,  6.0f,
                                   -0.0f, -0.5f, -1.0f, -1.5f, -2.0f, -3.0f, -4.0f, -6.0f};

// The E8M0 scale 2^(s - 127).
template <typename A>
inline A e8m0(uint8_t s) {
  return std::ldexp(A(1), static_cast<int>(s) - 127);
}

template <int B>
inline void unpack8(const uint8_t* p, uint32_t* c) {
  uint64_t v = 0;
  std::memcpy(&v, p, B);
  for (int k = 0; k < 8; ++k) c[k] = static_cast<uint32_t>(v >> (k * B)) & ((1u << B) - 1u);
}

template <int B>
inline void pack8(const uint32_t* c, uint8_t* p) {
  uint64_t v = 0;
  for (int k = 0; k < 8; ++k) v |= static_cast<uint64_t>(c[k]) << (k * B);
  std::memcpy(p, &v, B);
}

// Calls f(std::integral_constant<int, bits>{}) for the supported widths.
template <typename F>
decltype(auto) dispatch_bits(int bits, F&& f) {
  switch (bits) {
    case 2: return f(std::integral_constant<int, 2>{});
    case 3: return f(std::integral_constant<int, 3>{});
    case 4: return f(std::integral_constant<int, 4>{});
    case 5: return f(std::integral_constant<int, 5>{});
    case 6: return f(std::integral_constant<int, 6>{});
    case 8: return f(std::integral_constant<int, 8>{});
    default: throw std::logic_error("[quantized] unsupported bit width " + std::to_string(bits));
  }
}

// Dequantize the codes of groups [g0, g1) of one packed row into dst (Acc values), for the matmuls.
// `scales`/`biases` point at the row's first group; S is the scale type (the float type, or uint8).
template <int B, typename Acc, typename S>
void dequant_groups(const uint8_t* row, const S* scales, const S* biases, int64_t g0, int64_t g1, int gs,
                    QuantizationMode mode, Acc* dst) {
  uint32_t c[8];
  const int64_t gbytes = static_cast<int64_t>(gs) * B / 8;
  for (int64_t g = g0; g < g1; ++g) {
    const uint8_t* p = row + g * gbytes;
    Acc* d = dst + (g - g0) * gs;
    if (mode == QuantizationMode::Affine) {
      const Acc s = Acc(scales[g]), b = Acc(biases[g]);
      for (int j = 0; j < gs; j += 8, p += B) {
        unpack8<B>(p, c);
        for (int k = 0; k < 8; ++k) d[j + k] = s * Acc(c[k]) + b;
      }
    } else {
      if constexpr (std::is_same_v<S, uint8_t>) {
        const uint8_t sc = scales[g];
        const Acc s = mode == QuantizationMode::Nvfp4 ? Acc(from_fp8(sc)) : e8m0<Acc>(sc);
        for (int j = 0; j < gs; j += 8, p += B) {
          unpack8<B>(p, c);
          for (int k = 0; k < 8; ++k) {
            d[j + k] = (B == 8 ? Acc(from_fp8(static_cast<uint8_t>(c[k]))) : Acc(kFp4[c[k] & 15])) * s;
          }
        }
      }
    }
  }
}

// The instruction set of the QuantizedMatmul / GatherQMM kernels (qmm_avx512.cpp, qmm_avx2.cpp, or the
// portable dequantize-then-multiply path in quantized_matmul.cpp; float64 always takes the portable
// path). By default cpu::isa_level() (backend/cpu/cpu_features.h: the best the CPU has, lowered by
// KILN_CPU_ISA=amx|avx512bf16|avx512|avx2|scalar); set_qmm_isa() (for tests) asks for a lower one. A request above what
// the CPU has gets the best it has.
// Amx: the AVX-512 kernels, with prefill-sized x · Wᵀ on AMX tiles (cpu::qgemm_amx).
enum class QmmIsa : int { Scalar = 0, Avx2 = 1, Avx512 = 2, Amx = 3 };
QmmIsa qmm_best_isa();
QmmIsa qmm_isa();
void set_qmm_isa(std::optional<QmmIsa> isa);  // nullopt: back to KILN_CPU_ISA / the CPU's best
// The integer decode kernel for 4-bit affine x · Wᵀ (qmm_simd.h): whether this CPU has it (AVX512_VNNI, at
// the avx512 level or above), and a switch for tests (nullopt: back to KILN_QMM_INT8, on unless "0").
bool qmm_int8_available();
void set_qmm_int8(std::optional<bool> on);
// How many products the integer decode kernel has run in this process (for tests).
int64_t qmm_int8_calls();

// The QuantizedMatmul and GatherQMM kernels (quantized_matmul.cpp; added by register_cpu_quantized()).
void add_qmm_kernels(detail::KernelTable& table);

}  // namespace kiln::quant
