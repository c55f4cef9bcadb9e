// compile's fusion (src/transforms/compile_fuse.h): which element-wise groups become Compiled nodes (MLX's
// rules), that a Compiled node computes exactly what the unfused graph computes, and that it is
// differentiated, batched, exported (as its members) and named like MLX's.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <string>
#include <typeinfo>
#include <vector>

#include "kiln/kiln.h"
#include "unit/test_util.h"

namespace mx = kiln;
using Arrays = std::vector<mx::array>;
using ::testing::HasSubstr;

namespace {

struct ModeGuard {
  mx::CompileMode prev = mx::compile_mode();
  ~ModeGuard() { mx::set_compile_mode(prev); }
};

bool is_compiled(const mx::array& a) { return a.has_primitive() && typeid(a.primitive()) == typeid(mx::Compiled); }

// The rows of the nodes of `outs`' graph, once per node.
std::multiset<std::string> rows_of(const Arrays& outs) {
  std::multiset<std::string> rows;
  test_util::for_each_node(outs, [&](const mx::array& a) { rows.insert(a.node()->def->name); });
  return rows;
}

// Bit for bit (NaN where NaN).
void expect_identical(const Arrays& got, const Arrays& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_EQ(got[i].shape(), want[i].shape()) << what << " output " << i;
    ASSERT_EQ(got[i].dtype(), want[i].dtype()) << what << " output " << i;
    EXPECT_TRUE(mx::array_equal(got[i], want[i], true).item<bool>()) << what << " output " << i;
  }
}

Arrays abs_exp(const Arrays& in) { return {mx::abs(mx::exp(in[0]))}; }
Arrays abs_exp_copy(const Arrays& in) { return {mx::abs(mx::exp(in[0]))}; }
Arrays abs_log(const Arrays& in) { return {mx::abs(mx::log(in[0]))}; }
Arrays gelu(const Arrays& in) {
  auto& x = in[0];
  return {x * (1.0f + mx::erf(x / static_cast<float>(M_SQRT2))) / 2.0f};
}

}  // namespace

