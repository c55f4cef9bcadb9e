// Reductions: Reduce, ArgReduce, LogSumExp, Softmax, NumberOfElements and the ops built on them.
// References are scalar loops over the logical elements (in double / int64) or values printed by MLX 0.30.1.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <numeric>

#include <kiln/kiln.h>

#include "core/mode.h"
#include "unit/test_util.h"

namespace mx = kiln;
using ::testing::HasSubstr;

namespace {

const double kNaN = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();

const std::vector<mx::Dtype> kAllTypes = {mx::bool_,  mx::uint8,   mx::uint16,  mx::uint32,  mx::uint64,
                                          mx::int8,   mx::int16,   mx::int32,   mx::int64,   mx::float16,
                                          mx::float32, mx::float64, mx::bfloat16, mx::complex64};

// A strided view of `base` (no copy), to test non-contiguous, offset, negative-stride and broadcast inputs.
mx::array view(const mx::array& base, mx::Shape shape, mx::Strides strides, int64_t offset) {
  mx::array v(std::move(shape), base.dtype(), nullptr, 0);
  v.set_view(base, std::move(strides), base.offset() + offset);
  return v;
}

// The logical elements of `a` (any strides), converted to double (the real part for complex).
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

// Input values of a test array: small integers (exact in every dtype), 0/1 for bool.
std::vector<double> pattern(size_t n, mx::Dtype t, int kind = 0) {
  std::vector<double> v(n);
  for (size_t i = 0; i < n; ++i) {
    if (t == mx::bool_) v[i] = (i % 3) != 0;
    else if (kind == 1) v[i] = (i % 4 == 0) ? 2 : ((i % 4 == 1 && !mx::is_unsigned(t)) ? -1 : 1);  // products
    else if (mx::is_unsigned(t)) v[i] = static_cast<double>((i * 7 + 3) % 11);
    else v[i] = static_cast<double>(static_cast<int>((i * 7 + 3) % 11) - 5);
  }
  return v;
}

mx::array make(const std::vector<double>& v, const mx::Shape& shape, mx::Dtype t) { return mx::array(v, shape, t); }

// Scalar reference: reduce `v` (row-major, `shape`) over `axes` with `op`, keep-dims layout.
std::vector<double> ref_reduce(const std::vector<double>& v, const mx::Shape& shape, std::vector<int> axes,
                               double init, const std::function<double(double, double)>& op) {
  const int nd = static_cast<int>(shape.size());
  for (int& a : axes) a = a < 0 ? a + nd : a;
  mx::Shape oshape = shape;
  for (int a : axes) oshape[a] = 1;
  size_t osize = 1;
  for (int d : oshape) osize *= d;
  std::vector<double> out(osize, init);
  std::vector<int> idx(nd, 0);
  for (size_t i = 0; i < v.size(); ++i) {
    size_t o = 0;
    for (int d = 0; d < nd; ++d) o = o * oshape[d] + (oshape[d] == 1 ? 0 : idx[d]);
    out[o] = op(out[o], v[i]);
    for (int d = nd - 1; d >= 0; --d) {
      if (++idx[d] < shape[d]) break;
      idx[d] = 0;
    }
  }
  return out;
}

double nan_max(double a, double b) { return (std::isnan(a) || std::isnan(b)) ? kNaN : std::max(a, b); }
double nan_min(double a, double b) { return (std::isnan(a) || std::isnan(b)) ? kNaN : std::min(a, b); }

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

// Whether the graph behind `a` contains a node named `name`.
bool graph_has(const mx::array& a, const std::string& name) { return test_util::graph_has({a}, name); }

mx::Dtype expected_sum_dtype(mx::Dtype t) {
  if (t == mx::bool_ || t == mx::int8 || t == mx::int16 || t == mx::int32) return mx::int32;
  if (t == mx::uint8 || t == mx::uint16 || t == mx::uint32) return mx::uint32;
  return t;
}

const std::vector<std::vector<int>> kAxesCases = {{0}, {1}, {2}, {-1}, {0, 2}, {2, 0}, {-3, -2}, {1, 2}, {0, 1, 2}};

}  // namespace

// ---------------------------------------------------------------- dtypes and values, every axis combination

TEST(Reduce, SumEveryDtypeAndAxes) {
  const mx::Shape shape{2, 3, 4};
  for (mx::Dtype t : kAllTypes) {
    auto v = pattern(24, t);
    auto a = make(v, shape, t);
    for (const auto& axes : kAxesCases) {
      for (bool keep : {false, true}) {
        auto r = mx::sum(a, axes, keep);
        EXPECT_EQ(r.dtype(), expected_sum_dtype(t)) << t;
        auto want = ref_reduce(v, shape, axes, 0, [](double x, double y) { return x + y; });
        expect_close(values(r), want, 0, 0, "sum " + mx::dtype_name(t));
        mx::Shape ks = shape;
        for (int ax : axes) ks[ax < 0 ? ax + 3 : ax] = 1;
        if (keep) {
          EXPECT_EQ(r.shape(), ks);
        } else {
          EXPECT_EQ(r.ndim(), 3 - axes.size());
        }
      }
    }
    auto whole = mx::sum(a);
    EXPECT_EQ(whole.ndim(), 0u);
    EXPECT_EQ(values(whole)[0], std::accumulate(v.begin(), v.end(), 0.0));
    EXPECT_EQ(mx::sum(a, true).shape(), mx::Shape({1, 1, 1}));
    EXPECT_EQ(mx::sum(a, 1).shape(), mx::Shape({2, 4}));
  }
}

TEST(Reduce, ProdEveryDtypeAndAxes) {
  const mx::Shape shape{2, 3, 4};
  for (mx::Dtype t : kAllTypes) {
    auto v = pattern(24, t, 1);
    auto a = make(v, shape, t);
    for (const auto& axes : kAxesCases) {
      auto r = mx::prod(a, axes, true);
      EXPECT_EQ(r.dtype(), expected_sum_dtype(t)) << t;
      auto want = ref_reduce(v, shape, axes, 1, [](double x, double y) { return x * y; });
      expect_close(values(r), want, 0, 0, "prod " + mx::dtype_name(t));
    }
  }
}

TEST(Reduce, MaxMinEveryDtypeAndAxes) {
  const mx::Shape shape{2, 3, 4};
  for (mx::Dtype t : kAllTypes) {
    if (t == mx::complex64) continue;  // lexicographic order, tested below
    auto v = pattern(24, t);
    auto a = make(v, shape, t);
    for (const auto& axes : kAxesCases) {
      auto rmax = mx::max(a, axes, false);
      auto rmin = mx::min(a, axes, true);
      EXPECT_EQ(rmax.dtype(), t);
      EXPECT_EQ(rmin.dtype(), t);
      expect_close(values(rmax), ref_reduce(v, shape, axes, -kInf, nan_max), 0, 0, "max " + mx::dtype_name(t));
      expect_close(values(rmin), ref_reduce(v, shape, axes, kInf, nan_min), 0, 0, "min " + mx::dtype_name(t));
    }
  }
}

