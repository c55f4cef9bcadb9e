// The vectorized QuantizedMatmul / GatherQMM kernels (src/backend/cpu/kernels/quantized/qmm_*.cpp)
// against a float64 reference written here: the packed codes, scales and biases decoded in double,
// then multiplied in double. Every mode, width and group size, both transposes, every float dtype,
// few and many rows of x, with each instruction set forced in turn (set_qmm_isa: AVX-512 where the CPU
// has it, AVX2, and the portable path). The tolerance is the float accumulation bound:
// (K + 2)·u·Σ|x·w| with u the accumulator's unit roundoff, plus the output dtype's rounding of |y|.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include <kiln/fast.h>
#include <kiln/kiln.h>
#include <kiln/ops/quantized.h>

#include "backend/cpu/gemm/gemm.h"
#include "backend/cpu/kernels/quantized/quantized_kernels.h"
#include "core/fusion.h"
#include "unit/fast_test_util.h"

namespace {

namespace mx = kiln;
using fast_test::rand_array;
using fast_test::vals;
using mx::quant::QmmIsa;

struct QSpec {
  std::string mode;
  int gs, bits;
};

std::vector<QSpec> all_specs() {
  std::vector<QSpec> v;
  for (int gs : {32, 64, 128}) {
    for (int b : {2, 3, 4, 5, 6, 8}) v.push_back({"affine", gs, b});
  }
  v.push_back({"mxfp4", 32, 4});
  v.push_back({"mxfp8", 32, 8});
  v.push_back({"nvfp4", 16, 4});
  return v;
}

std::string spec_name(const QSpec& q) { return q.mode + "_g" + std::to_string(q.gs) + "_b" + std::to_string(q.bits); }

// The instruction sets this CPU can run, best first (the portable path always).
std::vector<QmmIsa> isas() {
  std::vector<QmmIsa> v;
  for (int i = static_cast<int>(mx::quant::qmm_best_isa()); i >= 0; --i) v.push_back(static_cast<QmmIsa>(i));
  return v;
}

const char* isa_name(QmmIsa i) {
  return i == QmmIsa::Amx ? "amx" : i == QmmIsa::Avx512 ? "avx512" : i == QmmIsa::Avx2 ? "avx2" : "scalar";
}

// Whether the AMX product runs in this process (the CPU and OS have it and KILN_CPU_ISA leaves it on).
bool amx_here() { return mx::quant::qmm_best_isa() == QmmIsa::Amx && mx::cpu::amx_usable(); }

// Restores the default instruction set when a test ends.
struct IsaGuard {
  ~IsaGuard() { mx::quant::set_qmm_isa(std::nullopt); }
};

// A quantized matrix and its values decoded in double ([rows, cols], row-major; batch matrices stacked).
struct Quantized {
  mx::array wq, s;
  std::optional<mx::array> b;
  std::vector<double> W;
};

Quantized make_quantized(const QSpec& q, const mx::Shape& shape, mx::Dtype dt, uint32_t seed) {
  auto w = rand_array(shape, dt, seed, -1.0f, 1.0f);
  auto r = mx::quantize(w, q.gs, q.bits, q.mode);
  for (auto& a : r) a.eval();
  Quantized out{r[0], r[1], r.size() > 2 ? std::optional<mx::array>(r[2]) : std::nullopt, {}};
  const int64_t cols = shape.back();
  const int64_t rows = static_cast<int64_t>(fast_test::numel(shape)) / cols;
  const auto* bytes = static_cast<const uint8_t*>(out.wq.raw_data());
  const std::vector<double> sv = vals(out.s);
  const std::vector<double> bv = out.b ? vals(*out.b) : std::vector<double>();
  const int64_t row_bytes = cols * q.bits / 8, ng = cols / q.gs;
  out.W.resize(static_cast<size_t>(rows * cols));
  for (int64_t r0 = 0; r0 < rows; ++r0) {
    for (int64_t j = 0; j < cols; ++j) {
      const int64_t bit = j * q.bits;
      const uint8_t* p = bytes + r0 * row_bytes + bit / 8;
      const uint32_t two = p[0] | (bit % 8 + q.bits > 8 ? uint32_t(p[1]) << 8 : 0u);
      const uint32_t code = (two >> (bit % 8)) & ((1u << q.bits) - 1u);
      const int64_t g = r0 * ng + j / q.gs;
      double v;
      if (q.mode == "affine") {
        v = sv[g] * code + bv[g];
      } else {
        const double scale = q.mode == "nvfp4" ? double(mx::quant::from_fp8(static_cast<uint8_t>(sv[g])))
                                               : std::ldexp(1.0, static_cast<int>(sv[g]) - 127);
        v = (q.bits == 8 ? double(mx::quant::from_fp8(static_cast<uint8_t>(code))) : double(mx::quant::kFp4[code])) *
            scale;
      }
      out.W[r0 * cols + j] = v;
    }
  }
  return out;
}

// ref[m, n] and Σ|x·w| of x [M, K] against the matrix at W (transposed: [N, K], else [K, N]).
void reference(const std::vector<double>& x, const double* W, int64_t M, int64_t N, int64_t K, bool transpose,
               std::vector<double>& ref, std::vector<double>& mag) {
  ref.assign(static_cast<size_t>(M * N), 0.0);
  mag.assign(static_cast<size_t>(M * N), 0.0);
  for (int64_t m = 0; m < M; ++m) {
    for (int64_t k = 0; k < K; ++k) {
      const double xv = x[m * K + k];
      for (int64_t n = 0; n < N; ++n) {
        const double w = transpose ? W[n * K + k] : W[k * N + n];
        ref[m * N + n] += xv * w;
        mag[m * N + n] += std::abs(xv * w);
      }
    }
  }
}

double unit_roundoff(mx::Dtype t) { return t == mx::float64 ? 0x1p-53 : 0x1p-24; }
double out_roundoff(mx::Dtype t) {
  if (t == mx::float16) return 0x1p-11;
  if (t == mx::bfloat16) return 0x1p-8;
  return 0.0;
}

// Compares got with ref elementwise; returns the number of mismatches (and reports the first).
int compare(const std::vector<double>& got, const std::vector<double>& ref, const std::vector<double>& mag,
            int64_t K, mx::Dtype dt) {
  int bad = 0;
  const double u = unit_roundoff(dt), uo = out_roundoff(dt);
  for (size_t i = 0; i < ref.size(); ++i) {
    const double tol = (static_cast<double>(K) + 2.0) * u * mag[i] + uo * std::abs(ref[i]) + 1e-30;
    if (!(std::abs(got[i] - ref[i]) <= tol)) {
      if (bad == 0) {
        ADD_FAILURE() << "element " << i << ": got " << got[i] << ", want " << ref[i] << " (tol " << tol << ")";
      }
      ++bad;
    }
  }
  return bad;
}

class QmmKernels : public ::testing::TestWithParam<QSpec> {};

// Every transpose, dtype, row count and instruction set for one (mode, group size, bits).
TEST_P(QmmKernels, MatchesFloat64Reference) {
  IsaGuard guard;
  const QSpec q = GetParam();
  const mx::Dtype dtypes[] = {mx::float32, mx::float16, mx::bfloat16, mx::float64};
  int checked = 0;
  for (bool transpose : {true, false}) {
    // (rows of the packed matrix, its length): odd where the layout allows.
    struct Sh {
      int64_t N, K;
    };
    const Sh shapes[] = {transpose ? Sh{37, 3 * q.gs} : Sh{3 * q.gs, 37},
                         transpose ? Sh{130, 5 * q.gs} : Sh{5 * q.gs + (q.gs < 128 ? 128 : 0), 21}};
    for (int si = 0; si < 2; ++si) {
      const int64_t N = shapes[si].N, K = shapes[si].K;
      for (mx::Dtype dt : dtypes) {
        const mx::Shape wshape = transpose ? mx::Shape{int(N), int(K)} : mx::Shape{int(K), int(N)};
        Quantized qw = make_quantized(q, wshape, dt, 1000u + static_cast<uint32_t>(q.gs * 10 + q.bits + si));
        for (int M : {1, 2, 3, 7, 8, 9, 16, 17, 33}) {
          if (si == 1 && M != 1 && M != 9) continue;
          auto x = rand_array({M, int(K)}, dt, 7u + static_cast<uint32_t>(M));
          const std::vector<double> xv = vals(x);
          std::vector<double> ref, mag;
          reference(xv, qw.W.data(), M, N, K, transpose, ref, mag);
          for (QmmIsa isa : isas()) {
            SCOPED_TRACE(spec_name(q) + " transpose=" + std::to_string(transpose) + " N=" + std::to_string(N) +
                         " K=" + std::to_string(K) + " M=" + std::to_string(M) + " dtype=" +
                         mx::dtype_name(dt) + " isa=" + isa_name(isa));
            mx::quant::set_qmm_isa(isa);
            auto y = mx::quantized_matmul(x, qw.wq, qw.s, qw.b, transpose, q.gs, q.bits, q.mode);
            ASSERT_EQ(y.shape(), (mx::Shape{M, int(N)}));
            ASSERT_EQ(y.dtype(), dt);
            ASSERT_EQ(compare(vals(y), ref, mag, K, dt), 0);
            ++checked;
          }
        }
      }
    }
  }
  EXPECT_EQ(checked, 2 * 4 * (9 + 2) * static_cast<int>(isas().size()));
}

INSTANTIATE_TEST_SUITE_P(AllModes, QmmKernels, ::testing::ValuesIn(all_specs()),
                         [](const auto& info) { return spec_name(info.param); });

// A long K (the decode shapes' accumulation pattern) with the hot 4-bit layout and the fp modes.
TEST(QmmKernelsLongK, Float32M1) {
  IsaGuard guard;
  for (const QSpec& q : {QSpec{"affine", 64, 4}, QSpec{"affine", 32, 3}, QSpec{"mxfp4", 32, 4}, QSpec{"nvfp4", 16, 4},
                         QSpec{"mxfp8", 32, 8}}) {
    const int64_t N = 67, K = 4096;
    Quantized qw = make_quantized(q, {int(N), int(K)}, mx::float32, 77u);
    auto x = rand_array({1, int(K)}, mx::float32, 78u);
    std::vector<double> ref, mag;
    reference(vals(x), qw.W.data(), 1, N, K, true, ref, mag);
    for (QmmIsa isa : isas()) {
      SCOPED_TRACE(spec_name(q) + " isa=" + isa_name(isa));
      mx::quant::set_qmm_isa(isa);
      auto y = mx::quantized_matmul(x, qw.wq, qw.s, qw.b, true, q.gs, q.bits, q.mode);
      EXPECT_EQ(compare(vals(y), ref, mag, K, mx::float32), 0);
    }
  }
}

// Prefill-sized x · Wᵀ (17..256 rows): the weights dequantized straight into the packed GEMM's panels.
// Shapes that cross every block edge of that GEMM: K over several 256-deep blocks with a shorter last one,
// N over several column blocks with a partial 32-wide strip, M over two row blocks (M > 128) and a
// partial 8-row tile; a batch of x against shared weights and a bfloat16 output. Each against float64
// (the same bound as every other path) and, in float32, against the unfused product (dequantize, then
// matmul) and every instruction set (the portable one takes the unfused path).
TEST(QmmKernelsPrefill, DequantIntoPanelsMatchesReferenceAndUnfused) {
  IsaGuard guard;
  for (const QSpec& q : {QSpec{"affine", 64, 4}, QSpec{"affine", 32, 3}, QSpec{"affine", 128, 8},
                         QSpec{"mxfp4", 32, 4}, QSpec{"nvfp4", 16, 4}, QSpec{"mxfp8", 32, 8}}) {
    const int64_t N = 300, K = q.gs * (640 / q.gs);
    for (mx::Dtype dt : {mx::float32, mx::bfloat16}) {
      Quantized qw = make_quantized(q, {int(N), int(K)}, dt, 400u + static_cast<uint32_t>(q.gs + q.bits));
      const mx::array wf = mx::dequantize(qw.wq, qw.s, qw.b, q.gs, q.bits, q.mode, mx::float32);
      for (int M : {17, 131, 200}) {
        for (int batch : {1, 2}) {
          if (batch == 2 && M != 131) continue;
          mx::Shape xs = batch == 1 ? mx::Shape{M, int(K)} : mx::Shape{batch, M, int(K)};
          auto x = rand_array(xs, dt, 500u + static_cast<uint32_t>(M + batch));
          std::vector<double> ref, mag;
          reference(vals(x), qw.W.data(), batch * M, N, K, true, ref, mag);
          const auto unfused = vals(mx::matmul(mx::astype(x, mx::float32), mx::transpose(wf)));
          for (QmmIsa isa : isas()) {
            SCOPED_TRACE(spec_name(q) + " M=" + std::to_string(M) + " batch=" + std::to_string(batch) + " dtype=" +
                         mx::dtype_name(dt) + " isa=" + isa_name(isa));
            mx::quant::set_qmm_isa(isa);
            auto y = mx::quantized_matmul(x, qw.wq, qw.s, qw.b, true, q.gs, q.bits, q.mode);
            ASSERT_EQ(y.dtype(), dt);
            const auto got = vals(y);
            EXPECT_EQ(compare(got, ref, mag, K, dt), 0);
            // In float32 the unfused product differs only by summation order.
            if (dt == mx::float32) {
              const double tol = 2.0 * (static_cast<double>(K) + 2.0) * 0x1p-24;
              int bad = 0;
              for (size_t i = 0; i < got.size(); ++i) {
                if (!(std::abs(got[i] - unfused[i]) <= tol * mag[i] + 1e-30)) ++bad;
              }
              EXPECT_EQ(bad, 0);
            }
          }
        }
      }
    }
  }
}

// The AMX product (cpu::qgemm_amx: x in three bfloat16 planes, exact codes, per-group scales) at the
// shapes its blocking has edges for: rows of x not a multiple of 16 or 32 and more than one 256-row pass,
// weight rows not a multiple of 16, 32 or 64 (one row too), every group size it takes and every code
// kind; against float64 with the float32 bound and against the float32 fused path (summation order
// only). A CPU without AMX has no such path to test and reports the case skipped.
TEST(QmmKernelsAmx, EdgesModesAndWidthsMatchReferenceAndFloat32Path) {
  if (!amx_here()) GTEST_SKIP() << "no AMX-BF16 here (the CPU or OS has none, or KILN_CPU_ISA is lower)";
  IsaGuard guard;
  int checked = 0;
  for (const QSpec& q : {QSpec{"affine", 64, 4}, QSpec{"affine", 32, 2}, QSpec{"affine", 128, 8},
                         QSpec{"affine", 64, 3}, QSpec{"affine", 32, 5}, QSpec{"affine", 64, 6},
                         QSpec{"mxfp4", 32, 4}, QSpec{"mxfp8", 32, 8}}) {
    struct Sh {
      int M;
      int64_t N, K;
    };
    for (const Sh& sh : {Sh{17, 1, 2 * q.gs}, Sh{33, 65, 4 * q.gs}, Sh{300, 31, 2 * q.gs}, Sh{48, 130, 384}}) {
      if (sh.K % q.gs != 0) continue;
      Quantized qw = make_quantized(q, {int(sh.N), int(sh.K)}, mx::float32, 600u + static_cast<uint32_t>(sh.M));
      auto x = rand_array({sh.M, int(sh.K)}, mx::float32, 700u + static_cast<uint32_t>(sh.N));
      std::vector<double> ref, mag;
      reference(vals(x), qw.W.data(), sh.M, sh.N, sh.K, true, ref, mag);
      SCOPED_TRACE(spec_name(q) + " M=" + std::to_string(sh.M) + " N=" + std::to_string(sh.N) +
                   " K=" + std::to_string(sh.K));
      mx::quant::set_qmm_isa(QmmIsa::Amx);
      const auto amx = vals(mx::quantized_matmul(x, qw.wq, qw.s, qw.b, true, q.gs, q.bits, q.mode));
      mx::quant::set_qmm_isa(QmmIsa::Avx512);
      const auto f32 = vals(mx::quantized_matmul(x, qw.wq, qw.s, qw.b, true, q.gs, q.bits, q.mode));
      EXPECT_EQ(compare(amx, ref, mag, sh.K, mx::float32), 0);
      const double tol = 2.0 * (static_cast<double>(sh.K) + 2.0) * 0x1p-24;
      int bad = 0;
      for (size_t i = 0; i < amx.size(); ++i) {
        if (!(std::abs(amx[i] - f32[i]) <= tol * mag[i] + 1e-30)) ++bad;
      }
      EXPECT_EQ(bad, 0);
      ++checked;
    }
  }
  EXPECT_GE(checked, 28);
}

// AMX declines what it cannot do exactly and the other paths answer: an x with inf (the planes would
// turn it into NaN) gives what the float32 path gives, element for element; nvfp4's groups of 16 (under a
// tile's 32) run the float32 path. cpu::qgemm_amx itself returns false and leaves C as it was.
TEST(QmmKernelsAmx, DeclinesNonFiniteXAndSmallGroups) {
  if (!amx_here()) GTEST_SKIP() << "no AMX-BF16 here (the CPU or OS has none, or KILN_CPU_ISA is lower)";
  IsaGuard guard;
  const QSpec q{"affine", 64, 4};
  const int M = 40, N = 70, K = 256;
  Quantized qw = make_quantized(q, {N, K}, mx::float32, 801u);
  std::vector<float> xv(static_cast<size_t>(M * K));
  for (size_t i = 0; i < xv.size(); ++i) xv[i] = static_cast<float>((i * 37) % 101) / 50.0f - 1.0f;
  xv[5 * K + 7] = std::numeric_limits<float>::infinity();
  xv[30 * K + 100] = -std::numeric_limits<float>::infinity();
  const mx::array x(xv, mx::Shape{M, K});
  mx::quant::set_qmm_isa(QmmIsa::Amx);
  const auto amx = vals(mx::quantized_matmul(x, qw.wq, qw.s, qw.b, true, q.gs, q.bits, q.mode));
  mx::quant::set_qmm_isa(QmmIsa::Avx512);
  const auto f32 = vals(mx::quantized_matmul(x, qw.wq, qw.s, qw.b, true, q.gs, q.bits, q.mode));
  int infs = 0;
  for (size_t i = 0; i < amx.size(); ++i) {
    if (std::isnan(f32[i])) {
      EXPECT_TRUE(std::isnan(amx[i])) << i;
    } else {
      EXPECT_EQ(amx[i], f32[i]) << i;
    }
    infs += std::isinf(amx[i]) ? 1 : 0;
  }
  EXPECT_GE(infs, N);  // rows 5 and 30 are infinite (or NaN where a weight is 0)
  // nvfp4 (groups of 16) at the AMX level: the float32 path's result, against float64.
  const QSpec nv{"nvfp4", 16, 4};
  Quantized qn = make_quantized(nv, {N, K}, mx::float32, 802u);
  auto xn = rand_array({M, K}, mx::float32, 803u);
  std::vector<double> ref, mag;
  reference(vals(xn), qn.W.data(), M, N, K, true, ref, mag);
  mx::quant::set_qmm_isa(QmmIsa::Amx);
  EXPECT_EQ(compare(vals(mx::quantized_matmul(xn, qn.wq, qn.s, qn.b, true, nv.gs, nv.bits, nv.mode)), ref, mag, K,
                    mx::float32),
            0);
  // The primitive: groups of 16, K not a multiple of the group, and inf in A are declined, C untouched.
  std::vector<float> a(static_cast<size_t>(32 * 64), 1.0f), s(64, 1.0f), c(32 * 32, 7.0f);
  const mx::cpu::CodesB codes = [](int64_t, int64_t nr, int64_t, int64_t kc, uint16_t* dst, int64_t ldd) {
    for (int64_t r = 0; r < nr; ++r) std::fill(dst + r * ldd, dst + r * ldd + kc, uint16_t(0x3f80));
  };
  EXPECT_FALSE(mx::cpu::qgemm_amx(32, 32, 64, a.data(), 64, 16, codes, s.data(), nullptr, 4, c.data(), 32));
  EXPECT_FALSE(mx::cpu::qgemm_amx(32, 32, 48, a.data(), 48, 32, codes, s.data(), nullptr, 1, c.data(), 32));
  a[100] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_FALSE(mx::cpu::qgemm_amx(32, 32, 64, a.data(), 64, 32, codes, s.data(), nullptr, 2, c.data(), 32));
  for (float v : c) ASSERT_EQ(v, 7.0f);
  // With A finite again it runs: every code 1 and scale 1, so each output is its row's sum, 64.
  a[100] = 1.0f;
  ASSERT_TRUE(mx::cpu::qgemm_amx(32, 32, 64, a.data(), 64, 32, codes, s.data(), nullptr, 2, c.data(), 32));
  for (float v : c) ASSERT_EQ(v, 64.0f);
}

// x with strides (a transposed view, a strided slice) and with a batch axis folded into its rows.
TEST(QmmKernelsLayout, StridedAndBatchedX) {
  IsaGuard guard;
  const QSpec q{"affine", 64, 4};
  const int64_t N = 45, K = 192;
  Quantized qw = make_quantized(q, {int(N), int(K)}, mx::float32, 5u);
  for (QmmIsa isa : isas()) {
    SCOPED_TRACE(isa_name(isa));
    mx::quant::set_qmm_isa(isa);
    for (int M : {1, 5, 12}) {
      auto xt = mx::transpose(rand_array({int(K), M}, mx::float32, 9u));  // [M, K], column-major
      auto xs = mx::slice(rand_array({M, int(2 * K)}, mx::float32, 10u), {0, 0}, {M, int(2 * K)}, {1, 2});
      for (const auto& x : {xt, xs}) {
        std::vector<double> ref, mag;
        reference(vals(x), qw.W.data(), M, N, K, true, ref, mag);
        auto y = mx::quantized_matmul(x, qw.wq, qw.s, qw.b, true, q.gs, q.bits, q.mode);
        EXPECT_EQ(compare(vals(y), ref, mag, K, mx::float32), 0);
      }
    }
    // [2, 3, K] bfloat16 x against a matrix: the batch folds into 6 rows.
    auto xb = rand_array({2, 3, int(K)}, mx::bfloat16, 11u);
    std::vector<double> ref, mag;
    Quantized qb = make_quantized(q, {int(N), int(K)}, mx::bfloat16, 5u);
    reference(vals(xb), qb.W.data(), 6, N, K, true, ref, mag);
    auto y = mx::quantized_matmul(xb, qb.wq, qb.s, qb.b, true, q.gs, q.bits, q.mode);
    ASSERT_EQ(y.shape(), (mx::Shape{2, 3, int(N)}));
    EXPECT_EQ(compare(vals(y), ref, mag, K, mx::bfloat16), 0);
  }
}

// Batched x against batched w: one product per batch matrix (a broadcast w batch included).
TEST(QmmKernelsLayout, BatchedWeights) {
  IsaGuard guard;
  for (const QSpec& q : {QSpec{"affine", 32, 4}, QSpec{"affine", 64, 6}, QSpec{"mxfp4", 32, 4}}) {
    const int64_t N = 192, K = 128;  // both group multiples (transpose=false packs N)
    for (bool transpose : {true, false}) {
      const int64_t R = transpose ? N : K, C = transpose ? K : N;
      Quantized qw = make_quantized(q, {2, int(R), int(C)}, mx::float32, 21u);
      for (QmmIsa isa : isas()) {
        mx::quant::set_qmm_isa(isa);
        for (int M : {1, 4, 17}) {
          SCOPED_TRACE(spec_name(q) + " transpose=" + std::to_string(transpose) + " M=" + std::to_string(M) + " " +
                       isa_name(isa));
          auto x = rand_array({2, M, int(K)}, mx::float32, 22u);
          const std::vector<double> xv = vals(x);
          auto y = mx::quantized_matmul(x, qw.wq, qw.s, qw.b, transpose, q.gs, q.bits, q.mode);
          const std::vector<double> got = vals(y);
          for (int b = 0; b < 2; ++b) {
            std::vector<double> xb(xv.begin() + b * M * K, xv.begin() + (b + 1) * M * K), ref, mag;
            reference(xb, qw.W.data() + b * R * C, M, N, K, transpose, ref, mag);
            std::vector<double> gb(got.begin() + b * M * N, got.begin() + (b + 1) * M * N);
            EXPECT_EQ(compare(gb, ref, mag, K, mx::float32), 0) << "batch " << b;
          }
        }
      }
    }
  }
}

// GatherQMM: lhs [2, 1] and rhs [1, 3] broadcast to [2, 3] jobs, each x[lhs] · W[rhs](ᵀ).
TEST(QmmKernelsGather, BroadcastIndices) {
  IsaGuard guard;
  for (const QSpec& q : {QSpec{"affine", 64, 4}, QSpec{"affine", 32, 5}, QSpec{"nvfp4", 16, 4}, QSpec{"mxfp8", 32, 8}}) {
    for (bool transpose : {true, false}) {
      const int64_t E = 4, N = 192, K = 128;
      const int64_t R = transpose ? N : K, C = transpose ? K : N;
      for (mx::Dtype dt : {mx::float32, mx::float16}) {
        Quantized qw = make_quantized(q, {int(E), int(R), int(C)}, dt, 31u);
        for (int M : {1, 3, 10, 20}) {
          auto x = rand_array({3, M, int(K)}, dt, 32u);
          const std::vector<double> xv = vals(x);
          const uint32_t lhs_v[] = {2, 0}, rhs_v[] = {3, 1, 3};
          mx::array lhs(std::vector<uint32_t>{2, 0}, {2, 1}, mx::uint32);
          mx::array rhs(std::vector<uint32_t>{3, 1, 3}, {1, 3}, mx::uint32);
          for (QmmIsa isa : isas()) {
            SCOPED_TRACE(spec_name(q) + " transpose=" + std::to_string(transpose) + " M=" + std::to_string(M) +
                         " " + mx::dtype_name(dt) + " " + isa_name(isa));
            mx::quant::set_qmm_isa(isa);
            auto y = mx::gather_qmm(x, qw.wq, qw.s, qw.b, lhs, rhs, transpose, q.gs, q.bits, q.mode);
            ASSERT_EQ(y.shape(), (mx::Shape{2, 3, M, int(N)}));
            const std::vector<double> got = vals(y);
            for (int i = 0; i < 2; ++i) {
              for (int j = 0; j < 3; ++j) {
                std::vector<double> xb(xv.begin() + lhs_v[i] * M * K, xv.begin() + (lhs_v[i] + 1) * M * K), ref, mag;
                reference(xb, qw.W.data() + rhs_v[j] * R * C, M, N, K, transpose, ref, mag);
                const int64_t o = (i * 3 + j) * M * N;
                std::vector<double> gb(got.begin() + o, got.begin() + o + M * N);
                EXPECT_EQ(compare(gb, ref, mag, K, dt), 0) << "job " << i << "," << j;
              }
            }
          }
        }
      }
    }
  }
}

// No rows, no columns, and K == 0 (a zero result).
TEST(QmmKernelsEdge, EmptyAndZeroK) {
  IsaGuard guard;
  const QSpec q{"affine", 64, 4};
  Quantized qw = make_quantized(q, {24, 128}, mx::float32, 41u);
  for (QmmIsa isa : isas()) {
    SCOPED_TRACE(isa_name(isa));
    mx::quant::set_qmm_isa(isa);
    auto y0 = mx::quantized_matmul(mx::zeros({0, 128}, mx::float32), qw.wq, qw.s, qw.b, true, 64, 4);
    y0.eval();
    EXPECT_EQ(y0.shape(), (mx::Shape{0, 24}));
    auto wq0 = mx::zeros({0, 16}, mx::uint32);
    auto s0 = mx::zeros({0, 2}, mx::float32);
    auto yn = mx::quantized_matmul(rand_array({3, 128}, mx::float32, 1u), wq0, s0, s0, true, 64, 4);
    yn.eval();
    EXPECT_EQ(yn.shape(), (mx::Shape{3, 0}));
    auto wk = mx::zeros({5, 0}, mx::uint32);
    auto sk = mx::zeros({5, 0}, mx::float32);
    auto yk = mx::quantized_matmul(mx::zeros({3, 0}, mx::float32), wk, sk, sk, true, 64, 4);
    ASSERT_EQ(yk.shape(), (mx::Shape{3, 5}));
    for (double v : vals(yk)) EXPECT_EQ(v, 0.0);
  }
}

// The switch itself: a request above the CPU's best is clamped; nullopt restores the default.
TEST(QmmKernelsIsa, OverrideClampsToCpu) {
  IsaGuard guard;
  mx::quant::set_qmm_isa(QmmIsa::Scalar);
  EXPECT_EQ(mx::quant::qmm_isa(), QmmIsa::Scalar);
  mx::quant::set_qmm_isa(QmmIsa::Amx);
  EXPECT_EQ(mx::quant::qmm_isa(), mx::quant::qmm_best_isa());
  mx::quant::set_qmm_isa(QmmIsa::Avx512);
  EXPECT_EQ(mx::quant::qmm_isa(), std::min(QmmIsa::Avx512, mx::quant::qmm_best_isa()));
  mx::quant::set_qmm_isa(QmmIsa::Avx2);
  EXPECT_EQ(mx::quant::qmm_isa(), std::min(QmmIsa::Avx2, mx::quant::qmm_best_isa()));
}

}  // namespace

