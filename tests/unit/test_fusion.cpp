// Element-wise fusion (src/core/fusion.*, src/backend/cpu/fusion.*): fused groups give the same bits
// as running every node alone, for every dtype, broadcast and layout, both ways the CPU runs a group
// (tile functions, and the kernels on tiles), and still write the intermediates that something outside
// the group needs. The tile functions themselves give their kernels' bits for every row and dtype.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <limits>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "backend/cpu/fusion.h"
#include "core/allocator.h"
#include "core/fusion.h"
#include "core/kernels.h"
#include "kiln/kiln.h"

namespace mx = kiln;
namespace fusion = kiln::detail::fusion;

namespace {

// Restores fusion and the tile size after each test.
class Fusion : public ::testing::Test {
 protected:
  // Small arrays exercise the machinery: fuse from 64 elements (the default is far larger).
  void SetUp() override { fusion::set_min_elements(64); }
  void TearDown() override {
    fusion::set_enabled(true);
    fusion::set_min_elements(0);
    kiln::cpu::set_tile_elements(0);
    kiln::cpu::set_tile_functions(true);
  }
};

std::vector<uint8_t> raw_bits(const mx::array& a);

// The bytes of every element in row-major order, following the strides.
std::vector<uint8_t> bits(const mx::array& a0) {
  mx::array a = a0;
  a.eval();
  return raw_bits(a);
}

// The same of an array that has its data (a kernel's output, never evaluated as a graph).
std::vector<uint8_t> raw_bits(const mx::array& a) {
  const size_t isz = a.itemsize();
  std::vector<uint8_t> out(a.size() * isz);
  const char* base = static_cast<const char*>(a.buffer() ? a.buffer()->ptr : nullptr);
  for (size_t i = 0; i < a.size(); ++i) {
    int64_t off = a.offset();
    size_t r = i;
    for (int d = static_cast<int>(a.ndim()) - 1; d >= 0; --d) {
      const int64_t n = a.shape(d);
      off += static_cast<int64_t>(r % n) * a.strides(d);
      r /= n;
    }
    std::memcpy(out.data() + i * isz, base + off * static_cast<int64_t>(isz), isz);
  }
  return out;
}

// Evaluates the arrays `build` returns, with fusion on or off; returns them evaluated.
std::vector<mx::array> run(bool fused, const std::function<std::vector<mx::array>()>& build,
                           fusion::Stats* stats = nullptr) {
  fusion::set_enabled(fused);
  std::vector<mx::array> outs = build();
  mx::eval(outs);
  if (stats) *stats = fusion::last_stats();
  fusion::set_enabled(true);
  return outs;
}

void expect_same(const std::vector<mx::array>& a, const std::vector<mx::array>& b, const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(a[i].shape(), b[i].shape()) << what << " output " << i;
    ASSERT_EQ(a[i].dtype(), b[i].dtype()) << what << " output " << i;
    EXPECT_TRUE(bits(a[i]) == bits(b[i])) << what << " output " << i << " differs";
  }
}

// Fused results of `build`, through tile functions where the members have them and through the kernels
// on tiles, are bit-identical to the unfused ones; returns the stats of the run with tile functions.
fusion::Stats check(const std::function<std::vector<mx::array>()>& build, const std::string& what) {
  fusion::Stats st, st_kernels;
  auto fused = run(true, build, &st);
  kiln::cpu::set_tile_functions(false);
  auto kernels = run(true, build, &st_kernels);
  kiln::cpu::set_tile_functions(true);
  auto plain = run(false, build);
  expect_same(fused, plain, what + " (tile functions)");
  expect_same(kernels, plain, what + " (kernels on tiles)");
  EXPECT_EQ(st.groups, st_kernels.groups) << what;
  return st;
}

const std::vector<mx::Dtype> kAllTypes = {mx::bool_,  mx::int8,    mx::int16,   mx::int32,    mx::int64,
                                          mx::uint8,  mx::uint16,  mx::uint32,  mx::uint64,   mx::float16,
                                          mx::bfloat16, mx::float32, mx::float64, mx::complex64};

bool is_float(mx::Dtype t) { return t == mx::float16 || t == mx::bfloat16 || t == mx::float32 || t == mx::float64; }
bool is_uint(mx::Dtype t) { return t == mx::uint8 || t == mx::uint16 || t == mx::uint32 || t == mx::uint64; }

