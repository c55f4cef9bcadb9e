// sort, argsort, partition, argpartition, topk: against std::stable_sort references, values printed
// by MLX 0.30.1 and the golden corpus' sort cases.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <functional>
#include <kiln/kiln.h>
#include <kiln/ops/index.h>
#include <numeric>
#include <random>
#include <sstream>

#include "unit/test_util.h"

namespace mx = kiln;
using ::testing::HasSubstr;

namespace {

using test_util::message_of;
using test_util::vals;

// Minimal .npy reader (little-endian, C order) for the golden cases.
mx::array load_npy(const std::string& rel, mx::Dtype dt) {
  std::ifstream f(std::string(KILN_TEST_DATA) + "/golden/mlx-0.30.1/" + rel, std::ios::binary);
  if (!f) throw std::runtime_error("cannot open " + rel);
  std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  uint16_t hlen;
  std::memcpy(&hlen, bytes.data() + 8, 2);
  std::string header = bytes.substr(10, hlen);
  auto s = header.find("'shape': (") + 10;
  std::stringstream ss(header.substr(s, header.find(')', s) - s));
  std::string tok;
  mx::Shape shape;
  while (std::getline(ss, tok, ',')) {
    if (tok.find_first_not_of(' ') != std::string::npos) shape.push_back(std::stoi(tok));
  }
  return mx::array::from_bytes(bytes.data() + 10 + hlen, bytes.size() - 10 - hlen, shape, dt);
}

const std::vector<mx::Dtype> kAllTypes = {mx::bool_,   mx::uint8,   mx::uint16,  mx::uint32, mx::uint64,
                                          mx::int8,    mx::int16,   mx::int32,   mx::int64,  mx::float16,
                                          mx::float32, mx::float64, mx::bfloat16, mx::complex64};

// Reference: stable argsort of each row of a row-major (rows, n) matrix, NaN last.
std::vector<uint32_t> ref_argsort_rows(const std::vector<double>& v, int rows, int n) {
  std::vector<uint32_t> out;
  for (int r = 0; r < rows; ++r) {
    std::vector<uint32_t> p(n);
    std::iota(p.begin(), p.end(), 0u);
    std::stable_sort(p.begin(), p.end(), [&](uint32_t x, uint32_t y) {
      double a = v[r * n + x], b = v[r * n + y];
      if (std::isnan(a)) return false;
      if (std::isnan(b)) return true;
      return a < b;
    });
    out.insert(out.end(), p.begin(), p.end());
  }
  return out;
}

const mx::array k3x4() { return mx::array({3.f, 1.f, 2.f, 1.f, 0.f, -1.f, 5.f, 0.f, 2.f, 2.f, 2.f, -3.f}, {3, 4}); }

}  // namespace

TEST(Sort, ValuesAndIndicesMatchMLX) {
  auto a = k3x4();
  EXPECT_EQ(vals<float>(mx::sort(a, 0)), (std::vector<float>{0, -1, 2, -3, 2, 1, 2, 0, 3, 2, 5, 1}));
  EXPECT_EQ(vals<uint32_t>(mx::argsort(a, 0)), (std::vector<uint32_t>{1, 1, 0, 2, 2, 0, 2, 1, 0, 2, 1, 0}));
  EXPECT_EQ(vals<float>(mx::sort(a, -1)), (std::vector<float>{1, 1, 2, 3, -1, 0, 0, 5, -3, 2, 2, 2}));
  EXPECT_EQ(vals<uint32_t>(mx::argsort(a, -1)), (std::vector<uint32_t>{1, 3, 2, 0, 1, 0, 3, 2, 3, 0, 1, 2}));
  auto f = mx::sort(a);
  EXPECT_EQ(f.shape(), mx::Shape({12}));
  EXPECT_EQ(vals<float>(f), (std::vector<float>{-3, -1, 0, 0, 1, 1, 2, 2, 2, 2, 3, 5}));
  EXPECT_EQ(vals<uint32_t>(mx::argsort(a)), (std::vector<uint32_t>{11, 5, 4, 7, 1, 3, 2, 8, 9, 10, 0, 6}));
  EXPECT_EQ(mx::argsort(a).dtype(), mx::uint32);
  // Ties keep their order (stable), including -0.0 against 0.0.
  EXPECT_EQ(vals<uint32_t>(mx::argsort(mx::array({0.f, -0.f, 0.f, -0.f}))), (std::vector<uint32_t>{0, 1, 2, 3}));
  EXPECT_EQ(vals<uint32_t>(mx::argsort(mx::array({2, 1, 2, 1, 2}))), (std::vector<uint32_t>{1, 3, 0, 2, 4}));
}