TEST(Reduce, AllAnyEveryDtype) {
  const mx::Shape shape{2, 3, 4};
  for (mx::Dtype t : kAllTypes) {
    std::vector<double> v(24);
    for (size_t i = 0; i < 24; ++i) v[i] = (i % 5 == 0 || i == 7) ? 0 : 1;
    auto a = make(v, shape, t);
    for (const auto& axes : kAxesCases) {
      auto r_all = mx::all(a, axes, true);
      auto r_any = mx::any(a, axes, false);
      EXPECT_EQ(r_all.dtype(), mx::bool_);
      EXPECT_EQ(r_any.dtype(), mx::bool_);
      expect_close(values(r_all), ref_reduce(v, shape, axes, 1, [](double x, double y) { return double(x && y); }),
                   0, 0, "all " + mx::dtype_name(t));
      expect_close(values(r_any), ref_reduce(v, shape, axes, 0, [](double x, double y) { return double(x || y); }),
                   0, 0, "any " + mx::dtype_name(t));
    }
    EXPECT_FALSE(mx::all(a).item<bool>());
    EXPECT_TRUE(mx::any(a).item<bool>());
  }
}

TEST(Reduce, AllAnySeeRawBitsLikeMlx) {
  // MLX tests the bit pattern: -0.0 and NaN are "true".
  EXPECT_TRUE(mx::any(mx::array({-0.0f, 0.0f})).item<bool>());
  EXPECT_TRUE(mx::all(mx::array({-0.0f, 1.0f})).item<bool>());
  EXPECT_TRUE(mx::all(mx::array({static_cast<float>(kNaN), 2.0f})).item<bool>());
  EXPECT_FALSE(mx::any(mx::array({0.0f, 0.0f}, mx::float16)).item<bool>());
  EXPECT_TRUE(mx::any(mx::array({-0.0f, 0.0f}, mx::bfloat16)).item<bool>());
  // A single element is a no-op reduction, which casts instead (MLX: any([-0.0]) is False).
  EXPECT_FALSE(mx::any(mx::array({-0.0f}, mx::bfloat16)).item<bool>());
}

TEST(Reduce, ComplexSumProdMaxMin) {
  // MLX: values of [1+2j, 1+1j, 5j, 2-1j].
  std::vector<mx::complex64_t> c = {{1, 2}, {1, 1}, {0, 5}, {2, -1}};
  mx::array a(c.data(), mx::Shape{4}, mx::complex64);
  auto s = mx::sum(a).item<mx::complex64_t>();
  EXPECT_EQ(s, mx::complex64_t(4, 7));
  auto p = mx::prod(a).item<mx::complex64_t>();
  EXPECT_EQ(p, mx::complex64_t(-35, 5));
  EXPECT_EQ(mx::max(a).item<mx::complex64_t>(), mx::complex64_t(2, -1));
  EXPECT_EQ(mx::min(a).item<mx::complex64_t>(), mx::complex64_t(0, 5));
  EXPECT_EQ(mx::argmax(a).item<uint32_t>(), 3u);
  EXPECT_EQ(mx::argmin(a).item<uint32_t>(), 2u);
  EXPECT_EQ(mx::sum(a).dtype(), mx::complex64);
}

TEST(Reduce, IntegerWidthsAndWrapping) {
  // MLX: sum(int8 [100,100,100]) = 300 (int32); sum(uint8 [200,200]) = 400 (uint32); prod = 40000.
  EXPECT_EQ(mx::sum(mx::array({100, 100, 100}, mx::int8)).item<int32_t>(), 300);
  EXPECT_EQ(mx::sum(mx::array({200, 200}, mx::uint8)).item<uint32_t>(), 400u);
  EXPECT_EQ(mx::prod(mx::array({200, 200}, mx::uint8)).item<uint32_t>(), 40000u);
  EXPECT_EQ(mx::sum(mx::array({-128, -128}, mx::int8)).item<int32_t>(), -256);
  // int32 overflow wraps (two's complement), int64 keeps the value.
  EXPECT_EQ(mx::sum(mx::array({2147483647, 1})).item<int32_t>(), -2147483647 - 1);
  mx::array big(std::vector<int64_t>{4000000000LL, 4000000000LL}, mx::Shape{2});
  EXPECT_EQ(mx::sum(big).item<int64_t>(), 8000000000LL);
  EXPECT_EQ(mx::sum(big).dtype(), mx::int64);
  mx::array ubig(std::vector<uint64_t>{18000000000000000000ULL, 100ULL}, mx::Shape{2});
  EXPECT_EQ(mx::max(ubig).item<uint64_t>(), 18000000000000000000ULL);
  EXPECT_EQ(mx::min(mx::array({-5, 3}, mx::int64)).item<int64_t>(), -5);
  EXPECT_EQ(mx::sum(mx::array({true, true, false})).dtype(), mx::int32);
  EXPECT_EQ(mx::sum(mx::array({true, true, false})).item<int32_t>(), 2);
}

TEST(Reduce, HalfTypesAccumulateInFloat) {
  // 5000 x 0.1 in float16: accumulating in float16 would stall at 256 (MLX's CPU does); float gives ~500.
  std::vector<double> v(5000, 0.1);
  auto a = make(v, {5000}, mx::float16);
  EXPECT_NEAR(mx::sum(a).item<float>(), 499.75f, 0.5f);
  auto b = make(v, {5000}, mx::bfloat16);
  EXPECT_NEAR(mx::sum(b).item<float>(), 500.0f, 2.0f);
  EXPECT_EQ(mx::sum(a).dtype(), mx::float16);
}

// ---------------------------------------------------------------- layouts

