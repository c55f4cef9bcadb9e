// The vector row loops (backend/cpu/kernels/fast/row_kernels.h) behind Softmax, LogSumExp, RMSNorm and
// LayerNorm: each instruction-set build the CPU has (portable, AVX2, AVX-512, forced one at a time)
// against double-precision references and against the element-wise Exp kernel's bits, directly and
// through the ops, over odd row lengths, many rows, strided inputs and every float dtype.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <type_traits>

#include <kiln/fast.h>
#include <kiln/kiln.h>

#include "backend/cpu/cpu_features.h"
#include "backend/cpu/kernels/elementwise/elementwise_math.h"
#include "backend/cpu/kernels/fast/row_kernels.h"
#include "unit/fast_test_util.h"
#include "unit/test_util.h"

namespace {

namespace mx = kiln;
namespace rows = kiln::fastk::rows;
using namespace fast_test;
using mx::bfloat16_t;
using mx::float16_t;

const std::vector<int64_t> kLens = {1, 3, 17, 4095, 4097};

// The levels this CPU can run, each with its loops.
std::vector<const rows::RowFns*> builds() {
  std::vector<const rows::RowFns*> out = {rows::row_fns_scalar()};
  if (mx::cpu::isa_level() >= mx::cpu::Isa::avx2 && rows::row_fns_avx2()) out.push_back(rows::row_fns_avx2());
  if (mx::cpu::isa_level() >= mx::cpu::Isa::avx512 && rows::row_fns_avx512()) out.push_back(rows::row_fns_avx512());
  return out;
}

// Forces the level for the scope (the ops pick their loops through row_fns()).
struct ForceIsa {
  explicit ForceIsa(int level) { rows::set_row_isa_for_testing(level); }
  ~ForceIsa() { rows::set_row_isa_for_testing(-1); }
};

template <typename T>
std::vector<T> as(const std::vector<float>& v) {
  std::vector<T> out;
  for (float f : v) out.push_back(T(f));
  return out;
}
template <typename T>
std::vector<double> dbl(const std::vector<T>& v) {
  std::vector<double> out;
  for (const T& x : v) out.push_back(static_cast<double>(static_cast<float>(x)));
  return out;
}

void close(const std::vector<double>& got, const std::vector<double>& want, double rtol, double atol,
           const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  size_t bad = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const bool both_nan = std::isnan(got[i]) && std::isnan(want[i]);
    if (!both_nan && !(std::abs(got[i] - want[i]) <= atol + rtol * std::abs(want[i]))) {
      if (++bad <= 5) ADD_FAILURE() << what << " index " << i << ": got " << got[i] << " want " << want[i];
    }
  }
  EXPECT_EQ(bad, 0u) << what;
}

std::vector<double> ref_softmax(const std::vector<double>& x) {
  double m = -INFINITY, s = 0;
  for (double v : x) m = std::max(m, v);
  std::vector<double> y(x.size());
  for (size_t i = 0; i < x.size(); ++i) s += (y[i] = std::exp(x[i] - m));
  for (double& v : y) v /= s;
  return y;
}

// MLX's 16-bit softmax without `precise`: each intermediate rounded to T, the sum sequential.
template <typename T>
std::vector<double> ref_softmax_lowp(const std::vector<T>& x) {
  float m = -INFINITY;
  for (const T& v : x) m = std::max(m, static_cast<float>(v));
  std::vector<float> e(x.size());
  float sum = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const float d = static_cast<float>(T(static_cast<float>(x[i]) - m));
    e[i] = static_cast<float>(T(std::exp(d)));
    sum = static_cast<float>(T(sum + e[i]));
  }
  const float inv = static_cast<float>(T(1.0f / sum));
  std::vector<double> y;
  for (float v : e) y.push_back(static_cast<float>(T(v * inv)));
  return y;
}

double ref_lse(const std::vector<double>& x) {
  double m = -INFINITY, s = 0;
  for (double v : x) m = std::max(m, v);
  for (double v : x) s += std::exp(v - m);
  return m + std::log(s);
}

std::vector<double> ref_rms(const std::vector<double>& x, const std::vector<double>& w, double eps) {
  double ss = 0;
  for (double v : x) ss += v * v;
  const double inv = 1.0 / std::sqrt(ss / x.size() + eps);
  std::vector<double> y;
  for (size_t i = 0; i < x.size(); ++i) y.push_back(w[i] * x[i] * inv);
  return y;
}

