// Exporting: the three function forms, exporters with several traces, constants, simplification,
// error texts, failed traces, callback events and deep graphs.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "format/callback.h"
#include "kiln/ops/misc.h"
#include "test_export_util.h"

namespace mx = kiln;
using namespace kiln_test;
using ::testing::HasSubstr;

namespace {

std::vector<mx::array> one(mx::array a) { return {std::move(a)}; }

size_t count_kind(const mx::FunctionInfo& f, mx::TapeEntryInfo::Kind k) {
  size_t n = 0;
  for (auto& t : f.tape) n += t.kind == k;
  return n;
}

}  // namespace

TEST(Export, ArgsFormRoundTrip) {
  auto path = temp_file("args");
  mx::array c({10.0f, 20.0f, 30.0f});
  mx::export_function(
      path, [c](const mx::Args& a) { return one(mx::subtract(mx::multiply(a[0], c), a[1])); },
      {mx::array({1.0f, 2.0f, 3.0f}), mx::array({0.5f, 0.5f, 0.5f})});
  auto f = mx::import_function(path);
  auto out = f({mx::array({2.0f, 3.0f, 4.0f}), mx::array({1.0f, 2.0f, 3.0f})});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(values<float>(out[0]), (std::vector<float>{19.0f, 58.0f, 117.0f}));
  std::remove(path.c_str());
}

TEST(Export, KwargsFormAndSorting) {
  auto path = temp_file("kwargs");
  // Keys are stored sorted ("alpha" < "beta") whatever the map's order; subtraction shows the binding.
  mx::export_function(
      path, [](const mx::Kwargs& k) { return one(mx::subtract(k.at("beta"), k.at("alpha"))); },
      mx::Kwargs{{"beta", mx::array({5.0f, 6.0f})}, {"alpha", mx::array({1.0f, 1.0f})}});
  auto f = mx::import_function(path);
  auto& info = f.info();
  ASSERT_EQ(info.functions.size(), 1u);
  EXPECT_EQ(info.functions[0].kwarg_keys, (std::vector<std::string>{"alpha", "beta"}));
  EXPECT_EQ(info.functions[0].num_positional(), 0u);
  auto out = f(mx::Kwargs{{"alpha", mx::array({1.0f, 2.0f})}, {"beta", mx::array({10.0f, 20.0f})}});
  EXPECT_EQ(values<float>(out[0]), (std::vector<float>{9.0f, 18.0f}));
  std::remove(path.c_str());
}

TEST(Export, ArgsAndKwargsForm) {
  auto path = temp_file("argskw");
  mx::export_function(
      path,
      [](const mx::Args& a, const mx::Kwargs& k) {
        return std::vector<mx::array>{mx::subtract(a[0], k.at("b")), mx::add(a[1], k.at("a"))};
      },
      {mx::array(1.0f), mx::array(2.0f)}, {{"b", mx::array(3.0f)}, {"a", mx::array(4.0f)}});
  auto f = mx::import_function(path);
  EXPECT_EQ(f.info().functions[0].kwarg_keys, (std::vector<std::string>{"a", "b"}));
  auto out = f({mx::array(10.0f), mx::array(20.0f)}, {{"a", mx::array(1.0f)}, {"b", mx::array(2.0f)}});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].item<float>(), 8.0f);
  EXPECT_EQ(out[1].item<float>(), 21.0f);
  std::remove(path.c_str());
}

TEST(Export, IdentityAndConstantOutputs) {
  auto path = temp_file("ident");
  mx::array c({7, 8});
  mx::export_function(path, [c](const mx::Args& a) { return std::vector<mx::array>{a[0], c}; }, {mx::array({1, 2})});
  auto f = mx::import_function(path);
  auto& r = f.info().functions[0];
  EXPECT_EQ(r.output_ids[0], r.input_ids[0]);
  EXPECT_EQ(count_kind(r, mx::TapeEntryInfo::Kind::Constant), 1u);
  auto out = f({mx::array({3, 4})});
  EXPECT_EQ(values<int32_t>(out[0]), (std::vector<int32_t>{3, 4}));
  EXPECT_EQ(values<int32_t>(out[1]), (std::vector<int32_t>{7, 8}));
  std::remove(path.c_str());
}

