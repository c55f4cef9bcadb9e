// Donation (src/core/fusion.cpp choose_donor, src/backend/cpu/fusion.cpp): an element-wise group's
// output takes over the buffer of an input that nothing else reads, so a chain after a matmul needs
// no second buffer; inputs that others can see (held, outputs of eval, views, constants, external
// memory) are never overwritten.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "backend/cpu/fusion.h"
#include "core/fusion.h"
#include "kiln/kiln.h"
#include "kiln/memory.h"

namespace mx = kiln;
namespace fusion = kiln::detail::fusion;

namespace {

class Donation : public ::testing::Test {
 protected:
  // Small arrays exercise the machinery: fuse from 64 elements (the default is far larger).
  void SetUp() override { fusion::set_min_elements(64); }
  void TearDown() override {
    fusion::set_enabled(true);
    fusion::set_min_elements(0);
    kiln::cpu::set_tile_elements(0);
  }
};

mx::array random_matrix(int r, int c, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> v(static_cast<size_t>(r) * c);
  for (auto& x : v) x = u(rng);
  return mx::array(v.data(), mx::Shape{r, c}, mx::float32);
}

std::vector<float> contents(const mx::array& a0) {
  mx::array a = mx::contiguous(a0);
  a.eval();
  const float* p = a.data<float>();
  return std::vector<float>(p, p + a.size());
}

// The result of `build` with fusion on (stats in *st) and off, which must be bit-identical.
template <typename Build>
std::vector<float> on_off(Build build, fusion::Stats* st) {
  fusion::set_enabled(true);
  mx::array on = build();
  on.eval();
  *st = fusion::last_stats();
  fusion::set_enabled(false);
  mx::array off = build();
  off.eval();
  fusion::set_enabled(true);
  auto a = contents(on), b = contents(off);
  EXPECT_EQ(0, std::memcmp(a.data(), b.data(), a.size() * sizeof(float)));
  return a;
}

}  // namespace

// exp(x @ x) * 0.5: the matmul's output is read by the group only, so the group writes into it.
TEST_F(Donation, DyingIntermediateIsDonated) {
  mx::array x = random_matrix(64, 64, 1);
  fusion::Stats st;
  on_off([&] { return mx::multiply(mx::exp(mx::matmul(x, x)), mx::array(0.5f)); }, &st);
  EXPECT_EQ(st.groups, 1u);
  EXPECT_EQ(st.donated, 1u);
}

// A single element-wise node (a residual add after a matmul) reuses the matmul's buffer too.
TEST_F(Donation, SingleNodeGroup) {
  mx::array x = random_matrix(32, 48, 2), w = random_matrix(48, 48, 3);
  fusion::Stats st;
  on_off([&] { return mx::add(mx::matmul(x, w), x); }, &st);
  EXPECT_EQ(st.groups, 1u);
  EXPECT_EQ(st.fused_nodes, 1u);
  EXPECT_EQ(st.donated, 1u);
}

// The donor read twice in the group (exp(m) + m), on small tiles: each tile's output is written
// after every member has read that tile of the donor.
TEST_F(Donation, DonorReadByLaterMembers) {
  mx::array x = random_matrix(40, 40, 4);
  kiln::cpu::set_tile_elements(96);
  fusion::Stats st;
  on_off(
      [&] {
        mx::array m = mx::matmul(x, x);
        return mx::subtract(mx::add(mx::exp(m), m), mx::multiply(m, m));
      },
      &st);
  EXPECT_EQ(st.donated, 1u);
}

// A donated output whose kernel shares its input's buffer (StopGradient), next to another output.
TEST_F(Donation, SharedOutputBeside) {
  mx::array x = random_matrix(30, 30, 5);
  kiln::cpu::set_tile_elements(100);
  std::vector<float> ref[2];
  std::vector<float> other[2];
  for (int fused = 0; fused < 2; ++fused) {
    fusion::set_enabled(fused == 1);
    auto outs = [&] {
      mx::array m = mx::matmul(x, x);
      mx::array s = mx::stop_gradient(m);
      return std::vector<mx::array>{mx::multiply(s, mx::array(3.0f)), mx::exp(s)};
    }();
    mx::eval(outs);
    ref[fused] = contents(outs[0]);
    other[fused] = contents(outs[1]);
  }
  EXPECT_EQ(ref[0], ref[1]);
  EXPECT_EQ(other[0], other[1]);
}

// Inputs others can see are never written: held by the user, an output of the same eval, a view
// (the buffer has two owners), external memory.
TEST_F(Donation, VisibleInputsAreNotDonated) {
  mx::array x = random_matrix(16, 16, 6);
  {
    mx::array m = mx::matmul(x, x);
    mx::array r = mx::exp(m);
    r.eval();
    EXPECT_EQ(fusion::last_stats().donated, 0u);
    mx::array ref = mx::matmul(x, x);
    EXPECT_EQ(contents(m), contents(ref));
  }
  {
    auto outs = [&] {
      mx::array m = mx::matmul(x, x);
      return std::vector<mx::array>{m, mx::exp(m)};
    }();
    mx::eval(outs);
    EXPECT_EQ(fusion::last_stats().donated, 0u);
    EXPECT_EQ(contents(outs[0]), contents(mx::matmul(x, x)));
  }
  {
    mx::array m = mx::matmul(x, x);
    m.eval();
    mx::array r = [&] {
      mx::array v = mx::reshape(m, {256});  // shares m's buffer
      return mx::sin(v);
    }();
    r.eval();
    EXPECT_EQ(fusion::last_stats().donated, 0u);
    EXPECT_EQ(contents(m), contents(mx::matmul(x, x)));
  }
  {
    std::vector<float> mem(256, 0.75f);
    auto d = std::make_shared<kiln::detail::Data>();
    d->ptr = mem.data();
    d->nbytes = mem.size() * sizeof(float);
    d->owner = std::shared_ptr<void>(mem.data(), [](void*) {});
    mx::array r = [&] { return mx::exp(mx::array(d, mx::Shape{256}, mx::float32)); }();
    d.reset();
    r.eval();
    EXPECT_EQ(fusion::last_stats().donated, 0u);
    for (float v : mem) ASSERT_EQ(v, 0.75f);
  }
}

// Peak memory: the group after a matmul needs no buffer of its own, so the peak is one matrix lower
// than with fusion (and donation) off.
TEST_F(Donation, PeakMemoryDrops) {
  const int n = 512;  // 1 MiB per matrix
  mx::array x = random_matrix(n, n, 7);
  x.eval();
  auto build = [&] {
    mx::array m = mx::matmul(x, x);
    mx::array e = mx::exp(mx::negative(mx::abs(m)));
    return mx::add(mx::multiply(e, m), mx::array(1.0f));
  };
  size_t peak[2];
  for (int fused = 0; fused < 2; ++fused) {
    fusion::set_enabled(fused == 1);
    mx::array r = build();
    mx::reset_peak_memory();
    r.eval();
    peak[fused] = mx::get_peak_memory();
  }
  const size_t matrix = size_t(n) * n * sizeof(float);
  EXPECT_LE(peak[1] + matrix, peak[0] + matrix / 8) << "fused " << peak[1] << " unfused " << peak[0];
}