TEST(Sort, NaNSortsLast) {
  const float n = NAN;
  auto x = mx::array({3.f, 1.f, n, 1.f, 2.f, n, 0.f});
  for (auto dt : {mx::float16, mx::float32, mx::float64, mx::bfloat16}) {
    auto s = vals<double>(mx::sort(mx::astype(x, dt)));
    EXPECT_EQ(std::vector<double>(s.begin(), s.begin() + 5), (std::vector<double>{0, 1, 1, 2, 3})) << mx::dtype_name(dt);
    EXPECT_TRUE(std::isnan(s[5]) && std::isnan(s[6])) << mx::dtype_name(dt);
    EXPECT_EQ(vals<uint32_t>(mx::argsort(mx::astype(x, dt))), (std::vector<uint32_t>{6, 1, 3, 4, 0, 2, 5}))
        << mx::dtype_name(dt);
  }
  // complex: by real part, then imaginary part; NaN in either part last (as MLX's sort).
  auto c = mx::array({mx::complex64_t(1, 2), mx::complex64_t(1, 1), mx::complex64_t(0, 5), mx::complex64_t(n, 0),
                      mx::complex64_t(-1, 0)});
  auto cs = vals<mx::complex64_t>(mx::sort(c));
  EXPECT_EQ(cs[0], mx::complex64_t(-1, 0));
  EXPECT_EQ(cs[1], mx::complex64_t(0, 5));
  EXPECT_EQ(cs[2], mx::complex64_t(1, 1));
  EXPECT_EQ(cs[3], mx::complex64_t(1, 2));
  EXPECT_TRUE(std::isnan(cs[4].real()));
  EXPECT_EQ(vals<uint32_t>(mx::argsort(c)), (std::vector<uint32_t>{4, 2, 1, 0, 3}));
}

TEST(Sort, EveryDtypeMatchesStableSort) {
  std::mt19937 rng(5);
  std::uniform_int_distribution<int> d(0, 9);
  std::vector<float> v(4 * 7);
  for (auto& x : v) x = static_cast<float>(d(rng));
  auto base = mx::array(v, {4, 7});
  for (auto dt : kAllTypes) {
    auto a = mx::astype(base, dt);
    auto av = vals<double>(a);
    for (int axis : {1, -2}) {
      // Reference on rows: transpose for axis 0.
      int rows = axis == 1 ? 4 : 7, n = axis == 1 ? 7 : 4;
      std::vector<double> rv(28);
      for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 7; ++j) (axis == 1 ? rv[i * 7 + j] : rv[j * 4 + i]) = av[i * 7 + j];
      auto ref = ref_argsort_rows(rv, rows, n);
      auto got = vals<uint32_t>(axis == 1 ? mx::argsort(a, axis) : mx::transpose(mx::argsort(a, axis)));
      EXPECT_EQ(got, ref) << mx::dtype_name(dt) << " axis " << axis;
      auto sv = vals<double>(axis == 1 ? mx::sort(a, axis) : mx::transpose(mx::sort(a, axis)));
      std::vector<double> want;
      for (int r = 0; r < rows; ++r)
        for (int j = 0; j < n; ++j) want.push_back(rv[r * n + ref[r * n + j]]);
      EXPECT_EQ(sv, want) << mx::dtype_name(dt) << " axis " << axis;
    }
  }
}

