// Cumulative scans: cumsum, cumprod, cummax, cummin, logcumsumexp (the Scan primitive).
// References are scalar loops in double, or values printed by MLX 0.30.1 for its integer / NaN quirks.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>

#include <kiln/kiln.h>

namespace mx = kiln;
using ::testing::HasSubstr;

namespace {

const double kNaN = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();

mx::array view(const mx::array& base, mx::Shape shape, mx::Strides strides, int64_t offset) {
  mx::array v(std::move(shape), base.dtype(), nullptr, 0);
  v.set_view(base, std::move(strides), base.offset() + offset);
  return v;
}

std::vector<double> values(mx::array a) {
  a.eval();
  std::vector<double> out(a.size());
  const char* base = static_cast<const char*>(a.raw_data());
  const size_t nd = a.ndim();
  std::vector<int64_t> idx(nd, 0);
  for (size_t i = 0; i < a.size(); ++i) {
    int64_t off = 0;
    for (size_t d = 0; d < nd; ++d) off += idx[d] * a.strides()[d];
    mx::convert_values(base + off * static_cast<int64_t>(a.itemsize()), a.dtype(), &out[i], mx::float64, 1);
    for (int d = static_cast<int>(nd) - 1; d >= 0; --d) {
      if (++idx[d] < a.shape()[d]) break;
      idx[d] = 0;
    }
  }
  return out;
}

void expect_close(const std::vector<double>& got, const std::vector<double>& want, double rtol, double atol,
                  const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(want[i])) {
      EXPECT_TRUE(std::isnan(got[i])) << what << " at " << i;
    } else if (std::isinf(want[i])) {
      EXPECT_EQ(got[i], want[i]) << what << " at " << i;
    } else {
      EXPECT_NEAR(got[i], want[i], atol + rtol * std::abs(want[i])) << what << " at " << i;
    }
  }
}

template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "<no std::invalid_argument thrown>";
}

// Scalar reference scan of `v` (row-major `shape`) along `axis`, with MLX's element rules.
std::vector<double> ref_scan(const std::vector<double>& v, const mx::Shape& shape, int axis, bool reverse,
                             bool inclusive, double init, const std::function<double(double, double)>& op) {
  int64_t n = shape[axis], inner = 1, outer = 1;
  for (size_t d = axis + 1; d < shape.size(); ++d) inner *= shape[d];
  for (int d = 0; d < axis; ++d) outer *= shape[d];
  std::vector<double> out(v.size());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < inner; ++j) {
      double y = init;
      for (int64_t k = 0; k < n; ++k) {
        int64_t i = reverse ? n - 1 - k : k;
        double x = v[(o * n + i) * inner + j];
        if (inclusive) {
          y = (k == 0) ? x : op(y, x);
          out[(o * n + i) * inner + j] = y;
        } else {
          out[(o * n + i) * inner + j] = y;
          y = op(y, x);
        }
      }
    }
  return out;
}

const std::vector<mx::Dtype> kRealTypes = {mx::bool_, mx::uint8,   mx::uint16,  mx::uint32, mx::uint64,
                                           mx::int8,  mx::int16,   mx::int32,   mx::int64,  mx::float16,
                                           mx::float32, mx::float64, mx::bfloat16};

}  // namespace

TEST(Scan, CumsumCumprodEveryDtypeAxisAndDirection) {
  const mx::Shape shape{3, 4, 5};
  for (mx::Dtype t : kRealTypes) {
    std::vector<double> v(60), p(60);
    for (size_t i = 0; i < 60; ++i) {
      v[i] = t == mx::bool_ ? (i % 3 != 0) : (mx::is_unsigned(t) ? (i * 7) % 5 : static_cast<double>((i * 7) % 9) - 4);
      p[i] = t == mx::bool_ ? (i % 7 != 0) : ((i % 3 == 0) ? 2 : ((i % 3 == 1 && !mx::is_unsigned(t)) ? -1 : 1));
    }
    auto a = mx::array(v, shape, t);
    auto b = mx::array(p, shape, t);
    for (int axis = -3; axis < 3; ++axis) {
      const int ax = axis < 0 ? axis + 3 : axis;
      for (bool reverse : {false, true}) {
        for (bool inclusive : {true, false}) {
          auto cs = mx::cumsum(a, axis, reverse, inclusive);
          EXPECT_EQ(cs.dtype(), t == mx::bool_ ? mx::int32 : t);
          EXPECT_EQ(cs.shape(), shape);
          expect_close(values(cs), ref_scan(v, shape, ax, reverse, inclusive, 0, std::plus<double>()), 0, 0,
                       "cumsum " + mx::dtype_name(t));
          auto cp = mx::cumprod(b, axis, reverse, inclusive);
          EXPECT_EQ(cp.dtype(), t);
          auto want = ref_scan(p, shape, ax, reverse, inclusive, 1, std::multiplies<double>());
          if (t == mx::bool_) {
            for (double& w : want) w = w != 0;
          }
          expect_close(values(cp), want, 0, 0, "cumprod " + mx::dtype_name(t));
        }
      }
    }
  }
}