namespace {

// The root mean square over the outputs of |y − ref| / Σ|x·w| for x · Wᵀ at instruction set `isa`.
double rms_rel_error(const mx::array& x, const Quantized& qw, const QSpec& q, const std::vector<double>& ref,
                     const std::vector<double>& mag, QmmIsa isa) {
  mx::quant::set_qmm_isa(isa);
  const std::vector<double> y = vals(mx::quantized_matmul(x, qw.wq, qw.s, qw.b, true, q.gs, q.bits, q.mode));
  double s = 0;
  for (size_t i = 0; i < y.size(); ++i) s += std::pow((y[i] - ref[i]) / mag[i], 2);
  return std::sqrt(s / static_cast<double>(y.size()));
}

}  // namespace

// The affine kernels that work per group (AVX2: s·Σ q·x + b·Σ x, qmm_simd_body.h's tile_t_gsum) round
// differently from dequantizing each weight first (the portable path, and MLX's way). Their error
// against float64 stays of the same size: the root mean square of |y − ref| / Σ|x·w| over the outputs is
// at most 1.5 times the portable path's, for x of one sign (where b·Σ x cancels most) and of both signs.
TEST(QmmKernelsAccuracy, GroupSumsAsAccurateAsDequantizing) {
  IsaGuard guard;
  const int64_t N = 96, K = 2816;
  for (const QSpec& q : {QSpec{"affine", 64, 4}, QSpec{"affine", 32, 4}, QSpec{"affine", 128, 4},
                         QSpec{"affine", 64, 8}, QSpec{"affine", 64, 3}}) {
    Quantized qw = make_quantized(q, {int(N), int(K)}, mx::float32, 31u);
    for (float lo : {0.0f, -2.0f}) {
      for (int M : {1, 2}) {
        auto x = rand_array({M, int(K)}, mx::float32, 32u + static_cast<uint32_t>(M), lo, 2.0f);
        std::vector<double> ref, mag;
        reference(vals(x), qw.W.data(), M, N, K, true, ref, mag);
        auto rms = [&](QmmIsa isa) { return rms_rel_error(x, qw, q, ref, mag, isa); };
        const double base = rms(QmmIsa::Scalar);
        EXPECT_GT(base, 0.0);
        for (QmmIsa isa : isas()) {
          if (isa == QmmIsa::Scalar) continue;
          const double e = rms(isa);
          SCOPED_TRACE(spec_name(q) + " isa=" + isa_name(isa) + " M=" + std::to_string(M) + " x from " +
                       std::to_string(lo));
          std::printf("[accuracy] %s %s M=%d x>=%g: rms rel err %.3g (portable %.3g)\n", spec_name(q).c_str(),
                      isa_name(isa), M, lo, e, base);
          EXPECT_LE(e, 1.5 * base);
        }
      }
    }
  }
}