TEST(Sort, NonContiguousEmptyAndLarge) {
  // Transposed input, sorted along both axes.
  auto t = mx::transpose(k3x4());  // (4, 3)
  EXPECT_EQ(vals<float>(mx::sort(t, 1)), (std::vector<float>{0, 2, 3, -1, 1, 2, 2, 2, 5, -3, 0, 1}));
  EXPECT_EQ(vals<uint32_t>(mx::argsort(t, 0)), (std::vector<uint32_t>{1, 1, 3, 3, 0, 0, 2, 3, 1, 0, 2, 2}));
  // Broadcast (stride 0) input.
  auto b = mx::broadcast_to(mx::array({3, 1, 2}), {2, 3});
  EXPECT_EQ(vals<int32_t>(mx::sort(b, 1)), (std::vector<int32_t>{1, 2, 3, 1, 2, 3}));
  // Empty arrays (MLX 0.30.1 crashes on an empty sort axis).
  auto e = mx::sort(mx::zeros({2, 0}), 1);
  EXPECT_EQ(e.shape(), mx::Shape({2, 0}));
  e.eval();
  auto e2 = mx::argsort(mx::zeros({0}), 0);
  EXPECT_EQ(e2.dtype(), mx::uint32);
  e2.eval();
  EXPECT_EQ(vals<float>(mx::sort(mx::zeros({0, 3}), 1)).size(), 0u);
  // Many rows (parallel) along both a contiguous and a strided axis.
  std::mt19937 rng(11);
  std::normal_distribution<float> nd;
  const int R = 300, N = 257;
  std::vector<float> v(R * N);
  for (auto& x : v) x = nd(rng);
  auto a = mx::array(v, {R, N});
  std::vector<double> dv(v.begin(), v.end());
  auto ref = ref_argsort_rows(dv, R, N);
  EXPECT_EQ(vals<uint32_t>(mx::argsort(a, 1)), ref);
  auto sorted_cols = vals<float>(mx::transpose(mx::sort(mx::transpose(a), 0)));
  for (int r = 0; r < R; ++r)
    for (int j = 0; j < N; ++j) ASSERT_EQ(sorted_cols[r * N + j], v[r * N + ref[r * N + j]]);
  EXPECT_EQ(vals<uint32_t>(mx::transpose(mx::argsort(mx::transpose(a), 0))), ref);
  auto p = vals<float>(mx::transpose(mx::partition(mx::transpose(a), 5, 0)));
  for (int r = 0; r < R; ++r) ASSERT_EQ(p[r * N + 5], v[r * N + ref[r * N + 5]]);
}