std::vector<double> ref_ln(const std::vector<double>& x, const std::vector<double>& w, const std::vector<double>& b,
                           double eps) {
  double m = 0, v = 0;
  for (double t : x) m += t;
  m /= x.size();
  for (double t : x) v += (t - m) * (t - m);
  const double inv = 1.0 / std::sqrt(v / x.size() + eps);
  std::vector<double> y;
  for (size_t i = 0; i < x.size(); ++i) y.push_back((x[i] - m) * inv * w[i] + b[i]);
  return y;
}

// Tolerance against an exact reference, for a float computation whose result is rounded to T.
template <typename T>
double tol() {
  if constexpr (std::is_same_v<T, float>) return 2e-5;
  else if constexpr (std::is_same_v<T, float16_t>) return 2e-3;
  else return 1.6e-2;
}

template <typename T>
void check_rows_of(const rows::RowFns& F, const std::string& tag) {
  const auto& f = rows::of<T>(F);
  for (int64_t n : kLens) {
    const std::string what = tag + " n=" + std::to_string(n);
    const std::vector<T> x = as<T>(randu(static_cast<size_t>(n), static_cast<uint32_t>(n) + 7, -6.0f, 6.0f));
    const std::vector<double> xd = dbl(x);
    std::vector<T> y(x.size());
    std::vector<float> scratch(x.size());
    // Softmax: precise (or float) against the exact values; 16-bit without precise against MLX's roundings.
    f.softmax(x.data(), y.data(), n, true, scratch.data(), false, nullptr);
    close(dbl(y), ref_softmax(xd), tol<T>(), 1e-7, what + " softmax precise");
    if constexpr (!std::is_same_v<T, float>) {
      f.softmax(x.data(), y.data(), n, false, scratch.data(), false, nullptr);
      close(dbl(y), ref_softmax_lowp(x), 2 * tol<T>(), 1e-7, what + " softmax");
    }
    close({f.logsumexp(x.data(), n, nullptr)}, {ref_lse(xd)}, 2e-6, 2e-6, what + " logsumexp");
    const std::vector<float> w = randu(static_cast<size_t>(n), 3, 0.5f, 1.5f), b = randu(static_cast<size_t>(n), 4);
    std::vector<double> wd(w.begin(), w.end()), bd(b.begin(), b.end());
    f.rms_norm(x.data(), w.data(), y.data(), n, 1e-5f, false, nullptr);
    close(dbl(y), ref_rms(xd, wd, 1e-5), 2 * tol<T>(), 1e-6, what + " rms_norm");
    f.layer_norm(x.data(), w.data(), b.data(), y.data(), n, 1e-5f, false, nullptr);
    close(dbl(y), ref_ln(xd, wd, bd, 1e-5), 2 * tol<T>(), 2 * tol<T>(), what + " layer_norm");
  }
}

TEST(RowKernels, IsaLevelIsInRange) {
  const int l = std::min(static_cast<int>(mx::cpu::isa_level()), 2);  // the row loops' levels: 0..2
  EXPECT_GE(l, 0);
  EXPECT_LE(l, 2);
  EXPECT_LE(rows::row_fns().level, l);
  for (int cap = 0; cap <= 2; ++cap) {
    ForceIsa f(cap);
    EXPECT_EQ(rows::row_fns().level, std::min(cap, l));
  }
}

TEST(RowKernels, EachBuildAgainstDoubleReferences) {
  for (const rows::RowFns* F : builds()) {
    const std::string tag = "level " + std::to_string(F->level);
    check_rows_of<float>(*F, tag + " float32");
    check_rows_of<float16_t>(*F, tag + " float16");
    check_rows_of<bfloat16_t>(*F, tag + " bfloat16");
  }
}

// The exponentials are the element-wise Exp kernel's, bit for bit, in every build (including the clamps
// near ±88 and NaN).
TEST(RowKernels, ExpIsTheExpKernelsBits) {
  std::vector<float> x = randu(4097, 11, -100.0f, 100.0f);
  x[5] = -87.9f, x[6] = -88.1f, x[7] = 88.5f, x[8] = 0.0f, x[9] = -0.0f, x[10] = 1e-30f;
  mx::array want = mx::exp(mx::array(x.data(), {static_cast<int>(x.size())}, mx::float32));
  want.eval();
  for (const rows::RowFns* F : builds()) {
    std::vector<float> y(x.size());
    float s = F->exp_sum(x.data(), 0.0f, y.data(), static_cast<int64_t>(x.size()));
    EXPECT_EQ(std::memcmp(y.data(), want.data<float>(), y.size() * 4), 0) << "level " << F->level;
    double sd = 0;
    for (float v : y) sd += v;
    if (std::isinf(sd)) {
      EXPECT_EQ(s, sd) << "level " << F->level;
    } else {
      EXPECT_NEAR(s, sd, 1e-5 * sd) << "level " << F->level;
    }
  }
}

