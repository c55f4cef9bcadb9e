// compile (kiln/compile.h): compiled functions give what the function gives, trace once per
// signature, replay the kept trace, and follow the compile modes.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "kiln/kiln.h"

namespace mx = kiln;
using Arrays = std::vector<mx::array>;

namespace {

// Restores the compile mode a test changes.
struct ModeGuard {
  mx::CompileMode prev = mx::compile_mode();
  ~ModeGuard() { mx::set_compile_mode(prev); }
};

void expect_same(const Arrays& got, const Arrays& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].shape(), want[i].shape()) << what << " output " << i;
    EXPECT_EQ(got[i].dtype(), want[i].dtype()) << what << " output " << i;
    EXPECT_TRUE(mx::allclose(got[i], want[i], 1e-5, 1e-6, true).item<bool>()) << what << " output " << i;
  }
}

Arrays plain_add_exp(const Arrays& in) { return {mx::exp(mx::add(in[0], in[1]))}; }

}  // namespace

TEST(Compile, CompiledEqualsUncompiledOnManyFunctions) {
  auto x = mx::random::normal({4, 5}, mx::float32, 0.0f, 1.0f, mx::random::key(1));
  auto y = mx::random::normal({4, 5}, mx::float32, 0.0f, 1.0f, mx::random::key(2));
  auto w = mx::random::normal({5, 3}, mx::float32, 0.0f, 1.0f, mx::random::key(3));
  mx::eval(x, y, w);
  std::vector<std::pair<std::string, mx::CompiledFn>> funs = {
      {"unary chain", [](const Arrays& a) { return Arrays{mx::tanh(mx::exp(mx::negative(mx::abs(a[0]))))}; }},
      {"binary", [](const Arrays& a) { return Arrays{mx::add(mx::multiply(a[0], a[1]), mx::divide(a[1], mx::add(mx::abs(a[0]), mx::array(1.0f))))}; }},
      {"scalars", [](const Arrays& a) { return Arrays{mx::add(mx::multiply(a[0], mx::array(2.0f)), mx::array(2.0f))}; }},
      {"common subexpressions", [](const Arrays& a) {
         auto e1 = mx::exp(a[0]);
         auto e2 = mx::exp(a[0]);
         return Arrays{mx::add(e1, e2)};
       }},
      {"reductions", [](const Arrays& a) {
         return Arrays{mx::sum(a[0], 1), mx::max(a[1], std::vector<int>{0}, true), mx::mean(mx::multiply(a[0], a[1]))};
       }},
      {"softmax and matmul", [](const Arrays& a) { return Arrays{mx::softmax(mx::matmul(a[0], a[2]), -1)}; }},
      {"shape ops", [](const Arrays& a) {
         return Arrays{mx::transpose(mx::reshape(a[0], {2, 10})), mx::concatenate({a[0], a[1]}, 0),
                       mx::slice(a[1], {1, 1}, {3, 4})};
       }},
      {"comparison and where", [](const Arrays& a) {
         return Arrays{mx::where(mx::greater(a[0], a[1]), a[0], a[1]), mx::astype(mx::less(a[0], a[1]), mx::int32)};
       }},
      {"an input returned as is", [](const Arrays& a) { return Arrays{a[1], mx::square(a[0])}; }},
      {"no-ops", [](const Arrays& a) { return Arrays{mx::add(mx::copy(mx::stop_gradient(a[0])), a[1])}; }},
      {"gelu", [](const Arrays& a) {
         auto v = a[0];
         return Arrays{mx::multiply(mx::multiply(v, mx::array(0.5f)),
                                    mx::add(mx::array(1.0f), mx::erf(mx::divide(v, mx::array(std::sqrt(2.0f))))))};
       }},
  };
  Arrays inputs{x, y, w};
  for (auto& [name, f] : funs) {
    auto want = f(inputs);
    auto cf = mx::compile(f);
    expect_same(cf(inputs), want, name);
    expect_same(cf(inputs), want, name + " (replayed)");
  }
}