TEST(Scan, CummaxCumminEveryDtype) {
  const mx::Shape shape{4, 6};
  for (mx::Dtype t : kRealTypes) {
    std::vector<double> v(24);
    for (size_t i = 0; i < 24; ++i) {
      v[i] = t == mx::bool_ ? (i % 5 == 2) : (mx::is_unsigned(t) ? (i * 5) % 7 : static_cast<double>((i * 5) % 7) - 3);
    }
    auto a = mx::array(v, shape, t);
    // Exclusive scans start from the identity: +-inf for floating types, the type's limits otherwise.
    double lo, hi;
    if (mx::is_floating_point(t)) {
      lo = -kInf, hi = kInf;
    } else if (t == mx::bool_) {
      lo = 0, hi = 1;
    } else {
      lo = mx::is_unsigned(t) ? 0 : -std::ldexp(1.0, t.size * 8 - 1);
      hi = std::ldexp(1.0, t.size * 8 - (mx::is_unsigned(t) ? 0 : 1)) - 1;
    }
    for (int axis : {0, 1, -1}) {
      const int ax = axis < 0 ? axis + 2 : axis;
      for (bool reverse : {false, true}) {
        for (bool inclusive : {true, false}) {
          auto cmax = mx::cummax(a, axis, reverse, inclusive);
          auto cmin = mx::cummin(a, axis, reverse, inclusive);
          EXPECT_EQ(cmax.dtype(), t);
          auto wmax = ref_scan(v, shape, ax, reverse, inclusive, lo, [](double y, double x) { return x < y ? y : x; });
          auto wmin = ref_scan(v, shape, ax, reverse, inclusive, hi, [](double y, double x) { return x < y ? x : y; });
          if (t == mx::uint64 || t == mx::int64) {
            // 2^63 - 1 and 2^64 - 1 do not fit a double exactly; compare only the non-identity entries.
            auto gmin = values(cmin);
            for (size_t i = 0; i < gmin.size(); ++i)
              if (wmin[i] != hi) EXPECT_EQ(gmin[i], wmin[i]);
            expect_close(values(cmax), wmax, 0, 0, "cummax " + mx::dtype_name(t));
            continue;
          }
          expect_close(values(cmax), wmax, 0, 0, "cummax " + mx::dtype_name(t));
          expect_close(values(cmin), wmin, 0, 0, "cummin " + mx::dtype_name(t));
        }
      }
    }
  }
}