// The shortened exp for arguments <= 0 gives the same bits as the full one (down to the -88 cutoff).
TEST(RowKernels, NonPositiveExpIsTheSameBits) {
  std::vector<float> x = randu(4099, 12, -95.0f, 0.0f);
  x[0] = 0.0f, x[1] = -0.0f, x[2] = -88.0f, x[3] = -88.00001f, x[4] = -std::numeric_limits<float>::infinity();
  x[5] = -0.5f * 1.442695f, x[6] = -1e-30f, x[7] = -87.99999f;
  for (const rows::RowFns* F : builds()) {
    std::vector<float> a(x.size()), b(x.size());
    const float sa = F->exp_sum(x.data(), 0.0f, a.data(), static_cast<int64_t>(x.size()));
    const float sb = F->exp_sum_nonpos(x.data(), 0.0f, b.data(), static_cast<int64_t>(x.size()));
    EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * 4), 0) << "level " << F->level;
    EXPECT_EQ(sa, sb) << "level " << F->level;
  }
}

// Both exponentials at their rounding edges (t = x · log2(e) next to a half-integer, and the lower end
// where MLX's power of two becomes 0): 4096 consecutive floats around each, against the scalar exp_f.
TEST(RowKernels, ExpAtItsRoundingEdges) {
  std::vector<float> x;
  auto around = [&x](float c) {
    float lo = c, hi = c;
    for (int k = 0; k < 2048; ++k) lo = std::nextafter(lo, -INFINITY), hi = std::nextafter(hi, INFINITY);
    for (float v = lo; v <= hi; v = std::nextafter(v, INFINITY)) x.push_back(v);
  };
  for (int k = -128; k <= 127; ++k) around(static_cast<float>((k + 0.5) / 1.4426950408889634));
  for (float c : {-88.0f, 88.0f, -87.68f, -87.3365f, 0.0f}) around(c);
  std::vector<float> want(x.size());
  for (size_t i = 0; i < x.size(); ++i) want[i] = kiln::ew::exp_f(x[i]);
  for (const rows::RowFns* F : builds()) {
    std::vector<float> y(x.size());
    F->exp_sum(x.data(), 0.0f, y.data(), static_cast<int64_t>(x.size()));
    EXPECT_EQ(std::memcmp(y.data(), want.data(), y.size() * 4), 0) << "level " << F->level;
    std::vector<float> neg, wneg;
    for (size_t i = 0; i < x.size(); ++i)
      if (x[i] <= 0.0f) neg.push_back(x[i]), wneg.push_back(want[i]);
    std::vector<float> yn(neg.size());
    F->exp_sum_nonpos(neg.data(), 0.0f, yn.data(), static_cast<int64_t>(neg.size()));
    EXPECT_EQ(std::memcmp(yn.data(), wneg.data(), yn.size() * 4), 0) << "level " << F->level << " nonpositive";
  }
}

// Streaming stores (used for outputs larger than the caches) write the same values.
TEST(RowKernels, StreamedOutputsAreTheSame) {
  for (const rows::RowFns* F : builds()) {
    for (int64_t n : {int64_t(4096), int64_t(4097), int64_t(33)}) {
      std::vector<float> buf1(n + 16), buf2(n + 16);  // 64-byte aligned views into them
      auto aligned = [](std::vector<float>& v) {
        return reinterpret_cast<float*>((reinterpret_cast<uintptr_t>(v.data()) + 63) & ~uintptr_t(63));
      };
      float *y1 = aligned(buf1), *y2 = aligned(buf2);
      std::vector<float> scratch(n);
      const std::vector<float> x = randu(n, 13, -5.0f, 5.0f), w = randu(n, 14), b = randu(n, 15);
      const std::string tag = "level " + std::to_string(F->level) + " n=" + std::to_string(n);
      // The second call of each also prefetches a "next row" (w): that moves data, never values.
      F->f32.softmax(x.data(), y1, n, false, nullptr, false, nullptr);
      F->f32.softmax(x.data(), y2, n, false, scratch.data(), true, w.data());
      EXPECT_EQ(std::memcmp(y1, y2, n * 4), 0) << tag << " softmax";
      F->f32.rms_norm(x.data(), w.data(), y1, n, 1e-5f, false, nullptr);
      F->f32.rms_norm(x.data(), w.data(), y2, n, 1e-5f, true, w.data());
      EXPECT_EQ(std::memcmp(y1, y2, n * 4), 0) << tag << " rms";
      F->f32.layer_norm(x.data(), w.data(), b.data(), y1, n, 1e-5f, false, nullptr);
      F->f32.layer_norm(x.data(), w.data(), b.data(), y2, n, 1e-5f, true, w.data());
      EXPECT_EQ(F->f32.logsumexp(x.data(), n, nullptr), F->f32.logsumexp(x.data(), n, w.data())) << tag << " lse";
      EXPECT_EQ(std::memcmp(y1, y2, n * 4), 0) << tag << " layer";
    }
  }
}