// A random evaluated array of dtype t and the given shape.
mx::array random_array(mx::Dtype t, const mx::Shape& shape, std::mt19937& rng) {
  size_t n = 1;
  for (auto d : shape) n *= static_cast<size_t>(d);
  if (t == mx::complex64) {
    std::uniform_real_distribution<float> u(-2.0f, 2.0f);
    std::vector<std::complex<float>> v(n);
    for (auto& x : v) x = {u(rng), u(rng)};
    mx::array a(v.data(), shape, mx::complex64);
    return a;
  }
  std::vector<double> v(n);
  if (t == mx::bool_) {
    for (auto& x : v) x = rng() & 1;
  } else if (is_float(t)) {
    std::uniform_real_distribution<double> u(-3.0, 3.0);
    for (auto& x : v) x = u(rng);
    if (n > 4) v[n / 2] = 0.0;  // a signed zero through negation
  } else {
    std::uniform_int_distribution<int> u(is_uint(t) ? 0 : -60, 60);
    for (auto& x : v) x = u(rng);
  }
  mx::array a(v.data(), shape, mx::float64);
  a = mx::astype(a, t);
  a.eval();
  return a;
}

// One random element-wise step on values of dtype t: a new value of dtype t from `pool` (values of
// the full shape) and `side` (inputs that broadcast to it).
mx::array random_step(mx::Dtype t, const std::vector<mx::array>& pool, const std::vector<mx::array>& side,
                      std::mt19937& rng) {
  auto pick = [&](bool allow_side) -> mx::array {
    if (allow_side && !side.empty() && rng() % 3 == 0) return side[rng() % side.size()];
    return pool[rng() % pool.size()];
  };
  mx::array a = pool.back(), b = pick(true);  // a chain: every step reads the last value
  const mx::array one(1.0, t);
  if (t == mx::bool_) {
    switch (rng() % 7) {
      case 0: return mx::logical_and(a, b);
      case 1: return mx::logical_or(a, b);
      case 2: return mx::logical_not(a);
      case 3: return mx::equal(a, b);
      case 4: return mx::where(a, b, pick(true));
      case 5: return mx::maximum(a, b);
      default: return mx::not_equal(a, b);
    }
  }
  if (t == mx::complex64) {
    switch (rng() % 8) {
      case 0: return mx::add(a, b);
      case 1: return mx::subtract(a, b);
      case 2: return mx::multiply(a, b);
      case 3: return mx::negative(a);
      case 4: return mx::square(a);
      case 5: return mx::where(mx::equal(a, b), a, b);
      case 6: return mx::multiply(mx::sin(a), one);
      default: return mx::maximum(a, b);
    }
  }
  const int common = 10;
  const int n = common + (is_float(t) ? 9 : 3);
  switch (static_cast<int>(rng() % n)) {
    case 0: return mx::add(a, b);
    case 1: return mx::subtract(a, b);
    case 2: return mx::multiply(a, b);
    case 3: return mx::maximum(a, b);
    case 4: return mx::minimum(a, b);
    case 5: return is_uint(t) ? mx::add(a, one) : mx::negative(a);
    case 6: return mx::abs(a);
    case 7: return mx::where(mx::greater(a, b), a, pick(true));
    case 8: return mx::square(a);
    case 9: return mx::where(mx::less_equal(a, one), b, a);
    default: break;
  }
  if (!is_float(t)) {
    switch (rng() % 3) {
      case 0: return mx::bitwise_and(a, b);
      case 1: return mx::bitwise_xor(a, b);
      default: return mx::remainder(a, mx::add(mx::abs(b), one));
    }
  }
  switch (rng() % 9) {
    case 0: return mx::exp(mx::minimum(a, one));
    case 1: return mx::sin(a);
    case 2: return mx::cos(a);
    case 3: return mx::tanh(a);
    case 4: return mx::sigmoid(a);
    case 5: return mx::sqrt(mx::abs(a));
    case 6: return mx::log(mx::add(mx::abs(a), one));
    case 7: return mx::erf(a);
    default: return mx::divide(a, mx::add(mx::abs(b), one));
  }
}

}  // namespace

// Random chains over every dtype, with full-shape, scalar, row, column and middle-axis operands, on
// several tile sizes (so tiles split rows and the last tile is partial).
TEST_F(Fusion, RandomChainsBitIdenticalEveryDtype) {
  const mx::Shape shape{5, 7, 33};
  for (mx::Dtype t : kAllTypes) {
    for (size_t tile : {size_t(0), size_t(64), size_t(1000)}) {
      kiln::cpu::set_tile_elements(tile);
      for (int seed = 0; seed < 3; ++seed) {
        std::mt19937 rng(1234 + seed * 17 + t.size);
        std::vector<mx::array> base = {random_array(t, shape, rng), random_array(t, shape, rng)};
        std::vector<mx::array> side = {random_array(t, {}, rng), random_array(t, {1, 1, 33}, rng),
                                       random_array(t, {5, 7, 1}, rng), random_array(t, {5, 1, 33}, rng),
                                       random_array(t, {7, 33}, rng)};
        const unsigned chain_seed = rng();
        auto build = [&]() {
          std::mt19937 r(chain_seed);
          std::vector<mx::array> pool = base;
          for (int k = 0; k < 14; ++k) pool.push_back(random_step(t, pool, side, r));
          // Seed 1 also asks for an intermediate, which must then be written.
          if (seed == 1) return std::vector<mx::array>{pool.back(), pool[8]};
          return std::vector<mx::array>{pool.back()};
        };
        auto st = check(build, "dtype " + mx::dtype_name(t) + " tile " + std::to_string(tile) + " seed " +
                                   std::to_string(seed));
        EXPECT_GE(st.groups, 1u) << mx::dtype_name(t);
        EXPECT_GE(st.fused_nodes, 2u) << mx::dtype_name(t);
      }
    }
  }
}

