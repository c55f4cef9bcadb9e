// FFT tests: every transform is checked against a naive O(n^2) DFT written here, plus values computed
// by MLX 0.30.1 (irfft of non-Hermitian inputs, axis orders), and MLX's error messages.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <functional>
#include <vector>

#include <kiln/fft.h>
#include <kiln/kiln.h>

namespace mx = kiln;
using ::testing::HasSubstr;
using cd = std::complex<double>;
using cf = std::complex<float>;

namespace {

std::vector<float> rnd(size_t n, uint32_t seed) {
  std::vector<float> v(n);
  uint32_t s = seed * 2654435761u + 777u;
  for (auto& x : v) {
    s = s * 1664525u + 1013904223u;
    x = static_cast<float>((s >> 8) & 0xffff) / 32768.0f - 1.0f;
  }
  return v;
}
std::vector<cf> crnd(size_t n, uint32_t seed) {
  auto re = rnd(n, seed), im = rnd(n, seed + 1000);
  std::vector<cf> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = {re[i], im[i]};
  return v;
}

// The formulas the MLX constants were computed from: real part R, imaginary part I (flat index i).
std::vector<float> mlx_r(size_t n) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<float>(static_cast<int>((i * 37) % 17) - 8) / 8.0f;
  return v;
}
std::vector<cf> mlx_c(size_t n) {
  auto r = mlx_r(n);
  std::vector<cf> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = {r[i], static_cast<float>(static_cast<int>((i * 23) % 13) - 6) / 6.0f};
  return v;
}

std::vector<float> reals(const mx::array& a) {
  EXPECT_EQ(a.dtype(), mx::float32);
  mx::array b = mx::contiguous(a);
  b.eval();
  return std::vector<float>(b.data<float>(), b.data<float>() + b.size());
}
std::vector<cf> cplx(const mx::array& a) {
  EXPECT_EQ(a.dtype(), mx::complex64);
  mx::array b = mx::contiguous(a);
  b.eval();
  return std::vector<cf>(b.data<cf>(), b.data<cf>() + b.size());
}

// ---- naive reference (double precision) over row-major N-d data ----

struct Nd {
  mx::Shape shape;
  std::vector<cd> v;
};

Nd from(const std::vector<cf>& x, const mx::Shape& s) { return {s, std::vector<cd>(x.begin(), x.end())}; }
Nd from(const std::vector<float>& x, const mx::Shape& s) { return {s, std::vector<cd>(x.begin(), x.end())}; }

// Calls fn(base, stride) for every 1-D line along `axis`.
void lines(const mx::Shape& s, int axis, const std::function<void(size_t, size_t)>& fn) {
  size_t inner = 1, outer = 1;
  for (size_t d = axis + 1; d < s.size(); ++d) inner *= s[d];
  for (int d = 0; d < axis; ++d) outer *= s[d];
  for (size_t o = 0; o < outer; ++o)
    for (size_t i = 0; i < inner; ++i) fn(o * s[axis] * inner + i, inner);
}

// Resize `axis` to n: crop, or pad with zeros.
Nd resize(const Nd& a, int axis, int n) {
  Nd r{a.shape, {}};
  r.shape[axis] = n;
  size_t inner = 1, outer = 1;
  for (size_t d = axis + 1; d < a.shape.size(); ++d) inner *= a.shape[d];
  for (int d = 0; d < axis; ++d) outer *= a.shape[d];
  r.v.assign(outer * n * inner, 0.0);
  for (size_t o = 0; o < outer; ++o)
    for (int k = 0; k < std::min(n, a.shape[axis]); ++k)
      for (size_t i = 0; i < inner; ++i) r.v[(o * n + k) * inner + i] = a.v[(o * a.shape[axis] + k) * inner + i];
  return r;
}

// Complex DFT along one axis; the inverse is scaled by 1/n.
Nd dft(const Nd& a, int axis, bool inverse) {
  Nd r = a;
  const int n = a.shape[axis];
  const double sgn = inverse ? 1.0 : -1.0;
  lines(a.shape, axis, [&](size_t base, size_t st) {
    for (int k = 0; k < n; ++k) {
      cd acc = 0;
      for (int j = 0; j < n; ++j) acc += a.v[base + j * st] * std::polar(1.0, sgn * 2 * M_PI * double(j) * k / n);
      r.v[base + k * st] = inverse ? acc / double(n) : acc;
    }
  });
  return r;
}