TEST(RowKernels, NonFiniteRows) {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  for (const rows::RowFns* F : builds()) {
    const std::string tag = "level " + std::to_string(F->level);
    std::vector<float> x = randu(37, 5), y(37);
    x[20] = nan;
    F->f32.softmax(x.data(), y.data(), 37, false, nullptr, false, nullptr);
    for (float v : y) EXPECT_TRUE(std::isnan(v)) << tag;
    EXPECT_TRUE(std::isnan(F->f32.logsumexp(x.data(), 37, nullptr))) << tag;
    x[20] = inf;
    EXPECT_EQ(F->f32.logsumexp(x.data(), 37, nullptr), inf) << tag;
    std::vector<float> ninf(19, -inf);
    EXPECT_EQ(F->f32.logsumexp(ninf.data(), 19, nullptr), -inf) << tag;
    EXPECT_EQ(F->f32.logsumexp(ninf.data(), 0, nullptr), -inf) << tag;
    // Masked entries (-inf) get 0, the rest a softmax of their own.
    std::vector<float> m = randu(21, 6);
    for (int i = 0; i < 21; i += 2) m[i] = -inf;
    std::vector<float> ym(21);
    F->f32.softmax(m.data(), ym.data(), 21, false, nullptr, false, nullptr);
    std::vector<double> md(m.begin(), m.end());
    close(std::vector<double>(ym.begin(), ym.end()), ref_softmax(md), 2e-5, 1e-7, tag + " masked");
  }
}

// Through the ops: many rows, strided and transposed inputs, each level forced.
TEST(RowKernels, OpsOverStridedRowsEachLevel) {
  for (const rows::RowFns* F : builds()) {
    ForceIsa force(F->level);
    const std::string tag = "level " + std::to_string(F->level);
    for (mx::Dtype t : {mx::float32, mx::float16, mx::bfloat16, mx::float64}) {
      const double rt = tol_for(t) * 2;
      // (33, 4097) rows; a column slice (row stride 4097, 1001 columns); a transpose (last stride != 1).
      mx::array base = rand_array({33, 4097}, t, 21, -4.0f, 4.0f);
      mx::array sl = mx::slice(base, {0, 3}, {33, 1004});
      mx::array tr = mx::transpose(rand_array({17, 9}, t, 22), {1, 0});
      for (const mx::array& x : {base, sl, tr}) {
        const int D = x.shape(1), R = x.shape(0);
        const std::vector<double> xv = vals(x);
        std::vector<double> want_sm, want_lse, want_rms, want_ln;
        std::vector<double> ones(D, 1.0), zeros(D, 0.0);
        for (int r = 0; r < R; ++r) {
          std::vector<double> row(xv.begin() + r * D, xv.begin() + (r + 1) * D);
          for (double v : ref_softmax(row)) want_sm.push_back(v);
          want_lse.push_back(ref_lse(row));
          for (double v : ref_rms(row, ones, 1e-6)) want_rms.push_back(v);
          for (double v : ref_ln(row, ones, zeros, 1e-6)) want_ln.push_back(v);
        }
        const std::string what = tag + " " + mx::dtype_name(t) + " D=" + std::to_string(D);
        expect_close(mx::softmax(x, -1, true), want_sm, rt, 1e-7, what + " softmax");
        expect_close(mx::logsumexp(x, -1), want_lse, rt, rt, what + " logsumexp");
        expect_close(mx::fast::rms_norm(x, std::nullopt, 1e-6f), want_rms, 2 * rt, 1e-6, what + " rms_norm");
        expect_close(mx::fast::layer_norm(x, std::nullopt, std::nullopt, 1e-6f), want_ln, 2 * rt, 2 * rt,
                     what + " layer_norm");
      }
    }
  }
}