// Strided inputs: transposed, reversed, sliced with a step, and broadcast views made before the chain.
TEST_F(Fusion, StridedTransposedReversedInputs) {
  for (mx::Dtype t : {mx::float32, mx::float16, mx::int32, mx::float64, mx::complex64, mx::bool_}) {
    for (size_t tile : {size_t(0), size_t(50)}) {
      kiln::cpu::set_tile_elements(tile);
      std::mt19937 rng(7);
      mx::array a = random_array(t, {40, 30}, rng);
      mx::array b = random_array(t, {30, 40}, rng);
      mx::array c = random_array(t, {80, 30}, rng);
      mx::array bt = mx::transpose(b);                              // strides (1, 40)
      mx::array ar = mx::slice(a, {39, 29}, {-41, -31}, {-1, -1});  // reversed on both axes
      mx::array cs = mx::slice(c, {1, 0}, {80, 30}, {2, 1});        // every other row
      mx::array row = random_array(t, {30}, rng);
      mx::array col = mx::broadcast_to(random_array(t, {40, 1}, rng), {40, 30});
      mx::eval({bt, ar, cs, col});
      ASSERT_FALSE(bt.row_contiguous());
      ASSERT_FALSE(ar.row_contiguous());
      auto build = [&]() {
        if (t == mx::bool_) {
          mx::array x = mx::logical_and(bt, ar);
          mx::array y = mx::logical_or(x, cs);
          return std::vector<mx::array>{mx::not_equal(mx::logical_not(y), mx::logical_and(row, col))};
        }
        mx::array x = mx::add(bt, ar);
        mx::array y = mx::multiply(x, cs);
        mx::array z = mx::subtract(mx::maximum(y, row), col);
        return std::vector<mx::array>{mx::square(mx::add(z, bt))};
      };
      auto st = check(build, "strided " + mx::dtype_name(t));
      EXPECT_EQ(st.groups, 1u);
    }
  }
}

// Operands of different shapes handed straight to a binary kernel, as loaded graphs may do (no
// Broadcast node): [14,1] + [1,15] -> [14,15], then a chain on the result.
TEST_F(Fusion, ImplicitBroadcastInKernelOperands) {
  std::mt19937 rng(3);
  mx::array a = random_array(mx::float32, {14, 1}, rng);
  mx::array b = random_array(mx::float32, {1, 15}, rng);
  mx::array s = random_array(mx::float32, {}, rng);
  kiln::cpu::set_tile_elements(13);
  auto build = [&]() {
    const kiln::PrimitiveDef& add = kiln::registry::get("Add");
    const kiln::PrimitiveDef& mul = kiln::registry::get("Multiply");
    mx::array x = kiln::make_array(add, {}, {a, b}, {{{14, 15}, mx::float32}});
    mx::array y = kiln::make_array(mul, {}, {x, s}, {{{14, 15}, mx::float32}});
    return std::vector<mx::array>{mx::exp(y)};
  };
  auto st = check(build, "implicit broadcast");
  EXPECT_EQ(st.groups, 1u);
  EXPECT_EQ(st.fused_nodes, 3u);
}

// The fused group really ran as one: a chain of ten unary ops is one group, nine outputs never
// written; with fusion off nothing is grouped.
TEST_F(Fusion, OneGroupCounted) {
  std::mt19937 rng(1);
  mx::array x = random_array(mx::float32, {10000}, rng);
  auto build = [&]() {
    mx::array y = x;
    for (int i = 0; i < 5; ++i) y = mx::sin(mx::abs(y));
    return std::vector<mx::array>{y};
  };
  fusion::Stats st = check(build, "unary chain");
  EXPECT_EQ(st.groups, 1u);
  EXPECT_EQ(st.fused_nodes, 10u);
  EXPECT_EQ(st.internal, 9u);
  fusion::Stats off;
  run(false, build, &off);
  EXPECT_EQ(off.groups, 0u);
  EXPECT_EQ(off.fused_nodes, 0u);
}