// Real-output inverse along one axis from its n/2 + 1 leading entries, extended by Hermitian symmetry
// (the imaginary parts of the DC and Nyquist entries cannot contribute to a real signal).
Nd c2r(const Nd& a, int axis, int n) {
  Nd r{a.shape, {}};
  r.shape[axis] = n;
  size_t inner = 1, outer = 1;
  for (size_t d = axis + 1; d < a.shape.size(); ++d) inner *= a.shape[d];
  for (int d = 0; d < axis; ++d) outer *= a.shape[d];
  r.v.assign(outer * n * inner, 0.0);
  const int m = a.shape[axis];
  for (size_t o = 0; o < outer; ++o) {
    for (size_t i = 0; i < inner; ++i) {
      auto X = [&](int k) -> cd {
        if (k <= n / 2) return k < m ? a.v[(o * m + k) * inner + i] : cd(0);
        int kk = n - k;
        return kk < m ? std::conj(a.v[(o * m + kk) * inner + i]) : cd(0);
      };
      for (int j = 0; j < n; ++j) {
        double acc = 0;
        for (int k = 0; k < n; ++k) acc += (X(k) * std::polar(1.0, 2 * M_PI * double(j) * k / n)).real();
        r.v[(o * n + j) * inner + i] = acc / n;
      }
    }
  }
  return r;
}

void expect_near(const std::vector<cf>& got, const Nd& want, double tol, const std::string& what) {
  ASSERT_EQ(got.size(), want.v.size()) << what;
  double scale = 1;
  for (auto& w : want.v) scale = std::max(scale, std::abs(w));
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_NEAR(got[i].real(), want.v[i].real(), tol * scale) << what << " (real) at " << i;
    ASSERT_NEAR(got[i].imag(), want.v[i].imag(), tol * scale) << what << " (imag) at " << i;
  }
}
void expect_near(const std::vector<float>& got, const Nd& want, double tol, const std::string& what) {
  ASSERT_EQ(got.size(), want.v.size()) << what;
  double scale = 1;
  for (auto& w : want.v) scale = std::max(scale, std::abs(w));
  for (size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], want.v[i].real(), tol * scale) << what << " at " << i;
}
template <typename T>
void expect_near(const std::vector<T>& got, const std::vector<T>& want, double tol, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) ASSERT_LE(std::abs(got[i] - want[i]), tol) << what << " at " << i;
}

void expect_error(const std::function<void()>& fn, const std::string& msg) {
  try {
    fn();
    ADD_FAILURE() << "expected an error containing: " << msg;
  } catch (const std::invalid_argument& e) {
    EXPECT_THAT(e.what(), HasSubstr(msg));
  }
}

// ---- values computed by MLX 0.30.1 ----
const std::vector<float> kMlxIrfftEven = {-0.25f, -0.420674741f, -0.25f, -0.0721763819f, 0.0f, -0.0376585871f,
    0.25f, -0.219490275f, -0.234375f, 0.0461347252f, 0.015625f, 0.227966413f, 0.265625f, 0.193448618f,
    0.515625f, -0.155049756f};
const std::vector<float> kMlxIrfftOdd = {-0.166666672f, -0.349667549f, -0.353546262f, 0.0224833563f,
    -0.16283536f, 0.127333507f, -0.105816692f, 0.329953015f, -0.341237366f, -0.180555552f, -0.0681853071f,
    0.1785748f, -0.0942306817f, 0.516364634f, -0.0796442404f, 0.483119547f, 0.270054191f, -0.150497392f};
const std::vector<float> kMlxIrfftCrop = {-0.625f, -0.520833373f, 0.0f, 0.145833343f, -0.34375f, 0.177083328f,
    0.53125f, 0.510416687f};