TEST(Partition, KthElementInPlace) {
  std::mt19937 rng(3);
  std::uniform_int_distribution<int> d(-20, 20);
  const int R = 5, N = 9;
  std::vector<float> v(R * N);
  for (auto& x : v) x = static_cast<float>(d(rng));
  auto a = mx::array(v, {R, N});
  for (int kth : {0, 4, 8, -1, -3}) {
    const int k = kth < 0 ? kth + N : kth;
    auto p = vals<float>(mx::partition(a, kth, 1));
    auto ap = vals<uint32_t>(mx::argpartition(a, kth, -1));
    for (int r = 0; r < R; ++r) {
      std::vector<float> row(v.begin() + r * N, v.begin() + (r + 1) * N), srt = row;
      std::sort(srt.begin(), srt.end());
      EXPECT_EQ(p[r * N + k], srt[k]);
      std::vector<float> got(p.begin() + r * N, p.begin() + (r + 1) * N);
      for (int j = 0; j < k; ++j) EXPECT_LE(got[j], got[k]);
      for (int j = k + 1; j < N; ++j) EXPECT_GE(got[j], got[k]);
      std::sort(got.begin(), got.end());
      EXPECT_EQ(got, srt);
      // argpartition: a permutation whose values are partitioned the same way.
      std::vector<uint32_t> idx(ap.begin() + r * N, ap.begin() + (r + 1) * N), perm = idx;
      std::sort(perm.begin(), perm.end());
      for (int j = 0; j < N; ++j) EXPECT_EQ(perm[j], static_cast<uint32_t>(j));
      EXPECT_EQ(row[idx[k]], srt[k]);
      for (int j = 0; j < k; ++j) EXPECT_LE(row[idx[j]], srt[k]);
      for (int j = k + 1; j < N; ++j) EXPECT_GE(row[idx[j]], srt[k]);
    }
  }
  // Along axis 0 of a transposed view; every dtype keeps its dtype.
  auto pt = vals<float>(mx::partition(mx::transpose(a), 2, 0));
  for (int r = 0; r < R; ++r) {
    std::vector<float> srt(v.begin() + r * N, v.begin() + (r + 1) * N);
    std::sort(srt.begin(), srt.end());
    EXPECT_EQ(pt[2 * R + r], srt[2]);
  }
  for (auto dt : kAllTypes) {
    auto x = mx::astype(mx::array({5, 1, 4, 2, 3}), dt);
    EXPECT_EQ(mx::partition(x, 1).dtype(), dt);
    if (dt != mx::bool_) EXPECT_EQ(vals<double>(mx::partition(x, 1))[1], 2.0) << mx::dtype_name(dt);
    EXPECT_EQ(vals<double>(mx::take(x, mx::argpartition(x, 3)))[3], dt == mx::bool_ ? 1.0 : 4.0);
  }
}

TEST(Partition, ErrorsAndTopk) {
  auto a = mx::array({3, 1, 2, 9, 7});
  EXPECT_EQ(message_of([&] { mx::partition(a, 7, -1); }),
            "[partition] Received invalid kth 7along axis -1 for array with shape: (5)");
  EXPECT_EQ(message_of([&] { mx::argpartition(a, -6, 0); }),
            "[argpartition] Received invalid kth -6 along axis 0 for array with shape: (5)");
  EXPECT_EQ(message_of([&] { mx::partition(mx::zeros({2, 0}), 0, -1); }),
            "[partition] Received invalid kth 0along axis -1 for array with shape: (2,0)");
  EXPECT_EQ(message_of([&] { mx::sort(mx::array(1.0f), -1); }),
            "[sort] Received invalid axis -1 for array with 0 dimensions.");
  EXPECT_EQ(message_of([&] { mx::argsort(mx::array(1.0f), 0); }),
            "[argsort] Received invalid axis 0 for array with 0 dimensions.");
  EXPECT_EQ(message_of([&] { mx::sort(a, 1); }), "[sort] Received invalid axis 1 for array with 1 dimensions.");
  EXPECT_EQ(message_of([&] { mx::topk(a, 7, -1); }),
            "[topk] Received invalid k=7 along axis -1 for array with shape: (5)");
  EXPECT_EQ(message_of([&] { mx::topk(a, 1, 2); }), "[topk] Received invalid axis 2 for array with 1 dimensions.");
  // A 0-d array sorts as a flattened (1,) array.
  EXPECT_EQ(mx::sort(mx::array(1.0f)).shape(), mx::Shape({1}));

  auto t = vals<int32_t>(mx::topk(mx::array({5, 1, 9, 3, 7, 2}), 3));
  std::sort(t.begin(), t.end());
  EXPECT_EQ(t, (std::vector<int32_t>{5, 7, 9}));
  auto t2 = mx::topk(k3x4(), 2, 0);
  EXPECT_EQ(t2.shape(), mx::Shape({2, 4}));
  auto t2v = vals<float>(mx::sort(t2, 0));
  EXPECT_EQ(t2v, (std::vector<float>{2, 1, 2, 0, 3, 2, 5, 1}));
  EXPECT_EQ(mx::topk(a, 0).shape(), mx::Shape({0}));
  EXPECT_EQ(mx::topk(a, 5).shape(), mx::Shape({5}));
}