// The AMX prefill product (x in three bfloat16 planes, per-group scaling of the tile sums, bias through
// Σ_group x) against dequantizing first (the portable path: MLX's way on its CPU): the same measure and
// bound as above, at prefill sizes, for x of one sign and of both.
TEST(QmmKernelsAccuracy, AmxPlanesAsAccurateAsDequantizing) {
  if (!amx_here()) GTEST_SKIP() << "no AMX-BF16 here (the CPU or OS has none, or KILN_CPU_ISA is lower)";
  IsaGuard guard;
  const int64_t N = 96, K = 2816;
  for (const QSpec& q : {QSpec{"affine", 64, 4}, QSpec{"affine", 32, 4}, QSpec{"affine", 128, 8},
                         QSpec{"mxfp4", 32, 4}}) {
    Quantized qw = make_quantized(q, {int(N), int(K)}, mx::float32, 41u);
    for (float lo : {0.0f, -2.0f}) {
      const int M = 64;
      auto x = rand_array({M, int(K)}, mx::float32, 42u, lo, 2.0f);
      std::vector<double> ref, mag;
      reference(vals(x), qw.W.data(), M, N, K, true, ref, mag);
      auto rms = [&](QmmIsa isa) { return rms_rel_error(x, qw, q, ref, mag, isa); };
      const double base = rms(QmmIsa::Scalar), f32 = rms(QmmIsa::Avx512), e = rms(QmmIsa::Amx);
      EXPECT_GT(base, 0.0);
      std::printf("[accuracy] %s amx M=%d x>=%g: rms rel err %.3g (portable %.3g, avx512 %.3g)\n",
                  spec_name(q).c_str(), M, lo, e, base, f32);
      EXPECT_LE(e, 1.5 * base) << spec_name(q) << " x from " << lo;
    }
  }
}