// Outputs larger than the caches (kStreamBytes): the ops stream their stores and prefetch each thread's
// next row. Every row still has the bits of the single-row loop with neither (and logsumexp's rows too).
TEST(RowKernels, LargeOutputsKeepTheRowLoopsBits) {
  const int R = 2049, D = 4096;
  ASSERT_GE(size_t(R) * D * 4, rows::kStreamBytes);
  const std::vector<float> x = randu(size_t(R) * D, 51, -6.0f, 6.0f), w = randu(D, 52, 0.5f, 1.5f);
  const std::vector<float> b = randu(D, 53);
  const mx::array xa(x.data(), {R, D}, mx::float32), wa(w.data(), {D}, mx::float32), ba(b.data(), {D}, mx::float32);
  for (const rows::RowFns* F : builds()) {
    ForceIsa force(F->level);
    const std::string tag = "level " + std::to_string(F->level);
    mx::array sm = mx::softmax(xa, -1), lse = mx::logsumexp(xa, -1);
    mx::array rms = mx::fast::rms_norm(xa, wa, 1e-5f), ln = mx::fast::layer_norm(xa, wa, ba, 1e-5f);
    mx::eval({sm, lse, rms, ln});
    std::vector<float> y(D);
    int bad_sm = 0, bad_lse = 0, bad_rms = 0, bad_ln = 0;
    for (int r = 0; r < R; ++r) {
      const float* xr = x.data() + size_t(r) * D;
      const size_t off = size_t(r) * D;
      F->f32.softmax(xr, y.data(), D, false, nullptr, false, nullptr);
      bad_sm += std::memcmp(y.data(), sm.data<float>() + off, D * 4) != 0;
      bad_lse += F->f32.logsumexp(xr, D, nullptr) != lse.data<float>()[r];
      F->f32.rms_norm(xr, w.data(), y.data(), D, 1e-5f, false, nullptr);
      bad_rms += std::memcmp(y.data(), rms.data<float>() + off, D * 4) != 0;
      F->f32.layer_norm(xr, w.data(), b.data(), y.data(), D, 1e-5f, false, nullptr);
      bad_ln += std::memcmp(y.data(), ln.data<float>() + off, D * 4) != 0;
    }
    EXPECT_EQ(bad_sm, 0) << tag << " softmax rows differing";
    EXPECT_EQ(bad_lse, 0) << tag << " logsumexp rows differing";
    EXPECT_EQ(bad_rms, 0) << tag << " rms_norm rows differing";
    EXPECT_EQ(bad_ln, 0) << tag << " layer_norm rows differing";
  }
}

// Weights and biases (vectors and scalars) through the ops, against the loops' float reference rounded
// as the previous kernels rounded (normalize, round, scale).
TEST(RowKernels, NormParametersEachLevel) {
  for (const rows::RowFns* F : builds()) {
    ForceIsa force(F->level);
    for (mx::Dtype t : {mx::float32, mx::float16, mx::bfloat16}) {
      for (int D : {3, 17, 4095}) {
        mx::array x = rand_array({5, D}, t, 31);
        mx::array w = rand_array({D}, t, 32, 0.5f, 1.5f), b = rand_array({D}, t, 33);
        mx::array ws = mx::full({D}, 1.5f, t), bs = mx::full({D}, -0.25f, t);
        const std::vector<double> xv = vals(x), wv = vals(w), bv = vals(b);
        std::vector<double> rw, rl, rls;
        for (int r = 0; r < 5; ++r) {
          std::vector<double> row(xv.begin() + r * D, xv.begin() + (r + 1) * D);
          for (double v : ref_rms(row, wv, 1e-5)) rw.push_back(v);
          for (double v : ref_ln(row, wv, bv, 1e-5)) rl.push_back(v);
          for (double v : ref_ln(row, std::vector<double>(D, 1.5), std::vector<double>(D, -0.25), 1e-5)) rls.push_back(v);
        }
        const double rt = tol_for(t) * 3;
        const std::string what = std::to_string(F->level) + " " + mx::dtype_name(t) + " D=" + std::to_string(D);
        expect_close(mx::fast::rms_norm(x, w, 1e-5f), rw, rt, rt, what + " rms w");
        expect_close(mx::fast::layer_norm(x, w, b, 1e-5f), rl, rt, rt, what + " ln w b");
        expect_close(mx::fast::layer_norm(x, ws, bs, 1e-5f), rls, rt, rt, what + " ln scalar w b");
      }
    }
  }
}