// Two branches that meet (exp(x), sin(y), their sum) merge into one group.
TEST_F(Fusion, BranchesMerge) {
  std::mt19937 rng(2);
  mx::array x = random_array(mx::float32, {300}, rng), y = random_array(mx::float32, {300}, rng);
  auto st = check([&]() { return std::vector<mx::array>{mx::add(mx::exp(x), mx::sin(y))}; }, "branches");
  EXPECT_EQ(st.groups, 1u);
  EXPECT_EQ(st.fused_nodes, 3u);
  EXPECT_EQ(st.internal, 2u);
}

// An intermediate that is also an output of eval() is written, and equals the unfused one.
TEST_F(Fusion, IntermediateThatIsAnOutputIsWritten) {
  std::mt19937 rng(4);
  mx::array x = random_array(mx::float32, {1000}, rng);
  kiln::cpu::set_tile_elements(128);
  auto build = [&]() {
    mx::array a = mx::exp(mx::negative(mx::abs(x)));
    mx::array b = mx::multiply(mx::tanh(a), a);
    return std::vector<mx::array>{b, a};
  };
  auto st = check(build, "intermediate output");
  EXPECT_EQ(st.groups, 1u);
  EXPECT_EQ(st.fused_nodes, 5u);
  EXPECT_EQ(st.internal, 3u);
}

// An intermediate the user holds (not passed to eval) is written too, and can be read afterwards.
TEST_F(Fusion, IntermediateHeldByUserIsWritten) {
  std::mt19937 rng(5);
  mx::array x = random_array(mx::float16, {777}, rng);
  std::vector<mx::array> held[2];
  std::vector<mx::array> outs[2];
  for (int fused = 0; fused < 2; ++fused) {
    fusion::set_enabled(fused == 1);
    mx::array a = mx::sqrt(mx::abs(x));
    mx::array b = mx::add(mx::sigmoid(a), a);
    mx::eval({b});
    if (fused) EXPECT_EQ(fusion::last_stats().fused_nodes, 4u);
    EXPECT_TRUE(a.is_available());
    held[fused] = {a};
    outs[fused] = {b};
  }
  expect_same(held[0], held[1], "held intermediate");
  expect_same(outs[0], outs[1], "output");
}

// An intermediate read by a lazy graph that this eval() does not evaluate is written, so that graph
// can be evaluated later.
TEST_F(Fusion, IntermediateReadByAnotherLazyGraph) {
  std::mt19937 rng(13);
  mx::array x = random_array(mx::float32, {500}, rng);
  std::vector<mx::array> first[2], later[2];
  for (int fused = 0; fused < 2; ++fused) {
    fusion::set_enabled(fused == 1);
    mx::array c, b;
    {
      mx::array a = mx::exp(mx::negative(mx::abs(x)));
      b = mx::sin(a);
      c = mx::cos(a);  // reads a; not evaluated below
    }
    mx::eval({b});
    if (fused) EXPECT_EQ(fusion::last_stats().fused_nodes, 4u);
    first[fused] = {b};
    mx::eval({c});
    later[fused] = {c};
  }
  expect_same(first[0], first[1], "evaluated graph");
  expect_same(later[0], later[1], "the other graph, evaluated afterwards");
}

// An intermediate read by a node that is not element-wise (a reduction, a reshape) is written; the
// graph around it still fuses where it can.
TEST_F(Fusion, IntermediateReadByOtherNodes) {
  std::mt19937 rng(6);
  mx::array x = random_array(mx::float32, {12, 40}, rng);
  auto build = [&]() {
    mx::array a = mx::cos(mx::multiply(x, x));
    mx::array s = mx::sum(a, 1, true);                // reads a
    mx::array r = mx::reshape(mx::exp(a), {40, 12});  // reads exp(a)
    mx::array c = mx::divide(mx::sigmoid(a), s);      // a with its own row sums
    return std::vector<mx::array>{c, r};
  };
  auto st = check(build, "read by others");
  EXPECT_GE(st.groups, 1u);
}

// AsType in the middle of a chain, to a narrower, wider and another-kind type.
TEST_F(Fusion, AsTypeInTheMiddle) {
  std::mt19937 rng(8);
  mx::array x = random_array(mx::float32, {2049}, rng);
  mx::array i = random_array(mx::int32, {2049}, rng);
  kiln::cpu::set_tile_elements(500);
  auto build = [&]() {
    mx::array h = mx::astype(mx::exp(mx::minimum(x, mx::array(2.0f))), mx::float16);
    mx::array g = mx::add(mx::tanh(h), mx::astype(i, mx::float16));
    mx::array b = mx::astype(mx::multiply(g, g), mx::bfloat16);
    mx::array d = mx::astype(mx::sin(b), mx::float64);
    mx::array k = mx::astype(mx::greater(d, mx::array(0.0)), mx::int8);
    return std::vector<mx::array>{mx::add(mx::astype(k, mx::float64), d), mx::astype(g, mx::complex64)};
  };
  auto st = check(build, "astype chain");
  EXPECT_EQ(st.groups, 1u);
}