const std::vector<float> kMlxIrfftPad = {-0.125f, -0.139819294f, -0.417645931f, -0.125000015f, 0.0168625172f,
    -0.151847377f, 0.0416666642f, 0.040602684f, -0.0793625191f, 0.208333343f, 0.0634792894f, -0.332269371f,
    -0.135416672f, -0.152826667f, 0.161947966f, 0.0312499963f, -0.0706730112f, 0.340326667f, 0.197916672f,
    -0.0669026002f, 0.362339675f, 0.364583373f, -0.0786146224f, -0.0789307356f};
const std::vector<float> kMlxIrfft2 = {0.0f, -0.350676537f, -0.144337565f, -0.180555552f, 0.144337565f,
    0.322898775f, -0.170637488f, 0.00297362288f, -0.177083328f, 0.0590277724f, 0.177083328f, -0.239084721f,
    -0.266862512f, -0.142859697f, 0.177083328f, 0.0590277798f, -0.177083328f, -0.0932513997f};
const std::vector<float> kMlxIrfftnSwapped = {0.0f, -0.123349987f, -0.251650006f, 0.0385208651f, 0.126650035f,
    -0.206837565f, -0.0160375051f, 6.62273836e-09f, 0.208487585f, -0.541666687f, -0.208487585f, 0.208487585f,
    0.0160375051f, -0.208487585f, 6.62273836e-09f, -0.121854223f, 0.0818375573f, -0.00165002211f};
const std::vector<std::complex<float>> kMlxRfftnSwapped = {{-1.875f, 0.0f}, {3.93832207f, 1.11944199f},
    {-0.813322306f, -1.27963853f}, {-0.813322306f, 1.27963853f}, {3.93832207f, -1.11944199f}, {-1.75f, -0.375f},
    {-0.760665894f, 2.67765617f}, {0.843204856f, -0.470117331f}, {-1.65488255f, -2.96820474f}, {-4.80265617f,
    -1.36433399f}, {0.375f, 0.0f}, {-2.125f, 0.0f}, {-2.125f, 0.0f}, {-2.125f, 0.0f}, {-2.125f, 0.0f}};
const std::vector<float> kMlxIrfftnS = {-0.0249999985f, -0.217512771f, -0.11119388f, -0.0282488298f,
    0.256955475f, -0.268329114f, 0.0205950979f, 0.00543222437f, 0.199592322f, 0.130717352f, -0.0525960624f,
    -0.137631357f, -0.0966927484f, 0.118546501f, -0.149096817f, -0.15959239f, -0.174895048f, 0.155445352f,
    -0.0187581144f, -0.0619835667f, -0.0444824174f, 0.0202907789f, -0.074977383f, -0.206440389f,
    -0.0801442489f};

}  // namespace

TEST(FFT, FftAndIfftMatchNaiveDft) {
  for (int n : {1, 2, 5, 8, 17, 64, 100}) {
    auto x = crnd(3 * n, n);
    auto a = mx::array(x, {3, n});
    auto want = dft(from(x, {3, n}), 1, false);
    auto y = mx::fft::fft(a);
    EXPECT_EQ(y.shape(), mx::Shape({3, n}));
    expect_near(cplx(y), want, 1e-5, "fft n=" + std::to_string(n));
    expect_near(cplx(mx::fft::ifft(a)), dft(from(x, {3, n}), 1, true), 1e-5, "ifft n=" + std::to_string(n));
    // Round trip.
    expect_near(cplx(mx::fft::ifft(y)), from(x, {3, n}), 1e-5, "roundtrip n=" + std::to_string(n));
  }
}

TEST(FFT, SizeArgumentPadsOrCrops) {
  auto x = crnd(2 * 6, 3);
  auto a = mx::array(x, {2, 6});
  auto base = from(x, {2, 6});
  expect_near(cplx(mx::fft::fft(a, 9, 1)), dft(resize(base, 1, 9), 1, false), 1e-5, "pad to 9");
  expect_near(cplx(mx::fft::fft(a, 4, -1)), dft(resize(base, 1, 4), 1, false), 1e-5, "crop to 4");
  expect_near(cplx(mx::fft::ifft(a, 3, 0)), dft(resize(base, 0, 3), 0, true), 1e-5, "ifft pad axis 0");
  // Both at once: crop one axis, pad the other.
  auto y = mx::fft::fftn(a, {1, 8}, {0, 1});
  EXPECT_EQ(y.shape(), mx::Shape({1, 8}));
  expect_near(cplx(y), dft(dft(resize(resize(base, 0, 1), 1, 8), 0, false), 1, false), 1e-5, "crop+pad");
}