// The builds agree with each other closely: only the order of the partial sums differs (the portable
// build sums a 4097-long row nearly sequentially: about 2e-6 apart from the vector builds).
TEST(RowKernels, BuildsAgree) {
  const auto all = builds();
  const std::vector<float> x = randu(4097 * 3, 41, -8.0f, 8.0f);
  const std::vector<float> w = randu(4097, 42, 0.5f, 1.5f), b = randu(4097, 43);
  std::vector<std::vector<float>> sm, rm, ln;
  std::vector<float> lse;
  for (const rows::RowFns* F : all) {
    std::vector<float> y(x.size()), r(x.size()), l(x.size());
    for (int k = 0; k < 3; ++k) {
      const float* next = k < 2 ? x.data() + (k + 1) * 4097 : nullptr;
      F->f32.softmax(x.data() + k * 4097, y.data() + k * 4097, 4097, false, nullptr, false, next);
      F->f32.rms_norm(x.data() + k * 4097, w.data(), r.data() + k * 4097, 4097, 1e-6f, false, next);
      F->f32.layer_norm(x.data() + k * 4097, w.data(), b.data(), l.data() + k * 4097, 4097, 1e-6f, false, next);
    }
    sm.push_back(y);
    rm.push_back(r);
    ln.push_back(l);
    lse.push_back(F->f32.logsumexp(x.data(), 4097, x.data() + 4097));
  }
  for (size_t k = 1; k < all.size(); ++k) {
    const std::string tag = "level " + std::to_string(all[k]->level);
    close(std::vector<double>(sm[k].begin(), sm[k].end()), std::vector<double>(sm[0].begin(), sm[0].end()), 1e-5, 0,
          tag + " softmax");
    close(std::vector<double>(rm[k].begin(), rm[k].end()), std::vector<double>(rm[0].begin(), rm[0].end()), 1e-5,
          1e-7, tag + " rms");
    close(std::vector<double>(ln[k].begin(), ln[k].end()), std::vector<double>(ln[0].begin(), ln[0].end()), 1e-5,
          1e-6, tag + " ln");
    EXPECT_NEAR(lse[k], lse[0], 1e-6 * std::abs(lse[0])) << tag;
  }
}

// ---------------------------------------------------------------- rotary embeddings

// The rope loop of each build on the same angles, both layouts, both directions, odd half sizes: float32
// against double arithmetic, 16-bit types bit for bit against MLX's roundings (the fused RoPE of a 16-bit
// model replaces that decomposition).
template <typename T>
void check_rope_of(const rows::RowFns& F, const std::string& tag) {
  for (int64_t half : {1, 3, 17, 64, 65}) {
    const std::vector<T> x = as<T>(randu(static_cast<size_t>(2 * half), 61));
    const std::vector<float> c = randu(static_cast<size_t>(half), 62, -1.0f, 1.0f), s = randu(static_cast<size_t>(half), 63, -1.0f, 1.0f);
    for (bool trad : {false, true}) {
      for (bool fwd : {true, false}) {
        std::vector<T> y(x.size());
        rows::of<T>(F).rope(x.data(), c.data(), s.data(), y.data(), half, trad, fwd);
        std::vector<double> want(x.size());
        for (int64_t i = 0; i < half; ++i) {
          const int64_t j1 = trad ? 2 * i : i, j2 = trad ? j1 + 1 : i + half;
          if constexpr (std::is_same_v<T, float>) {
            const double x1 = x[j1], x2 = x[j2];
            want[j1] = fwd ? x1 * c[i] - x2 * s[i] : x2 * s[i] + x1 * c[i];
            want[j2] = fwd ? x1 * s[i] + x2 * c[i] : x2 * c[i] - x1 * s[i];
          } else {
            // MLX's CPU decomposition in T: the cosine and sine cast to T, each product rounded to T, the
            // difference or sum computed in float and rounded to T.
            auto r = [](float v) { return static_cast<float>(T(v)); };
            const float x1 = static_cast<float>(x[j1]), x2 = static_cast<float>(x[j2]), ci = r(c[i]), si = r(s[i]);
            want[j1] = r(fwd ? r(x1 * ci) - r(x2 * si) : r(x2 * si) + r(x1 * ci));
            want[j2] = r(fwd ? r(x1 * si) + r(x2 * ci) : r(x2 * ci) - r(x1 * si));
          }
        }
        const bool f32 = std::is_same_v<T, float>;
        close(dbl(y), want, f32 ? tol<T>() : 0.0, f32 ? 1e-6 : 0.0,
              tag + " half=" + std::to_string(half) + (trad ? " traditional" : "") + (fwd ? "" : " backward"));
      }
    }
  }
}

TEST(RowKernels, RopeEachBuild) {
  for (const rows::RowFns* F : builds()) {
    const std::string tag = "level " + std::to_string(F->level);
    check_rope_of<float>(*F, tag + " float32");
    check_rope_of<float16_t>(*F, tag + " float16");
    check_rope_of<bfloat16_t>(*F, tag + " bfloat16");
  }
}