TEST(CompileFuse, GroupsFollowMlxRules) {
  auto x = mx::array({1.0f, -2.0f, 3.0f});
  auto y = mx::array({0.5f, 0.25f, -1.0f});
  // A single element-wise op is left alone.
  {
    auto out = mx::compile([](const Arrays& a) { return Arrays{mx::exp(a[0])}; })({x})[0];
    EXPECT_EQ(typeid(out.primitive()), typeid(mx::Exp));
    EXPECT_EQ(out.inputs()[0].id(), x.id());
  }
  // A chain: one Compiled node over the function's input.
  {
    auto out = mx::compile(abs_exp)({x})[0];
    ASSERT_TRUE(is_compiled(out));
    ASSERT_EQ(out.inputs().size(), 1u);
    EXPECT_EQ(out.inputs()[0].id(), x.id());
  }
  // Binary: the inputs in the order the group first reads them.
  {
    auto out = mx::compile([](const Arrays& a) { return Arrays{mx::abs(a[0] + a[1])}; })({x, y})[0];
    ASSERT_TRUE(is_compiled(out));
    ASSERT_EQ(out.inputs().size(), 2u);
    EXPECT_EQ(out.inputs()[0].id(), x.id());
    EXPECT_EQ(out.inputs()[1].id(), y.id());
  }
  // A reduction ends a group on both sides.
  {
    auto out = mx::compile([](const Arrays& a) { return Arrays{mx::exp(mx::abs(mx::sum(mx::abs(mx::exp(a[0])), true)))}; })({x})[0];
    ASSERT_TRUE(is_compiled(out));
    auto r = out.inputs()[0];
    EXPECT_EQ(typeid(r.primitive()), typeid(mx::Reduce));
    ASSERT_TRUE(is_compiled(r.inputs()[0]));
    EXPECT_EQ(r.inputs()[0].inputs()[0].id(), x.id());
  }
  // gelu: the captured scalars are inputs of the node (leaves), as in MLX.
  {
    auto out = mx::compile(gelu)({x})[0];
    ASSERT_TRUE(is_compiled(out));
    EXPECT_EQ(out.inputs().size(), 4u);
    for (auto& in : out.inputs()) EXPECT_FALSE(in.has_primitive());
  }
  // A member read outside the group is not fused: exp(x) feeds both an exp and a sum.
  {
    auto outs = mx::compile([](const Arrays& a) {
      auto e = mx::exp(a[0]);
      return Arrays{mx::exp(e), mx::sum(e, true)};
    })({x});
    EXPECT_EQ(typeid(outs[0].primitive()), typeid(mx::Exp));
    EXPECT_EQ(typeid(outs[1].primitive()), typeid(mx::Reduce));
  }
  // Members that are function outputs become outputs (siblings) of the node.
  {
    auto outs = mx::compile([](const Arrays& a) {
      auto p = mx::abs(a[0]);
      return Arrays{p, mx::square(p)};
    })({x});
    ASSERT_TRUE(is_compiled(outs[0]));
    ASSERT_TRUE(is_compiled(outs[1]));
    ASSERT_EQ(outs[0].siblings().size(), 1u);
    EXPECT_EQ(outs[0].siblings()[0].id(), outs[1].id());
    expect_identical(outs, {mx::abs(x), mx::square(mx::abs(x))}, "outputs of the group");
  }
  // Groups do not cross streams.
  {
    auto s2 = mx::new_stream(mx::Device::cpu);
    auto out = mx::compile([s2](const Arrays& a) {
      auto p = mx::exp(mx::abs(a[0]));
      return Arrays{mx::exp(mx::abs(p, s2), s2)};
    })({x})[0];
    ASSERT_TRUE(is_compiled(out));
    ASSERT_EQ(out.inputs().size(), 1u);
    ASSERT_TRUE(is_compiled(out.inputs()[0]));
    EXPECT_EQ(out.inputs()[0].inputs()[0].id(), x.id());
  }
  // No-ops are removed first: abs(stop_gradient(abs(x))) is one group over x.
  {
    auto out = mx::compile([](const Arrays& a) { return Arrays{mx::abs(mx::stop_gradient(mx::abs(a[0])))}; })({x})[0];
    ASSERT_TRUE(is_compiled(out));
    EXPECT_EQ(out.inputs()[0].id(), x.id());
  }
  // A broadcast is not a group's root, and one read by two groups joins each as a copy.
  {
    auto outs = mx::compile([](const Arrays& a) {
      auto b = mx::broadcast_to(a[1], {2, 3});
      return Arrays{mx::exp(mx::add(b, a[0])), mx::sum(b, 0)};
    })({mx::ones({2, 3}), x});
    ASSERT_TRUE(is_compiled(outs[0]));
    EXPECT_EQ(outs[0].inputs().size(), 2u);
    auto rows = rows_of({outs[1]});
    EXPECT_EQ(rows.count("Broadcast"), 1u);
    auto want = Arrays{mx::exp(mx::add(mx::broadcast_to(x, {2, 3}), mx::ones({2, 3}))), mx::sum(mx::broadcast_to(x, {2, 3}), 0)};
    expect_identical(outs, want, "broadcast copy");
  }
}