TEST(Reduce, NonContiguousInputs) {
  // base (4, 6) row-major; its transpose (6, 4), a strided slice, a reversed view, a broadcast view.
  std::vector<double> v(24);
  for (int i = 0; i < 24; ++i) v[i] = (i * 5) % 7 - 2.5;
  auto base = make(v, {4, 6}, mx::float32);
  base.eval();
  struct Case {
    mx::Shape shape;
    mx::Strides strides;
    int64_t offset;
  };
  std::vector<Case> cases = {
      {{6, 4}, {1, 6}, 0},    // transpose
      {{2, 3}, {12, 2}, 1},   // rows 0,2 / cols 1,3,5
      {{4, 6}, {6, -1}, 5},   // each row reversed
      {{3, 4, 6}, {0, 6, 1}, 0},  // broadcast along a new leading axis
      {{6, 2, 2}, {1, 12, 6}, 0},  // a 3-d permutation
  };
  for (const auto& c : cases) {
    auto a = view(base, c.shape, c.strides, c.offset);
    auto logical = values(a);
    const int nd = static_cast<int>(c.shape.size());
    std::vector<std::vector<int>> axes_list;
    for (int d = 0; d < nd; ++d) axes_list.push_back({d});
    axes_list.push_back({0, nd - 1});
    std::vector<int> all_ax(nd);
    std::iota(all_ax.begin(), all_ax.end(), 0);
    axes_list.push_back(all_ax);
    for (const auto& axes : axes_list) {
      expect_close(values(mx::sum(a, axes, true)),
                   ref_reduce(logical, c.shape, axes, 0, [](double x, double y) { return x + y; }), 1e-6, 1e-5, "sum view");
      expect_close(values(mx::max(a, axes, true)), ref_reduce(logical, c.shape, axes, -kInf, nan_max), 0, 0, "max view");
      expect_close(values(mx::min(a, axes, true)), ref_reduce(logical, c.shape, axes, kInf, nan_min), 0, 0, "min view");
      expect_close(values(mx::prod(a, axes, true)),
                   ref_reduce(logical, c.shape, axes, 1, [](double x, double y) { return x * y; }), 1e-5, 1e-6, "prod view");
    }
  }
}

TEST(Reduce, LargeArraysUseEveryPath) {
  // Sizes above the parallel grain: full reduction, many rows, few long rows, columns, a middle axis.
  struct Case {
    mx::Shape shape;
    std::vector<int> axes;
  };
  std::vector<Case> cases = {
      {{1 << 20}, {0}},          // one long contiguous reduction, split into partials
      {{3000, 700}, {1}},        // row mode, many outputs
      {{2, 400000}, {1}},        // row mode, few long outputs
      {{1500, 900}, {0}},        // column mode (leading axis)
      {{40, 300, 70}, {1}},      // middle axis
      {{64, 100, 150}, {0, 2}},  // two non-adjacent axes
  };
  for (const auto& c : cases) {
    size_t n = 1;
    for (int d : c.shape) n *= d;
    std::vector<double> v(n);
    for (size_t i = 0; i < n; ++i) v[i] = static_cast<double>((i * 2654435761u) % 1000) / 250.0 - 2.0;
    auto a = make(v, c.shape, mx::float32);
    auto want_sum = ref_reduce(v, c.shape, c.axes, 0, [](double x, double y) { return x + y; });
    const auto vf = values(a);  // as rounded to float32
    auto want_max = ref_reduce(vf, c.shape, c.axes, -kInf, nan_max);
    expect_close(values(mx::sum(a, c.axes)), want_sum, 1e-4, 1e-2, "large sum");
    expect_close(values(mx::max(a, c.axes)), want_max, 0, 0, "large max");
    // Integer and float64 versions are exact / near exact.
    auto ai = make(v, c.shape, mx::float64);
    expect_close(values(mx::sum(ai, c.axes)), want_sum, 1e-12, 1e-9, "large sum f64");
    // A NaN placed in the middle poisons its output.
    std::vector<double> w = vf;
    w[n / 2] = kNaN;
    auto an = make(w, c.shape, mx::float32);
    expect_close(values(mx::max(an, c.axes)), ref_reduce(w, c.shape, c.axes, -kInf, nan_max), 0, 0, "large nan max");
    expect_close(values(mx::min(an, c.axes)), ref_reduce(w, c.shape, c.axes, kInf, nan_min), 0, 0, "large nan min");
  }
  // Large transposed input (column path with a strided inner dim, and a row path over stride-1 outputs).
  std::vector<double> v(1200 * 800);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>(i % 17) - 8;
  auto base = make(v, {1200, 800}, mx::int32);
  base.eval();
  auto t = view(base, {800, 1200}, {1, 800}, 0);
  auto logical = values(t);
  for (int ax : {0, 1}) {
    expect_close(values(mx::sum(t, ax)), ref_reduce(logical, {800, 1200}, {ax}, 0, [](double x, double y) { return x + y; }),
                 0, 0, "transposed large sum");
  }
}

// ---------------------------------------------------------------- NaN, empty, 0-d, no-op

TEST(Reduce, NaNPropagatesInMaxMin) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  auto x = mx::array({1.f, nan, 2.f, 3.f, 4.f, 5.f}, {2, 3});
  // MLX: max(axis 0) = [3, nan, 5]; max(axis 1) = [nan, 5]; min(axis 0) = [1, nan, 2].
  expect_close(values(mx::max(x, 0)), {3, kNaN, 5}, 0, 0, "max0");
  expect_close(values(mx::max(x, 1)), {kNaN, 5}, 0, 0, "max1");
  expect_close(values(mx::min(x, 0)), {1, kNaN, 2}, 0, 0, "min0");
  EXPECT_TRUE(std::isnan(mx::max(x).item<float>()));
  EXPECT_TRUE(std::isnan(mx::min(mx::array({nan, 1.f}, mx::float16)).item<float>()));
  EXPECT_TRUE(std::isnan(mx::sum(x).item<float>()));
}

TEST(Reduce, EmptyArrays) {
  auto e = mx::zeros({0, 3});
  expect_close(values(mx::sum(e, 0)), {0, 0, 0}, 0, 0, "sum empty");
  expect_close(values(mx::prod(e, 0)), {1, 1, 1}, 0, 0, "prod empty");
  expect_close(values(mx::all(e, 0)), {1, 1, 1}, 0, 0, "all empty");
  expect_close(values(mx::any(e, 0)), {0, 0, 0}, 0, 0, "any empty");
  EXPECT_EQ(mx::sum(e, 1).shape(), mx::Shape({0}));
  EXPECT_EQ(values(mx::sum(e, 1)).size(), 0u);
  EXPECT_EQ(mx::sum(e).item<float>(), 0.0f);
  EXPECT_EQ(mx::sum(mx::zeros({0}, mx::int8)).dtype(), mx::int32);
  // MLX: mean over an empty axis is NaN (0 * inf).
  auto m = values(mx::mean(e, 0));
  for (double x : m) EXPECT_TRUE(std::isnan(x));
  EXPECT_THAT(error_of([&] { mx::max(e, 0); }), HasSubstr("[max] Cannot max reduce zero size array."));
  EXPECT_THAT(error_of([&] { mx::min(e); }), HasSubstr("[min] Cannot min reduce zero size array."));
  EXPECT_THAT(error_of([&] { mx::argmax(e, 1); }), HasSubstr("[argmax] Cannot argmax reduce zero size array."));
  EXPECT_THAT(error_of([&] { mx::argmin(e); }), HasSubstr("[argmin] Cannot argmin reduce zero size array."));
  EXPECT_THAT(error_of([&] { mx::logsumexp(e); }), HasSubstr("[logsumexp] Received empty array."));
  EXPECT_EQ(mx::softmax(e, -1).shape(), mx::Shape({0, 3}));
}