// Through the op (angles from base, an offset, dims < D so a tail is copied, a transposed input), each
// level forced: against double arithmetic.
TEST(RowKernels, RopeOpEachLevel) {
  const int B = 2, H = 3, L = 5, D = 40, dims = 34, off = 3;
  const float base = 10000.0f, scale = 0.5f;
  for (const rows::RowFns* F : builds()) {
    ForceIsa force(F->level);
    for (mx::Dtype t : {mx::float32, mx::float16, mx::bfloat16}) {
      mx::array x0 = rand_array({B, L, H, D}, t, 64);
      mx::array x = mx::transpose(x0, {0, 2, 1, 3});  // (B, H, L, D), not row contiguous
      const std::vector<double> xv = vals(x);
      for (bool trad : {false, true}) {
        std::vector<double> want(xv.size());
        const int half = dims / 2;
        for (int r = 0; r < B * H * L; ++r) {
          const int pos = r % L;
          const double* xr = xv.data() + static_cast<size_t>(r) * D;
          double* wr = want.data() + static_cast<size_t>(r) * D;
          for (int i = 0; i < half; ++i) {
            const double inv = std::exp(-static_cast<double>(i) * std::log(double(base)) / half);
            const double th = (pos + off) * double(scale) * inv;
            const int j1 = trad ? 2 * i : i, j2 = trad ? j1 + 1 : i + half;
            wr[j1] = xr[j1] * std::cos(th) - xr[j2] * std::sin(th);
            wr[j2] = xr[j1] * std::sin(th) + xr[j2] * std::cos(th);
          }
          for (int j = dims; j < D; ++j) wr[j] = xr[j];
        }
        expect_close(mx::fast::rope(x, dims, trad, base, scale, off), want, 2 * tol_for(t), 2 * tol_for(t),
                     "level " + std::to_string(F->level) + " " + mx::dtype_name(t) + (trad ? " traditional" : ""));
      }
    }
  }
}

// ---------------------------------------------------------------- attention (tiled, online softmax)

// softmax(scale · q kᵀ + mask) v in double, one (batch, head, query) at a time. mask: none (0), causal
// (1, aligned to the bottom-right), additive array (2, (L_q, L_k)) or bool array (3, (L_q, L_k)).
std::vector<double> ref_attention(const std::vector<double>& q, const std::vector<double>& k,
                                  const std::vector<double>& v, int B, int Hq, int Hk, int Lq, int Lk, int D, int Dv,
                                  double scale, int mode, const std::vector<double>& mask,
                                  const std::vector<double>* sinks = nullptr, std::vector<double>* lse = nullptr) {
  std::vector<double> o(static_cast<size_t>(B) * Hq * Lq * Dv);
  std::vector<double> s(Lk);
  const int off = Lk - Lq;
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < Hq; ++h) {
      const int hk = h / (Hq / Hk);
      for (int i = 0; i < Lq; ++i) {
        double mx = -INFINITY;
        for (int j = 0; j < Lk; ++j) {
          double d = 0;
          for (int c = 0; c < D; ++c) {
            d += q[((static_cast<size_t>(b) * Hq + h) * Lq + i) * D + c] * k[((static_cast<size_t>(b) * Hk + hk) * Lk + j) * D + c];
          }
          d *= scale;
          if (mode == 1 && j > i + off) d = -INFINITY;
          if (mode == 2) d += mask[static_cast<size_t>(i) * Lk + j];
          if (mode == 3 && mask[static_cast<size_t>(i) * Lk + j] == 0) d = -INFINITY;
          s[j] = d;
          mx = std::max(mx, d);
        }
        if (sinks) mx = std::max(mx, (*sinks)[h]);
        double tot = sinks ? std::exp((*sinks)[h] - mx) : 0.0;
        for (int j = 0; j < Lk; ++j) tot += (s[j] = std::exp(s[j] - mx));
        if (lse) lse->push_back(mx + std::log(tot));
        for (int c = 0; c < Dv; ++c) {
          double acc = 0;
          for (int j = 0; j < Lk; ++j) acc += s[j] * v[((static_cast<size_t>(b) * Hk + hk) * Lk + j) * Dv + c];
          o[((static_cast<size_t>(b) * Hq + h) * Lq + i) * Dv + c] = acc / tot;
        }
      }
    }
  return o;
}

