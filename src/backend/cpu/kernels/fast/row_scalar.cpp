// The row loops (row_body.h) in portable code (one lane), and the choice between the three builds.
#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#include "backend/cpu/cpu_features.h"
#include "backend/cpu/kernels/fast/row_kernels.h"

namespace kiln::fastk::rows {

namespace {

// fma with one rounding in portable code: the product of two floats is exact in double.
inline float fma1(float a, float b, float c) {
  return static_cast<float>(static_cast<double>(a) * static_cast<double>(b) + static_cast<double>(c));
}

struct V {
  using R = float;
  static constexpr int W = 1;
  static R set1(float v) { return v; }
  static R load(const float* p) { return *p; }
  static void store(float* p, R v) { *p = v; }
  static R loadh(const uint16_t* p) { return float16_t::to_float(*p); }
  static void storeh(uint16_t* p, R v) { *p = float16_t::from_float(v); }
  static R roundh(R v) { return float16_t::to_float(float16_t::from_float(v)); }
  static R loadb(const uint16_t* p) { return std::bit_cast<float>(static_cast<uint32_t>(*p) << 16); }
  static void storeb(uint16_t* p, R v) { *p = bfloat16_t::from_float(v); }
  static R roundb(R v) { return loadb_bits(bfloat16_t::from_float(v)); }
  static R loadb_bits(uint16_t b) { return std::bit_cast<float>(static_cast<uint32_t>(b) << 16); }
  static R add(R a, R b) { return a + b; }
  static R sub(R a, R b) { return a - b; }
  static R mul(R a, R b) { return a * b; }
  static R fma(R a, R b, R c) { return a * b + c; }
  static R max(R a, R b) { return a > b ? a : b; }  // a NaN: b
  static float hsum(R v) { return v; }
  static float hmax(R v) { return v; }
  static R nan_acc(R acc, R x) { return x != x ? x : acc; }
  static bool any_nan(R acc) { return acc != acc; }
  static constexpr int kStreamAlign = 0;  // no streaming stores
  static void stream(float* p, R v) { *p = v; }
  static void fence() {}
  static R exp_neg(R x0) { return exp(x0); }
  // MLX's exp: 2^(x·log2 e) as an integer power of two times a degree-6 polynomial of the fraction.
  static R exp(R x0) {
    float xc = x0 > 88.0f ? 88.0f : x0;
    xc = xc < -88.0f ? -88.0f : xc;
    xc = x0 == x0 ? xc : 0.0f;
    const float t = xc * 1.442695f;
    const double h = static_cast<double>(t) + 0.5;
    int32_t i = static_cast<int32_t>(h);
    if (static_cast<double>(i) > h) --i;
    const float f = t - static_cast<float>(i);
    float p = 1.535336188319500e-4f;
    p = fma1(p, f, 1.339887440266574e-3f);
    p = fma1(p, f, 9.618437357674640e-3f);
    p = fma1(p, f, 5.550332471162809e-2f);
    p = fma1(p, f, 2.402264791363012e-1f);
    p = fma1(p, f, 6.931472028550421e-1f);
    p = fma1(p, f, 1.0f);
    float r = std::bit_cast<float>(static_cast<uint32_t>(i + 127) << 23) * p;
    r = x0 > 88.0f ? std::numeric_limits<float>::infinity() : r;
    r = x0 < -88.0f ? 0.0f : r;
    return x0 != x0 ? x0 : r;
  }
};

#if defined(__clang__)
#pragma clang fp contract(off)
#endif
#include "backend/cpu/kernels/fast/row_body.h"

std::atomic<int> g_cap{-1};

}  // namespace

const RowFns* row_fns_scalar() {
  static const RowFns f = make_fns(0);
  return &f;
}

void set_row_isa_for_testing(int level) { g_cap.store(level); }

const RowFns& row_fns() {
  static const RowFns* best[3] = {row_fns_scalar(), row_fns_avx2(), row_fns_avx512()};
  // Isa::avx512bf16 adds nothing to the row loops: the AVX-512 build serves it.
  int level = std::min(static_cast<int>(cpu::isa_level()), 2);
  const int cap = g_cap.load(std::memory_order_relaxed);
  if (cap >= 0 && cap < level) level = cap;
  while (level > 0 && !best[level]) --level;
  return *best[level];
}

}  // namespace kiln::fastk::rows
