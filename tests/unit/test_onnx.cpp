// kiln::to_onnx (src/onnx): every row has a lowering or a declared refusal; the API's refusals, errors,
// names and atomic output. ONNX Runtime runs the golden corpus in the `onnx` ctest (scripts/onnx).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <fstream>
#include <map>
#include <set>

#include "kiln/kiln.h"
#include "onnx/lowering.h"
#include "onnx/model.h"

namespace mx = kiln;
namespace fs = std::filesystem;
using ::testing::HasSubstr;

namespace {

// Rows without a lowering or a refusal yet (the families still to be written). A row listed here that
// gains an entry, or a row with neither that is not listed, fails.
const std::set<std::string> kNotLoweredYet = {};

fs::path scratch(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("kiln_onnx_test_" + std::to_string(::getpid()));
  fs::create_directories(d);
  return d / name;
}

onnx::ModelProto read_model(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  onnx::ModelProto m;
  EXPECT_TRUE(m.ParseFromIstream(&f)) << p;
  return m;
}

// The message of the OnnxRefusal that `f` throws; empty when it throws none (other exceptions pass).
std::string refusal_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const mx::OnnxRefusal& e) {
    return e.what();
  }
  return "";
}

std::string refusal_of(const fs::path& in, const fs::path& out, const mx::OnnxOptions& o = {}) {
  return refusal_of([&] { mx::to_onnx(in.string(), out.string(), o); });
}

}  // namespace

TEST(OnnxCoverage, EveryRowHasALoweringOrARefusal) {
  const auto& table = mx::onnx_export::lowerings();
  std::set<std::string> pending_seen;
  for (const mx::PrimitiveDef* def : mx::registry::all()) {
    const auto* e = table.find(def->name);
    const bool pending = kNotLoweredYet.count(def->name) > 0;
    if (!e) {
      EXPECT_TRUE(pending) << def->name << " has no ONNX lowering, no refusal and no entry in kNotLoweredYet";
      pending_seen.insert(def->name);
      continue;
    }
    EXPECT_FALSE(pending) << def->name << " has an ONNX table entry now: remove it from kNotLoweredYet";
    if (!e->lower) EXPECT_FALSE(e->refusal.empty()) << def->name << " is refused without a reason";
  }
  for (auto& name : kNotLoweredYet) {
    EXPECT_NE(mx::registry::find(name), nullptr) << name << " in kNotLoweredYet is not a row";
  }
}

// A row MLX replays in shapeless functions (PrimitiveDef::shapeless, the spec's SL column) and that ONNX
// can express serves shapeless functions too (a polymorphic lowering, python/tests/test_onnx.py's
// shapeless cases), or says why not (refuse_shapeless). Rows MLX cannot replay shapeless are refused
// there with MLX's reason by the driver.
TEST(OnnxCoverage, ShapelessRowsArePolymorphicOrSayWhy) {
  const auto& table = mx::onnx_export::lowerings();
  std::vector<std::string> with_reason;
  for (const mx::PrimitiveDef* def : mx::registry::all()) {
    const auto* e = table.find(def->name);
    if (!e || !e->lower || !def->shapeless) continue;
    EXPECT_TRUE(e->polymorphic || !e->shapeless_refusal.empty())
        << def->name << " is replayed shapeless by MLX, but its ONNX lowering is neither polymorphic nor refused "
                        "in shapeless functions with a reason";
    if (!e->polymorphic) with_reason.push_back(def->name);
  }
  std::sort(with_reason.begin(), with_reason.end());
  // The exceptions, named so that a new one is a decision (each with its reason in src/onnx/lower/).
  EXPECT_EQ(with_reason, (std::vector<std::string>{"Conjugate", "Hadamard", "Imag", "Real"}));
}

TEST(OnnxCoverage, TheTableRejectsUnknownAndDuplicateRows) {
  mx::onnx_export::LoweringTable t;
  EXPECT_THROW(t.add("NoSuchPrimitive", [](mx::onnx_export::Context&) {}), std::logic_error);
  t.refuse("View", "a reason");
  EXPECT_THROW(t.add("View", [](mx::onnx_export::Context&) {}), std::logic_error);
  EXPECT_THROW(t.refuse("Sort", ""), std::logic_error);
}