TEST(Reduce, ScalarsAndNoOps) {
  mx::array s(2.5f);
  EXPECT_EQ(mx::sum(s).item<float>(), 2.5f);
  EXPECT_EQ(mx::max(mx::array(7)).item<int32_t>(), 7);
  EXPECT_EQ(mx::argmax(mx::array(2.0f)).item<uint32_t>(), 0u);
  EXPECT_EQ(mx::argmax(mx::array(2.0f), true).ndim(), 0u);
  // Reducing size-1 axes emits no Reduce node: sum casts, max returns its input, prod (as MLX 0.30.1) too.
  auto a = mx::array({1, 2, 3}, {1, 3}, mx::int8);
  auto s0 = mx::sum(a, 0);
  EXPECT_EQ(s0.dtype(), mx::int32);
  EXPECT_FALSE(graph_has(s0, "Reduce"));
  EXPECT_EQ(mx::prod(a, 0).dtype(), mx::int8);
  EXPECT_EQ(mx::max(a, 0, true).shape(), mx::Shape({1, 3}));
  EXPECT_EQ(mx::all(a, 0).dtype(), mx::bool_);
  // An empty axis list returns the input for sum and prod.
  auto b = mx::array({true, false});
  EXPECT_EQ(mx::sum(b, std::vector<int>{}).dtype(), mx::bool_);
  EXPECT_EQ(mx::any(b, std::vector<int>{}).shape(), mx::Shape({2}));
}

// ---------------------------------------------------------------- graph form and the primitive rows

TEST(Reduce, GraphFormAndDisplayNames) {
  auto a = mx::array({1.f, 2.f, 3.f, 4.f, 5.f, 6.f}, {2, 3});
  auto keep = mx::sum(a, {-1, 0}, true);
  ASSERT_TRUE(keep.has_primitive());
  EXPECT_EQ(keep.node()->def->name, "Reduce");
  EXPECT_EQ(keep.node()->state.i(0), 2);
  EXPECT_EQ(keep.node()->state.ints(1), std::vector<int>({0, 1}));
  EXPECT_EQ(keep.node()->def->display_name(keep.node()->state), "Sum");
  auto squeezed = mx::max(a, 1);
  EXPECT_EQ(squeezed.node()->def->name, "Squeeze");
  EXPECT_EQ(squeezed.inputs()[0].node()->def->display_name(squeezed.inputs()[0].node()->state), "Max");
  const char* names[] = {"And", "Or", "Sum", "Prod", "Min", "Max"};
  const auto& red = mx::registry::get("Reduce");
  for (int t = 0; t < 6; ++t) EXPECT_EQ(red.display_name(mx::State{t, std::vector<int>{0}}), names[t]);
  auto am = mx::argmax(a, 1, true);
  EXPECT_EQ(am.node()->def->name, "ArgReduce");
  EXPECT_EQ(am.node()->state.i(0), 1);
  EXPECT_EQ(am.node()->state.i(1), 1);
  EXPECT_EQ(mx::logsumexp(a, -1, true).node()->def->name, "LogSumExp");
  EXPECT_EQ(mx::softmax(a, -1).node()->def->name, "Softmax");
  EXPECT_TRUE(red.flags & mx::kReduction);
}

TEST(Reduce, InferValidatesFileState) {
  const auto& red = mx::registry::get("Reduce");
  std::vector<mx::ArraySpec> in = {{{2, 3}, mx::int8}};
  auto out = red.infer(mx::State{2, std::vector<int>{1}}, in);
  EXPECT_EQ(out[0].shape, mx::Shape({2, 1}));
  EXPECT_EQ(out[0].dtype, mx::int32);
  EXPECT_EQ(red.infer(mx::State{0, std::vector<int>{0, 1}}, in)[0].dtype, mx::bool_);
  EXPECT_EQ(red.infer(mx::State{5, std::vector<int>{0}}, in)[0].dtype, mx::int8);
  EXPECT_THAT(error_of([&] { red.infer(mx::State{2, std::vector<int>{2}}, in); }), HasSubstr("[Reduce] Invalid axis 2"));
  EXPECT_THAT(error_of([&] { red.infer(mx::State{2, std::vector<int>{1, 0}}, in); }), HasSubstr("increasing"));
  EXPECT_THAT(error_of([&] { red.infer(mx::State{9, std::vector<int>{0}}, in); }), HasSubstr("Unknown reduce type 9"));
  const auto& arg = mx::registry::get("ArgReduce");
  EXPECT_EQ(arg.infer(mx::State{0, 0}, in)[0].shape, mx::Shape({1, 3}));
  EXPECT_EQ(arg.infer(mx::State{0, 0}, in)[0].dtype, mx::uint32);
  EXPECT_THAT(error_of([&] { arg.infer(mx::State{1, -1}, in); }), HasSubstr("[ArgReduce] Invalid axis -1"));
  const auto& lse = mx::registry::get("LogSumExp");
  EXPECT_EQ(lse.infer(mx::State{}, {{{4, 5}, mx::float16}})[0].shape, mx::Shape({4, 1}));
  EXPECT_THAT(error_of([&] { lse.infer(mx::State{}, in); }), HasSubstr("floating point"));
  const auto& sm = mx::registry::get("Softmax");
  EXPECT_THAT(error_of([&] { sm.infer(mx::State{false}, {{{}, mx::float32}}); }), HasSubstr("at least one dimension"));
  const auto& noe = mx::registry::get("NumberOfElements");
  auto ns = noe.infer(mx::State{std::vector<int>{0, 1}, true, mx::float16}, in);
  EXPECT_EQ(ns[0].shape, mx::Shape{});
  EXPECT_EQ(ns[0].dtype, mx::float16);
  EXPECT_THAT(error_of([&] { noe.infer(mx::State{std::vector<int>{3}, false, mx::int32}, in); }),
              HasSubstr("[NumberOfElements] Invalid axis 3"));
}