TEST(FFT, MultiAxisAndNegativeAxes) {
  const mx::Shape s{3, 4, 5};
  auto x = crnd(60, 9);
  auto a = mx::array(x, s);
  auto base = from(x, s);
  expect_near(cplx(mx::fft::fft2(a)), dft(dft(base, 1, false), 2, false), 1e-5, "fft2 default axes");
  expect_near(cplx(mx::fft::fftn(a, {-1, 0})), dft(dft(base, 2, false), 0, false), 1e-5, "fftn {-1, 0}");
  expect_near(cplx(mx::fft::fftn(a)), dft(dft(dft(base, 0, false), 1, false), 2, false), 1e-5, "fftn all");
  expect_near(cplx(mx::fft::ifftn(a)), dft(dft(dft(base, 0, true), 1, true), 2, true), 1e-5, "ifftn all");
  expect_near(cplx(mx::fft::ifft2(a, {0, -2})), dft(dft(base, 0, true), 1, true), 1e-5, "ifft2 {0,-2}");
  expect_near(cplx(mx::fft::fft(a, -2)), dft(base, 1, false), 1e-5, "fft axis -2");
  expect_near(cplx(mx::fft::ifft2(a, {3, 2}, {-1, 1})), dft(dft(resize(resize(base, 2, 3), 1, 2), 2, true), 1, true),
              1e-5, "ifft2 with sizes");
  // The node stores normalized axes in the given order.
  auto y = mx::fft::fftn(a, {-1, 0});
  EXPECT_EQ(y.node()->state.get<std::vector<uint64_t>>(0), std::vector<uint64_t>({2, 0}));
  EXPECT_FALSE(y.node()->state.b(1));
  EXPECT_FALSE(y.node()->state.b(2));
}

TEST(FFT, RealTransforms) {
  for (int n : {1, 2, 7, 8, 33}) {
    auto x = rnd(2 * n, 40 + n);
    auto a = mx::array(x, {2, n});
    auto y = mx::fft::rfft(a);
    EXPECT_EQ(y.shape(), mx::Shape({2, n / 2 + 1}));
    expect_near(cplx(y), resize(dft(from(x, {2, n}), 1, false), 1, n / 2 + 1), 1e-5, "rfft n=" + std::to_string(n));
    // irfft with the original size inverts rfft, odd or even.
    auto back = mx::fft::irfft(y, n, -1);
    EXPECT_EQ(back.shape(), mx::Shape({2, n}));
    expect_near(reals(back), from(x, {2, n}), 1e-5, "irfft(rfft) n=" + std::to_string(n));
  }
  // Default irfft size 2 * (m - 1); non-Hermitian inputs follow the Hermitian-extension rule.
  auto c = crnd(3 * 6, 5);
  auto ca = mx::array(c, {3, 6});
  auto z = mx::fft::irfft(ca);
  EXPECT_EQ(z.shape(), mx::Shape({3, 10}));
  expect_near(reals(z), c2r(from(c, {3, 6}), 1, 10), 1e-5, "irfft default n");
  expect_near(reals(mx::fft::irfft(ca, 11, 1)), c2r(from(c, {3, 6}), 1, 11), 1e-5, "irfft odd n");
  expect_near(reals(mx::fft::irfft(ca, 4, 0)), c2r(from(c, {3, 6}), 0, 4), 1e-5, "irfft axis 0");
  // 2-D: rfft2 = complex transform of the full real FFT, halved on the last axis.
  auto r = rnd(4 * 6, 77);
  auto ra = mx::array(r, {4, 6});
  auto want2 = resize(dft(dft(from(r, {4, 6}), 0, false), 1, false), 1, 4);
  expect_near(cplx(mx::fft::rfft2(ra)), want2, 1e-5, "rfft2");
  expect_near(reals(mx::fft::irfft2(mx::fft::rfft2(ra), {4, 6}, {-2, -1})), from(r, {4, 6}), 1e-5, "irfft2 roundtrip");
  // rfftn over all axes, then irfftn back with odd last size.
  auto r3 = rnd(3 * 4 * 5, 78);
  auto r3a = mx::array(r3, {3, 4, 5});
  auto f3 = mx::fft::rfftn(r3a);
  EXPECT_EQ(f3.shape(), mx::Shape({3, 4, 3}));
  ASSERT_TRUE(f3.has_primitive());
  EXPECT_TRUE(f3.node()->state.b(2));   // real
  EXPECT_FALSE(f3.node()->state.b(1));  // forward
  expect_near(reals(mx::fft::irfftn(f3, {3, 4, 5}, {0, 1, 2})), from(r3, {3, 4, 5}), 1e-5, "irfftn roundtrip");
}