TEST(Export, MultipleTracesShareOneConstantPayload) {
  auto path = temp_file("multi");
  mx::array w({1.0f, 2.0f, 3.0f, 4.0f}, {2, 2});
  {
    auto ex = mx::exporter(path, [w](const mx::Args& a) {
      mx::array y = mx::multiply(a[0], w);
      return one(a.size() > 1 ? mx::add(y, a[1]) : y);
    });
    ex({mx::array({1.0f, 1.0f, 1.0f, 1.0f}, {2, 2})});
    ex({mx::array(2.0f)});
    ex({mx::array({1.0f, 1.0f, 1.0f, 1.0f}, {2, 2}), mx::array({5.0f, 5.0f, 5.0f, 5.0f}, {2, 2})});
  }
  auto f = mx::import_function(path);
  auto& info = f.info();
  ASSERT_EQ(info.functions.size(), 3u);
  EXPECT_EQ(info.constants, 1u);
  EXPECT_EQ(info.constant_bytes, 16u);
  size_t payloads = 0, refs = 0;
  uint64_t cid = 0;
  for (auto& r : info.functions) {
    for (auto& t : r.tape) {
      if (t.kind != mx::TapeEntryInfo::Kind::Constant) continue;
      (t.payload ? payloads : refs)++;
      if (cid == 0) cid = t.id;
      EXPECT_EQ(t.id, cid);  // one id for the shared constant in every record
    }
  }
  EXPECT_EQ(payloads, 1u);
  EXPECT_EQ(refs, 2u);
  // Each signature dispatches to its own record.
  EXPECT_EQ(values<float>(f({mx::array(3.0f)})[0]), (std::vector<float>{3, 6, 9, 12}));
  EXPECT_EQ(values<float>(f({mx::array({1.0f, 0.0f, 1.0f, 0.0f}, {2, 2})})[0]), (std::vector<float>{1, 0, 3, 0}));
  EXPECT_EQ(values<float>(f({mx::array({1.0f, 1.0f, 1.0f, 1.0f}, {2, 2}), mx::array({1.0f, 1.0f, 1.0f, 1.0f}, {2, 2})})[0]),
            (std::vector<float>{2, 3, 4, 5}));
  std::remove(path.c_str());
}

TEST(Export, ConstantViewsAreWrittenAsLogicalContents) {
  auto path = temp_file("view");
  mx::array base({1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f}, {2, 3});
  mx::array t = mx::transpose(base);  // (3, 2) strided view
  t.eval();
  ASSERT_FALSE(t.row_contiguous());
  mx::export_function(path, [t](const mx::Args& a) { return one(mx::add(a[0], t)); }, {mx::zeros({3, 2})});
  auto f = mx::import_function(path);
  auto out = f({mx::zeros({3, 2})});
  EXPECT_EQ(values<float>(out[0]), (std::vector<float>{1, 4, 2, 5, 3, 6}));
  std::remove(path.c_str());
}

TEST(Export, UnevaluatedCapturedGraphIsExportedWhole) {
  auto path = temp_file("lazy");
  mx::array c = mx::multiply(mx::array({1.0f, 2.0f}), mx::array({3.0f, 3.0f}));  // not evaluated
  mx::export_function(path, [c](const mx::Args& a) { return one(mx::add(a[0], c)); }, {mx::zeros({2})});
  auto f = mx::import_function(path);
  auto& r = f.info().functions[0];
  EXPECT_EQ(r.primitive_histogram.at("Multiply"), 1u);
  EXPECT_EQ(count_kind(r, mx::TapeEntryInfo::Kind::Constant), 2u);
  EXPECT_EQ(values<float>(f({mx::array({1.0f, 1.0f})})[0]), (std::vector<float>{4.0f, 7.0f}));
  std::remove(path.c_str());
}