TEST(Scan, MlxQuirksNaNAndIntegers) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  // MLX: cummax([1,nan,0.5,3]) = [1,nan,0.5,3]; cummin = [1,1,0.5,0.5]; cummin([nan,1,2]) = all nan;
  // cummax([nan,1,2]) = [nan,1,2].
  expect_close(values(mx::cummax(mx::array({1.f, nan, 0.5f, 3.f}))), {1, kNaN, 0.5, 3}, 0, 0, "cummax nan");
  expect_close(values(mx::cummin(mx::array({1.f, nan, 0.5f, 3.f}))), {1, 1, 0.5, 0.5}, 0, 0, "cummin nan");
  expect_close(values(mx::cummin(mx::array({nan, 1.f, 2.f}))), {kNaN, kNaN, kNaN}, 0, 0, "cummin first nan");
  expect_close(values(mx::cummax(mx::array({nan, 1.f, 2.f}))), {kNaN, 1, 2}, 0, 0, "cummax first nan");
  // The same along a column (the blocked path).
  expect_close(values(mx::cummin(mx::array({1.f, nan, 0.5f, 3.f}, {4, 1}), 0)), {1, 1, 0.5, 0.5}, 0, 0, "col");
  // Integer wrap-around: cumsum(int8 [100,100,100]) = [100,-56,44]; cumprod(uint8 [200,3]) = [200,88].
  expect_close(values(mx::cumsum(mx::array({100, 100, 100}, mx::int8))), {100, -56, 44}, 0, 0, "int8 wrap");
  expect_close(values(mx::cumprod(mx::array({200, 3}, mx::uint8))), {200, 88}, 0, 0, "uint8 wrap");
  expect_close(values(mx::cumprod(mx::array({2, 3, 4}, mx::int8))), {2, 6, 24}, 0, 0, "int8 prod");
  // 16-bit products wrap too (300 * 300 = 90000 = 24464 mod 2^16; 65535 * 65535 = 1 mod 2^16).
  expect_close(values(mx::cumprod(mx::array({300, 300}, mx::int16))), {300, 24464}, 0, 0, "int16 prod");
  expect_close(values(mx::cumprod(mx::array({65535, 65535}, mx::uint16))), {65535, 1}, 0, 0, "uint16 prod");
  // Exclusive identities: MLX cumsum excl [0,1,3]; cumprod reverse excl [6,3,1]; cummax int32 excl starts at
  // INT_MIN; cummin float excl starts at inf; cummax uint8 excl starts at 0; cummin bool excl starts at true.
  expect_close(values(mx::cumsum(mx::array({1, 2, 3}), false, false)), {0, 1, 3}, 0, 0, "excl sum");
  expect_close(values(mx::cumprod(mx::array({1, 2, 3}), true, false)), {6, 3, 1}, 0, 0, "excl prod rev");
  expect_close(values(mx::cummax(mx::array({1, 2, 3}), false, false)), {-2147483648.0, 1, 2}, 0, 0, "excl max");
  expect_close(values(mx::cummin(mx::array({1.f, 2.f, 3.f}), false, false)), {kInf, 1, 1}, 0, 0, "excl min");
  expect_close(values(mx::cummax(mx::array({1, 2, 3}, mx::uint8), false, false)), {0, 1, 2}, 0, 0, "excl umax");
  expect_close(values(mx::cummin(mx::array({true, false}), false, false)), {1, 1}, 0, 0, "excl bool min");
  // Bool: cumsum gives int32 (MLX reverse [3,2,1,1]); cumprod and cummax stay bool.
  auto bs = mx::cumsum(mx::array({true, true, false, true}), true);
  EXPECT_EQ(bs.dtype(), mx::int32);
  expect_close(values(bs), {3, 2, 1, 1}, 0, 0, "bool cumsum");
  expect_close(values(mx::cumprod(mx::array({true, true, false, true}))), {1, 1, 0, 0}, 0, 0, "bool cumprod");
  expect_close(values(mx::cummax(mx::array({false, true, false}))), {0, 1, 1}, 0, 0, "bool cummax");
}

TEST(Scan, LogCumSumExp) {
  // Float reference: log(sum(exp)) of every prefix.
  std::vector<double> v = {0.5, -1, 2, 1, -3, 0.25};
  auto lae = [](double y, double x) {
    double m = std::max(x, y), n = std::min(x, y);
    if (n == -kInf || m == kInf) return m;
    return m + std::log1p(std::exp(n - m));
  };
  for (mx::Dtype t : {mx::float32, mx::float64, mx::float16, mx::bfloat16}) {
    auto a = mx::array(v, {6}, t);
    auto lv = values(a);
    const double tol = (t == mx::float16 || t == mx::bfloat16) ? 1e-2 : 1e-6;
    for (bool reverse : {false, true}) {
      for (bool inclusive : {true, false}) {
        auto r = mx::logcumsumexp(a, reverse, inclusive);
        EXPECT_EQ(r.dtype(), t);
        expect_close(values(r), ref_scan(lv, {6}, 0, reverse, inclusive, -kInf, lae), tol, tol, "lcse " + mx::dtype_name(t));
      }
    }
  }
  // MLX: [0.5,-1,2,nan,1] -> [0.5, 0.701413, 2.24131, nan, nan]; [0.5,-1,2,1] reverse exclusive ->
  // [2.34901, 2.31326, 1, -inf].
  expect_close(values(mx::logcumsumexp(mx::array({0.5f, -1.f, 2.f, std::numeric_limits<float>::quiet_NaN(), 1.f}))),
               {0.5, 0.701413, 2.24131, kNaN, kNaN}, 1e-5, 1e-5, "nan");
  expect_close(values(mx::logcumsumexp(mx::array({0.5f, -1.f, 2.f, 1.f}), true, false)), {2.34901, 2.31326, 1, -kInf},
               1e-5, 1e-5, "reverse exclusive");
  // Integers follow MLX's integer arithmetic: int32 [1,2,3] -> [1,2,3] (inclusive) and
  // [-2147483648, -2147483647, -2147483646] (exclusive); int8 excl -> [-128, 1, 2]; uint8 excl -> [0, 1, 2];
  // bool [F,F,T] -> [F,F,T] (inclusive), [F,F,F] (exclusive).
  expect_close(values(mx::logcumsumexp(mx::array({1, 2, 3}))), {1, 2, 3}, 0, 0, "int32 incl");
  expect_close(values(mx::logcumsumexp(mx::array({1, 2, 3}), false, false)),
               {-2147483648.0, -2147483647.0, -2147483646.0}, 0, 0, "int32 excl");
  expect_close(values(mx::logcumsumexp(mx::array({1, 2, 3}, mx::int8), false, false)), {-128, 1, 2}, 0, 0, "int8");
  expect_close(values(mx::logcumsumexp(mx::array({1, 2, 3}, mx::uint8), false, false)), {0, 1, 2}, 0, 0, "uint8");
  // 8- and 16-bit differences promote to int as in MLX's kernel (uint8 3 - 250 is -247, not 9): MLX
  // 0.30.1 gives [250, 250, 250] here (kiln gave [250, 255, 4] before).
  expect_close(values(mx::logcumsumexp(mx::array({250, 3, 7}, mx::uint8))), {250, 250, 250}, 0, 0, "uint8 spread");
  expect_close(values(mx::logcumsumexp(mx::array({30000, 3, 7}, mx::uint16))), {30000, 30000, 30000}, 0, 0,
               "uint16 spread");
  expect_close(values(mx::logcumsumexp(mx::array({false, false, true}))), {0, 0, 1}, 0, 0, "bool incl");
  expect_close(values(mx::logcumsumexp(mx::array({false, false, true}), false, false)), {0, 0, 0}, 0, 0, "bool excl");
}