TEST(FFT, ValuesFromMlx) {
  auto c25 = mx::array(mlx_c(10), {2, 5});
  expect_near(reals(mx::fft::irfft(c25)), kMlxIrfftEven, 2e-6f, "irfft even");
  expect_near(reals(mx::fft::irfft(c25, 9, -1)), kMlxIrfftOdd, 2e-6f, "irfft odd");
  expect_near(reals(mx::fft::irfft(c25, 4, -1)), kMlxIrfftCrop, 2e-6f, "irfft crop");
  expect_near(reals(mx::fft::irfft(c25, 12, 1)), kMlxIrfftPad, 2e-6f, "irfft pad");
  auto y = mx::fft::irfft2(mx::array(mlx_c(12), {3, 4}));
  EXPECT_EQ(y.shape(), mx::Shape({3, 6}));
  expect_near(reals(y), kMlxIrfft2, 2e-6f, "irfft2");
  // The last listed axis is the halved one.
  y = mx::fft::irfftn(mx::array(mlx_c(12), {4, 3}), {1, 0});
  EXPECT_EQ(y.shape(), mx::Shape({6, 3}));
  expect_near(reals(y), kMlxIrfftnSwapped, 2e-6f, "irfftn axes {1,0}");
  auto f = mx::fft::rfftn(mx::array(mlx_r(20), {4, 5}), {1, 0});
  EXPECT_EQ(f.shape(), mx::Shape({3, 5}));
  expect_near(cplx(f), kMlxRfftnSwapped, 1e-5f, "rfftn axes {1,0}");
  y = mx::fft::irfftn(mx::array(mlx_c(12), {3, 4}), {5, 5}, {0, 1});
  EXPECT_EQ(y.shape(), mx::Shape({5, 5}));
  expect_near(reals(y), kMlxIrfftnS, 2e-6f, "irfftn s=(5,5)");
}

TEST(FFT, InputDtypesAreCast) {
  const std::vector<float> v{1, -2, 3, 5, 4, -1};  // integers, exact in every dtype
  auto want = dft(from(v, {6}), 0, false);
  for (mx::Dtype t : {mx::float16, mx::bfloat16, mx::float32, mx::float64, mx::int32, mx::complex64}) {
    auto a = mx::astype(mx::array(v, {6}), t);
    auto y = mx::fft::fft(a);
    EXPECT_EQ(y.dtype(), mx::complex64) << mx::dtype_name(t);
    expect_near(cplx(y), want, 1e-5, "fft of " + mx::dtype_name(t));
    auto r = mx::fft::rfft(a);
    EXPECT_EQ(r.dtype(), mx::complex64);
    expect_near(cplx(r), resize(want, 0, 4), 1e-5, "rfft of " + mx::dtype_name(t));
    auto i = mx::fft::irfft(a);
    EXPECT_EQ(i.dtype(), mx::float32);
    EXPECT_EQ(i.shape(), mx::Shape({10}));
  }
  auto b = mx::fft::fft(mx::array({true, false, true, true}));
  expect_near(cplx(b), std::vector<cf>{{3, 0}, {0, 1}, {1, 0}, {0, -1}}, 1e-6f, "fft of bool");
  // rfft of a complex input uses its real part only.
  auto c = mx::fft::rfft(mx::array(std::vector<cf>{{1, 5}, {2, -3}, {3, 1}, {4, 2}}, {4}));
  expect_near(cplx(c), std::vector<cf>{{10, 0}, {-2, 2}, {-2, 0}}, 1e-5f, "rfft of complex");
}