// Select with each operand broadcast in turn.
TEST_F(Fusion, SelectTernary) {
  std::mt19937 rng(9);
  mx::array x = random_array(mx::float32, {6, 50}, rng), y = random_array(mx::float32, {6, 50}, rng);
  mx::array row = random_array(mx::float32, {50}, rng), c = random_array(mx::bool_, {6, 1}, rng);
  kiln::cpu::set_tile_elements(32);
  auto build = [&]() {
    mx::array a = mx::where(mx::greater(x, y), x, mx::negative(y));
    mx::array b = mx::where(c, a, row);
    mx::array d = mx::where(mx::less(b, mx::array(0.5f)), mx::array(0.25f), b);
    return std::vector<mx::array>{mx::multiply(d, a)};
  };
  auto st = check(build, "select");
  EXPECT_EQ(st.groups, 1u);
}

// Empty arrays and arrays below the size worth fusing: nothing is fused, the results are right.
TEST_F(Fusion, TinyArraysRunAlone) {
  std::mt19937 rng(12);
  mx::array x = random_array(mx::float32, {3, 5}, rng);
  auto st = check([&]() { return std::vector<mx::array>{mx::exp(mx::add(mx::sin(x), x))}; }, "tiny");
  EXPECT_EQ(st.groups, 0u);
}

// At the default threshold, small graphs (a decode step's activations) run node by node, and a chain
// over 2^17 elements or more is fused; both give the same bits as the other way.
TEST_F(Fusion, DefaultThresholdLeavesSmallArraysUnfused) {
  fusion::set_min_elements(0);
  EXPECT_EQ(fusion::min_elements(), size_t(1) << 17);
  std::mt19937 rng(13);
  for (int n : {4096, (1 << 17) - 1, 1 << 17}) {
    mx::array x = random_array(mx::float32, {n}, rng);
    auto build = [&]() {
      mx::array a = mx::add(mx::multiply(x, mx::array(1.5f)), mx::array(0.25f));
      return std::vector<mx::array>{mx::subtract(mx::multiply(mx::sigmoid(a), a), x)};
    };
    auto st = check(build, "threshold " + std::to_string(n));
    EXPECT_EQ(st.groups, n < (1 << 17) ? 0u : 1u) << n;
  }
}

// Empty arrays: nothing to fuse, the results are still the right empty arrays.
TEST_F(Fusion, EmptyArrays) {
  mx::array x = mx::zeros({0, 3}, mx::float32);
  auto build = [&]() { return std::vector<mx::array>{mx::exp(mx::add(mx::sin(x), mx::array(1.0f)))}; };
  auto fused = run(true, build);
  auto plain = run(false, build);
  EXPECT_EQ(fused[0].shape(), (mx::Shape{0, 3}));
  expect_same(fused, plain, "empty");
}

// A group wider than one tile runs its tiles over the pool's threads (the default tile).
TEST_F(Fusion, LargeGroupAcrossThreads) {
  std::mt19937 rng(10);
  mx::array x = random_array(mx::float32, {1 << 17}, rng), y = random_array(mx::float32, {1 << 17}, rng);
  auto build = [&]() {
    mx::array a = mx::add(mx::multiply(x, mx::array(1.5f)), y);
    mx::array b = mx::exp(mx::negative(mx::abs(mx::sin(a))));
    return std::vector<mx::array>{mx::subtract(mx::multiply(b, a), mx::erf(y))};
  };
  auto st = check(build, "large");
  EXPECT_EQ(st.groups, 1u);
  EXPECT_GE(st.fused_nodes, 9u);
}