// T in {1, 7, 64, 257, 1024} with grouped-query heads, every mask kind and float32 / 16-bit types, and
// 64 queries over 5000 / 4500 keys: the blocked BLAS path with several key blocks, the last partial.
TEST(RowKernels, AttentionTiledAgainstReference) {
  struct Case {
    int T, D;
    mx::Dtype t;
    int Lk = 0;  // keys when not T
  };
  const std::vector<Case> cases = {{1, 64, mx::float32},    {7, 64, mx::float32},    {64, 64, mx::float32},
                                   {257, 64, mx::float32},  {1024, 64, mx::float32}, {257, 64, mx::float16},
                                   {1024, 64, mx::bfloat16}, {64, 64, mx::float32, 5000}, {64, 64, mx::bfloat16, 4500}};
  for (const Case& c : cases) {
    // Under a sanitizer the long sequences' extra key blocks add time, not paths (257 and the 4500-5000
    // key cases already span several blocks).
    if (test_util::kSanitized && c.T >= 1024) continue;
    const int B = 1, Hq = c.T >= 1024 ? 2 : 4, Hk = c.T >= 1024 ? 1 : 2, Dv = c.D;
    const int Lq = c.T, Lk = c.Lk ? c.Lk : c.T;
    mx::array q = rand_array({B, Hq, Lq, c.D}, c.t, 51, -1.0f, 1.0f);
    mx::array k = rand_array({B, Hk, Lk, c.D}, c.t, 52, -1.0f, 1.0f);
    mx::array v = rand_array({B, Hk, Lk, Dv}, c.t, 53);
    mx::array madd = rand_array({Lq, Lk}, c.t, 54, -2.0f, 0.0f);
    mx::array mbool = mx::greater(rand_array({Lq, Lk}, mx::float32, 55, 0.0f, 1.0f), mx::array(0.3f));
    // Keep the diagonal visible so no row is fully masked.
    mbool = mx::logical_or(mbool, mx::eye(Lq, Lk, Lk - Lq, mx::bool_));
    const std::vector<double> qv = vals(q), kv = vals(k), vv = vals(v), ma = vals(madd), mb = vals(mbool);
    const double scale = 1.0 / std::sqrt(static_cast<double>(c.D));
    const double rt = c.t == mx::float32 ? 2e-4 : c.t == mx::float16 ? 1e-2 : 4e-2;
    const std::string what = "T=" + std::to_string(c.T) + " Lk=" + std::to_string(Lk) + " " + mx::dtype_name(c.t);
    for (int mode = 0; mode < 4; ++mode) {
      if (c.T >= 1024 && mode >= 2 && c.t != mx::float32) continue;  // the long 16-bit case: no/causal mask only
      std::vector<double> want = ref_attention(qv, kv, vv, B, Hq, Hk, Lq, Lk, c.D, Dv, static_cast<float>(scale),
                                               mode, mode == 2 ? ma : mb);
      mx::array o = mode == 0   ? mx::fast::scaled_dot_product_attention(q, k, v, static_cast<float>(scale))
                    : mode == 1 ? mx::fast::scaled_dot_product_attention(q, k, v, static_cast<float>(scale), "causal")
                    : mx::fast::scaled_dot_product_attention(q, k, v, static_cast<float>(scale), "array",
                                                             mode == 2 ? madd : mbool);
      expect_close(o, want, rt, rt, what + " mode " + std::to_string(mode));
    }
  }
}

// Sinks and the logsumexp output through the blocked path (several key blocks).
TEST(RowKernels, AttentionTiledSinksAndLogsumexp) {
  const int B = 1, Hq = 4, Hk = 2, Lq = 64, Lk = 4200, D = 64;
  mx::array q = rand_array({B, Hq, Lq, D}, mx::float32, 71, -1.0f, 1.0f);
  mx::array k = rand_array({B, Hk, Lk, D}, mx::float32, 72, -1.0f, 1.0f);
  mx::array v = rand_array({B, Hk, Lk, D}, mx::float32, 73);
  mx::array sinks = rand_array({Hq}, mx::float32, 74, -1.0f, 3.0f);
  const std::vector<double> sv = vals(sinks);
  for (int mode : {0, 1}) {
    std::vector<double> lse;
    const auto want = ref_attention(vals(q), vals(k), vals(v), B, Hq, Hk, Lq, Lk, D, D, 0.125, mode, {}, &sv, &lse);
    auto outs = mx::fast::detail::scaled_dot_product_attention_with_lse(q, k, v, 0.125f, mode ? "causal" : "",
                                                                         std::nullopt, sinks);
    ASSERT_EQ(outs.size(), 2u);
    expect_close(outs[0], want, 2e-4, 2e-5, "sinks mode " + std::to_string(mode));
    expect_close(outs[1], lse, 1e-5, 1e-5, "lse mode " + std::to_string(mode));
  }
}

}  // namespace