TEST(Compile, TracesOncePerSignatureAndRetracesOnNewShapes) {
  int calls = 0;
  auto f = [&calls](const Arrays& a) {
    ++calls;
    return Arrays{mx::add(mx::multiply(a[0], a[0]), mx::array(1.0f))};
  };
  auto cf = mx::compile(f);
  auto traces0 = mx::detail::compile_trace_count();
  auto out = cf({mx::array({1.0f, 2.0f})})[0];
  EXPECT_EQ(calls, 1);
  EXPECT_TRUE(mx::array_equal(out, mx::array({2.0f, 5.0f})).item<bool>());
  out = cf({mx::array({3.0f, 4.0f})})[0];
  EXPECT_EQ(calls, 1);  // replayed, not called again
  EXPECT_TRUE(mx::array_equal(out, mx::array({10.0f, 17.0f})).item<bool>());
  out = cf({mx::array({1.0f, 2.0f, 3.0f})})[0];  // new shape: traced again
  EXPECT_EQ(calls, 2);
  EXPECT_TRUE(mx::array_equal(out, mx::array({2.0f, 5.0f, 10.0f})).item<bool>());
  out = cf({mx::array({1, 2})})[0];  // new dtype: traced again
  EXPECT_EQ(calls, 3);
  EXPECT_EQ(out.dtype(), mx::float32);
  EXPECT_EQ(mx::detail::compile_trace_count() - traces0, 3u);
  // Copies of a compiled function share its traces.
  auto copy = cf;
  copy({mx::array({5.0f, 6.0f})});
  EXPECT_EQ(calls, 3);
}

TEST(Compile, ShapelessReusesOneTraceAcrossShapes) {
  int calls = 0;
  auto f = [&calls](const Arrays& a) {
    ++calls;
    return Arrays{mx::exp(mx::add(a[0], a[1]))};
  };
  auto cf = mx::compile(f, /*shapeless=*/true);
  auto a = mx::ones({2, 3});
  auto b = mx::ones({3});
  expect_same(cf({a, b}), f({a, b}), "first");
  EXPECT_EQ(calls, 2);  // one trace, one direct call
  auto c = mx::full({5, 4}, 0.5f);
  auto d = mx::full({4}, -0.25f);
  auto out = cf({c, d});
  EXPECT_EQ(calls, 2);  // same ranks and dtypes: no retrace
  EXPECT_EQ(out[0].shape(), (mx::Shape{5, 4}));
  EXPECT_NEAR(mx::max(out[0]).item<float>(),
              std::exp(0.25f), 1e-6);
  cf({mx::ones({2, 2, 3}), b});  // a new rank traces again
  EXPECT_EQ(calls, 3);
}

TEST(Compile, ModesDisableSkipSimplificationAndReenable) {
  ModeGuard restore;
  int calls = 0;
  auto f = [&calls](const Arrays& a) {
    ++calls;
    return Arrays{mx::add(mx::exp(a[0]), mx::exp(a[0]))};
  };
  auto x = mx::array({0.0f, 1.0f});
  auto want = f({x});
  calls = 0;

  mx::disable_compile();
  EXPECT_EQ(mx::compile_mode(), mx::CompileMode::disabled);
  auto cf = mx::compile(f);
  cf({x});
  cf({x});
  EXPECT_EQ(calls, 2);  // called every time
  EXPECT_NO_THROW(mx::compile(nullptr));  // as MLX: nothing is checked while disabled

  mx::enable_compile();
  EXPECT_THROW(mx::compile(nullptr), std::invalid_argument);
  EXPECT_THROW(mx::compile(mx::CompiledFn{}), std::invalid_argument);
  calls = 0;
  auto cg = mx::compile(f);
  cg({x});
  cg({x});
  EXPECT_EQ(calls, 1);

  // Simplified: the two Exp nodes are merged; no_simplify keeps both. Without fusion (no_fuse) the graph
  // shows it; fused, the Compiled node's group does (its lib_name lists the steps).
  auto lib = [](const mx::array& out) { return std::dynamic_pointer_cast<mx::Compiled>(out.primitive_ptr())->lib_name(); };
  mx::set_compile_mode(mx::CompileMode::no_fuse);
  auto simplified = cg({x})[0];
  EXPECT_EQ(simplified.inputs()[0].id(), simplified.inputs()[1].id());
  expect_same({simplified}, want, "no_fuse");
  mx::set_compile_mode(mx::CompileMode::enabled);
  EXPECT_THAT(lib(cg({x})[0]), ::testing::StartsWith("Compiled_Exp_Add|"));
  mx::set_compile_mode(mx::CompileMode::no_simplify);
  EXPECT_THAT(lib(cg({x})[0]), ::testing::StartsWith("Compiled_Exp_Exp_Add|"));
  expect_same(cg({x}), want, "no_simplify");
  mx::set_compile_mode(mx::CompileMode::enabled);
  expect_same(cg({x}), want, "enabled");
}