TEST(Export, SimplifyMergesScalarsRemovesNoOpsAndCse) {
  auto path = temp_file("simplify");
  mx::export_function(
      path,
      [](const mx::Args& a) {
        mx::array x = mx::stop_gradient(a[0]);
        mx::array p = mx::multiply(x, mx::array(2.0f));
        mx::array q = mx::multiply(x, mx::array(2.0f));  // same as p after the scalar merge
        return one(mx::add(mx::copy(p), q));
      },
      {mx::array(1.5f)});
  auto f = mx::import_function(path);
  auto& r = f.info().functions[0];
  EXPECT_EQ(r.primitive_histogram.count("StopGradient"), 0u);
  EXPECT_EQ(r.primitive_histogram.count("Copy"), 0u);
  EXPECT_EQ(r.primitive_histogram.at("Multiply"), 1u);
  EXPECT_EQ(r.primitive_histogram.at("Add"), 1u);
  EXPECT_EQ(count_kind(r, mx::TapeEntryInfo::Kind::Constant), 1u);
  // Tape: x, 2, Multiply, Add; Add's inputs are the one product, twice.
  ASSERT_EQ(r.tape.size(), 4u);
  EXPECT_EQ(r.tape[3].input_ids[0], r.tape[3].input_ids[1]);
  EXPECT_EQ(f({mx::array(2.0f)})[0].item<float>(), 8.0f);
  std::remove(path.c_str());
}

TEST(Export, NoOpOutputBecomesItsInput) {
  auto path = temp_file("noopout");
  mx::export_function(path, [](const mx::Args& a) { return one(mx::stop_gradient(a[0])); }, {mx::array(1.0f)});
  auto f = mx::import_function(path);
  auto& r = f.info().functions[0];
  EXPECT_EQ(r.output_ids[0], r.input_ids[0]);
  EXPECT_EQ(f({mx::array(4.0f)})[0].item<float>(), 4.0f);
  std::remove(path.c_str());
}

TEST(Export, DuplicateSignatureAndClosedErrors) {
  auto path = temp_file("dup");
  auto ex = mx::exporter(path, [](const mx::Args& a) { return one(mx::add(a[0], a[0])); });
  ex({mx::zeros({2})});
  try {
    ex({mx::ones({2})});
    FAIL() << "expected a throw";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(),
                 "[export_function] Attempting to export a function twice with the same signature is not allowed.");
  }
  ex({mx::zeros({3})});  // another shape is another signature
  ex.close();
  try {
    ex({mx::zeros({4})});
    FAIL() << "expected a throw";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "[export_function] Attempting to write after exporting is closed.");
  }
  EXPECT_EQ(mx::import_function(path).info().functions.size(), 2u);

  // Shapeless: dtype and rank only.
  auto path2 = temp_file("dup2");
  auto ex2 = mx::exporter(path2, [](const mx::Args& a) { return one(mx::add(a[0], a[0])); }, true);
  ex2({mx::zeros({2})});
  EXPECT_THROW(ex2({mx::zeros({5})}), std::invalid_argument);
  ex2({mx::zeros({2, 2})});
  ex2({mx::zeros({2}, mx::int32)});
  EXPECT_EQ(mx::import_function(path2).info().functions.size(), 3u);
  std::remove(path.c_str());
  std::remove(path2.c_str());
}

TEST(Export, UnserializablePrimitiveIsRejectedBeforeWriting) {
  auto path = temp_file("unser");
  auto ex = mx::exporter(path, [](const mx::Args& a) {
    if (a[0].ndim() == 1) return one(mx::bitwise_invert(mx::add(a[0], a[0])));
    return one(mx::add(a[0], a[0]));
  });
  ex({mx::zeros({2, 2}, mx::int32)});
  auto before = read_bytes(path);
  try {
    ex({mx::zeros({3}, mx::int32)});
    FAIL() << "expected a throw";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "[export_function] Unable to serialize primitive BitwiseInvert");
  }
  EXPECT_EQ(read_bytes(path), before);  // nothing written for the failed trace
  ex({mx::zeros({4, 4}, mx::int32)});
  auto f = mx::import_function(path);
  EXPECT_EQ(f.info().functions.size(), 2u);
  EXPECT_EQ(values<int32_t>(f({mx::ones({2, 2}, mx::int32)})[0]), (std::vector<int32_t>{2, 2, 2, 2}));

  // Callback mode has its own text.
  auto cb = [](const mx::ExportCallbackInput&) {};
  try {
    mx::export_function(cb, [](const mx::Args& a) { return one(mx::bitwise_invert(a[0])); }, {mx::zeros({2}, mx::int32)});
    FAIL() << "expected a throw";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "[export_function] Unable to get state for primitive BitwiseInvert");
  }
  std::remove(path.c_str());
}