// ---- The integer decode kernel (AVX-512 VNNI: qmm_simd.h, qmm_avx512.cpp) ----

namespace {

// Restores the integer kernel's default when a test ends.
struct Int8Guard {
  ~Int8Guard() {
    mx::quant::set_qmm_int8(std::nullopt);
    mx::quant::set_qmm_isa(std::nullopt);
  }
};

bool int8_here() { return mx::quant::qmm_int8_available(); }

// x · Wᵀ at the avx512 level with the integer kernel on or off; `ran` tells whether it ran.
std::vector<double> qmm_t(const mx::array& x, const Quantized& qw, const QSpec& q, bool int8, bool* ran = nullptr) {
  mx::quant::set_qmm_isa(QmmIsa::Avx512);
  mx::quant::set_qmm_int8(int8);
  const int64_t before = mx::quant::qmm_int8_calls();
  auto y = vals(mx::quantized_matmul(x, qw.wq, qw.s, qw.b, true, q.gs, q.bits, q.mode));
  if (ran != nullptr) *ran = mx::quant::qmm_int8_calls() > before;
  return y;
}

// Mismatches of y (one row of x · Wᵀ, float32) against the float64 reference of x = xv.
int compare_row(const std::vector<double>& y, const std::vector<float>& xv, const Quantized& qw, int N, int K) {
  std::vector<double> ref, mag, xd(xv.begin(), xv.end());
  reference(xd, qw.W.data(), 1, N, K, true, ref, mag);
  return compare(y, ref, mag, K, mx::float32);
}

}  // namespace