// An imported function (exported with kiln's export API) gives the same bits with fusion on and off,
// and its element-wise chain runs as one group.
TEST_F(Fusion, ImportedFunction) {
  const std::string path = ::testing::TempDir() + "kiln_fusion_import.mlxfn";
  mx::array w({0.5f, -1.0f, 2.0f, 0.25f});
  mx::export_function(
      path,
      [w](const mx::Args& a) {
        mx::array t = mx::add(mx::multiply(a[0], mx::array(1.5f)), a[1]);
        mx::array u = mx::where(mx::greater(t, mx::array(0.0f)), mx::sigmoid(t), mx::tanh(t));
        return std::vector<mx::array>{mx::subtract(mx::multiply(u, w), mx::sqrt(mx::abs(a[1])))};
      },
      {mx::zeros({64, 4}, mx::float32), mx::zeros({64, 4}, mx::float32)});
  auto f = mx::import_function(path);
  std::mt19937 rng(11);
  mx::array x = random_array(mx::float32, {64, 4}, rng), y = random_array(mx::float32, {64, 4}, rng);
  kiln::cpu::set_tile_elements(40);
  fusion::Stats st;
  auto fused = run(true, [&]() { return f({x, y}); }, &st);
  auto plain = run(false, [&]() { return f({x, y}); });
  expect_same(fused, plain, "imported");
  EXPECT_EQ(st.groups, 1u);
  EXPECT_GE(st.fused_nodes, 9u);
  // A second call reads the same constant: a constant is never a donated buffer.
  auto again = run(true, [&]() { return f({x, y}); });
  expect_same(again, plain, "imported again");
  std::remove(path.c_str());
}

// A shapeless export names the other operand as an extra Broadcast input (for its shape only): that
// read neither splits the group nor forces the operand to be written.
TEST_F(Fusion, ShapelessBroadcastDoesNotSplitGroups) {
  const std::string path = ::testing::TempDir() + "kiln_fusion_shapeless.mlxfn";
  auto f = [](const mx::Args& a) {
    mx::array t = mx::add(mx::multiply(mx::exp(a[0]), mx::array(1.5f)), a[1]);
    mx::array u = mx::multiply(mx::sin(t), mx::array(0.5f));
    return std::vector<mx::array>{mx::add(u, mx::array(2.0f))};
  };
  std::mt19937 rng(14);
  mx::array x = random_array(mx::float32, {300}, rng), y = random_array(mx::float32, {300}, rng);
  mx::export_function(path, f, {x, y}, /*shapeless=*/true);
  auto g = mx::import_function(path);
  fusion::Stats st;
  auto fused = run(true, [&]() { return g({x, y}); }, &st);
  auto plain = run(false, [&]() { return g({x, y}); });
  expect_same(fused, plain, "shapeless");
  EXPECT_EQ(st.groups, 1u);
  EXPECT_EQ(st.fused_nodes, 6u);
  EXPECT_EQ(st.internal, 5u);
  // Other shapes than the exported ones (the point of a shapeless export).
  mx::array x2 = random_array(mx::float32, {901}, rng), y2 = random_array(mx::float32, {901}, rng);
  auto fused2 = run(true, [&]() { return g({x2, y2}); }, &st);
  auto plain2 = run(false, [&]() { return g({x2, y2}); });
  expect_same(fused2, plain2, "shapeless, new shapes");
  EXPECT_EQ(st.groups, 1u);
  std::remove(path.c_str());
}

// KILN_FUSION=0 is read by enabled(); set_enabled overrides it both ways.
TEST_F(Fusion, Switch) {
  fusion::set_enabled(false);
  EXPECT_FALSE(fusion::enabled());
  fusion::set_enabled(true);
  EXPECT_TRUE(fusion::enabled());
}

// The runner's per-thread scratch: inside a ScratchScope a freed block comes back to the next
// allocation of its size on the same thread; leaving the scope hands it to the buffer cache.
TEST_F(Fusion, ScratchScopeReusesBlocks) {
  namespace d = kiln::detail;
  void* first = nullptr;
  size_t cached_before = 0;
  mx::clear_cache();  // so that the small block below is a new one, not one off this thread's list
  {
    d::ScratchScope scope;
    first = d::buffer_malloc(16384);  // from the cache or the system
    cached_before = mx::get_cache_memory();
    d::buffer_free(first, 16384);
    void* again = d::buffer_malloc(16384);
    EXPECT_EQ(again, first);
    void* other = d::buffer_malloc(100);  // another size class: a different block
    EXPECT_NE(other, first);
    d::buffer_free(other, 100);
    d::buffer_free(again, 16384);
    EXPECT_EQ(mx::get_cache_memory(), cached_before);  // still on this thread's list
  }
  EXPECT_GE(mx::get_cache_memory(), cached_before + 16384);
  void* from_cache = d::buffer_malloc(16384);
  EXPECT_EQ(from_cache, first);
  d::buffer_free(from_cache, 16384);
}

// ------------------------------------------------------------------------------------------------
// Tile functions (backend/cpu/fusion.h TileTable).

// Every element-wise row that a group may hold (one output) has a tile resolver on the CPU.
TEST(FusionTiles, EveryElementwiseRowHasATileResolver) {
  const kiln::cpu::TileTable& tiles = kiln::cpu::tile_table();
  std::string missing;
  int rows = 0;
  for (const kiln::PrimitiveDef* def : mx::registry::all()) {
    if (!(def->flags & kiln::kElementwise) || def->num_outputs != 1) continue;
    ++rows;
    if (!tiles.find(*def)) missing += " " + def->name;
  }
  EXPECT_TRUE(missing.empty()) << "element-wise rows without a tile resolver:" << missing;
  EXPECT_GE(rows, 55);
}