TEST(OnnxExport, NamesInputsByPositionAndKeywordAndOutputsInOrder) {
  const fs::path in = scratch("names.mlxfn"), out = scratch("names.onnx");
  mx::export_function(
      in.string(),
      [](const mx::Args& a, const mx::Kwargs& kw) {
        return std::vector<mx::array>{mx::add(a[0], kw.at("bias")), mx::exp(a[1]), a[0]};
      },
      mx::Args{mx::ones({2, 3}), mx::ones({4})}, mx::Kwargs{{"bias", mx::zeros({3})}});
  mx::to_onnx(in.string(), out.string());
  onnx::ModelProto m = read_model(out);
  std::vector<std::string> ins, outs;
  for (auto& v : m.graph().input()) ins.push_back(v.name());
  for (auto& v : m.graph().output()) outs.push_back(v.name());
  EXPECT_EQ(ins, (std::vector<std::string>{"arg0", "arg1", "bias"}));
  EXPECT_EQ(outs, (std::vector<std::string>{"out0", "out1", "out2"}));
  ASSERT_EQ(m.opset_import_size(), 1);
  EXPECT_EQ(m.opset_import(0).version(), 21);
  EXPECT_EQ(m.graph().input(0).type().tensor_type().shape().dim(1).dim_value(), 3);
}

TEST(OnnxExport, ConstantsBecomeInitializers) {
  const fs::path in = scratch("const.mlxfn"), out = scratch("const.onnx");
  mx::array w = mx::reshape(mx::arange(6.0), {2, 3});
  w.eval();  // a constant of the trace, not a graph of Arange and Reshape
  mx::export_function(in.string(), [w](const mx::Args& a) { return std::vector<mx::array>{mx::multiply(a[0], w)}; },
                      mx::Args{mx::ones({2, 3})});
  mx::to_onnx(in.string(), out.string());
  onnx::ModelProto m = read_model(out);
  bool found = false;
  for (auto& t : m.graph().initializer()) {
    if (t.dims_size() == 2 && t.dims(0) == 2 && t.dims(1) == 3 && t.raw_data().size() == 24) found = true;
  }
  EXPECT_TRUE(found);
}

TEST(OnnxExport, ARefusedPrimitiveIsNamedAndNothingIsWritten) {
  const fs::path in = scratch("refused.mlxfn"), out = scratch("refused.onnx");
  mx::export_function(in.string(), [](const mx::Args& a) { return std::vector<mx::array>{mx::view(a[0], mx::int32)}; },
                      mx::Args{mx::zeros({3})});
  fs::remove(out);
  const std::string msg = refusal_of(in, out);
  EXPECT_THAT(msg, HasSubstr("View"));
  EXPECT_THAT(msg, HasSubstr("reinterprets an array's bytes"));
  EXPECT_FALSE(fs::exists(out));
  // An existing file at the destination is left as it was.
  { std::ofstream(out) << "before"; }
  EXPECT_FALSE(refusal_of(in, out).empty());
  std::ifstream f(out);
  std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, "before");
  for (auto& e : fs::directory_iterator(out.parent_path())) {
    EXPECT_EQ(e.path().filename().string().find("refused.onnx."), std::string::npos) << e.path();
  }
}

TEST(OnnxExport, AnOpsetTooOldIsRefusedWithTheReason) {
  const fs::path in = scratch("opset.mlxfn"), out = scratch("opset.onnx");
  mx::export_function(in.string(), [](const mx::Args& a) { return std::vector<mx::array>{mx::exp(a[0])}; },
                      mx::Args{mx::zeros({3})});
  mx::OnnxOptions o;
  o.opset = 17;
  EXPECT_THAT(refusal_of(in, out, o), HasSubstr("opsets 18 to"));
  o.opset = 99;
  EXPECT_THAT(refusal_of(in, out, o), HasSubstr("Opset 99 is not supported"));
  o.opset = 18;
  mx::to_onnx(in.string(), out.string(), o);
  EXPECT_EQ(read_model(out).opset_import(0).version(), 18);
  // A primitive that needs a newer opset than the one asked for says which and why.
  const fs::path fft_in = scratch("fft.mlxfn");
  mx::export_function(fft_in.string(),
                      [](const mx::Args& a) { return std::vector<mx::array>{mx::abs(mx::fft::rfft(a[0]))}; },
                      mx::Args{mx::ones({8})});
  o.opset = 19;
  const std::string msg = refusal_of(fft_in, out, o);
  EXPECT_THAT(msg, HasSubstr("FFT needs ONNX opset 20 or newer (DFT"));
  EXPECT_THAT(msg, HasSubstr("the requested opset is 19"));
}

TEST(OnnxExport, BadPathsAndFunctionIndexGiveClearErrors) {
  const fs::path in = scratch("fn.mlxfn");
  mx::export_function(in.string(), [](const mx::Args& a) { return std::vector<mx::array>{mx::exp(a[0])}; },
                      mx::Args{mx::zeros({3})});
  try {
    mx::OnnxOptions o;
    o.function = 1;
    mx::to_onnx(in.string(), scratch("fn.onnx").string(), o);
    FAIL() << "no error";
  } catch (const std::out_of_range& e) {
    EXPECT_THAT(e.what(), HasSubstr("has 1 function(s); function 2 does not exist"));
  }
  EXPECT_THROW(mx::to_onnx(scratch("missing.mlxfn").string(), scratch("x.onnx").string()), std::exception);
  EXPECT_THROW(mx::to_onnx(in.string(), (scratch("no_such_dir") / "x.onnx").string()), std::exception);
  EXPECT_THROW(mx::to_onnx(in.string(), ""), std::invalid_argument);
}