// Every group size, length and row count it serves, float dtypes of x and of the scales, against float64
// within the float32 accumulation bound; and the shapes it does not serve (K not a multiple of 128,
// groups of 32, more rows than the decode kernels take, other widths) run the float kernels.
TEST(QmmKernelsInt8, ServesItsShapesWithinTheFloat32Bound) {
  if (!int8_here()) GTEST_SKIP() << "no AVX512_VNNI here (or KILN_CPU_ISA is below avx512)";
  Int8Guard guard;
  int ran_count = 0;
  struct Case {
    int gs, bits;
    int64_t N, K;
    int M;
    mx::Dtype dt;
    bool serves;
  };
  const Case cases[] = {
      {64, 4, 37, 128, 1, mx::float32, true},      {64, 4, 130, 1024, 1, mx::float32, true},
      {64, 4, 96, 2816, 2, mx::float32, true},     {128, 4, 33, 2816, 1, mx::float32, true},
      {128, 4, 9, 1024, 2, mx::float32, true},     {64, 4, 70, 384, 1, mx::float16, true},
      {64, 4, 70, 384, 2, mx::bfloat16, true},     {64, 4, 1, 256, 1, mx::float32, true},
      {64, 4, 37, 256, 5, mx::float32, true},      {128, 4, 21, 512, 16, mx::float32, true},
      {64, 4, 37, 192, 1, mx::float32, false},     {32, 4, 37, 256, 1, mx::float32, false},
      {64, 4, 37, 256, 17, mx::float32, false},    {64, 8, 37, 256, 1, mx::float32, false},
      {64, 3, 37, 256, 1, mx::float32, false},
  };
  for (const Case& c : cases) {
    const QSpec q{"affine", c.gs, c.bits};
    SCOPED_TRACE(spec_name(q) + " N=" + std::to_string(c.N) + " K=" + std::to_string(c.K) + " M=" +
                 std::to_string(c.M) + " dtype=" + mx::dtype_name(c.dt));
    Quantized qw = make_quantized(q, {int(c.N), int(c.K)}, c.dt, 900u + static_cast<uint32_t>(c.N));
    auto x = rand_array({c.M, int(c.K)}, c.dt, 901u + static_cast<uint32_t>(c.K));
    std::vector<double> ref, mag;
    reference(vals(x), qw.W.data(), c.M, c.N, c.K, true, ref, mag);
    bool ran = false;
    const auto y = qmm_t(x, qw, q, true, &ran);
    EXPECT_EQ(ran, c.serves);
    EXPECT_EQ(compare(y, ref, mag, c.K, c.dt), 0);
    ran_count += ran ? 1 : 0;
  }
  EXPECT_EQ(ran_count, 10);
}