namespace {

// Values of dtype t for the tile tests: random ones with, for floating types, the special values
// (NaN of both signs, infinities, signed zeros, a denormal, huge and tiny values) spread through them,
// at places that depend on `which` (so that a NaN meets a number in a binary op, and each order).
mx::array tile_values(mx::Dtype t, int n, std::mt19937& rng, int which) {
  if (!is_float(t)) return random_array(t, {n}, rng);
  std::uniform_real_distribution<double> u(-3.0, 3.0);
  std::vector<double> v(static_cast<size_t>(n));
  for (auto& x : v) x = u(rng);
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  const double specials[] = {nan, -nan, inf, -inf, 0.0, -0.0, 1e-41, 3e38, -7e5, 1e-7, 0.5, -1.0};
  for (size_t i = 0; i < sizeof(specials) / sizeof(double); ++i) {
    v[(i * 97 + 13 + 31 * which) % v.size()] = specials[i];
    v[(i * 89 + 500) % v.size()] = specials[(i + which) % (sizeof(specials) / sizeof(double))];  // pairs
  }
  mx::array a(v.data(), mx::Shape{n}, mx::float64);
  a = mx::astype(a, t);
  a.eval();
  return a;
}

// The states to try for a row: every combination of its fields' values (a Bool field both ways, an Int
// field 0 to 4, a dtype field every dtype). False when the row has a field of another type.
bool states_of(const kiln::PrimitiveDef& def, std::vector<kiln::State>& out) {
  out.assign(1, kiln::State{});
  for (const kiln::Field& f : def.fields) {
    std::vector<kiln::Value> vals;
    if (f.type == kiln::FieldType::Bool) vals = {false, true};
    else if (f.type == kiln::FieldType::Int) vals = {int32_t(0), int32_t(1), int32_t(2), int32_t(3), int32_t(4)};
    else if (f.type == kiln::FieldType::DtypeF)
      for (mx::Dtype t : kAllTypes) vals.push_back(t);
    else return false;
    std::vector<kiln::State> next;
    for (const kiln::State& s : out) {
      for (const kiln::Value& v : vals) {
        kiln::State t = s;
        t.values.push_back(v);
        next.push_back(t);
      }
    }
    out = next;
  }
  return true;
}

}  // namespace

// Each row's tile function gives its kernel's bits on row-contiguous arrays, for every dtype (and state)
// the row accepts, at an unaligned offset and with a length that leaves vector tails. A resolver may
// decline only a Select whose condition is not bool (the kernel converts it first).
TEST(FusionTiles, TileFunctionsGiveTheKernelsBitsForEveryRowAndDtype) {
  const kiln::cpu::TileTable& tiles = kiln::cpu::tile_table();
  const int n = 1031;
  const size_t lo = 5, len = 1019;  // an unaligned sub-range: pointers off the vectors' alignment, tails
  std::string declined;
  size_t compared = 0;
  std::mt19937 rng(2024);
  for (const kiln::PrimitiveDef* def : mx::registry::all()) {
    if (!(def->flags & kiln::kElementwise) || def->num_outputs != 1) continue;
    std::vector<kiln::State> states;
    ASSERT_TRUE(states_of(*def, states)) << def->name << " has a field this test cannot vary";
    const int arity = def->min_inputs;
    for (mx::Dtype t : kAllTypes) {
      std::vector<std::vector<mx::Dtype>> input_sets = {std::vector<mx::Dtype>(arity, t)};
      if (def->name == "Select") input_sets.push_back({mx::bool_, t, t});
      for (const auto& dtypes : input_sets) {
        std::vector<mx::array> inputs;
        std::vector<kiln::ArraySpec> specs;
        for (mx::Dtype d : dtypes) {
          inputs.push_back(tile_values(d, n, rng, static_cast<int>(inputs.size())));
          specs.push_back({{n}, d});
        }
        for (const kiln::State& state : states) {
          std::vector<kiln::ArraySpec> out_specs;
          try {
            out_specs = def->infer(state, specs);
          } catch (const std::exception&) {
            continue;  // the row rejects these dtypes
          }
          const std::string what = def->display_name(state) + " of " + mx::dtype_name(dtypes[0]) +
                                   (dtypes.size() > 1 ? "/" + mx::dtype_name(dtypes.back()) : "") + " -> " +
                                   mx::dtype_name(out_specs[0].dtype);
          std::vector<mx::array> lazy = kiln::make_arrays(*def, state, inputs, out_specs);
          const kiln::Node& node = *lazy[0].node();
          kiln::KernelFn kernel = kiln::detail::kernels_for(node.stream.device).get(*def, state);
          std::vector<mx::array> outs = {mx::array(out_specs[0].shape, out_specs[0].dtype, nullptr, 0)};
          kernel(node, inputs, outs);
          if (!outs[0].buffer()) continue;  // the kernel computes nothing for these dtypes
          kiln::cpu::TileFn f = tiles.resolve(node, dtypes);
          if (!f) {
            if (!(def->name == "Select" && dtypes[0] != mx::bool_)) declined += "\n  " + what;
            continue;
          }
          const std::vector<uint8_t> want = raw_bits(outs[0]);
          const size_t osz = out_specs[0].dtype.size;
          std::vector<const void*> ptrs;
          for (const mx::array& a : inputs)
            ptrs.push_back(static_cast<const char*>(a.buffer()->ptr) + (a.offset() + lo) * a.itemsize());
          std::vector<uint8_t> got((len + 2) * osz, 0xA5);
          f(ptrs.data(), got.data() + osz, len);  // one element of guard on both sides
          EXPECT_TRUE(std::equal(got.begin() + osz, got.begin() + (len + 1) * osz, want.begin() + lo * osz)) << what;
          EXPECT_TRUE(std::all_of(got.begin(), got.begin() + osz, [](uint8_t b) { return b == 0xA5; })) << what;
          EXPECT_TRUE(std::all_of(got.end() - osz, got.end(), [](uint8_t b) { return b == 0xA5; }))
              << what << " wrote past n";
          ++compared;
        }
      }
    }
  }
  EXPECT_TRUE(declined.empty()) << "tile resolvers that declined dtypes their kernel computes:" << declined;
  EXPECT_GE(compared, 500u);
}