TEST(OnnxExport, ExternalDataGoesToASideFile) {
  const fs::path in = scratch("ext.mlxfn"), out = scratch("ext.onnx");
  mx::array w = mx::arange(1024.0);
  mx::export_function(in.string(), [w](const mx::Args& a) { return std::vector<mx::array>{mx::add(a[0], w)}; },
                      mx::Args{mx::ones({1024})});
  mx::OnnxOptions o;
  o.external_data = true;
  mx::to_onnx(in.string(), out.string(), o);
  ASSERT_TRUE(fs::exists(scratch("ext.onnx.data")));
  EXPECT_EQ(fs::file_size(scratch("ext.onnx.data")), 4096u);
  onnx::ModelProto m = read_model(out);
  bool external = false;
  for (auto& t : m.graph().initializer()) {
    if (t.data_location() == onnx::TensorProto::EXTERNAL) {
      external = true;
      EXPECT_FALSE(t.has_raw_data());
      EXPECT_EQ(t.external_data(0).value(), "ext.onnx.data");
    }
  }
  EXPECT_TRUE(external);
}

// Models over protobuf's 2 GB: the check takes the model's serialized size before anything is
// written, so it is tested with a declared size and, end to end, with the limit lowered to the size of
// a small model (no 2 GB allocated).
TEST(OnnxExport, AModelOverProtobufsLimitIsRefusedNamingTheFlag) {
  namespace ox = mx::onnx_export;
  EXPECT_EQ(ox::kProtobufLimit, 2147483647u);
  mx::OnnxOptions o;
  EXPECT_NO_THROW(ox::check_protobuf_size(ox::kProtobufLimit, o));
  std::string msg = refusal_of([&] { ox::check_protobuf_size(uint64_t(3) << 30, o); });
  EXPECT_THAT(msg, HasSubstr("3221225472 bytes, over protobuf's limit of 2147483647 bytes"));
  EXPECT_THAT(msg, HasSubstr("convert with external data (--external-data"));
  o.external_data = true;
  msg = refusal_of([&] { ox::check_protobuf_size(uint64_t(3) << 30, o); });
  EXPECT_THAT(msg, HasSubstr("Even with external data"));
  EXPECT_THAT(msg, HasSubstr("initializers under 1024 bytes stay in the model file"));
}

TEST(OnnxExport, TheSizeCheckComesBeforeAnyFileIsWritten) {
  namespace ox = mx::onnx_export;
  const fs::path in = scratch("big.mlxfn"), out = scratch("big.onnx"), side = scratch("big.onnx.data");
  mx::array w = mx::arange(4096.0);  // 16 KiB of float32 constant
  mx::export_function(in.string(), [w](const mx::Args& a) { return std::vector<mx::array>{mx::add(a[0], w)}; },
                      mx::Args{mx::ones({4096})});
  const mx::ImportedFunction fn = mx::import_function(in.string());
  mx::OnnxOptions o;
  const uint64_t whole = ox::build_model(fn, o).ByteSizeLong();
  ASSERT_GT(whole, 16384u);
  fs::remove(out);
  fs::remove(side);
  // Over the limit without external data: refused, naming the flag; no file.
  onnx::ModelProto m = ox::build_model(fn, o);
  EXPECT_THAT(refusal_of([&] { ox::write_model(m, out.string(), o, whole - 1); }), HasSubstr("--external-data"));
  EXPECT_FALSE(fs::exists(out));
  EXPECT_FALSE(fs::exists(side));
  // With external data the constant leaves the model, which then fits.
  o.external_data = true;
  m = ox::build_model(fn, o);
  ox::write_model(m, out.string(), o, 4096);
  ASSERT_TRUE(fs::exists(side));
  EXPECT_EQ(fs::file_size(side), 16384u);
  EXPECT_LT(fs::file_size(out), 4096u);
  // A limit even the rest exceeds: refused, and neither file is written.
  fs::remove(out);
  fs::remove(side);
  m = ox::build_model(fn, o);
  EXPECT_THAT(refusal_of([&] { ox::write_model(m, out.string(), o, 16); }), HasSubstr("Even with external data"));
  EXPECT_FALSE(fs::exists(out));
  EXPECT_FALSE(fs::exists(side));
}