TEST(FFT, NonContiguousInputs) {
  auto x = crnd(4 * 6, 12);
  auto base = mx::array(x, {4, 6});
  auto t = mx::transpose(base);  // (6, 4), strides (1, 6)
  auto want = dft(from(cplx(t), {6, 4}), 1, false);
  expect_near(cplx(mx::fft::fft(t)), want, 1e-5, "transposed");
  auto s = mx::slice(base, {0, 1}, {4, 6}, {2, 2});  // (2, 3)
  expect_near(cplx(mx::fft::ifft(s)), dft(from(cplx(s), {2, 3}), 1, true), 1e-5, "strided slice");
  auto r = mx::transpose(mx::array(rnd(5 * 8, 13), {5, 8}));  // (8, 5)
  expect_near(cplx(mx::fft::rfft(r, 0)), resize(dft(from(reals(mx::contiguous(r)), {8, 5}), 0, false), 0, 5), 1e-5,
              "rfft of transposed along axis 0");
  auto ct = mx::transpose(mx::array(crnd(5 * 4, 14), {5, 4}));  // (4, 5) complex view
  expect_near(reals(mx::fft::irfft2(ct)), c2r(dft(from(cplx(ct), {4, 5}), 0, true), 1, 8), 1e-5,
              "irfft2 of transposed");
  auto bc = mx::broadcast_to(mx::array(crnd(5, 15), {1, 5}), {3, 5});  // zero strides
  expect_near(cplx(mx::fft::fft(bc)), dft(from(cplx(bc), {3, 5}), 1, false), 1e-5, "broadcast");
}

TEST(FFT, EmptyBatchesAndEmptyAxes) {
  auto y = mx::fft::fft(mx::zeros({0, 4}, mx::complex64));
  EXPECT_EQ(y.shape(), mx::Shape({0, 4}));
  y.eval();
  auto r = mx::fft::rfft(mx::zeros({3, 0, 8}));
  EXPECT_EQ(r.shape(), mx::Shape({3, 0, 5}));
  r.eval();
  auto i = mx::fft::irfft(mx::zeros({0, 5}, mx::complex64));
  EXPECT_EQ(i.shape(), mx::Shape({0, 8}));
  i.eval();
  // No axes: the input itself, not even cast.
  auto a = mx::array({1.0f, 2.0f});
  EXPECT_TRUE(mx::fft::fftn(a, std::vector<int>{}).is_same(a));
}

TEST(FFT, LargeBatchedTransformsSplitAcrossThreads) {
  const int rows = 64, n = 1024;
  auto x = crnd(size_t(rows) * n, 99);
  auto a = mx::array(x, {rows, n});
  auto y = cplx(mx::fft::fft(a));
  // Spot-check rows against the naive DFT, and the whole array by a round trip.
  for (int row : {0, 31, 63}) {
    std::vector<cf> line(x.begin() + size_t(row) * n, x.begin() + size_t(row + 1) * n);
    auto want = dft(from(line, {n}), 0, false);
    std::vector<cf> got(y.begin() + size_t(row) * n, y.begin() + size_t(row + 1) * n);
    expect_near(got, want, 1e-5, "row " + std::to_string(row));
  }
  expect_near(cplx(mx::fft::ifft(mx::fft::fft(a))), from(x, {rows, n}), 1e-5, "roundtrip");
  // Split along a middle batch axis of a 3-D real transform.
  auto r = rnd(8 * 512 * 9, 100);
  auto ra = mx::array(r, {8, 512, 9});
  expect_near(reals(mx::fft::irfft(mx::fft::rfft(ra, 0), 8, 0)), from(r, {8, 512, 9}), 1e-5, "rfft axis 0");
  auto c3 = mx::array(crnd(4 * 300 * 17, 101), {4, 300, 17});
  expect_near(reals(mx::fft::irfftn(c3, {-1, 0})), c2r(dft(from(cplx(c3), {4, 300, 17}), 2, true), 0, 6), 1e-5,
              "irfftn batched");
}