TEST(Export, FailedTraceLeavesAValidFile) {
  auto path = temp_file("failed");
  auto ex = mx::exporter(path, [](const mx::Args& a) {
    if (a[0].size() == 3) throw std::runtime_error("user failure");
    return one(mx::multiply(a[0], a[0]));
  });
  ex({mx::zeros({2})});
  EXPECT_THROW(ex({mx::zeros({3})}), std::runtime_error);
  auto f = mx::import_function(path);
  ASSERT_EQ(f.info().functions.size(), 1u);
  EXPECT_EQ(values<float>(f({mx::array({3.0f, 4.0f})})[0]), (std::vector<float>{9.0f, 16.0f}));
  // An exporter that exported nothing leaves a valid empty file.
  auto path2 = temp_file("empty");
  { auto ex2 = mx::exporter(path2, [](const mx::Args& a) { return one(a[0]); }); }
  EXPECT_EQ(mx::import_function(path2).info().functions.size(), 0u);
  std::remove(path.c_str());
  std::remove(path2.c_str());
}

TEST(Export, EvaluatingAPlaceholderWhileTracingThrows) {
  auto path = temp_file("item");
  try {
    mx::export_function(path, [](const mx::Args& a) { return one(mx::array(mx::add(a[0], a[0]).item<float>())); },
                        {mx::array(1.0f)});
    FAIL() << "expected a throw";
  } catch (const std::invalid_argument& e) {
    EXPECT_THAT(e.what(), HasSubstr("[export_function] Attempting to evaluate a placeholder"));
  }
  // Arrays that do not depend on the inputs may still be evaluated inside the function.
  mx::export_function(
      path,
      [](const mx::Args& a) {
        float s = mx::add(mx::array(1.0f), mx::array(2.0f)).item<float>();
        return one(mx::multiply(a[0], mx::array(s)));
      },
      {mx::array(1.0f)});
  EXPECT_EQ(mx::import_function(path)({mx::array(2.0f)})[0].item<float>(), 6.0f);
  std::remove(path.c_str());
}

TEST(Export, UncapturedExampleInputIsAnError) {
  auto path = temp_file("uncaptured");
  mx::array x({1.0f, 2.0f});
  try {
    mx::export_function(path, [x](const mx::Args& a) { return one(mx::add(a[0], x)); }, {x});
    FAIL() << "expected a throw";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "[compile] Attempting to compile a function with uncaptured inputs is not allowed.");
  }
  std::remove(path.c_str());
}

TEST(Export, OpenFailure) {
  try {
    mx::export_function("/nonexistent-dir/x.mlxfn", [](const mx::Args& a) { return one(a[0]); }, {mx::array(1.0f)});
    FAIL() << "expected a throw";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "[export_function] Failed to open /nonexistent-dir/x.mlxfn");
  }
}

TEST(Export, DependsRoundTripUsesSiblingForm) {
  auto path = temp_file("depends");
  mx::export_function(
      path,
      [](const mx::Args& a) {
        auto outs = mx::depends({a[0], a[1]}, {mx::multiply(a[0], a[1])});
        return std::vector<mx::array>{mx::add(outs[0], outs[1]), outs[1]};
      },
      {mx::array(1.0f), mx::array(2.0f)});
  auto f = mx::import_function(path);
  auto& r = f.info().functions[0];
  const mx::TapeEntryInfo* dep = nullptr;
  for (auto& t : r.tape) {
    if (t.name == "Depends") dep = &t;
  }
  ASSERT_NE(dep, nullptr);
  EXPECT_EQ(dep->input_ids.size(), 3u);
  EXPECT_EQ(dep->output_ids.size(), 2u);
  auto out = f({mx::array(3.0f), mx::array(4.0f)});
  EXPECT_EQ(out[0].item<float>(), 7.0f);
  EXPECT_EQ(out[1].item<float>(), 4.0f);
  std::remove(path.c_str());
}

// A 10^6-node chain exports, imports and runs without recursion.
TEST(Export, MillionNodeGraph) {
  auto path = temp_file("deep");
  const int n = 1000000;
  mx::export_function(
      path,
      [n](const mx::Args& a) {
        mx::array x = a[0];
        for (int i = 0; i < n; ++i) x = mx::add(x, a[1]);
        return one(x);
      },
      {mx::array(0), mx::array(1)});
  auto f = mx::import_function(path);
  EXPECT_EQ(f.info().functions[0].num_primitives, static_cast<size_t>(n));
  auto out = f({mx::array(5), mx::array(2)});
  EXPECT_EQ(out[0].item<int32_t>(), 5 + 2 * n);
  std::remove(path.c_str());
}