TEST(Reduce, KernelHonoursARecordedDtype) {
  // A file may record another output dtype; the kernel then converts (here Sum of int8 recorded as float32).
  const auto& red = mx::registry::get("Reduce");
  auto a = mx::array({100, 100, 100}, mx::int8);
  auto out = mx::make_array(red, mx::State{2, std::vector<int>{0}}, {a}, {{{1}, mx::float32}});
  EXPECT_EQ(out.item<float>(), 300.0f);
}

// ---------------------------------------------------------------- errors

// The message of the std::out_of_range `f` throws: MLX's reductions throw it for an axis outside the
// array (mean, var and std check the axes themselves first and throw std::invalid_argument).
template <typename F>
std::string range_error_of(F&& f) {
  try {
    f();
  } catch (const std::out_of_range& e) {
    return e.what();
  }
  return "<no std::out_of_range thrown>";
}

TEST(Reduce, BadAxesMessages) {
  auto a = mx::zeros({2, 3});
  EXPECT_THAT(range_error_of([&] { mx::sum(a, 2); }), HasSubstr("[sum] Invalid axis 2 for array with 2 dimensions."));
  EXPECT_THAT(range_error_of([&] { mx::max(a, -3); }), HasSubstr("[max] Invalid axis -3 for array with 2 dimensions."));
  EXPECT_THAT(error_of([&] { mx::all(a, {0, 0}); }), HasSubstr("[all] Duplicate axes detected in reduction."));
  EXPECT_THAT(error_of([&] { mx::prod(a, {0, -2}); }), HasSubstr("[prod] Duplicate axes detected in reduction."));
  EXPECT_THAT(range_error_of([&] { mx::any(a, 5); }), HasSubstr("[any] Invalid axis 5"));
  EXPECT_THAT(error_of([&] { mx::min(a, {1, 1}); }), HasSubstr("[min] Duplicate axes"));
  EXPECT_THAT(range_error_of([&] { mx::argmax(a, 3); }), HasSubstr("[argmax] Invalid axis 3 for array with 2 dimensions."));
  EXPECT_THAT(range_error_of([&] { mx::argmin(a, -3); }), HasSubstr("[argmin] Invalid axis -3"));
  EXPECT_THAT(error_of([&] { mx::mean(a, 3); }), HasSubstr("[mean] axis 3 is out of bounds for array with 2 dimensions."));
  EXPECT_THAT(error_of([&] { mx::mean(a, {0, 0}); }), HasSubstr("[mean] Duplicate axes detected in reduction."));
  EXPECT_THAT(error_of([&] { mx::var(a, 4); }), HasSubstr("[var] axis 4 is out of bounds"));
  EXPECT_THAT(error_of([&] { mx::std(a, -5); }), HasSubstr("[std] axis -5 is out of bounds"));
  EXPECT_THAT(range_error_of([&] { mx::logsumexp(a, 4); }), HasSubstr("[logsumexp] Invalid axis 4 for array with 2 dimensions."));
  EXPECT_THAT(range_error_of([&] { mx::logsumexp(a, {-3, -2, -1}); }), HasSubstr("[logsumexp] Invalid axis -3"));
  EXPECT_THAT(error_of([&] { mx::softmax(a, std::vector<int>{0, 0}); }), HasSubstr("[softmax] Duplicate axes"));
  EXPECT_THAT(error_of([&] { mx::softmax(mx::array(1.0f), 0); }),
              HasSubstr("[softmax] Received non-empty axes for array with 0 dimensions."));
  EXPECT_THAT(error_of([&] { mx::logsumexp(mx::array(1.0f), 0); }),
              HasSubstr("[logsumexp] Received non-empty axes for array with 0 dimensions."));
  EXPECT_THAT(error_of([&] { mx::number_of_elements(a, {2}, false); }),
              HasSubstr("[number_of_elements] Can't get the shape for axis 2 from an array with 2 dimensions."));
  EXPECT_THAT(range_error_of([&] { mx::sum(mx::array(1.0f), 0); }), HasSubstr("[sum] Invalid axis 0 for array with 0 dimensions."));
}

// ---------------------------------------------------------------- argmin / argmax

TEST(ArgReduce, EveryDtypeAxesAndShapes) {
  const mx::Shape shape{3, 4, 5};
  for (mx::Dtype t : kAllTypes) {
    std::vector<double> v(60);
    for (size_t i = 0; i < 60; ++i) v[i] = t == mx::bool_ ? (i * 7 % 5 == 0) : static_cast<double>((i * 13 + 5) % 17);
    if (mx::is_unsigned(t) == false && t != mx::bool_) {
      for (double& x : v) x -= 8;
    }
    auto a = make(v, shape, t);
    for (int axis = -3; axis < 3; ++axis) {
      const int ax = axis < 0 ? axis + 3 : axis;
      auto imax = mx::argmax(a, axis);
      auto imin = mx::argmin(a, axis, true);
      EXPECT_EQ(imax.dtype(), mx::uint32);
      mx::Shape ks = shape;
      ks[ax] = 1;
      EXPECT_EQ(imin.shape(), ks);
      // Reference: first index of the extreme value.
      std::vector<double> want_max, want_min;
      std::vector<int> stride = {20, 5, 1};
      for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 4; ++j)
          for (int k = 0; k < 5; ++k) {
            int idx[3] = {i, j, k};
            if (idx[ax] != 0) continue;
            int bmax = 0, bmin = 0;
            for (int r = 1; r < shape[ax]; ++r) {
              int o = i * 20 + j * 5 + k + r * stride[ax];
              int omax = i * 20 + j * 5 + k + bmax * stride[ax];
              int omin = i * 20 + j * 5 + k + bmin * stride[ax];
              if (v[o] > v[omax]) bmax = r;
              if (v[o] < v[omin]) bmin = r;
            }
            want_max.push_back(bmax);
            want_min.push_back(bmin);
          }
      expect_close(values(imax), want_max, 0, 0, "argmax " + mx::dtype_name(t));
      expect_close(values(imin), want_min, 0, 0, "argmin " + mx::dtype_name(t));
    }
    // Flattened.
    auto fl = mx::argmax(a);
    EXPECT_EQ(fl.ndim(), 0u);
    size_t best = 0;
    for (size_t i = 1; i < v.size(); ++i)
      if (v[i] > v[best]) best = i;
    EXPECT_EQ(fl.item<uint32_t>(), best) << t;
    EXPECT_EQ(mx::argmin(a, true).shape(), mx::Shape({1, 1, 1}));
  }
}

