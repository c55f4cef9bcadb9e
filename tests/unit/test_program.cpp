// Planned calls of imported functions (core/program.h, the ImportedCall node of src/trace/import.cpp):
// a signature's second call runs its record as a planned program, which must give exactly what the
// record's replayed graph gives, call after call, without touching results an earlier call returned.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <set>
#include <filesystem>
#include <random>
#include <string>
#include <thread>

#include "core/fusion.h"
#include "core/program.h"
#include "core/row_patterns.h"
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

using test_util::graph_has;

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
      // Calls 2 and 3 pass a transposed view and a broadcast one: the plan does not depend on layouts.
      A x{rand_array({3, 4}, t, rng), rand_array({3, 4}, t, rng)};
      if (c == 2) x[0] = mx::transpose(rand_array({4, 3}, t, rng), {1, 0});
      if (c == 3) x[1] = mx::broadcast_to(rand_array({1, 4}, t, rng), {3, 4});
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

// Fused element-wise groups (inputs donated, intermediates never written) and a decomposed RMSNorm
// rewritten into one row kernel: the program plans them once, and each call runs them as eval would.
TEST_F(Program, FusedGroupsAndRowPatternsRunInPlannedCalls) {
  mx::detail::fusion::set_min_elements(64);
  std::mt19937 rng(7);
  const array w = rand_array({256}, mx::float32, rng);
  auto f = [w](const mx::Args& a) {
    array x = mx::tanh(a[0] * 1.5f + a[1]) - mx::exp(a[1] * 0.25f);
    array r = mx::multiply(mx::multiply(x, mx::rsqrt(mx::add(mx::mean(mx::square(x), -1, true), mx::array(1e-5f)))), w);
    return A{r, mx::sigmoid(x) * a[0]};
  };
  auto g = export_import("fused", f, {mx::zeros({32, 256}), mx::zeros({32, 256})});
  for (int c = 0; c < 3; ++c) {
    const A x{rand_array({32, 256}, mx::float32, rng), rand_array({32, 256}, mx::float32, rng)};
    A replayed = call(g, x, false);
    const auto before = mx::detail::row_pattern_counts();
    mx::detail::set_programs_enabled(true);
    A planned = g(x);
    EXPECT_EQ(graph_has(planned, "ImportedCall"), c >= 1) << "call " << c;
    mx::eval(planned);
    const auto st = mx::detail::fusion::last_stats();
    EXPECT_GE(st.groups, 1u) << "call " << c;
    EXPECT_GE(st.internal, 1u) << "call " << c;
    const auto after = mx::detail::row_pattern_counts();
    // The second call plans (and rewrites) once; later calls run the plan without rewriting again.
    EXPECT_EQ(after.rms_norm - before.rms_norm, c <= 1 ? 1u : 0u) << "call " << c;
    expect_identical<float>(planned, replayed, "call " + std::to_string(c));
  }
}

// A shapeless function planned per input signature: calls alternating between two shapes.
TEST_F(Program, ShapelessCallsArePlannedPerSignature) {
  std::mt19937 rng(9);
  auto f = [](const mx::Args& a) { return A{mx::softmax(a[0] * a[1], -1) + mx::sum(a[1], 0, true)}; };
  auto g = export_import("shapeless", f, {mx::zeros({3, 5}), mx::zeros({3, 5})}, /*shapeless=*/true);
  for (int c = 0; c < 6; ++c) {
    const mx::Shape shape = c % 2 ? mx::Shape{7, 2} : mx::Shape{4, 9};
    const A x{rand_array(shape, mx::float32, rng), rand_array(shape, mx::float32, rng)};
    A planned = call(g, x, true);
    EXPECT_EQ(planned[0].shape(), shape);
    expect_identical<float>(planned, call(g, x, false), "call " + std::to_string(c));
  }
}

// With planned calls off (KILN_PROGRAMS=0), every call is the record's own graph.
TEST_F(Program, OffBuildsTheRecordsNodes) {
  auto g = export_import("off", [](const mx::Args& a) { return A{mx::exp(a[0]) + 1.0f}; }, {mx::zeros({4})});
  mx::detail::set_programs_enabled(false);
  for (int c = 0; c < 3; ++c) {
    A out = g({mx::ones({4})});
    EXPECT_FALSE(graph_has(out, "ImportedCall"));
    EXPECT_TRUE(graph_has(out, "Exp"));
  }
}

// A planned call's lazy result captured by a function being exported: the tracer writes the record's
// nodes, so the file holds no ImportedCall node (MLX could not read one) and computes the same.
TEST_F(Program, CapturedCallIsWrittenAsTheRecordsNodes) {
  std::mt19937 rng(11);
  auto g = export_import("inner", [](const mx::Args& a) { return A{mx::sin(a[0]) * 2.0f, mx::cos(a[0])}; },
                         {mx::zeros({6})});
  const array x = rand_array({6}, mx::float32, rng);
  g({x});
  A y = g({x});  // second call: one ImportedCall node, not evaluated
  ASSERT_TRUE(graph_has(y, "ImportedCall"));
  paths_.push_back(temp_path("outer"));
  mx::export_function(paths_.back(), [y](const mx::Args& a) { return A{a[0] + y[0] * y[1]}; }, {mx::zeros({6})});
  auto h = mx::import_function(paths_.back());
  EXPECT_EQ(h.info().functions.at(0).primitive_histogram.count("ImportedCall"), 0u);
  EXPECT_EQ(h.info().functions.at(0).primitive_histogram.count("Sin"), 1u);
  const array z = rand_array({6}, mx::float32, rng);
  A want{z + (mx::sin(x) * 2.0f) * mx::cos(x)};
  mx::eval(want);
  expect_identical<float>(call(h, {z}, true), want, "exported with a captured call");
}