TEST(CompileFuse, DepthAndInputLimitsSplitGroups) {
  auto x = mx::array({0.5f, -0.25f});
  // 30 unary steps: more than the 11 steps a group may span from its root.
  auto chain = [](const Arrays& a) {
    auto v = a[0];
    for (int i = 0; i < 15; ++i) v = mx::cos(mx::sin(v));
    return Arrays{v};
  };
  auto out = mx::compile(chain)({x});
  auto rows = rows_of(out);
  EXPECT_GE(rows.count("Compiled"), 3u);
  EXPECT_EQ(rows.count("Sin") + rows.count("Cos"), 0u);
  expect_identical(out, chain({x}), "deep chain");
  // 40 inputs summed: no group has 24 or more external arrays.
  Arrays many;
  for (int i = 0; i < 40; ++i) many.push_back(mx::array({static_cast<float>(i), 1.0f}));
  auto sum_all = [](const Arrays& a) {
    auto v = a[0];
    for (size_t i = 1; i < a.size(); ++i) v = v + mx::abs(a[i]);
    return Arrays{v};
  };
  auto outs = mx::compile(sum_all)(many);
  int groups = 0;
  test_util::for_each_node(outs, [&](const mx::array& a) {
    if (!is_compiled(a)) return;
    ++groups;
    EXPECT_LT(a.inputs().size() + a.node()->specs.size(), 24u + 1u);
  });
  EXPECT_GE(groups, 2);
  expect_identical(outs, sum_all(many), "40 inputs");
}

// Compiled nodes give the unfused graph's bits, for every dtype the element-wise rows take and with
// broadcasting, strided and scalar inputs.
TEST(CompileFuse, CompiledNodesGiveTheUnfusedBits) {
  ModeGuard guard;
  auto f = [](const Arrays& a) {
    auto u = mx::maximum(mx::abs(a[0]) + a[1], a[1] * a[1]);
    auto w = mx::where(mx::greater(u, a[0]), u - a[0], mx::negative(u));
    return Arrays{w * a[1] + u, mx::square(w)};
  };
  auto g = [](const Arrays& a) {
    auto s = mx::sigmoid(a[0]) * mx::tanh(a[1]) + mx::exp(mx::negative(mx::abs(a[0])));
    return Arrays{mx::log1p(mx::abs(s)) / (mx::abs(a[1]) + 1.0f), mx::erf(s)};
  };
  const mx::Dtype ints[] = {mx::int32, mx::int64, mx::int16, mx::uint8};
  const mx::Dtype floats[] = {mx::float32, mx::float16, mx::bfloat16, mx::float64};
  auto x = mx::random::normal({4, 5}, mx::float32, 0.0f, 2.0f, mx::random::key(7));
  auto y = mx::random::normal({5}, mx::float32, 0.0f, 2.0f, mx::random::key(8));
  auto xt = mx::transpose(mx::random::normal({5, 4}, mx::float32, 0.0f, 2.0f, mx::random::key(9)));
  for (mx::Dtype t : floats) {
    for (auto& [name, fn] : std::vector<std::pair<std::string, mx::CompiledFn>>{{"f", f}, {"g", g}}) {
      for (auto ins : {Arrays{mx::astype(x, t), mx::astype(y, t)}, Arrays{mx::astype(xt, t), mx::astype(y, t)},
                       Arrays{mx::astype(x, t), mx::astype(mx::array(0.75f), t)}}) {
        mx::eval(ins);
        mx::set_compile_mode(mx::CompileMode::no_fuse);
        auto want = mx::compile(fn)(ins);
        mx::set_compile_mode(mx::CompileMode::enabled);
        auto got = mx::compile(fn)(ins);
        EXPECT_GT(rows_of(got).count("Compiled"), 0u) << name;
        expect_identical(got, want, name + " " + mx::dtype_name(t));
      }
    }
  }
  for (mx::Dtype t : ints) {
    Arrays ins{mx::astype(x * 10.0f, t), mx::astype(y * 10.0f, t)};
    mx::eval(ins);
    mx::set_compile_mode(mx::CompileMode::no_fuse);
    auto want = mx::compile(f)(ins);
    mx::set_compile_mode(mx::CompileMode::enabled);
    auto got = mx::compile(f)(ins);
    EXPECT_GT(rows_of(got).count("Compiled"), 0u);
    expect_identical(got, want, std::string("f ") + mx::dtype_name(t));
  }
}