TEST(ArgReduce, TiesNaNAndLayouts) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  // MLX: ties keep the first index; a NaN is only kept when it comes first.
  EXPECT_EQ(mx::argmax(mx::array({3, 1, 3})).item<uint32_t>(), 0u);
  EXPECT_EQ(mx::argmin(mx::array({1, 1, 3})).item<uint32_t>(), 0u);
  EXPECT_EQ(mx::argmax(mx::array({1.f, nan, 3.f})).item<uint32_t>(), 2u);
  EXPECT_EQ(mx::argmin(mx::array({1.f, nan, -3.f})).item<uint32_t>(), 2u);
  EXPECT_EQ(mx::argmax(mx::array({nan, 1.f, nan})).item<uint32_t>(), 0u);
  // Size-1 axis: zeros, no ArgReduce node.
  auto one = mx::argmax(mx::zeros({3, 1}), 1, true);
  EXPECT_FALSE(graph_has(one, "ArgReduce"));
  expect_close(values(one), {0, 0, 0}, 0, 0, "size-1 axis");
  // Large, column and row modes, and a transposed input.
  const int R = 700, C = 900;
  std::vector<double> v(R * C);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>((i * 2654435761u) % 100003);
  auto a = make(v, {R, C}, mx::float32);
  a.eval();
  auto t = view(a, {C, R}, {1, C}, 0);
  for (int ax : {0, 1}) {
    for (bool transposed : {false, true}) {
      const mx::array& x = transposed ? t : a;
      auto lv = values(x);
      const int rows = x.shape()[0], cols = x.shape()[1];
      std::vector<double> want;
      if (ax == 0) {
        for (int j = 0; j < cols; ++j) {
          int b = 0;
          for (int i = 1; i < rows; ++i)
            if (lv[i * cols + j] > lv[b * cols + j]) b = i;
          want.push_back(b);
        }
      } else {
        for (int i = 0; i < rows; ++i) {
          int b = 0;
          for (int j = 1; j < cols; ++j)
            if (lv[i * cols + j] > lv[i * cols + b]) b = j;
          want.push_back(b);
        }
      }
      expect_close(values(mx::argmax(x, ax)), want, 0, 0, "large argmax");
    }
  }
}

// ---------------------------------------------------------------- mean / var / std / number_of_elements

TEST(Stats, MeanVarStdDtypesAndValues) {
  const mx::Shape shape{3, 4};
  for (mx::Dtype t : kAllTypes) {
    if (t == mx::complex64) continue;
    auto v = pattern(12, t);
    auto a = make(v, shape, t);
    mx::Dtype want_t = mx::is_floating_point(t) ? t : mx::float32;
    const double tol = (t == mx::float16 || t == mx::bfloat16) ? 2e-2 : 1e-5;
    for (const std::vector<int>& axes : std::vector<std::vector<int>>{{0}, {1}, {-1, 0}}) {
      auto m = mx::mean(a, axes, true);
      EXPECT_EQ(m.dtype(), want_t) << t;
      auto s = ref_reduce(v, shape, axes, 0, [](double x, double y) { return x + y; });
      double cnt = 1;
      for (int ax : axes) cnt *= shape[ax < 0 ? ax + 2 : ax];
      std::vector<double> mean_ref(s.size());
      for (size_t i = 0; i < s.size(); ++i) mean_ref[i] = s[i] / cnt;
      expect_close(values(m), mean_ref, tol, tol, "mean " + mx::dtype_name(t));
      // var: average squared deviation from the (broadcast) mean.
      std::vector<double> dev2(v.size());
      for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 4; ++j) {
          int o = 0;
          bool r0 = false, r1 = false;
          for (int ax : axes) (ax == 0 || ax == -2 ? r0 : r1) = true;
          o = (r0 ? 0 : i) * (r1 ? 1 : 4) + (r1 ? 0 : j);
          double d = v[i * 4 + j] - mean_ref[o];
          dev2[i * 4 + j] = d * d;
        }
      auto ss = ref_reduce(dev2, shape, axes, 0, [](double x, double y) { return x + y; });
      for (int ddof : {0, 1}) {
        std::vector<double> var_ref(ss.size()), std_ref(ss.size());
        for (size_t i = 0; i < ss.size(); ++i) {
          var_ref[i] = ss[i] / std::max(cnt - ddof, 0.0);
          std_ref[i] = std::sqrt(var_ref[i]);
        }
        auto va = mx::var(a, axes, true, ddof);
        EXPECT_EQ(va.dtype(), want_t);
        expect_close(values(va), var_ref, tol * 4, tol * 4, "var " + mx::dtype_name(t));
        expect_close(values(mx::std(a, axes, false, ddof)), std_ref, tol * 4, tol * 4, "std " + mx::dtype_name(t));
      }
    }
    EXPECT_EQ(mx::mean(a).ndim(), 0u);
  }
  // MLX: var([1,2,3,4], ddof=5) = inf; var(float16 [1,2]) = 0.25; std(axis 0, ddof 1) = [1.41421, 2.12132].
  EXPECT_EQ(mx::var(mx::array({1, 2, 3, 4}), false, 5).item<float>(), std::numeric_limits<float>::infinity());
  EXPECT_EQ(mx::var(mx::array({1.f, 2.f}, mx::float16)).item<float>(), 0.25f);
  expect_close(values(mx::std(mx::array({1.f, 2.f, 3.f, 5.f}, {2, 2}), 0, false, 1)), {1.41421356, 2.12132034}, 1e-6,
               1e-6, "std ddof");
}