// Calls of one function from several threads at once: each gets its own inputs' results (a call that
// finds the program busy evaluates the record's graph instead).
TEST_F(Program, ConcurrentCallsGetTheirOwnResults) {
  auto g = export_import("threads", [](const mx::Args& a) { return A{mx::matmul(a[0], a[0]) + mx::exp(a[0])}; },
                         {mx::zeros({16, 16})});
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 rng(100 + t);
      for (int c = 0; c < 25; ++c) {
        const array x = rand_array({16, 16}, mx::float32, rng);
        A out = g({x});
        mx::eval(out);
        const array want = mx::matmul(x, x) + mx::exp(x);
        if (test_util::vals<float>(out[0]) != test_util::vals<float>(want)) ++wrong;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(wrong.load(), 0);
}

// The profiler counts a planned call's steps under their primitives and the call node only for its own
// time: the rows add up to no more than the calls' wall time.
TEST_F(Program, ProfileCountsNestedStepsOnce) {
  auto g = export_import("profile", [](const mx::Args& a) { return A{mx::matmul(a[0], a[0]) * 3.0f}; },
                         {mx::zeros({64, 64})});
  const array x = mx::ones({64, 64});
  mx::eval(g({x}));
  mx::eval(g({x}));  // planned from here on
  mx::profile_report(true);
  const bool was = mx::set_profiling(true);
  const auto t0 = std::chrono::steady_clock::now();
  for (int c = 0; c < 20; ++c) mx::eval(g({x}));
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  mx::set_profiling(was);
  double total = 0;
  std::set<std::string> names;
  for (auto& r : mx::profile_report(true)) {
    total += r.seconds;
    names.insert(r.primitive);
  }
  EXPECT_TRUE(names.count("Matmul"));
  EXPECT_TRUE(names.count("Multiply"));
  EXPECT_TRUE(names.count("ImportedCall"));
  EXPECT_LE(total, wall);
}

// Prefetching each step's fixed data ahead changes nothing in the results: a program with constants
// (a weight, a norm's scale), fused groups and single nodes lists lines for them, and its runs with the
// prefetch on and off are the same bits.
TEST_F(Program, PrefetchAheadGivesTheSameResults) {
  std::mt19937 rng(7);
  const array w = rand_array({16, 8}, mx::float32, rng), scale = rand_array({8}, mx::float32, rng);
  const array p = array(std::make_shared<mx::detail::ArrayDesc>(mx::Shape{4, 16}, mx::float32));
  auto h = mx::matmul(p, w);
  auto y = mx::tanh(h * mx::rsqrt(mx::mean(h * h, -1, true) + 1e-5f) * scale) + 1.0f;
  mx::detail::Program prog({p}, {y, mx::sum(mx::exp(h), -1)});
  // The matmul's weight and the scale at least: a descriptor (two lines or more) and their bytes each.
  EXPECT_GE(prog.prefetch_lines(), prog.steps() + 2 * (w.nbytes() / 64));
  struct Restore {
    bool was = mx::detail::program_prefetch_enabled();
    ~Restore() { mx::detail::set_program_prefetch(was); }
  } restore;
  for (int c = 0; c < 3; ++c) {
    array x = rand_array({4, 16}, mx::float32, rng);
    x.eval();
    mx::detail::set_program_prefetch(false);
    const A off = prog.run({x});
    mx::detail::set_program_prefetch(true);
    const A on = prog.run({x});
    expect_identical<float>(on, off, "call " + std::to_string(c));
  }
}

// The program itself: inputs must be placeholders, the graph may read nothing else that is unevaluated,
// and a run takes inputs of the planned shapes and dtypes only.
TEST_F(Program, RefusesWhatItCannotRun) {
  const array p = array(std::make_shared<mx::detail::ArrayDesc>(mx::Shape{3}, mx::float32));
  const array q = array(std::make_shared<mx::detail::ArrayDesc>(mx::Shape{3}, mx::float32));
  EXPECT_THROW(mx::detail::Program({mx::ones({3})}, {mx::ones({3}) + 1.0f}), std::logic_error);
  EXPECT_THAT(test_util::message_of([&] { mx::detail::Program({p}, {p + q}); }),
              ::testing::HasSubstr("neither an input, nor evaluated"));
  mx::detail::Program prog({p}, {mx::exp(p) + 1.0f});
  EXPECT_THAT(test_util::message_of([&] { prog.run({mx::ones({4})}); }), ::testing::HasSubstr("planned for"));
  EXPECT_THAT(test_util::message_of([&] { prog.run({}); }), ::testing::HasSubstr("Expected 1 inputs, got 0"));
  array one = mx::ones({3});
  one.eval();
  auto out = prog.run({one});
  EXPECT_NEAR(test_util::vals<float>(out[0])[0], std::exp(1.0f) + 1.0f, 1e-6);
}

}  // namespace