TEST(Scan, Complex) {
  // MLX: c = [1+2j, 1+1j, 5j, 2-1j]: cumsum [1+2j, 2+3j, 2+8j, 4+7j]; reverse exclusive [3+5j, 2+4j, 2-1j, 0];
  // cumprod [1+2j, -1+3j, -15-5j, -35+5j]; cummax [1+2j, 1+2j, 1+2j, 2-1j]; cummin [1+2j, 1+1j, 5j, 5j].
  std::vector<mx::complex64_t> c = {{1, 2}, {1, 1}, {0, 5}, {2, -1}};
  mx::array a(c.data(), mx::Shape{4}, mx::complex64);
  auto check = [](mx::array r, std::vector<mx::complex64_t> want, const char* what) {
    r.eval();
    ASSERT_EQ(r.dtype(), mx::complex64);
    auto got = mx::contiguous(r);
    got.eval();
    for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(got.data<mx::complex64_t>()[i], want[i]) << what << " " << i;
  };
  check(mx::cumsum(a), {{1, 2}, {2, 3}, {2, 8}, {4, 7}}, "cumsum");
  check(mx::cumsum(a, true, false), {{3, 5}, {2, 4}, {2, -1}, {0, 0}}, "cumsum rev excl");
  check(mx::cumprod(a), {{1, 2}, {-1, 3}, {-15, -5}, {-35, 5}}, "cumprod");
  check(mx::cummax(a), {{1, 2}, {1, 2}, {1, 2}, {2, -1}}, "cummax");
  check(mx::cummin(a), {{1, 2}, {1, 1}, {0, 5}, {0, 5}}, "cummin");
}

