// Autodiff: the transforms (grad / value_and_grad with argnums, integer inputs, grad of grad,
// stop_gradient, jvp, imported and exported functions), their error messages, and the coverage of the
// rule table: every row has a rule, an explicit "not differentiable" declaration, or an entry of
// kNoRuleYet below, and every row with a rule has a derivative-check case (test_autodiff_cases.cpp).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <set>

#include "primitives/autodiff_rules.h"
#include "unit/autodiff_test_util.h"
#include "unit/test_export_util.h"
#include "unit/test_util.h"

namespace {

namespace mx = kiln;
using mx::array;
using A = std::vector<array>;
using test_util::message_of;
using test_util::vals;

// Rows that have no derivative rule in kiln yet, and why. Differentiating through one raises
// "[vjp] Not implemented for <name> in kiln yet." The coverage test fails when a row listed here gets
// a rule (so the list stays exact).
const std::map<std::string, std::string> kNoRuleYet = {};

void expect_close(const array& got, const std::vector<double>& want, double tol = 1e-5) {
  auto g = vals<double>(got);
  ASSERT_EQ(g.size(), want.size());
  for (size_t i = 0; i < g.size(); ++i) EXPECT_NEAR(g[i], want[i], tol) << "element " << i;
}

// ---- coverage ----

TEST(AutodiffCoverage, EveryRowHasARuleOrADeclaration) {
  const auto& table = mx::detail::autodiff::rules();
  std::set<std::string> with_cases;
  for (auto& c : autodiff_test::cases()) with_cases.insert(c.primitive);
  for (auto& [name, why] : autodiff_test::dedicated()) with_cases.insert(name);
  std::set<std::string> pending_seen;
  for (const mx::PrimitiveDef* def : mx::registry::all()) {
    const auto* r = table.find(*def);
    const bool pending = kNoRuleYet.count(def->name) > 0;
    if (!r) {
      EXPECT_TRUE(pending) << def->name << " has no derivative rule, no \"not differentiable\" declaration and no "
                          << "entry in kNoRuleYet";
      pending_seen.insert(def->name);
      continue;
    }
    EXPECT_FALSE(pending) << def->name << " has a rule table entry now: remove it from kNoRuleYet";
    if (r->not_differentiable) {
      EXPECT_FALSE(std::string(r->not_differentiable).empty()) << def->name;
      EXPECT_EQ(with_cases.count(def->name), 0u) << def->name << " is declared not differentiable but has cases";
      continue;
    }
    EXPECT_TRUE(r->vjp || r->fallback) << def->name << " has an entry without a vjp or a fallback";
    EXPECT_TRUE(r->jvp || r->fallback) << def->name << " has an entry without a jvp or a fallback";
    EXPECT_EQ(with_cases.count(def->name), 1u) << def->name << " has a rule but no derivative-check case";
  }
  for (auto& [name, why] : kNoRuleYet) {
    EXPECT_NE(mx::registry::find(name), nullptr) << name << " in kNoRuleYet is not a row";
    EXPECT_EQ(pending_seen.count(name), 1u) << name;
  }
}

TEST(AutodiffCoverage, CasesNameRealRows) {
  for (auto& c : autodiff_test::cases()) EXPECT_NE(mx::registry::find(c.primitive), nullptr) << c.primitive;
}

// ---- errors ----

TEST(AutodiffErrors, ScanOfIntegersNamesTheRow) {
  // cumprod / cummax / cummin have rules; an integer input has no derivative and says so.
  array x = mx::array({1, 2, 3}, mx::int32);
  const std::string scan = mx::cumprod(x, 0).node()->def->display_name(mx::cumprod(x, 0).node()->state);
  EXPECT_EQ(message_of([&] { mx::vjp([](const A& a) { return A{mx::cumprod(a[0], 0)}; }, {x}, {x}); }),
            "[vjp] " + scan + " of an integer or bool input has no derivative (found int32).");
}

TEST(AutodiffErrors, QuantizedWeightsAndNonAffineScalesGiveMlxText) {
  auto qs = mx::quantize(mx::ones({8, 32}, mx::float32), 32, 4, "mxfp4");
  array x = mx::ones({2, 32}, mx::float32);
  array cot = mx::ones({2, 8}, mx::float32);
  // The mxfp4 scales are uint8 codes: asked for through a float copy of them the row still refuses.
  auto f = [&](const A& a) {
    return A{mx::quantized_matmul(a[0], qs[0], mx::astype(a[1], mx::uint8), std::nullopt, true, 32, 4, "mxfp4")};
  };
  EXPECT_EQ(message_of([&] { mx::vjp(f, {x, mx::astype(qs[1], mx::float32)}, {cot}); }),
            "[QuantizedMatmul::vjp] no gradient wrt scales with mxfp4 quantization.");
}

TEST(AutodiffErrors, NotDifferentiableRowGivesMlxText) {
  auto f = [](const array& x) { return mx::sum(mx::astype(mx::view(x, mx::int32), mx::float32)); };
  array x = mx::ones({3}, mx::float32);
  EXPECT_EQ(message_of([&] { mx::grad(f)(x); }), "[Primitive::vjp] Not implemented for View int32.");
  EXPECT_EQ(message_of([&] { mx::jvp(f, x, x); }), "[Primitive::jvp] Not implemented for View int32.");
}

TEST(AutodiffErrors, Argnums) {
  auto f = [](const A& x) { return mx::sum(x[0] * x[1]); };
  A in{mx::ones({2}), mx::ones({2})};
  EXPECT_EQ(message_of([&] { mx::grad(f, std::vector<int>{}); }), "[grad] Must specify at least one argument.");
  EXPECT_EQ(message_of([&] { mx::grad(f, std::vector<int>{0, 0})(in); }),
            "[grad] Repeat argument number not allowed in grad.");
  EXPECT_EQ(message_of([&] { mx::grad(f, std::vector<int>{0, -2})(in); }),
            "[grad] Repeat argument number not allowed in grad.");
  EXPECT_EQ(message_of([&] { mx::grad(f, 2)(in); }), "[grad] Invalid argument number for function with 2 inputs.");
  EXPECT_EQ(message_of([&] { mx::grad(f, -3)(in); }), "[grad] Invalid argument number for function with 2 inputs.");
}

TEST(AutodiffErrors, OutputsAndCotangents) {
  auto vec = [](const A& x) { return x[0] * 2.0f; };
  EXPECT_EQ(message_of([&] { mx::grad(vec)({mx::ones({3})}); }),
            "[vjp] Output shape (3) does not match cotangent shape ().");
  auto two = [](const A& x) { return A{x[0] * 2.0f, x[0]}; };
  EXPECT_EQ(message_of([&] { mx::vjp(two, {mx::ones({3})}, {mx::ones({3})}); }),
            "[vjp] Number of outputs to compute gradients for (2) does not match number of cotangents (1).");
  EXPECT_EQ(message_of([&] { mx::vjp(two, {mx::ones({3})}, {mx::ones({3}), mx::ones({2})}); }),
            "[vjp] Output shape (3) does not match cotangent shape (2).");
  auto empty = [](const A&) { return A{array()}; };
  EXPECT_EQ(message_of([&] { mx::vjp(empty, {mx::ones({3})}, {mx::ones({3})}); }),
            "[vjp] The function returned an empty (default-constructed) array.");
  EXPECT_EQ(message_of([&] { mx::value_and_grad([](const A&) { return A{}; })({mx::ones({3})}); }),
            "[grad] The function must return at least one array.");
  EXPECT_EQ(message_of([&] { mx::jvp(two, {mx::ones({3})}, {}); }),
            "[jvp] Number of inputs does not match number of tangents.");
  EXPECT_EQ(message_of([&] { mx::jvp(two, {mx::ones({3})}, {mx::ones({2})}); }),
            "[jvp] Input shape does not match shape of tangent.");
}

TEST(AutodiffErrors, IndicesAreNotDifferentiable) {
  array x = mx::ones({3, 2});
  array idx = array({0, 2}, mx::int32);
  auto f = [](const A& in) { return A{mx::take_along_axis(in[0], mx::reshape(in[1], {2, 1}), 0)}; };
  EXPECT_EQ(message_of([&] { mx::jvp(f, {x, idx}, {x, idx}); }),
            "[gather_axis] Cannot calculate JVP with respect to indices.");
  auto s = [](const A& in) { return A{mx::put_along_axis(in[0], mx::reshape(in[1], {2, 1}), mx::ones({2, 2}), 0)}; };
  EXPECT_EQ(message_of([&] { mx::vjp(s, {x, idx}, {x}); }),
            "[scatter_axis] Cannot calculate VJP with respect to indices.");
}

// ---- transforms ----

TEST(AutodiffTransforms, GradWithArgnums) {
  auto f = [](const A& x) { return mx::sum(x[0] * x[1] + mx::square(x[0])); };
  array a({1.f, 2.f, 3.f}), b({4.f, 5.f, 6.f});
  auto g0 = mx::grad(f)({a, b});
  ASSERT_EQ(g0.size(), 1u);
  expect_close(g0[0], {6, 9, 12});  // b + 2a
  auto g1 = mx::grad(f, 1)({a, b});
  expect_close(g1[0], {1, 2, 3});
  auto gl = mx::grad(f, -1)({a, b});
  expect_close(gl[0], {1, 2, 3});
  auto g01 = mx::grad(f, std::vector<int>{1, 0})({a, b});  // results follow the sorted argnums
  ASSERT_EQ(g01.size(), 2u);
  expect_close(g01[0], {6, 9, 12});
  expect_close(g01[1], {1, 2, 3});
  auto [v, g] = mx::value_and_grad(f, 0)({a, b});
  EXPECT_FLOAT_EQ(v.item<float>(), 4 + 10 + 18 + 1 + 4 + 9);
  expect_close(g[0], {6, 9, 12});
}

TEST(AutodiffTransforms, UnaryOverloads) {
  auto f = [](const array& x) { return mx::sum(mx::exp(x)); };
  array x({0.f, 1.f});
  expect_close(mx::grad(f)(x), {1, std::exp(1.0)});
  auto [v, g] = mx::value_and_grad(std::function<array(const array&)>(f))(x);
  EXPECT_NEAR(v.item<float>(), 1 + std::exp(1.0), 1e-5);
  expect_close(g, {1, std::exp(1.0)});
  auto [o, t] = mx::jvp([](const array& y) { return mx::sin(y); }, x, mx::ones({2}));
  expect_close(o, {0, std::sin(1.0)});
  expect_close(t, {1, std::cos(1.0)});
  auto [o2, c] = mx::vjp([](const array& y) { return y * y; }, x, array({2.f, 3.f}));
  expect_close(c, {0, 6});
}

TEST(AutodiffTransforms, ValueAndGradKeepsAuxiliaryOutputs) {
  auto f = [](const A& x) { return A{mx::sum(x[0] * x[0]), x[0] * 10.0f}; };
  auto [outs, g] = mx::value_and_grad(f)({array({1.f, 2.f})});
  ASSERT_EQ(outs.size(), 2u);
  expect_close(outs[1], {10, 20});
  expect_close(g[0], {2, 4});  // the auxiliary output is not differentiated
}

TEST(AutodiffTransforms, SamePrimalTwiceIsTwoPrimals) {
  array x({1.f, 2.f});
  auto [outs, g] = mx::vjp([](const A& in) { return A{in[0] * 3.0f + in[1]}; }, {x, x}, {mx::ones({2})});
  expect_close(g[0], {3, 3});
  expect_close(g[1], {1, 1});
}

TEST(AutodiffTransforms, IntegerInputs) {
  // As MLX: an integer input's gradient has the input's type (the cotangent cast back by AsType).
  auto f = [](const A& x) { return mx::sum(mx::astype(x[0], mx::float32) * 2.5f); };
  auto g = mx::grad(f)({array({1, 2, 3}, mx::int32)});
  EXPECT_EQ(g[0].dtype(), mx::int32);
  expect_close(g[0], {2, 2, 2});
  // Gather's indices get zeros under vjp.
  auto take = [](const A& x) { return mx::sum(mx::take(x[0], x[1], 0)); };
  auto gi = mx::grad(take, std::vector<int>{0, 1})({array({1.f, 2.f, 3.f}), array({2, 2}, mx::int32)});
  expect_close(gi[0], {0, 0, 2});
  EXPECT_EQ(gi[1].dtype(), mx::int32);
  expect_close(gi[1], {0, 0});
}

TEST(AutodiffTransforms, GradOfGrad) {
  auto f = [](const array& x) { return mx::sum(mx::sin(x) * x); };
  auto df = mx::grad(f);
  auto ddf = mx::grad([&df](const array& x) { return mx::sum(df(x)); });
  std::vector<double> xs{0.3, -1.2, 2.0};
  array x(std::vector<float>(xs.begin(), xs.end()), {3});
  std::vector<double> d1, d2;
  for (double v : xs) {
    d1.push_back(std::cos(v) * v + std::sin(v));
    d2.push_back(-std::sin(v) * v + 2 * std::cos(v));
  }
  expect_close(df(x), d1);
  expect_close(ddf(x), d2);
  // Third order, through the element-wise rules of the second derivative's graph.
  auto dddf = mx::grad([&ddf](const array& y) { return mx::sum(ddf(y)); });
  std::vector<double> d3;
  for (double v : xs) d3.push_back(-std::cos(v) * v - 3 * std::sin(v));
  expect_close(dddf(x), d3, 1e-4);
}

TEST(AutodiffTransforms, GradOfGradThroughFastRows) {
  // rms_norm's vjp is the RMSNormVJP row; its own derivative comes from the row's fallback.
  auto f = [](const array& x) { return mx::sum(mx::square(mx::fast::rms_norm(x, mx::ones({4}), 1e-5f))); };
  auto g = [](const array& x) {
    return mx::sum(mx::grad([](const array& y) { return mx::sum(mx::fast::rms_norm(y, mx::ones({4}), 1e-5f) * y); })(x));
  };
  array x({0.5f, -1.f, 2.f, 0.25f}, {1, 4});
  array gx = mx::grad(g)(x);
  // Against the same second derivative with the composite (non-fused) norm.
  auto ref = [](const array& x) {
    return mx::sum(mx::grad([](const array& y) {
      array n = y * mx::rsqrt(mx::mean(mx::square(y), -1, true) + 1e-5f);
      return mx::sum(n * y);
    })(x));
  };
  expect_close(gx, vals<double>(mx::grad(ref)(x)), 1e-4);
  EXPECT_EQ(mx::grad(f)(x).shape(), x.shape());
}

TEST(AutodiffTransforms, StopGradient) {
  auto f = [](const array& x) { return mx::sum(mx::stop_gradient(x) * x); };
  array x({1.f, 2.f, 3.f});
  expect_close(mx::grad(f)(x), {1, 2, 3});  // not 2x: the stopped factor is a constant
  expect_close(mx::grad([](const array& y) { return mx::sum(mx::stop_gradient(y * y)); })(x), {0, 0, 0});
  auto [o, t] = mx::jvp([](const array& y) { return mx::stop_gradient(y) * y; }, x, mx::ones({3}));
  expect_close(t, {1, 2, 3});
  // The node survives in the graph that is differentiated.
  auto rows = autodiff_test::rows_in({mx::stop_gradient(x * 2.0f)});
  EXPECT_NE(std::find(rows.begin(), rows.end(), "StopGradient"), rows.end());
  // A stop_gradient output takes no cotangent.
  auto [outs, g] = mx::vjp([](const A& in) { return A{mx::stop_gradient(in[0]), in[0] * 2.0f}; }, {x},
                           {mx::ones({3})});
  expect_close(g[0], {2, 2, 2});
  // Its row's own rule (used when it is reached directly) is zero.
  const auto* r = mx::detail::autodiff::rules().find(mx::registry::get("StopGradient"));
  ASSERT_NE(r, nullptr);
  ASSERT_NE(r->vjp, nullptr);
}

TEST(AutodiffTransforms, JvpMatchesVjpOnAComposite) {
  auto f = [](const A& x) { return A{mx::tanh(mx::matmul(x[0], x[1])), mx::sum(x[0], 1)}; };
  array a = mx::reshape(mx::arange(6.0, mx::float32), {2, 3}) * 0.1f, b = mx::ones({3, 2}) * 0.3f;
  array ta = mx::ones({2, 3}), tb = mx::zeros({3, 2});
  auto [outs, tans] = mx::jvp(f, {a, b}, {ta, tb});
  auto [o2, cots] = mx::vjp(f, {a, b}, {mx::ones({2, 2}), mx::zeros({2})});
  // <J ta, 1> == <ta, J^T 1>
  double lhs = 0, rhs = 0;
  for (double v : vals<double>(tans[0])) lhs += v;
  for (double v : vals<double>(cots[0])) rhs += v;
  EXPECT_NEAR(lhs, rhs, 1e-5);
}

TEST(AutodiffTransforms, GradOfAnImportedFunction) {
  const std::string path = kiln_test::temp_file("ad_import");
  auto model = [](const mx::Args& x) {
    return A{mx::sum(mx::tanh(mx::matmul(x[0], x[1])) * mx::sigmoid(x[0].shape(1) > 0 ? mx::sum(x[0], 1, true) : x[0]))};
  };
  array x = mx::reshape(mx::arange(6.0, mx::float32), {2, 3}) * 0.2f - 0.5f;
  array w = mx::reshape(mx::arange(12.0, mx::float32), {3, 4}) * 0.05f - 0.3f;
  mx::export_function(path, model, {x, w});
  auto imported = mx::import_function(path);
  auto loss_imported = [&imported](const A& in) { return imported(in)[0]; };
  auto loss_original = [&model](const A& in) { return model(in)[0]; };
  auto gi = mx::grad(loss_imported, std::vector<int>{0, 1})({x, w});
  auto go = mx::grad(loss_original, std::vector<int>{0, 1})({x, w});
  ASSERT_EQ(gi.size(), 2u);
  expect_close(gi[0], vals<double>(go[0]));
  expect_close(gi[1], vals<double>(go[1]));
  std::filesystem::remove(path);
}

TEST(AutodiffTransforms, ExportedTrainingStepRunsFromTheFile) {
  // A training step traced in C++ (loss, gradient, update), written to a file and run from it.
  const std::string path = kiln_test::temp_file("ad_train_step");
  auto loss = [](const A& p) {
    array pred = mx::matmul(p[0], p[1]);
    return mx::mean(mx::square(pred - p[2]));
  };
  auto step = [&loss](const mx::Args& a) {
    auto [value, grads] = mx::value_and_grad(loss, 1)(a);
    return A{value, a[1] - grads[0] * 0.1f};
  };
  array x = mx::reshape(mx::arange(8.0, mx::float32), {4, 2}) * 0.25f;
  array w = mx::ones({2, 1}) * 0.5f;
  array y = mx::reshape(array({1.f, 0.f, -1.f, 2.f}), {4, 1});
  mx::export_function(path, step, {x, w, y});
  auto imported = mx::import_function(path);
  auto want = step({x, w, y});
  auto got = imported({x, w, y});
  ASSERT_EQ(got.size(), 2u);
  expect_close(got[0], vals<double>(want[0]));
  expect_close(got[1], vals<double>(want[1]));
  // Run a few steps from the file: the loss goes down.
  array wi = w;
  float first = 0, last = 0;
  for (int i = 0; i < 5; ++i) {
    auto r = imported({x, wi, y});
    (i == 0 ? first : last) = r[0].item<float>();
    wi = r[1];
  }
  EXPECT_LT(last, first);
  std::filesystem::remove(path);
}

}  // namespace