TEST(FFT, CachedPlansServeOtherArraysAndAlignments) {
  // Plans are cached by layout and alignment: repeated calls, and views starting at odd offsets (other
  // SIMD alignments) of the same layout, must all give the naive DFT.
  auto x = crnd(33, 61);
  auto a = mx::array(x, {33});
  for (int rep = 0; rep < 3; ++rep) {
    for (int off = 0; off < 3; ++off) {
      auto v = mx::slice(a, {off}, {off + 16});
      std::vector<cf> line(x.begin() + off, x.begin() + off + 16);
      expect_near(cplx(mx::fft::fft(v)), dft(from(line, {16}), 0, false), 1e-5, "offset " + std::to_string(off));
      expect_near(cplx(mx::fft::ifft(v)), dft(from(line, {16}), 0, true), 1e-5, "ifft offset " + std::to_string(off));
    }
  }
  auto r = rnd(21, 62);
  auto ra = mx::array(r, {21});
  for (int off = 0; off < 4; ++off) {
    std::vector<float> line(r.begin() + off, r.begin() + off + 16);
    auto y = mx::fft::rfft(mx::slice(ra, {off}, {off + 16}));
    expect_near(cplx(y), resize(dft(from(line, {16}), 0, false), 0, 9), 1e-5, "rfft offset " + std::to_string(off));
  }
}

TEST(FFT, Shifts) {
  auto a = mx::arange(0, 5, mx::float32);
  EXPECT_EQ(reals(mx::fft::fftshift(a)), std::vector<float>({3, 4, 0, 1, 2}));
  EXPECT_EQ(reals(mx::fft::ifftshift(a)), std::vector<float>({2, 3, 4, 0, 1}));
  auto b = mx::reshape(mx::arange(0, 12, mx::float32), {3, 4});
  EXPECT_EQ(reals(mx::fft::fftshift(b)), std::vector<float>({10, 11, 8, 9, 2, 3, 0, 1, 6, 7, 4, 5}));
  EXPECT_EQ(reals(mx::fft::fftshift(b, std::vector<int>{-1})), std::vector<float>({2, 3, 0, 1, 6, 7, 4, 5, 10, 11, 8, 9}));
  EXPECT_EQ(reals(mx::fft::ifftshift(mx::fft::fftshift(b))), reals(b));
  EXPECT_EQ(reals(mx::fft::ifftshift(b, std::vector<int>{0})), std::vector<float>({4, 5, 6, 7, 8, 9, 10, 11, 0, 1, 2, 3}));
  auto s = mx::array(2.0f);
  EXPECT_TRUE(mx::fft::fftshift(s).is_same(s));
  EXPECT_TRUE(mx::fft::ifftshift(b, std::vector<int>{}).is_same(b));
}

TEST(FFT, ErrorsMatchMlx) {
  auto x = mx::ones({4, 6});
  expect_error([&] { mx::fft::fft(mx::array(1.0f)); }, "[fftn] Requires array with at least one dimension.");
  expect_error([&] { mx::fft::fft(x, 4, 5); }, "[fftn] Invalid axis received for array with 2 dimensions.");
  expect_error([&] { mx::fft::fft(x, 5); }, "[fftn] Invalid axis received for array with 2 dimensions.");
  expect_error([&] { mx::fft::fft(x, -3); }, "[fftn] Invalid axis received for array with 2 dimensions.");
  expect_error([&] { mx::fft::fftn(x, {0, 0}); }, "[fftn] Duplicated axis received (0,0)");
  expect_error([&] { mx::fft::fftn(x, {0, -2}); }, "[fftn] Duplicated axis received (0,-2)");
  expect_error([&] { mx::fft::fftn(x, {3}, {0, 1}); }, "[fftn] Shape and axes have different sizes.");
  expect_error([&] { mx::fft::fft(x, 0, -1); }, "[fftn] Invalid FFT output size requested (0)");
  expect_error([&] { mx::fft::irfft(x, -1, -1); }, "[fftn] Invalid FFT output size requested (-1)");
  expect_error([&] { mx::fft::irfft(mx::ones({3, 1})); }, "[fftn] Invalid FFT output size requested (0)");
  expect_error([&] { mx::fft::fftshift(x, std::vector<int>{3}); }, "[fftshift] Invalid axis 3 for array with 2 dimensions.");
  expect_error([&] { mx::fft::ifftshift(x, std::vector<int>{-3}); }, "[ifftshift] Invalid axis -3 for array with 2 dimensions.");
}