// GatherQMM (a mixture of experts' decode) runs it per expert with x rows picked by index.
TEST(QmmKernelsInt8, GatherQmmPerExpert) {
  if (!int8_here()) GTEST_SKIP() << "no AVX512_VNNI here (or KILN_CPU_ISA is below avx512)";
  Int8Guard guard;
  const QSpec q{"affine", 64, 4};
  const int E = 4, N = 48, K = 512;
  Quantized qw = make_quantized(q, {E, N, K}, mx::float32, 911u);
  auto x = rand_array({3, 1, K}, mx::float32, 912u);
  const mx::array rhs_idx(std::vector<uint32_t>{2, 0, 3}, mx::Shape{3});
  const std::vector<double> xv = vals(x);
  auto run = [&](bool int8, bool* ran) {
    mx::quant::set_qmm_isa(QmmIsa::Avx512);
    mx::quant::set_qmm_int8(int8);
    const int64_t before = mx::quant::qmm_int8_calls();
    auto y = vals(mx::gather_qmm(x, qw.wq, qw.s, qw.b, std::nullopt, rhs_idx, true, q.gs, q.bits, q.mode));
    *ran = mx::quant::qmm_int8_calls() > before;
    return y;
  };
  bool ran = false;
  const auto y = run(true, &ran);
  EXPECT_TRUE(ran);
  const uint32_t experts[] = {2, 0, 3};
  for (int b = 0; b < 3; ++b) {
    std::vector<double> ref, mag, xb(xv.begin() + b * K, xv.begin() + (b + 1) * K);
    reference(xb, qw.W.data() + static_cast<size_t>(experts[b]) * N * K, 1, N, K, true, ref, mag);
    const std::vector<double> got(y.begin() + b * N, y.begin() + (b + 1) * N);
    EXPECT_EQ(compare(got, ref, mag, K, mx::float32), 0) << "batch " << b;
  }
}

// x it cannot represent goes to the float kernels, whose result comes back element for element: inf,
// NaN, and a block whose largest magnitude lies below 2^−100 or at 2^101 and above. A block of zeros
// and the exponents just inside the range run the integer kernel.
TEST(QmmKernelsInt8, DeclinesWhatItCannotRepresent) {
  if (!int8_here()) GTEST_SKIP() << "no AVX512_VNNI here (or KILN_CPU_ISA is below avx512)";
  Int8Guard guard;
  const QSpec q{"affine", 64, 4};
  const int N = 40, K = 256;
  Quantized qw = make_quantized(q, {N, K}, mx::float32, 921u);
  const std::vector<double> base = vals(rand_array({1, K}, mx::float32, 922u));
  struct Poke {
    float scale_block1;  // block 1 (elements 64..127) multiplied by this
    float at70;          // element 70 set to this unless NaN-marked 0
    bool serves;
  };
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  const Poke pokes[] = {
      {1.0f, inf, false}, {1.0f, -inf, false}, {1.0f, nan, false}, {0x1p-103f, 0.0f, false},
      {0x1p101f, 0.0f, false}, {0x1p-97f, 0.0f, true}, {0x1p98f, 0.0f, true}, {0.0f, 0.0f, true},
  };
  for (const Poke& p : pokes) {
    std::vector<float> xv(base.begin(), base.end());
    for (int k = 64; k < 128; ++k) xv[k] *= p.scale_block1;
    if (p.at70 != 0.0f || std::isnan(p.at70)) xv[70] = p.at70;
    const mx::array x(xv, mx::Shape{1, K});
    SCOPED_TRACE("block 1 times " + std::to_string(p.scale_block1) + ", x[70] = " + std::to_string(xv[70]));
    bool ran = false;
    const auto y = qmm_t(x, qw, q, true, &ran);
    EXPECT_EQ(ran, p.serves);
    const auto f = qmm_t(x, qw, q, false);
    if (!p.serves) {
      for (size_t i = 0; i < y.size(); ++i) {
        if (std::isnan(f[i])) {
          EXPECT_TRUE(std::isnan(y[i])) << i;
        } else {
          EXPECT_EQ(y[i], f[i]) << i;
        }
      }
    } else {
      EXPECT_EQ(compare_row(y, xv, qw, N, K), 0);
    }
  }
}

