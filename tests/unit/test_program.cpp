// Planned calls of imported functions (core/program.h, the ImportedCall node of src/trace/import.cpp):
// a signature's second call runs its record as a planned program, which must give exactly what the
// record's replayed graph gives, call after call, without touching results an earlier call returned.
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <random>
#include <string>
#include <thread>

#include "core/fusion.h"
#include "core/program.h"
#include "kiln/kiln.h"
#include "kiln/profile.h"
#include "unit/test_util.h"

namespace {

namespace mx = kiln;
using mx::array;
using A = std::vector<array>;

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("kiln_program_" + name + ".mlxfn")).string();
}

array rand_array(const mx::Shape& shape, mx::Dtype t, std::mt19937& rng) {
  std::uniform_real_distribution<float> d(-2.f, 2.f);
  std::vector<float> v(mx::shape_size(shape));
  for (auto& x : v) x = d(rng);
  return mx::astype(array(v.data(), shape, mx::float32), t);
}

bool graph_has(const A& outs, const std::string& name) {
  bool found = false;
  test_util::for_each_node(outs, [&](const array& a) { found = found || a.node()->def->name == name; });
  return found;
}

// The outputs of `g(x)` with planned calls on or off, evaluated.
A call(const mx::ImportedFunction& g, const A& x, bool planned) {
  mx::detail::set_programs_enabled(planned);
  A out = g(x);
  mx::eval(out);
  mx::detail::set_programs_enabled(true);
  return out;
}

template <typename T>
void expect_identical(const A& got, const A& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_EQ(got[i].shape(), want[i].shape()) << what << " output " << i;
    ASSERT_EQ(got[i].dtype(), want[i].dtype()) << what << " output " << i;
    auto g = test_util::vals<T>(got[i]), w = test_util::vals<T>(want[i]);
    for (size_t k = 0; k < g.size(); ++k) {
      ASSERT_EQ(g[k], w[k]) << what << " output " << i << " element " << k;
    }
  }
}

class Program : public ::testing::Test {
 protected:
  void TearDown() override {
    mx::detail::set_programs_enabled(true);
    mx::detail::fusion::set_min_elements(0);
    for (auto& p : paths_) std::filesystem::remove(p);
  }
  mx::ImportedFunction export_import(const std::string& name, const mx::ArgsFn& f, const A& examples,
                                     bool shapeless = false) {
    paths_.push_back(temp_path(name));
    mx::export_function(paths_.back(), f, examples, shapeless);
    return mx::import_function(paths_.back());
  }
  std::vector<std::string> paths_;
};

// Several outputs (one an input passed through, one a constant, one listed twice), multi-output nodes,
// views and reductions, in float32 and float64: the planned call equals the replayed graph bit for bit
// on every call, and the results of an earlier call keep their values.
TEST_F(Program, PlannedCallsEqualTheReplayedGraph) {
  std::mt19937 rng(3);
  for (mx::Dtype t : {mx::float32, mx::float64}) {
    const array w = rand_array({4, 5}, t, rng);
    auto f = [w](const mx::Args& a) {
      array h = mx::matmul(a[0], w);
      auto parts = mx::split(h, 5, -1);
      array s = mx::sum(mx::sin(a[0]) * a[1], -1, true);
      array r = mx::reshape(mx::transpose(h, {1, 0}), {5, 3});
      return A{h + s, parts[2], a[1], r, w, parts[2] * parts[4]};
    };
    const A ex{rand_array({3, 4}, t, rng), rand_array({3, 4}, t, rng)};
    auto g = export_import(std::string("outputs_") + mx::dtype_name(t), f, ex);
    A held;                          // the second call's results, held across later runs
    std::vector<std::vector<double>> held_values;
    for (int c = 0; c < 4; ++c) {
      const A x{rand_array({3, 4}, t, rng), rand_array({3, 4}, t, rng)};
      A replayed = call(g, x, false);
      A planned = call(g, x, true);
      if (c >= 1) {
        EXPECT_TRUE(graph_has(g(x), "ImportedCall")) << "call " << c;
      }
      if (t == mx::float32) {
        expect_identical<float>(planned, replayed, "float32 call " + std::to_string(c));
      } else {
        expect_identical<double>(planned, replayed, "float64 call " + std::to_string(c));
      }
      if (c == 1) {
        held = planned;
        for (auto& o : held) held_values.push_back(test_util::vals<double>(o));
      }
    }
    for (size_t i = 0; i < held.size(); ++i) {
      EXPECT_EQ(test_util::vals<double>(held[i]), held_values[i]) << "output " << i << " of an earlier call changed";
    }
  }
}

}  // namespace