// Export -> import -> export gives the same bytes: the same tape order and, with kiln's running
// counter, even the same ids. Constants, keywords, several records and a multi-output node.
TEST(Export, ReExportIsByteIdentical) {
  auto path = temp_file("re1");
  auto path2 = temp_file("re2");
  mx::array w({1.0f, -2.0f, 3.0f, -4.0f}, {2, 2});
  auto fn = [w](const mx::Args& a, const mx::Kwargs& k) {
    auto qr = mx::divmod(mx::multiply(a[0], w), k.at("d"));
    return std::vector<mx::array>{mx::add(qr[0], mx::array(1.0f)), qr[1], mx::astype(a[0], mx::int32)};
  };
  {
    auto ex = mx::exporter(path, fn);
    ex({mx::ones({2, 2})}, {{"d", mx::full({2, 2}, 3.0f)}});
    ex({mx::ones({2, 2})}, {{"d", mx::array(2.0f)}});
  }
  auto f = mx::import_function(path);
  {
    auto ex = mx::exporter(path2, [&f](const mx::Args& a, const mx::Kwargs& k) { return f(a, k); });
    ex({mx::ones({2, 2})}, {{"d", mx::full({2, 2}, 3.0f)}});
    ex({mx::ones({2, 2})}, {{"d", mx::array(2.0f)}});
  }
  EXPECT_EQ(to_hex(read_bytes(path)), to_hex(read_bytes(path2)));
  auto out = mx::import_function(path2)({mx::array({5.0f, 5.0f, 5.0f, 5.0f}, {2, 2})}, {{"d", mx::array(2.0f)}});
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(values<float>(out[0]), (std::vector<float>{3.0f, -4.0f, 8.0f, -9.0f}));
  EXPECT_EQ(values<float>(out[1]), (std::vector<float>{1.0f, 0.0f, 1.0f, 0.0f}));
  EXPECT_EQ(values<int32_t>(out[2]), (std::vector<int32_t>{5, 5, 5, 5}));
  std::remove(path.c_str());
  std::remove(path2.c_str());
}

// ---- callback events (spec 4.8) ----

namespace {
struct Event {
  std::string type;
  mx::ExportCallbackInput data;
};
std::string names(const std::vector<std::tuple<std::string, mx::Shape, mx::Dtype>>& v) {
  std::string s;
  for (auto& [n, sh, dt] : v) s += (s.empty() ? "" : ",") + n;
  return s;
}
}  // namespace