// The digits at their limits: blocks whose largest magnitude scales to just under and just over the
// largest three-digit value (127·(2^16 + 2^8 + 1)), of both signs, every element near it, with codes of
// 0 and 15, so a wrong top digit shows as an error of the size of the result.
TEST(QmmKernelsInt8, DigitLimits) {
  if (!int8_here()) GTEST_SKIP() << "no AVX512_VNNI here (or KILN_CPU_ISA is below avx512)";
  Int8Guard guard;
  const QSpec q{"affine", 64, 4};
  const int N = 24, K = 512;
  // Weights of ±1 (codes 0 and 15 of a group from −1 to 1) and a few between.
  std::vector<float> w(static_cast<size_t>(N * K));
  for (size_t i = 0; i < w.size(); ++i) w[i] = (i * 7919) % 5 == 0 ? 0.25f : ((i * 104729) % 3 == 0 ? -1.0f : 1.0f);
  for (int n = 0; n < N; ++n) {
    for (int g = 0; g < K / 64; ++g) {
      w[static_cast<size_t>(n * K + g * 64)] = -1.0f;
      w[static_cast<size_t>(n * K + g * 64 + 1)] = 1.0f;
    }
  }
  const mx::array wa(w, mx::Shape{N, K});
  auto r = mx::quantize(wa, q.gs, q.bits, q.mode);
  for (auto& a : r) a.eval();
  Quantized qw{r[0], r[1], r[2], {}};
  {
    const auto sv = vals(r[1]), bv = vals(r[2]);
    const auto* bytes = static_cast<const uint8_t*>(r[0].raw_data());
    qw.W.resize(w.size());
    for (int n = 0; n < N; ++n) {
      for (int k = 0; k < K; ++k) {
        const uint32_t code = (bytes[(n * K + k) / 2] >> (4 * (k % 2))) & 15u;
        const int g = n * (K / 64) + k / 64;
        qw.W[static_cast<size_t>(n * K + k)] = sv[g] * code + bv[g];
      }
    }
  }
  const int64_t limit = 127 * (65536 + 256 + 1);
  const float tops[] = {static_cast<float>(limit) / 0x1p22f,       static_cast<float>(limit + 1) / 0x1p22f,
                        static_cast<float>(limit - 1) / 0x1p22f,   std::nextafter(2.0f, 0.0f),
                        1.0f,                                      static_cast<float>(limit + 64) / 0x1p22f};
  for (float top : tops) {
    for (float sign : {1.0f, -1.0f}) {
      std::vector<float> xv(K);
      for (int k = 0; k < K; ++k) {
        // Every element within a few units of the top, alternating signs in some blocks.
        const float v = top - static_cast<float>(k % 5) * 0x1p-22f;
        xv[k] = (k / 64) % 2 == 0 ? sign * v : (k % 2 == 0 ? v : -v);
      }
      const mx::array x(xv, mx::Shape{1, K});
      SCOPED_TRACE("top " + std::to_string(top) + " sign " + std::to_string(sign));
      bool ran = false;
      const auto y = qmm_t(x, qw, q, true, &ran);
      EXPECT_TRUE(ran);
      EXPECT_EQ(compare_row(y, xv, qw, N, K), 0);
    }
  }
}

// Accuracy against float64, on activations shaped like a decoder's: Gaussian, heavy-tailed (a product of
// Gaussians times a log-normal), one sign, a SiLU-gated product, and one outlier 1000 times the rest in
// every block. The root mean square and the largest of |y − ref| over the outputs stay at most those of
// dequantizing first (the portable path: MLX's way on its CPU).
TEST(QmmKernelsAccuracy, Int8PlanesAsAccurateAsDequantizing) {
  if (!int8_here()) GTEST_SKIP() << "no AVX512_VNNI here (or KILN_CPU_ISA is below avx512)";
  Int8Guard guard;
  const QSpec q{"affine", 64, 4};
  const int N = 256;
  for (int K : {1024, 2816}) {
    Quantized qw = make_quantized(q, {N, K}, mx::float32, 931u + static_cast<uint32_t>(K));
    const std::vector<double> g1 = vals(mx::random::normal({K}, mx::float32, 0.0f, 1.0f, mx::random::key(1))),
                              g2 = vals(mx::random::normal({K}, mx::float32, 0.0f, 1.0f, mx::random::key(2))),
                              g3 = vals(mx::random::normal({K}, mx::float32, 0.0f, 1.0f, mx::random::key(3)));
    for (int dist = 0; dist < 5; ++dist) {
      std::vector<float> xv(static_cast<size_t>(K));
      for (int k = 0; k < K; ++k) {
        const double a = g1[k], b = g2[k], c = g3[k];
        double v = a;
        if (dist == 1) v = a * b * std::exp(c);
        if (dist == 2) v = std::abs(a);
        if (dist == 3) v = a / (1.0 + std::exp(-a)) * b;
        if (dist == 4) v = k % 64 == 5 ? 1000.0 * a : a;
        xv[k] = static_cast<float>(v);
      }
      const mx::array x(xv, mx::Shape{1, K});
      std::vector<double> ref, mag, xd(xv.begin(), xv.end());
      reference(xd, qw.W.data(), 1, N, K, true, ref, mag);
      auto errors = [&](const std::vector<double>& y) {
        double s = 0, m = 0;
        for (int n = 0; n < N; ++n) {
          const double e = std::abs(y[n] - ref[n]);
          s += e * e;
          m = std::max(m, e);
        }
        return std::pair<double, double>(std::sqrt(s / N), m);
      };
      bool ran = false;
      const auto [rms8, max8] = errors(qmm_t(x, qw, q, true, &ran));
      EXPECT_TRUE(ran);
      mx::quant::set_qmm_isa(QmmIsa::Scalar);
      const auto [rmsp, maxp] = errors(vals(mx::quantized_matmul(x, qw.wq, qw.s, qw.b, true, q.gs, q.bits, q.mode)));
      const auto [rmsf, maxf] = errors(qmm_t(x, qw, q, false));
      std::printf("[accuracy] int8 K=%d x kind %d: rms %.3g max %.3g (portable %.3g / %.3g, float kernel %.3g / %.3g)\n",
                  K, dist, rms8, max8, rmsp, maxp, rmsf, maxf);
      EXPECT_LE(rms8, rmsp) << "K=" << K << " x kind " << dist;
      EXPECT_LE(max8, maxp) << "K=" << K << " x kind " << dist;
    }
  }
}

// With the integer kernel on, the AVX-512 float kernels no longer run the shapes it serves; they still
// must be right there (CPUs without VNNI run them, and KILN_QMM_INT8=0): the same shapes with it off,
// against float64.
TEST(QmmKernelsInt8, FloatKernelsOnItsShapesWithItOff) {
  if (!int8_here()) GTEST_SKIP() << "no AVX512_VNNI here (or KILN_CPU_ISA is below avx512)";
  Int8Guard guard;
  int checked = 0;
  for (int gs : {64, 128}) {
    const QSpec q{"affine", gs, 4};
    for (int64_t K : {int64_t(256), int64_t(1024)}) {
      for (mx::Dtype dt : {mx::float32, mx::bfloat16}) {
        Quantized qw = make_quantized(q, {45, int(K)}, dt, 940u + static_cast<uint32_t>(gs + K));
        for (int M : {1, 2, 5}) {
          auto x = rand_array({M, int(K)}, dt, 941u + static_cast<uint32_t>(M));
          std::vector<double> ref, mag;
          reference(vals(x), qw.W.data(), M, 45, K, true, ref, mag);
          SCOPED_TRACE(spec_name(q) + " K=" + std::to_string(K) + " M=" + std::to_string(M) + " dtype=" +
                       mx::dtype_name(dt));
          bool ran = true;
          const auto y = qmm_t(x, qw, q, false, &ran);
          EXPECT_FALSE(ran);
          EXPECT_EQ(compare(y, ref, mag, K, dt), 0);
          ++checked;
        }
      }
    }
  }
  EXPECT_EQ(checked, 24);
}

// ---- Sibling products (core/fusion.h batch_siblings, qmm_batch_cpu) ----

namespace {

namespace fusion = mx::detail::fusion;

struct BatchGuard {
  ~BatchGuard() {
    fusion::set_batching(true);
    mx::quant::set_qmm_isa(std::nullopt);
    mx::quant::set_qmm_int8(std::nullopt);
  }
};

// The products of x with each matrix, evaluated in one eval with batching on or off; `runs` gets the
// batch groups run.
std::vector<mx::array> products(const mx::array& x, const std::vector<Quantized>& ws, const QSpec& q, bool batch,
                                uint64_t* runs = nullptr) {
  fusion::set_batching(batch);
  std::vector<mx::array> ys;
  for (const Quantized& w : ws) ys.push_back(mx::quantized_matmul(x, w.wq, w.s, w.b, true, q.gs, q.bits, q.mode));
  const uint64_t before = fusion::batch_runs();
  mx::eval(ys);
  if (runs != nullptr) *runs = fusion::batch_runs() - before;
  fusion::set_batching(true);
  return ys;
}

bool same_bits(const mx::array& a, const mx::array& b) {
  return a.shape() == b.shape() && a.dtype() == b.dtype() && a.nbytes() == b.nbytes() &&
         std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()) == 0;
}

}  // namespace