TEST(Scan, LayoutsLargeAndFlattened) {
  // Transposed and sliced inputs are copied to contiguous first.
  std::vector<double> v(6 * 8);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>((i * 3) % 7) - 2;
  auto base = mx::array(v, {6, 8}, mx::float32);
  base.eval();
  auto t = view(base, {8, 6}, {1, 8}, 0);
  auto lt = values(t);
  for (int ax : {0, 1}) {
    expect_close(values(mx::cumsum(t, ax)), ref_scan(lt, {8, 6}, ax, false, true, 0, std::plus<double>()), 0, 0, "t");
  }
  auto sl = view(base, {3, 4}, {16, -2}, 7);  // every other row, columns 7,5,3,1
  auto ls = values(sl);
  expect_close(values(mx::cumsum(sl, 1, true)), ref_scan(ls, {3, 4}, 1, true, true, 0, std::plus<double>()), 0, 0, "slice");
  // Large: rows (independent sequential scans) and columns (blocked), above the parallel grain.
  for (auto [shape, axis] : std::vector<std::pair<mx::Shape, int>>{{{500, 300}, 1}, {{300, 2000}, 0}, {{20, 50, 400}, 1}}) {
    size_t n = 1;
    for (int d : shape) n *= d;
    std::vector<double> w(n);
    for (size_t i = 0; i < n; ++i) w[i] = static_cast<double>(i % 11) - 5;
    auto a = mx::array(w, shape, mx::int32);
    expect_close(values(mx::cumsum(a, axis)), ref_scan(w, shape, axis, false, true, 0, std::plus<double>()), 0, 0, "large");
    expect_close(values(mx::cummax(a, axis, true, false)),
                 ref_scan(w, shape, axis, true, false, -2147483648.0, [](double y, double x) { return x < y ? y : x; }), 0,
                 0, "large cummax");
    auto af = mx::array(w, shape, mx::float32);
    expect_close(values(mx::cumsum(af, axis, true)), ref_scan(w, shape, axis, true, true, 0, std::plus<double>()), 1e-6,
                 1e-3, "large float");
  }
  // Without an axis: the flattened array; a 0-d input becomes shape (1).
  auto m = mx::array({1, 2, 3, 4, 5, 6}, {2, 3});
  auto f = mx::cumsum(m);
  EXPECT_EQ(f.shape(), mx::Shape({6}));
  expect_close(values(f), {1, 3, 6, 10, 15, 21}, 0, 0, "flat");
  expect_close(values(mx::cumprod(m, true)), {720, 720, 360, 120, 30, 6}, 0, 0, "flat rev prod");
  EXPECT_EQ(mx::cumsum(mx::array(3)).shape(), mx::Shape({1}));
  EXPECT_EQ(mx::cumsum(mx::array(true)).item<int32_t>(), 1);
  // Empty arrays.
  auto e = mx::cumsum(mx::zeros({0, 3}), 0);
  EXPECT_EQ(e.shape(), mx::Shape({0, 3}));
  EXPECT_EQ(values(e).size(), 0u);
  EXPECT_EQ(values(mx::cummax(mx::zeros({2, 0}), 1)).size(), 0u);
}

TEST(Scan, PrimitiveRowAndErrors) {
  auto a = mx::zeros({2, 3});
  auto r = mx::cumsum(a, -1, true, false);
  ASSERT_TRUE(r.has_primitive());
  const auto& def = *r.node()->def;
  EXPECT_EQ(def.name, "Scan");
  EXPECT_FALSE(def.shapeless);  // MLX cannot re-infer Scan shapes (spec 4.5)
  EXPECT_EQ(r.node()->state.i(0), 2);
  EXPECT_EQ(r.node()->state.i(1), 1);
  EXPECT_TRUE(r.node()->state.b(2));
  EXPECT_FALSE(r.node()->state.b(3));
  const char* names[] = {"CumMax", "CumMin", "CumSum", "CumProd", "CumLogAddExp"};
  for (int t = 0; t < 5; ++t) EXPECT_EQ(def.display_name(mx::State{t, 0, false, true}), names[t]);
  EXPECT_EQ(def.infer(mx::State{2, 0, false, true}, {{{3}, mx::bool_}})[0].dtype, mx::int32);
  EXPECT_EQ(def.infer(mx::State{3, 0, false, true}, {{{3}, mx::bool_}})[0].dtype, mx::bool_);
  EXPECT_THAT(error_of([&] { def.infer(mx::State{2, 1, false, true}, {{{3}, mx::float32}}); }),
              HasSubstr("[Scan] Invalid axis 1"));
  EXPECT_THAT(error_of([&] { def.infer(mx::State{7, 0, false, true}, {{{3}, mx::float32}}); }),
              HasSubstr("[Scan] Unknown scan type 7"));
  EXPECT_THAT(error_of([&] { mx::cumsum(a, 2); }), HasSubstr("[cumsum] Axis 2 is out of bounds for array with 2 dimensions."));
  EXPECT_THAT(error_of([&] { mx::cumprod(a, -3); }), HasSubstr("[cumprod] Axis -3 is out of bounds"));
  EXPECT_THAT(error_of([&] { mx::cummax(a, 5); }), HasSubstr("[cummax] Axis 5"));
  EXPECT_THAT(error_of([&] { mx::cummin(a, -4); }), HasSubstr("[cummin] Axis -4"));
  EXPECT_THAT(error_of([&] { mx::logcumsumexp(a, 2); }), HasSubstr("[logcumsumexp] Axis 2"));
  EXPECT_THAT(error_of([&] { mx::cumsum(mx::array(1.0f), 0); }),
              HasSubstr("[cumsum] Axis 0 is out of bounds for array with 0 dimensions."));
  // A recorded dtype other than the natural one is converted (Sum of int8 recorded as int32).
  auto out = mx::make_array(def, mx::State{2, 0, false, true}, {mx::array({100, 100, 100}, mx::int8)}, {{{3}, mx::int32}});
  expect_close(values(out), {100, -56, 44}, 0, 0, "recorded dtype");
}