TEST(CompileFuse, LibNameAndEquivalence) {
  auto a = mx::compile(abs_exp)({mx::array({1.0f, 2.0f})})[0];
  auto b = mx::compile(abs_exp_copy)({mx::array({3.0f})})[0];
  auto c = mx::compile(abs_log)({mx::array({1.0f, 2.0f})})[0];
  auto d = mx::compile(abs_exp)({mx::array({1, 2}, mx::int32)})[0];
  ASSERT_TRUE(is_compiled(a) && is_compiled(b) && is_compiled(c) && is_compiled(d));
  auto name = [](const mx::array& v) { return std::dynamic_pointer_cast<mx::Compiled>(v.primitive_ptr())->lib_name(); };
  EXPECT_FALSE(name(a).empty());
  EXPECT_EQ(name(a), name(b));  // the same operations at other shapes
  EXPECT_NE(name(a), name(c));
  EXPECT_NE(name(a), name(d));  // other dtypes
  EXPECT_TRUE(a.primitive().is_equivalent(b.primitive()));
  EXPECT_FALSE(a.primitive().is_equivalent(c.primitive()));
  EXPECT_STREQ(a.primitive().name(), "Compiled");
  // gelu's scalars are broadcast to the input's shape: the name still does not depend on it.
  auto g1 = mx::compile(gelu)({mx::array({2.0f, -2.0f})})[0];
  auto g2 = mx::compile(gelu)({mx::reshape(mx::astype(mx::arange(10), mx::float32), {2, 5})})[0];
  ASSERT_TRUE(is_compiled(g1) && is_compiled(g2));
  EXPECT_EQ(name(g1), name(g2));
  EXPECT_FALSE(g1.primitive().is_equivalent(g2.primitive()));  // other broadcast shapes
}

TEST(CompileFuse, GradVjpJvpAndVmapGoThroughTheMembers) {
  auto f = [](const Arrays& a) { return Arrays{mx::sin(a[0]) * a[1] + mx::exp(a[1] * a[0])}; };
  auto cf = mx::compile(f);
  auto x = mx::random::normal({3, 4}, mx::float32, 0.0f, 1.0f, mx::random::key(3));
  auto y = mx::random::normal({3, 4}, mx::float32, 0.0f, 1.0f, mx::random::key(4));
  mx::eval(x, y);
  ASSERT_TRUE(is_compiled(cf({x, y})[0]));
  auto loss = [](const mx::CompiledFn& fn) {
    return [fn](const Arrays& a) { return Arrays{mx::sum(fn(a)[0])}; };
  };
  auto [v1, g1] = mx::value_and_grad(loss(cf), std::vector<int>{0, 1})({x, y});
  auto [v2, g2] = mx::value_and_grad(loss(f), std::vector<int>{0, 1})({x, y});
  EXPECT_TRUE(mx::allclose(v1[0], v2[0], 1e-6, 1e-6).item<bool>());
  for (int i = 0; i < 2; ++i) EXPECT_TRUE(mx::allclose(g1[i], g2[i], 1e-6, 1e-6).item<bool>()) << i;
  auto ct = mx::ones({3, 4});
  auto [o1, t1] = mx::jvp(cf, {x, y}, {ct, ct});
  auto [o2, t2] = mx::jvp(f, {x, y}, {ct, ct});
  EXPECT_TRUE(mx::allclose(t1[0], t2[0], 1e-6, 1e-6).item<bool>());
}

TEST(CompileFuse, VmapOfACompiledFunctionMatchesTheFunction) {
  auto f = [](const Arrays& a) { return Arrays{mx::tanh(a[0]) * a[1] - mx::square(a[0])}; };
  auto cf = mx::compile(f);
  auto xb = mx::random::normal({5, 3, 4}, mx::float32, 0.0f, 1.0f, mx::random::key(11));
  auto y = mx::random::normal({3, 4}, mx::float32, 0.0f, 1.0f, mx::random::key(12));
  mx::eval(xb, y);
  auto got = mx::vmap(cf, {0, -1}, {0})({xb, y});
  auto want = mx::vmap(f, {0, -1}, {0})({xb, y});
  expect_identical(got, want, "vmap over the batch");
}

