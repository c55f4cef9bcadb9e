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
// Only the scalar functions (exp_f), not elementwise_common.h: its optimize pragma is for the element-wise
// kernel files.
#include "backend/cpu/kernels/elementwise/elementwise_math.h"
#include "backend/cpu/kernels/fast/row_kernels.h"

namespace kiln::fastk::rows {

namespace {

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
  static R exp(R x0) { return ew::exp_f(x0); }  // MLX's polynomial, the Exp kernel's scalar function
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
  // Isa::avx512bf16 adds nothing to the row loops: the AVX-512 build serves it.
  int level = std::min(static_cast<int>(cpu::isa_level()), 2);
  const int cap = g_cap.load(std::memory_order_relaxed);
  if (cap >= 0 && cap < level) level = cap;
  // Only the chosen level's table is built: building one runs that ISA's code (its static
  // initializer is compiled for the ISA), which a CPU without it cannot execute.
  if (level >= 2) {
    if (const RowFns* f = row_fns_avx512()) return *f;
  }
  if (level >= 1) {
    if (const RowFns* f = row_fns_avx2()) return *f;
  }
  return *row_fns_scalar();
}

}  // namespace kiln::fastk::rows