TEST(FFT, KernelRejectsInconsistentNodes) {
  // Nodes from files carry their own output specs; the kernel checks them before transforming.
  const auto& def = mx::registry::get("FFT");
  EXPECT_EQ(def.infer, nullptr);
  EXPECT_FALSE(def.shapeless);
  auto c = mx::zeros({2, 5}, mx::complex64);
  auto run = [&](mx::State st, mx::array in, mx::ArraySpec out) {
    auto y = mx::make_array(def, std::move(st), {in}, {out});
    y.eval();
  };
  using SV = std::vector<uint64_t>;
  expect_error([&] { run(mx::State{SV{2}, false, false}, c, {{2, 5}, mx::complex64}); }, "[FFT] Invalid axis 2");
  expect_error([&] { run(mx::State{SV{1, 1}, false, false}, c, {{2, 5}, mx::complex64}); }, "[FFT] Duplicated axis");
  expect_error([&] { run(mx::State{SV{}, false, false}, c, {{2, 5}, mx::complex64}); }, "[FFT] Expected at least");
  expect_error([&] { run(mx::State{SV{1}, false, false}, c, {{2, 6}, mx::complex64}); }, "[FFT] Output shape (2,6)");
  expect_error([&] { run(mx::State{SV{1}, true, true}, c, {{2, 10}, mx::float32}); }, "[FFT] Output shape (2,10)");
  expect_error([&] { run(mx::State{SV{1}, false, true}, c, {{2, 3}, mx::complex64}); },
               "[FFT] Expected a float32 input and a complex64 output but got complex64 and complex64.");
  // Both real sizes that fit an irfft input of 5 entries are accepted.
  auto ok = mx::make_array(def, mx::State{SV{1}, true, true}, {c}, {{{2, 9}, mx::float32}});
  EXPECT_NO_THROW(ok.eval());
}

#if __has_include(<kiln/io.h>)
#include <kiln/io.h>

// The golden corpus case fft_family (MLX 0.30.1): x (4, 6) float32 -> real and imaginary parts of
// fft2(x), |rfft2(x)|, irfft2(rfft2(x), (4, 6)) and the real part of ifft2(fft2(x)).
TEST(FFT, GoldenCorpusValues) {
  const std::string dir = std::string(KILN_TEST_DATA) + "/golden/mlx-0.30.1/fft_family/";
  auto x = mx::load(dir + "call0_arg0.npy");
  std::vector<std::vector<float>> want;
  for (int i = 0; i < 5; ++i) want.push_back(reals(mx::load(dir + "call0_out" + std::to_string(i) + ".npy")));
  auto f = cplx(mx::fft::fft2(x));
  auto r = cplx(mx::fft::rfft2(x));
  ASSERT_EQ(f.size(), want[0].size());
  ASSERT_EQ(r.size(), want[2].size());
  for (size_t i = 0; i < f.size(); ++i) {
    EXPECT_NEAR(f[i].real(), want[0][i], 1e-4);
    EXPECT_NEAR(f[i].imag(), want[1][i], 1e-4);
  }
  for (size_t i = 0; i < r.size(); ++i) EXPECT_NEAR(std::abs(r[i]), want[2][i], 1e-4);
  expect_near(reals(mx::fft::irfft2(mx::fft::rfft2(x), {4, 6}, {-2, -1})), want[3], 1e-5f, "irfft2");
  auto back = cplx(mx::fft::ifft2(mx::fft::fft2(x)));
  for (size_t i = 0; i < back.size(); ++i) EXPECT_NEAR(back[i].real(), want[4][i], 1e-5);
}
#endif