TEST(CompileFuse, NestedCompileFusesOnceAndExportWritesTheMembers) {
  static const auto inner = mx::compile([](const Arrays& a) { return Arrays{mx::exp(mx::exp(a[0]))}; });
  auto outer = mx::compile([](const Arrays& a) { return inner(inner(a)); });
  auto x = mx::array({0.1f, -0.2f});
  auto out = outer({x})[0];
  ASSERT_TRUE(is_compiled(out));
  EXPECT_EQ(out.inputs()[0].id(), x.id());
  EXPECT_EQ(rows_of({out}).size(), 1u);
  expect_identical({out}, {mx::exp(mx::exp(mx::exp(mx::exp(x))))}, "nested");

  // Exporting a function that calls a compiled function writes the members (MLX reads the file).
  const auto path = std::filesystem::temp_directory_path() / "kiln_compile_fuse_export.mlxfn";
  mx::export_function(path.string(), [](const Arrays& a) { return inner({a[0] * 2.0f}); }, {x});
  auto imported = mx::import_function(path.string());
  expect_identical(imported({x}), {mx::exp(mx::exp(x * 2.0f))}, "imported");
  // A captured lazy graph holding a Compiled node is written as its members too.
  auto lazy = inner({mx::array({0.3f, 0.4f})})[0];
  ASSERT_TRUE(is_compiled(lazy));
  mx::export_function(path.string(), [lazy](const Arrays& a) { return Arrays{a[0] + lazy}; }, {x});
  expect_identical(mx::import_function(path.string())({x}), {x + mx::exp(mx::exp(mx::array({0.3f, 0.4f})))}, "captured");
  std::filesystem::remove(path);
}

TEST(CompileFuse, ShapelessCompileFusesAndRunsAtOtherShapes) {
  auto f = [](const Arrays& a) { return Arrays{mx::exp(mx::abs(a[0]) * a[1]) + 1.0f}; };
  auto cf = mx::compile(f, /*shapeless=*/true);
  for (int n : {2, 7, 33}) {
    auto x = mx::random::normal({3, n}, mx::float32, 0.0f, 1.0f, mx::random::key(n));
    auto y = mx::random::normal({n}, mx::float32, 0.0f, 1.0f, mx::random::key(n + 1));
    auto got = cf({x, y});
    ASSERT_TRUE(is_compiled(got[0])) << n;
    EXPECT_EQ(got[0].shape(), (mx::Shape{3, n}));
    expect_identical(got, f({x, y}), "shapeless n=" + std::to_string(n));
  }
}

TEST(CompileFuse, ACompiledNodeWithoutAGroupIsRefused) {
  auto x = mx::array({1.0f});
  auto p = std::make_shared<mx::Compiled>(mx::default_stream(mx::Device::cpu), mx::State{std::string("x"), int32_t{1}, std::string("x")});
  auto bad = mx::array::make_arrays({{1}}, {mx::float32}, p, {x})[0];
  EXPECT_THAT(test_util::message_of([&] { bad.eval(); }), HasSubstr("[Compiled] The node has no fused group"));
  // Exporting a graph that holds it names the problem too.
  const auto path = std::filesystem::temp_directory_path() / "kiln_bad_compiled.mlxfn";
  auto bad2 = mx::array::make_arrays({{1}}, {mx::float32}, p, {mx::array({2.0f})})[0];
  EXPECT_THAT(test_util::message_of([&] {
                mx::export_function(path.string(), [bad2](const Arrays& a) { return Arrays{a[0] + bad2}; },
                                    {mx::array({3.0f})});
              }),
              HasSubstr("[Compiled] The node has no fused group"));
  std::filesystem::remove(path);
}