TEST(ExportCallback, EventSequenceNamesAndArguments) {
  std::vector<Event> events;
  auto cb = [&](const mx::ExportCallbackInput& in) {
    events.push_back({std::get<std::string>(in.at("type")), in});
  };
  mx::array c({1.0f, 2.0f});
  auto fn = [c](const mx::Args& a, const mx::Kwargs& k) {
    mx::array m = mx::multiply(a[0], c);
    return std::vector<mx::array>{mx::add(m, k.at("z")), mx::astype(m, mx::int32), a[0]};
  };
  auto ex = mx::exporter(cb, fn);
  ex({mx::zeros({2}), mx::ones({2})}, {{"z", mx::zeros({2})}});
  ASSERT_EQ(events.size(), 7u);
  std::vector<std::string> types;
  for (auto& e : events) types.push_back(e.type);
  EXPECT_EQ(types, (std::vector<std::string>{"inputs", "keyword_inputs", "outputs", "constants", "primitive",
                                             "primitive", "primitive"}));
  using Described = std::vector<std::tuple<std::string, mx::Shape, mx::Dtype>>;
  auto& ins = std::get<Described>(events[0].data.at("inputs"));
  EXPECT_EQ(names(ins), "A,B,C");
  EXPECT_EQ(std::get<1>(ins[0]), mx::Shape({2}));
  EXPECT_EQ(std::get<2>(ins[0]), mx::float32);
  auto& kws = std::get<std::vector<std::pair<std::string, std::string>>>(events[1].data.at("keywords"));
  ASSERT_EQ(kws.size(), 1u);
  EXPECT_EQ(kws[0], (std::pair<std::string, std::string>{"z", "C"}));
  auto& outs = std::get<Described>(events[2].data.at("outputs"));
  EXPECT_EQ(names(outs), "D,E,A");
  EXPECT_EQ(std::get<2>(outs[1]), mx::int32);
  auto& consts = std::get<std::vector<std::pair<std::string, mx::array>>>(events[3].data.at("constants"));
  ASSERT_EQ(consts.size(), 1u);
  EXPECT_EQ(consts[0].first, "F");
  EXPECT_EQ(values<float>(consts[0].second), (std::vector<float>{1.0f, 2.0f}));
  // Multiply(A, F) -> G; Add(G, C) -> D; AsType(G) -> E with its dtype argument kept.
  EXPECT_EQ(std::get<std::string>(events[4].data.at("name")), "Multiply");
  EXPECT_EQ(names(std::get<Described>(events[4].data.at("inputs"))), "A,F");
  EXPECT_EQ(names(std::get<Described>(events[4].data.at("outputs"))), "G");
  EXPECT_EQ(std::get<std::string>(events[5].data.at("name")), "Add");
  EXPECT_EQ(names(std::get<Described>(events[5].data.at("outputs"))), "D");
  EXPECT_EQ(std::get<std::string>(events[6].data.at("name")), "AsType");
  auto& args = std::get<std::vector<mx::StateT>>(events[6].data.at("arguments"));
  ASSERT_EQ(args.size(), 1u);
  EXPECT_EQ(std::get<mx::Dtype>(args[0]), mx::int32);
  EXPECT_TRUE(std::get<std::vector<mx::StateT>>(events[4].data.at("arguments")).empty());

  // A second trace: the constant was reported already, so it is not listed again but gets a fresh name.
  events.clear();
  ex({mx::zeros({2}), mx::ones({2})}, {{"z", mx::zeros({})}});
  ASSERT_GE(events.size(), 4u);
  using Consts = std::vector<std::pair<std::string, mx::array>>;
  EXPECT_TRUE(std::get<Consts>(events[3].data.at("constants")).empty());
  bool saw_const_input = false;
  for (auto& e : events) {
    if (e.type != "primitive" || std::get<std::string>(e.data.at("name")) != "Multiply") continue;
    auto& in = std::get<Described>(e.data.at("inputs"));
    saw_const_input = std::get<0>(in[1]) == "F";  // A, B, C inputs; D, E outputs; F first new mention
  }
  EXPECT_TRUE(saw_const_input);
}

TEST(ExportCallback, NamesAfterZ) {
  EXPECT_EQ(mx::format::callback_name(1), "A");
  EXPECT_EQ(mx::format::callback_name(26), "Z");
  EXPECT_EQ(mx::format::callback_name(27), "AA");
  EXPECT_EQ(mx::format::callback_name(28), "AB");
  EXPECT_EQ(mx::format::callback_name(52), "AZ");
  EXPECT_EQ(mx::format::callback_name(53), "BA");
  EXPECT_EQ(mx::format::callback_name(702), "ZZ");
  EXPECT_EQ(mx::format::callback_name(703), "AAA");
}

TEST(ExportCallback, StateArgumentsAreFlattenedInSchemaOrder) {
  std::vector<mx::ExportCallbackInput> events;
  auto cb = [&](const mx::ExportCallbackInput& in) { events.push_back(in); };
  mx::export_function(cb, [](const mx::Args& a) { return one(mx::sum(a[0], std::vector<int>{1}, false)); },
                      {mx::zeros({2, 3})});
  bool found = false;
  for (auto& e : events) {
    if (std::get<std::string>(e.at("type")) != "primitive") continue;
    if (std::get<std::string>(e.at("name")) != "Reduce") continue;
    auto& args = std::get<std::vector<mx::StateT>>(e.at("arguments"));
    ASSERT_EQ(args.size(), 2u);
    EXPECT_EQ(std::get<int32_t>(args[0]), 2);  // Sum
    EXPECT_EQ(std::get<std::vector<int32_t>>(args[1]), std::vector<int32_t>{1});
    found = true;
  }
  EXPECT_TRUE(found);
}