TEST(Stats, NumberOfElementsStaticAndShapeless) {
  auto a = mx::zeros({2, 3, 4});
  auto n = mx::number_of_elements(a, {0, -1}, false, mx::int32);
  EXPECT_FALSE(n.has_primitive());  // a constant in a static graph
  EXPECT_EQ(n.item<int32_t>(), 8);
  EXPECT_NEAR(mx::number_of_elements(a, {1}, true, mx::float32).item<float>(), 1.0f / 3, 1e-7);
  EXPECT_EQ(mx::number_of_elements(a, {1}, true, mx::int32).item<int32_t>(), 0);
  EXPECT_EQ(mx::number_of_elements(a, {1}, false, mx::float16).dtype(), mx::float16);
  {
    mx::detail::TraceGuard guard(/*shapeless=*/true);
    auto ns = mx::number_of_elements(a, {0, -1}, true, mx::float32);
    EXPECT_TRUE(graph_has(ns, "NumberOfElements"));
    EXPECT_EQ(ns.shape(), mx::Shape{});
    EXPECT_NEAR(ns.item<float>(), 0.125f, 1e-7);
    // mean and var emit NumberOfElements nodes (MLX spec 4.1), with the normalized axes as state.
    auto m = mx::mean(a, {-1});
    EXPECT_TRUE(graph_has(m, "NumberOfElements"));
    auto v = mx::var(a, {1}, false, 1);
    EXPECT_TRUE(graph_has(v, "NumberOfElements"));
    auto x = mx::array({1.f, 2.f, 3.f, 4.f, 6.f, 8.f}, {2, 3});
    expect_close(values(mx::mean(x, 1)), {2, 6}, 1e-6, 1e-6, "shapeless mean");
    expect_close(values(mx::var(x, 1, false, 1)), {1, 4}, 1e-6, 1e-6, "shapeless var");
    // The node's state: axes normalized, inverted, dtype.
    std::vector<mx::array> stack{m};
    bool checked = false;
    while (!stack.empty()) {
      auto y = stack.back();
      stack.pop_back();
      if (!y.has_primitive()) continue;
      if (y.node()->def->name == "NumberOfElements") {
        EXPECT_EQ(y.node()->state.ints(0), std::vector<int>({2}));
        EXPECT_TRUE(y.node()->state.b(1));
        EXPECT_EQ(y.node()->state.get<mx::Dtype>(2), mx::float32);
        checked = true;
      }
      for (auto& in : y.inputs()) stack.push_back(in);
    }
    EXPECT_TRUE(checked);
  }
  EXPECT_FALSE(graph_has(mx::mean(a, {-1}), "NumberOfElements"));
  // The kernel, through the primitive directly: every output dtype.
  const auto& def = mx::registry::get("NumberOfElements");
  for (mx::Dtype t : {mx::int8, mx::uint16, mx::int64, mx::float16, mx::bfloat16, mx::float64, mx::bool_}) {
    auto out = mx::make_array(def, mx::State{std::vector<int>{1, 2}, false, t}, {a});
    EXPECT_EQ(out.dtype(), t);
    EXPECT_EQ(values(out)[0], t == mx::bool_ ? 1.0 : 12.0) << t;
  }
}

// ---------------------------------------------------------------- logsumexp / softmax

TEST(LogSumExp, ValuesDtypesAndSpecialValues) {
  std::vector<double> x(40);
  for (int i = 0; i < 40; ++i) x[i] = static_cast<float>(i * 0.37f - 6.0f);
  double m = *std::max_element(x.begin(), x.end()), s = 0;
  for (double v : x) s += std::exp(v - m);
  const double ref = m + std::log(s);
  // MLX: 9.603554725646973 (float32), 9.6015625 (float16), 9.625 (bfloat16).
  EXPECT_NEAR(mx::logsumexp(make(x, {40}, mx::float32)).item<float>(), 9.603554725646973, 1e-5);
  EXPECT_NEAR(mx::logsumexp(make(x, {40}, mx::float16)).item<float>(), 9.6015625, 1e-2);
  EXPECT_NEAR(mx::logsumexp(make(x, {40}, mx::bfloat16)).item<float>(), 9.625, 5e-2);
  EXPECT_NEAR(mx::logsumexp(make(x, {40}, mx::float64)).item<double>(), ref, 1e-12);
  EXPECT_EQ(mx::logsumexp(make(x, {40}, mx::float16)).dtype(), mx::float16);
  // Integers become float32 (MLX: logsumexp([1,2,3]) = 3.40761).
  auto li = mx::logsumexp(mx::array({1, 2, 3}));
  EXPECT_EQ(li.dtype(), mx::float32);
  EXPECT_NEAR(li.item<float>(), 3.40761f, 1e-5);
  // Infinite maxima return themselves; NaN propagates.
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(mx::logsumexp(mx::array({-inf, -inf, -inf})).item<float>(), -inf);
  EXPECT_EQ(mx::logsumexp(mx::array({inf, 1.f})).item<float>(), inf);
  EXPECT_TRUE(std::isnan(mx::logsumexp(mx::array({1.f, std::numeric_limits<float>::quiet_NaN()})).item<float>()));
  // Rows of a 2-d array, last axis, keepdims, large values (no overflow), transposed input.
  auto a = mx::array({1.f, 2.f, 3.f, 4.f, 5.f, 7.f}, {2, 3});
  // MLX: [3.4076058864593506, 7.169846057891846]; over everything 7.192811965942383.
  expect_close(values(mx::logsumexp(a, 1)), {3.4076058864593506, 7.169846057891846}, 1e-6, 1e-6, "rows");
  EXPECT_EQ(mx::logsumexp(a, -1, true).shape(), mx::Shape({2, 1}));
  expect_close(values(mx::logsumexp(mx::array({1000.f, 1000.f}))), {1000 + std::log(2.0)}, 1e-6, 1e-4, "big");
  a.eval();
  auto at = view(a, {3, 2}, {1, 3}, 0);
  expect_close(values(mx::logsumexp(at, 1)), {4.04858732, 5.04858732, 7.01814985}, 1e-6, 1e-6, "transposed");
  // Other axes use the element-wise composition (MLX: axis 0 gives [4.048587, 5.048587, 7.018150]).
  auto c0 = mx::logsumexp(a, 0);
  EXPECT_FALSE(graph_has(c0, "LogSumExp"));
  expect_close(values(c0), {4.048587322235107, 5.048587322235107, 7.0181498527526855}, 1e-6, 1e-6, "axis 0");
  expect_close(values(mx::logsumexp(a)), {7.192811965942383}, 1e-6, 1e-5, "all");
  expect_close(values(mx::logsumexp(mx::array({-inf, -inf}, {2, 1}), 0)), {-kInf}, 0, 0, "composite -inf");
}