namespace {

// ---- custom rules ----

TEST(AutodiffCustom, CustomVjpReplacesTheRule) {
  auto f = mx::custom_vjp([](const A& x) { return A{mx::sin(x[0])}; },
                          [](const A&, const A& cot, const A&) { return A{cot[0] * 2.0f}; });
  array x({0.5f, 1.f});
  auto [outs, g] = mx::vjp(f, {x}, {mx::ones({2})});
  expect_close(outs[0], {std::sin(0.5), std::sin(1.0)});
  expect_close(g[0], {2, 2});
  // Forward mode still differentiates the function itself.
  auto [o, t] = mx::jvp(f, {x}, {mx::ones({2})});
  expect_close(t[0], {std::cos(0.5), std::cos(1.0)});
  // grad through it, with a second argument the rule ignores being wrong about
  auto loss = [&f](const A& in) { return mx::sum(f({in[0]})[0] * in[1]); };
  auto gs = mx::grad(loss, std::vector<int>{0, 1})({x, array({3.f, 4.f})});
  expect_close(gs[0], {6, 8});
  expect_close(gs[1], {std::sin(0.5), std::sin(1.0)});
}

TEST(AutodiffCustom, CustomFunctionWithJvpAndOutputs) {
  // The rules see the primals and (vjp) the outputs.
  auto f = mx::custom_function(
      [](const A& x) { return A{mx::exp(x[0]), x[0] * x[1]}; },
      [](const A& p, const A& cot, const A& outs) { return A{cot[0] * outs[0] + cot[1] * p[1], cot[1] * p[0]}; },
      [](const A& p, const A& tan, const std::vector<int>& argnums) {
        array t0 = mx::zeros_like(p[0]), t1 = mx::zeros_like(p[0]);
        for (size_t j = 0; j < argnums.size(); ++j) {
          if (argnums[j] == 0) {
            t0 = t0 + tan[j] * mx::exp(p[0]) * 10.0f;  // deliberately scaled: the custom rule is used
            t1 = t1 + tan[j] * p[1];
          } else {
            t1 = t1 + tan[j] * p[0];
          }
        }
        return A{t0, t1};
      });
  array a({0.f, 1.f}), b({2.f, 3.f});
  auto [outs, g] = mx::vjp(f, {a, b}, {mx::ones({2}), mx::ones({2})});
  expect_close(g[0], {1 + 2, std::exp(1.0) + 3});
  expect_close(g[1], {0, 1});
  auto [o, t] = mx::jvp(f, {a, b}, {mx::ones({2}), mx::zeros({2})});
  expect_close(t[0], {10, 10 * std::exp(1.0)}, 1e-4);
  expect_close(t[1], {2, 3});
  EXPECT_EQ(message_of([&] { mx::custom_function([](const A&) { return A{}; }, std::nullopt, std::nullopt,
                                                 mx::CustomVmapFn([](const A& i, const std::vector<int>& ax) {
                                                   return std::make_pair(i, ax);
                                                 }))({a}); }),
            "[custom_function] The function must return at least one array.");
}

TEST(AutodiffCustom, WrongVjpResultCount) {
  auto f = mx::custom_vjp([](const A& x) { return A{x[0] * x[1]}; },
                          [](const A&, const A& cot, const A&) { return A{cot[0]}; });
  EXPECT_EQ(message_of([&] { mx::vjp(f, {mx::ones({2}), mx::ones({2})}, {mx::ones({2})}); }),
            "[custom_vjp] The vjp function returned 1 arrays for a function of 2 inputs.");
}

TEST(AutodiffCustom, CheckpointRecomputes) {
  auto body = [](const A& x) { return A{mx::tanh(mx::matmul(x[0], x[1]))}; };
  auto ck = mx::checkpoint(body);
  array a = mx::reshape(mx::arange(6.0, mx::float32), {2, 3}) * 0.1f, w = mx::ones({3, 2}) * 0.2f;
  auto loss = [](const std::function<A(const A&)>& f) {
    return [f](const A& in) { return mx::sum(mx::square(f(in)[0])); };
  };
  auto g_ck = mx::grad(loss(ck), std::vector<int>{0, 1})({a, w});
  auto g = mx::grad(loss(body), std::vector<int>{0, 1})({a, w});
  // The gradient's graph recomputes the body after a Depends on the forward outputs (checked before
  // evaluation, which drops the graph).
  auto rows = autodiff_test::rows_in(g_ck);
  EXPECT_NE(std::find(rows.begin(), rows.end(), "Depends"), rows.end());
  expect_close(g_ck[0], vals<double>(g[0]));
  expect_close(g_ck[1], vals<double>(g[1]));
  // The value is unchanged.
  expect_close(ck({a, w})[0], vals<double>(body({a, w})[0]));
}

TEST(AutodiffCustom, ExportOfACustomFunction) {
  // The node forwards its outputs in an export (it is not in MLX's serializer table), and the file
  // computes the function's values.
  const std::string path = kiln_test::temp_file("ad_custom");
  auto f = mx::custom_vjp([](const A& x) { return A{mx::sin(x[0]) * 3.0f}; },
                          [](const A&, const A& cot, const A&) { return A{cot[0]}; });
  array x({0.25f, 0.5f});
  mx::export_function(path, [&f](const mx::Args& a) { return f(a); }, {x});
  auto imported = mx::import_function(path);
  expect_close(imported({x})[0], {3 * std::sin(0.25), 3 * std::sin(0.5)});
  std::filesystem::remove(path);
}

// Divide's rules round as MLX's: cot / b for a and -(cot a) / b^2 for b (one division, not a product with a
// reciprocal), so gradients agree with MLX's to the last bit; complex operands are conjugated.
TEST(AutodiffDivide, RulesRoundAsTheQuotientRule) {
  const std::vector<float> a = {0.3f, -1.7f, 2.9f, 7.1f}, b = {1.3f, 0.7f, -3.1f, 0.11f}, c = {0.9f, -2.3f, 1.1f, 5.0f};
  const array xa(a.data(), {4}, mx::float32), xb(b.data(), {4}, mx::float32), ct(c.data(), {4}, mx::float32);
  auto f = [](const A& x) { return A{mx::divide(x[0], x[1])}; };
  auto g = mx::vjp(f, {xa, xb}, {ct}).second;
  auto t = mx::jvp(f, {xa, xb}, {ct, ct}).second;
  auto ga = vals<float>(g[0]), gb = vals<float>(g[1]), tv = vals<float>(t[0]);
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(ga[i], c[i] / b[i]) << i;
    EXPECT_EQ(gb[i], -((c[i] * a[i]) / (b[i] * b[i]))) << i;
    EXPECT_EQ(tv[i], c[i] / b[i] + -((c[i] * a[i]) / (b[i] * b[i]))) << i;
  }
  using C = std::complex<float>;
  const C za(1.5f, -2.0f), zb(0.5f, 3.0f), zc(-1.0f, 0.25f);
  auto h = mx::vjp(f, {array(mx::complex64_t(za)), array(mx::complex64_t(zb))}, {array(mx::complex64_t(zc))}).second;
  EXPECT_EQ(C(h[0].item<mx::complex64_t>()), zc / std::conj(zb));
  EXPECT_EQ(C(h[1].item<mx::complex64_t>()), -((zc * std::conj(za)) / (std::conj(zb) * std::conj(zb))));
}

}  // namespace