// Products of one x with matrices of different widths run as one batch group and give every element the
// bits of the separate products: each mode, x dtype, 1-16 rows, each instruction set (the portable one
// runs the members one by one), the integer decode kernel on and off.
TEST(QmmBatch, SiblingsRunAsOneCallWithTheSameBits) {
  BatchGuard guard;
  const int K = 256;
  int checked = 0;
  for (const QSpec& q : {QSpec{"affine", 64, 4}, QSpec{"affine", 128, 4}, QSpec{"affine", 32, 8},
                         QSpec{"affine", 64, 3}, QSpec{"mxfp4", 32, 4}, QSpec{"nvfp4", 16, 4}}) {
    for (mx::Dtype t : {mx::float32, mx::bfloat16, mx::float16}) {
      // Weights quantized in x's dtype (so their scales are too, as a model's are).
      const std::vector<Quantized> ws = {make_quantized(q, {96, K}, t, 11), make_quantized(q, {32, K}, t, 12),
                                         make_quantized(q, {48, K}, t, 13)};
      for (int rows : {1, 3, 16}) {
        const mx::array x = rand_array({rows, K}, t, 20 + rows);
        for (QmmIsa isa : isas()) {
          if (isa == QmmIsa::Amx) continue;
          for (bool int8 : {true, false}) {
            mx::quant::set_qmm_isa(isa);
            mx::quant::set_qmm_int8(int8);
            const std::string what = spec_name(q) + " " + mx::dtype_name(t) + " rows=" + std::to_string(rows) + " " +
                                     isa_name(isa) + (int8 ? " int8" : "");
            uint64_t on_runs = 0, off_runs = 0;
            const auto on = products(x, ws, q, true, &on_runs), off = products(x, ws, q, false, &off_runs);
            EXPECT_EQ(on_runs, 1u) << what;
            EXPECT_EQ(off_runs, 0u) << what;
            for (size_t k = 0; k < ws.size(); ++k) EXPECT_TRUE(same_bits(on[k], off[k])) << what << " product " << k;
            ++checked;
          }
        }
      }
    }
  }
  EXPECT_GE(checked, 6 * 3 * 3 * 2);
}

// What stays apart: more than 16 rows of x, untransposed products, other quantizations, other x's, and a
// product whose weights depend on its sibling's result (it cannot move up). Values as computed alone.
TEST(QmmBatch, WhatCannotJoinRunsAlone) {
  BatchGuard guard;
  const QSpec q{"affine", 64, 4};
  const int K = 128;
  const Quantized a = make_quantized(q, {64, K}, mx::float32, 31), b = make_quantized(q, {32, K}, mx::float32, 32);
  auto run = [](const std::vector<mx::array>& ys) {
    const uint64_t before = fusion::batch_runs();
    mx::eval(ys);
    return fusion::batch_runs() - before;
  };
  {
    const mx::array x = rand_array({17, K}, mx::float32, 33);
    EXPECT_EQ(run({mx::quantized_matmul(x, a.wq, a.s, a.b, true, 64, 4), mx::quantized_matmul(x, b.wq, b.s, b.b, true, 64, 4)}), 0u)
        << "17 rows";
  }
  const mx::array x = rand_array({2, K}, mx::float32, 34);
  {
    const Quantized c = make_quantized(q, {K, 64}, mx::float32, 35);
    EXPECT_EQ(run({mx::quantized_matmul(x, a.wq, a.s, a.b, true, 64, 4), mx::quantized_matmul(x, c.wq, c.s, c.b, false, 64, 4)}), 0u)
        << "untransposed";
  }
  {
    const Quantized c = make_quantized(QSpec{"affine", 64, 8}, {32, K}, mx::float32, 36);
    EXPECT_EQ(run({mx::quantized_matmul(x, a.wq, a.s, a.b, true, 64, 4), mx::quantized_matmul(x, c.wq, c.s, c.b, true, 64, 8)}), 0u)
        << "other bits";
  }
  {
    const mx::array x2 = rand_array({2, K}, mx::float32, 37);
    EXPECT_EQ(run({mx::quantized_matmul(x, a.wq, a.s, a.b, true, 64, 4), mx::quantized_matmul(x2, b.wq, b.s, b.b, true, 64, 4)}), 0u)
        << "other x";
  }
  {
    // b's codes plus 0 computed from a's product: b's product has to wait for a's.
    const mx::array ya = mx::quantized_matmul(x, a.wq, a.s, a.b, true, 64, 4);
    const mx::array zero = mx::astype(mx::multiply(mx::sum(ya), mx::array(0.0f)), mx::uint32);
    const mx::array yb = mx::quantized_matmul(x, mx::add(b.wq, zero), b.s, b.b, true, 64, 4);
    EXPECT_EQ(run({ya, yb}), 0u) << "dependent weights";
    mx::array want = mx::quantized_matmul(x, b.wq, b.s, b.b, true, 64, 4);
    want.eval();
    EXPECT_TRUE(same_bits(yb, want));
  }
}

// An imported decode-like function (one normalized x, three projections of constants): its planned
// program runs them as one batch group, with the bits of the program planned without batching.
TEST(QmmBatch, ImportedProgramBatchesItsProjections) {
  BatchGuard guard;
  const QSpec q{"affine", 64, 4};
  const int K = 256;
  const std::vector<Quantized> ws = {make_quantized(q, {128, K}, mx::float32, 41),
                                     make_quantized(q, {64, K}, mx::float32, 42),
                                     make_quantized(q, {64, K}, mx::float32, 43)};
  auto f = [&](const mx::Args& a) {
    const mx::array h = mx::fast::rms_norm(a[0], std::nullopt, 1e-5f);
    std::vector<mx::array> out;
    for (const Quantized& w : ws) out.push_back(mx::quantized_matmul(h, w.wq, w.s, w.b, true, 64, 4));
    return out;
  };
  const std::string path = ::testing::TempDir() + "qmm_batch_program.mlxfn";
  mx::export_function(path, f, {mx::zeros({1, K})});
  const mx::array x = rand_array({1, K}, mx::float32, 44);
  std::vector<std::vector<mx::array>> outs;
  std::vector<uint64_t> runs;
  for (bool on : {true, false}) {
    fusion::set_batching(on);
    auto g = mx::import_function(path);
    std::vector<mx::array> o;
    const uint64_t before = fusion::batch_runs();
    for (int call = 0; call < 3; ++call) {
      o = g({x});
      mx::eval(o);
    }
    runs.push_back(fusion::batch_runs() - before);
    outs.push_back(o);
  }
  std::remove(path.c_str());
  // The first call reads the constants from the file as it goes (they are not ready before the first
  // product), so the two planned calls after it batch.
  EXPECT_EQ(runs[0], 2u);
  EXPECT_EQ(runs[1], 0u);
  ASSERT_EQ(outs[0].size(), 3u);
  for (size_t k = 0; k < 3; ++k) EXPECT_TRUE(same_bits(outs[0][k], outs[1][k])) << "output " << k;
}