// Groups run through tile functions when every member has one; a member without one (a Select whose
// condition is float32, as a loaded graph may hand it) sends the group through the kernels, with the
// same bits either way.
TEST_F(Fusion, TileFunctionsRunWhenEveryMemberHasOne) {
  std::mt19937 rng(31);
  mx::array x = random_array(mx::float32, {3000}, rng), y = random_array(mx::float32, {3000}, rng);
  size_t before = kiln::cpu::tile_function_groups();
  auto st = check([&]() { return std::vector<mx::array>{mx::exp(mx::where(mx::greater(x, y), x, mx::sin(y)))}; },
                  "all members with tile functions");
  EXPECT_EQ(st.groups, 1u);
  EXPECT_EQ(kiln::cpu::tile_function_groups(), before + 1);  // the checked run with tile functions only

  const kiln::PrimitiveDef& select = kiln::registry::get("Select");
  before = kiln::cpu::tile_function_groups();
  st = check(
      [&]() {
        mx::array c = mx::sin(x);  // a float32 condition: nonzero is true
        mx::array s = kiln::make_array(select, {}, {c, x, y}, {{{3000}, mx::float32}});
        return std::vector<mx::array>{mx::multiply(s, c)};
      },
      "a member without a tile function");
  EXPECT_EQ(st.groups, 1u);
  EXPECT_EQ(st.fused_nodes, 3u);
  EXPECT_EQ(kiln::cpu::tile_function_groups(), before);
}

// Values reused slot after slot: a long chain with many values alive at once (every step reads two
// earlier ones), an intermediate output written in place, an input read by the first and last member,
// on tile sizes that split the data unevenly.
TEST_F(Fusion, TileSlotsReusedAcrossALongChain) {
  std::mt19937 rng(32);
  mx::array x = random_array(mx::float32, {4099}, rng), y = random_array(mx::float32, {4099}, rng);
  for (size_t tile : {size_t(0), size_t(100), size_t(4099), size_t(5000)}) {
    kiln::cpu::set_tile_elements(tile);
    auto build = [&]() {
      std::vector<mx::array> v = {x, y};
      for (int k = 0; k < 24; ++k) {
        const mx::array& a = v[v.size() - 1];
        const mx::array& b = v[v.size() - 1 - (k % 5 == 0 ? 1 : k % 4 + 1)];
        switch (k % 4) {
          case 0: v.push_back(mx::add(mx::sin(a), b)); break;
          case 1: v.push_back(mx::maximum(a, mx::negative(b))); break;
          case 2: v.push_back(mx::where(mx::less(a, b), mx::square(a), b)); break;
          default: v.push_back(mx::multiply(mx::tanh(a), b)); break;
        }
      }
      return std::vector<mx::array>{mx::subtract(v.back(), x), v[10]};
    };
    auto st = check(build, "long chain, tile " + std::to_string(tile));
    EXPECT_EQ(st.groups, 1u);
  }
}