TEST(Softmax, LastAxisAllFloatTypes) {
  auto row_ref = [](const std::vector<double>& x) {
    double m = *std::max_element(x.begin(), x.end()), s = 0;
    std::vector<double> y(x.size());
    for (size_t i = 0; i < x.size(); ++i) s += (y[i] = std::exp(x[i] - m));
    for (double& v : y) v /= s;
    return y;
  };
  std::vector<double> x(3 * 50);
  for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(static_cast<double>(i)) * 20;
  for (mx::Dtype t : {mx::float32, mx::float64, mx::float16, mx::bfloat16}) {
    for (bool precise : {false, true}) {
      auto xt = make(x, {3, 50}, t);
      auto lv = values(xt);  // the values as rounded to t
      auto y = mx::softmax(xt, -1, precise);
      EXPECT_EQ(y.dtype(), t);
      std::vector<double> want;
      for (int r = 0; r < 3; ++r) {
        auto yr = row_ref(std::vector<double>(lv.begin() + r * 50, lv.begin() + (r + 1) * 50));
        want.insert(want.end(), yr.begin(), yr.end());
      }
      const double tol = t == mx::float32 ? 1e-6 : (t == mx::float64 ? 1e-12 : 1e-2);
      expect_close(values(y), want, tol, tol * 1e-2, "softmax " + mx::dtype_name(t));
    }
  }
  // Integer input: cast to float32.
  auto yi = mx::softmax(mx::array({1, 2}), -1);
  EXPECT_EQ(yi.dtype(), mx::float32);
  expect_close(values(yi), {0.268941, 0.731059}, 1e-5, 1e-6, "int");
  // Infinite / NaN rows give NaN (MLX prints -nan).
  const float inf = std::numeric_limits<float>::infinity();
  for (double v : values(mx::softmax(mx::array({inf, 1.f}), -1))) EXPECT_TRUE(std::isnan(v));
  for (double v : values(mx::softmax(mx::array({-inf, -inf}), -1))) EXPECT_TRUE(std::isnan(v));
  // Large values do not overflow.
  expect_close(values(mx::softmax(mx::array({1000.f, 1000.f}), -1)), {0.5, 0.5}, 1e-6, 0, "big");
  // A wide range of exponents, including underflow to (sub)normals and a -inf entry.
  std::vector<double> w = {-100, -87.5, -50, -3.25, 0, 0.5, 30, 80};
  auto yw = values(mx::softmax(make(w, {8}, mx::float32), -1));
  double sw = 0;
  for (double x : w) sw += std::exp(x - 80);
  // MLX's exp polynomial (which Softmax uses, as MLX does) is within about 3e-6 of exp near |x| = 80, and
  // gives 0 below -88; MLX's softmax of this row has the same errors.
  for (size_t i = 0; i < w.size(); ++i) EXPECT_NEAR(yw[i], std::exp(w[i] - 80) / sw, 4e-6 * std::exp(w[i] - 80) / sw + 1e-45);
  expect_close(values(mx::softmax(mx::array({-inf, 0.f, 1.f}), -1)), {0, 0.2689414213699951, 0.7310585786300049}, 1e-6,
               0, "-inf entry");
  expect_close(values(mx::logsumexp(mx::array({-inf, 0.f, 1.f}))), {1.3132616875182228}, 1e-6, 0, "-inf entry lse");
}

TEST(Softmax, HalfPrecisionMatchesMlx) {
  // x = arange(40) * 0.37 - 6 in float16; MLX's outputs (last 4 of 40) without and with `precise`.
  std::vector<double> x(40);
  for (int i = 0; i < 40; ++i) x[i] = static_cast<float>(i * 0.37f - 6.0f);
  auto xh = make(x, {40}, mx::float16);
  std::vector<double> lowp = {0.10186767578125, 0.1475830078125, 0.2139892578125, 0.308837890625};
  std::vector<double> prec = {0.10186767578125, 0.147705078125, 0.2139892578125, 0.30908203125};
  auto yl = values(mx::softmax(xh, -1, false));
  auto yp = values(mx::softmax(xh, -1, true));
  expect_close(std::vector<double>(yl.end() - 4, yl.end()), lowp, 1e-3, 0, "float16 not precise");
  expect_close(std::vector<double>(yp.end() - 4, yp.end()), prec, 1e-3, 0, "float16 precise");
  // First values (tiny), both modes: 1.7881393432617188e-07, 2.384185791015625e-07.
  EXPECT_NEAR(yl[0], 1.7881393432617188e-07, 1e-9);
  EXPECT_NEAR(yl[1], 2.384185791015625e-07, 1e-9);
  // A 3000-long float16 row: the rounded running normalizer (MLX: 0.00958252, 0.00988007, 0.0100403 at the end)
  // versus precise (0.00959015, 0.00989532, 0.0100479).
  std::vector<double> xs(3000);
  for (int i = 0; i < 3000; ++i) {
    xs[i] = static_cast<float>(mx::float16_t(static_cast<float>(mx::float16_t(static_cast<float>(i))) / 100.0f));
  }
  auto xl = make(xs, {3000}, mx::float16);
  auto zl = values(mx::softmax(xl, -1, false));
  auto zp = values(mx::softmax(xl, -1, true));
  expect_close(std::vector<double>(zl.end() - 3, zl.end()), {0.00958251953125, 0.00988006591796875, 0.010040283203125},
               2e-3, 0, "long float16");
  expect_close(std::vector<double>(zp.end() - 3, zp.end()), {0.00959014892578125, 0.00989532470703125, 0.01004791259765625},
               2e-3, 0, "long float16 precise");
}

TEST(Softmax, OtherAxesAndLayouts) {
  auto a = mx::array({1.f, 2.f, 3.f, 4.f, 5.f, 7.f}, {2, 3});
  // MLX: softmax(axis 0) = [[0.0474259, 0.0474259, 0.0179862], [0.952574, 0.952574, 0.982014]].
  auto y0 = mx::softmax(a, 0);
  EXPECT_FALSE(graph_has(y0, "Softmax"));
  expect_close(values(y0), {0.047425881028175354, 0.047425881028175354, 0.01798621006309986, 0.9525741338729858,
                            0.9525741338729858, 0.9820137619972229},
               1e-6, 1e-7, "axis 0");
  // Over every axis at once, and through a transposed view on the last axis.
  auto all = values(mx::softmax(a));
  double s = 0;
  for (double v : all) s += v;
  EXPECT_NEAR(s, 1.0, 1e-6);
  a.eval();
  auto at = view(a, {3, 2}, {1, 3}, 0);
  auto yt = values(mx::softmax(at, -1));
  expect_close(yt, {0.047425881028175354, 0.9525741338729858, 0.047425881028175354, 0.9525741338729858,
                    0.01798621006309986, 0.9820137619972229},
               1e-6, 1e-7, "transposed");
  // MLX 0.30.1 quirk: an integer softmax over a non-last axis is cast back to the integer type.
  auto yi = mx::softmax(mx::array({1, 2, 3, 4}, {2, 2}), 0);
  EXPECT_EQ(yi.dtype(), mx::int32);
  expect_close(values(yi), {0, 0, 0, 0}, 0, 0, "int axis 0");
  // Leading size-1 axes still use the primitive.
  EXPECT_TRUE(graph_has(mx::softmax(mx::zeros({1, 4}), std::vector<int>{0, 1}), "Softmax"));
  // A large batch of rows (parallel path).
  std::vector<double> big(2000 * 64);
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<double>(i % 13) * 0.25;
  auto yb = values(mx::softmax(make(big, {2000, 64}, mx::float32), -1));
  for (int r = 0; r < 2000; r += 199) {
    double rs = 0;
    for (int j = 0; j < 64; ++j) rs += yb[r * 64 + j];
    EXPECT_NEAR(rs, 1.0, 1e-5);
  }
}