TEST(Sort, RegistryRowsAndFileValidation) {
  const auto& s = mx::registry::get("Sort");
  const auto& as = mx::registry::get("ArgSort");
  const auto& p = mx::registry::get("Partition");
  const auto& ap = mx::registry::get("ArgPartition");
  EXPECT_EQ(s.fields.size(), 1u);
  EXPECT_EQ(p.fields.size(), 2u);
  EXPECT_STREQ(p.fields[0].name, "kth");
  // Negative axes occur in 0.30.1 files for Sort and ArgSort.
  EXPECT_EQ(as.infer(mx::State{int32_t(-2)}, {{{3, 4}, mx::float32}})[0].dtype, mx::uint32);
  EXPECT_EQ(s.infer(mx::State{int32_t(-1)}, {{{3, 4}, mx::int8}})[0].dtype, mx::int8);
  EXPECT_THAT(message_of([&] { s.infer(mx::State{int32_t(2)}, {{{3, 4}, mx::float32}}); }),
              HasSubstr("invalid axis 2"));
  EXPECT_THAT(message_of([&] { ap.infer(mx::State{int32_t(4), int32_t(1)}, {{{3, 4}, mx::float32}}); }),
              HasSubstr("invalid kth 4"));
  // A recorded node with a negative axis evaluates like the normalized one.
  auto a = k3x4();
  auto n = mx::make_array(as, mx::State{int32_t(-2)}, {a});
  EXPECT_EQ(vals<uint32_t>(n), vals<uint32_t>(mx::argsort(a, 0)));
}

TEST(Sort, GoldenSortCases) {
  // The golden functions: sort(x, -1), argsort(x, 0); partition(x, 2, -1)[:, 2:3] and
  // partition(x, 1, 0)[1:2]; sort(topk(x, 2, -1)); sort(x, -1), argsort(x, -2).
  auto x = load_npy("sort_argsort/call0_arg0.npy", mx::float32);
  EXPECT_EQ(vals<float>(mx::sort(x, -1)), vals<float>(load_npy("sort_argsort/call0_out0.npy", mx::float32)));
  EXPECT_EQ(vals<uint32_t>(mx::argsort(x, 0)), vals<uint32_t>(load_npy("sort_argsort/call0_out1.npy", mx::uint32)));

  auto xp = load_npy("partition/call0_arg0.npy", mx::float32);
  auto p0 = mx::slice(mx::partition(xp, 2, -1), {0, 2}, {4, 3});
  auto p1 = mx::slice(mx::take_along_axis(xp, mx::argpartition(xp, 1, 0), 0), {1, 0}, {2, 6});
  EXPECT_EQ(vals<float>(p0), vals<float>(load_npy("partition/call0_out0.npy", mx::float32)));
  EXPECT_EQ(vals<float>(p1), vals<float>(load_npy("partition/call0_out1.npy", mx::float32)));

  auto xt = load_npy("topk/call0_arg0.npy", mx::float32);
  EXPECT_EQ(vals<float>(mx::sort(mx::topk(xt, 2, -1), -1)), vals<float>(load_npy("topk/call0_out0.npy", mx::float32)));

  auto xn = load_npy("sort_negative_axis/call0_arg0.npy", mx::float32);
  EXPECT_EQ(vals<float>(mx::sort(xn, -1)), vals<float>(load_npy("sort_negative_axis/call0_out0.npy", mx::float32)));
  EXPECT_EQ(vals<uint32_t>(mx::argsort(xn, -2)),
            vals<uint32_t>(load_npy("sort_negative_axis/call0_out1.npy", mx::uint32)));
}