TEST(Compile, PlainFunctionsShareACacheAndNest) {
  auto x = mx::array({0.5f, -1.0f});
  auto y = mx::array({2.0f, 3.0f});
  auto traces0 = mx::detail::compile_trace_count();
  auto a = mx::compile(plain_add_exp)({x, y})[0];
  auto b = mx::compile(plain_add_exp)({x, y})[0];
  EXPECT_EQ(mx::detail::compile_trace_count() - traces0, 1u);  // the second compile found the trace
  EXPECT_TRUE(mx::allclose(a, mx::exp(mx::add(x, y))).item<bool>());
  EXPECT_TRUE(mx::array_equal(a, b).item<bool>());
  // A compiled function called inside another one's trace.
  auto inner = mx::compile([](const Arrays& in) { return Arrays{mx::multiply(in[0], mx::array(3.0f))}; });
  auto outer = mx::compile([inner](const Arrays& in) { return Arrays{mx::add(inner({in[0]})[0], in[1])}; });
  auto out = outer({x, y})[0];
  EXPECT_TRUE(mx::allclose(out, mx::array({3.5f, 0.0f})).item<bool>());
}

TEST(Compile, CapturedArraysAreConstantsAndInputsMustNotBeCaptured) {
  auto c = mx::array({10.0f, 20.0f});
  mx::eval(c);
  auto cf = mx::compile([c](const Arrays& in) { return Arrays{mx::add(in[0], c)}; });
  auto out = cf({mx::array({1.0f, 2.0f})})[0];
  EXPECT_TRUE(mx::array_equal(out, mx::array({11.0f, 22.0f})).item<bool>());

  auto x = mx::array({1.0f, 2.0f});
  auto bad = mx::compile([x](const Arrays& in) { return Arrays{mx::add(in[0], x)}; });
  try {
    bad({x});
    FAIL() << "expected a throw";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "[compile] Attempting to compile a function with uncaptured inputs is not allowed.");
  }
}

TEST(Compile, FunctionsMustReturnArrays) {
  auto cf = mx::compile([](const Arrays& in) { return Arrays{mx::exp(in[0]), mx::array()}; });
  try {
    cf({mx::array(1.0f)});
    FAIL() << "expected a throw";
  } catch (const std::invalid_argument& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("[compile] The function's output 1 is an empty (default-constructed) array"));
  }
  // Nothing was cached: a second call fails the same way.
  EXPECT_THROW(cf({mx::array(1.0f)}), std::invalid_argument);
  auto ok = mx::compile([](const Arrays& in) { return Arrays{mx::exp(in[0])}; });
  EXPECT_THROW(ok({mx::array()}), std::invalid_argument);
  // A function that returns nothing compiles to one that returns nothing.
  auto none = mx::compile([](const Arrays&) { return Arrays{}; });
  EXPECT_TRUE(none({mx::array(1.0f)}).empty());
}

TEST(Compile, EvaluatingInsideACompiledFunctionThrows) {
  auto cf = mx::compile([](const Arrays& in) {
    float v = in[0].item<float>();
    return Arrays{mx::array(v)};
  });
  EXPECT_ANY_THROW(cf({mx::array(1.0f)}));
}
