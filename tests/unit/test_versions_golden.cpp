// Files written by real MLX releases (tests/golden/versions/<version>/, made by
// scripts/versions/make_fixtures.py from the PyPI wheels): kiln reads each in its release's layout and
// reproduces MLX's outputs, and every file -- these and the MLX 0.30.1 corpus -- converted to every
// supported layout and back is byte-identical, unless the target refuses (naming the primitive and
// the version) or drops a value it has no field for (listed below).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <set>
#include <fstream>
#include <nlohmann/json.hpp>

#include "format/codec.h"
#include "format/record.h"
#include "primitives/misc/load.h"
#include "test_export_util.h"

namespace fs = std::filesystem;
namespace mx = kiln;
namespace fmt = kiln::format;
using namespace kiln_test;
using ::testing::HasSubstr;

namespace {

const fs::path kVersions = fs::path(KILN_TEST_DATA) / "golden" / "versions";

struct VCase {
  std::string version;
  nlohmann::json j;
  std::string name() const { return j["name"].get<std::string>(); }
  fs::path dir() const { return kVersions / version / name(); }
  fs::path file() const { return kVersions / version / j["file"].get<std::string>(); }
};

std::vector<std::string> fixture_versions() {
  std::vector<std::string> v;
  for (auto& e : fs::directory_iterator(kVersions)) {
    if (fs::exists(e.path() / "manifest.json")) v.push_back(e.path().filename().string());
  }
  std::sort(v.begin(), v.end(), [](const std::string& a, const std::string& b) {
    fmt::FormatVersion x, y;
    fmt::FormatVersion::parse(a, x);
    fmt::FormatVersion::parse(b, y);
    return x < y;
  });
  return v;
}

const std::vector<VCase>& fixture_cases() {
  static const std::vector<VCase> cases = [] {
    std::vector<VCase> out;
    for (auto& v : fixture_versions()) {
      std::ifstream f(kVersions / v / "manifest.json");
      auto m = nlohmann::json::parse(f);
      EXPECT_EQ(m["version"].get<std::string>(), v);
      for (auto& c : m["cases"]) out.push_back({v, c});
    }
    return out;
  }();
  return cases;
}

// Primitives kiln does not implement; their files must fail naming them (none at present).
const std::map<std::string, std::string> kUnsupported = {};

fmt::ParsedFile parse_mem(const std::vector<uint8_t>& bytes, std::shared_ptr<fmt::MemorySource>& keep) {
  keep = std::make_shared<fmt::MemorySource>(bytes);
  auto src = keep;
  return fmt::read_file(*src, [src](const mx::ArraySpec& s, uint64_t off, uint64_t n) {
    return mx::detail::load_constant(src, s, off, n);
  });
}

// The file rewritten in layout `v` (as convert_file does, in memory). `target_reads` false: the bytes
// MLX `v`'s writer produces even where its own reader would rebuild a node wrongly.
std::vector<uint8_t> write_as(const fmt::ParsedFile& f, const fmt::FormatVersion& v, bool target_reads = true) {
  fmt::ByteWriter w;
  fmt::write_header(w, v, static_cast<int32_t>(f.records.size()), f.shapeless,
                    fmt::header_has_metadata(v) ? f.metadata : "");
  std::unordered_set<uint64_t> written;
  for (auto& r : f.records) {
    std::vector<uint64_t> added;
    fmt::write_record(w, r, v, written, added, "convert", target_reads);
    written.insert(added.begin(), added.end());
  }
  return w.flatten();
}

std::vector<uint8_t> convert(const std::vector<uint8_t>& bytes, const fmt::FormatVersion& v) {
  std::shared_ptr<fmt::MemorySource> keep;
  return write_as(parse_mem(bytes, keep), v);
}

std::vector<fmt::FormatVersion> targets() {
  std::vector<fmt::FormatVersion> out;
  for (auto& s : fmt::supported_versions()) {
    fmt::FormatVersion v;
    fmt::FormatVersion::parse(s, v);
    out.push_back(v);
  }
  return out;
}

std::string check_outputs(const VCase& c, const mx::ImportedFunction& f) {
  std::string errs;
  int ci = 0;
  for (auto& call : c.j["calls"]) {
    mx::Args args;
    mx::Kwargs kwargs;
    for (auto& a : call["args"]) args.push_back(mx::load((c.dir() / a["file"].get<std::string>()).string()));
    for (auto& [k, a] : call["kwargs"].items()) kwargs.insert({k, mx::load((c.dir() / a["file"].get<std::string>()).string())});
    auto outs = f(args, kwargs);
    mx::eval(outs);
    auto& want = call["outputs"];
    if (outs.size() != want.size()) return "call " + std::to_string(ci) + ": output count differs";
    for (size_t i = 0; i < outs.size(); ++i) {
      auto w = mx::load((c.dir() / want[i]["file"].get<std::string>()).string());
      if (outs[i].shape() != w.shape() || outs[i].dtype() != w.dtype()) {
        errs += " call " + std::to_string(ci) + " output " + std::to_string(i) + ": shape/dtype differ;";
      } else if (!mx::allclose(outs[i], w, c.j["rtol"].get<double>(), c.j["atol"].get<double>(), true).item<bool>()) {
        errs += " call " + std::to_string(ci) + " output " + std::to_string(i) + ": values differ;";
      }
    }
    ++ci;
  }
  return errs;
}

}  // namespace

TEST(VersionsGolden, FixturesCoverEveryWheelLayout) {
  auto v = fixture_versions();
  // One release per layout that has a Linux CPU wheel (0.25.2 is the oldest on PyPI).
  for (const char* want : {"0.25.2", "0.26.1", "0.26.2", "0.29.0", "0.29.4", "0.30.1", "0.31.2", "0.32.0", "0.32.1",
                           "0.32.2", "0.32.3", "0.32.4"}) {
    EXPECT_NE(std::find(v.begin(), v.end(), want), v.end()) << want;
  }
  EXPECT_GE(fixture_cases().size(), 150u);
}

// Every real file imports in its own layout and gives MLX's outputs.
TEST(VersionsGolden, EveryReleaseFileImportsAndMatchesMLX) {
  int ran = 0, parsed = 0;
  for (auto& c : fixture_cases()) {
    SCOPED_TRACE(c.version + "/" + c.name());
    auto un = kUnsupported.find(c.name());
    if (un != kUnsupported.end()) {
      try {
        mx::import_function(c.file().string());
        ADD_FAILURE() << "expected " << un->second << " to be unsupported";
      } catch (const std::invalid_argument& e) {
        EXPECT_EQ(std::string(e.what()), "[import_function] Unable to deserialize primitive " + un->second);
      }
      continue;
    }
    auto f = mx::import_function(c.file().string());
    ++parsed;
    EXPECT_EQ(f.info().version, c.version);
    EXPECT_EQ(f.info().format, c.version);
    EXPECT_EQ(f.info().shapeless, c.j["shapeless"].get<bool>());
    EXPECT_EQ(f.metadata(), c.j.value("metadata", std::string()));
    if (!c.j["runs"].get<bool>()) continue;
    EXPECT_EQ(check_outputs(c, f), "");
    ++ran;
  }
  std::printf("[versions] %d real files parsed, %d run against MLX's outputs\n", parsed, ran);
  EXPECT_GE(ran, 150);
}

// What the layouts changed, seen in the real files.
TEST(VersionsGolden, ReleaseSpecificStructure) {
  auto info = [](const std::string& v, const std::string& name) {
    return mx::import_function((kVersions / v / name / (name + ".mlxfn")).string()).info();
  };
  auto node = [](const mx::FileInfo& f, const std::string& prim) -> mx::TapeEntryInfo {
    for (auto& t : f.functions[0].tape) {
      if (t.name == prim) return t;
    }
    throw std::runtime_error("no " + prim);
  };
  // conv_general(stride 2, padding ([1], [2]), kernel_dilation 2) on length 9, kernel 3: 0.25.2 and
  // later keep both paddings; every release agrees on the state.
  for (auto& v : {"0.25.2", "0.26.1", "0.26.2", "0.30.1", "0.32.2"}) {
    auto t = node(info(v, "conv_general_asym"), "Convolution");
    EXPECT_EQ(t.state_text, "kernel_strides=[2], padding_lo=[1], padding_hi=[2], kernel_dilation=[2], "
                            "input_dilation=[1], groups=1, flip=false")
        << v;
  }
  // Quantize was AffineQuantize (mode affine) before 0.29.0.
  EXPECT_EQ(node(info("0.25.2", "quantize"), "Quantize").state_text, "group_size=32, bits=4, mode=0, dequantize=false");
  EXPECT_EQ(node(info("0.29.0", "quantize"), "Quantize").state_text, "group_size=32, bits=4, mode=0, dequantize=false");
  // (MLX's CPU build quantizes mxfp4 with plain ops; the matmul records the mode.)
  EXPECT_EQ(node(info("0.29.0", "quantize_mxfp4"), "QuantizedMatmul").state_text,
            "group_size=32, bits=4, mode=1, transpose=true");
  EXPECT_EQ(node(info("0.26.2", "quantized_matmul"), "QuantizedMatmul").state_text,
            "group_size=32, bits=4, mode=0, transpose=true");
  // gather_mm with sorted indices has the hint from 0.25.0.
  EXPECT_EQ(node(info("0.25.2", "gather_mm_sorted"), "GatherMM").state_text, "left_sorted=false, right_sorted=true");
  // x.at[1:3].add(y): a Scatter before 0.31.2; a SliceUpdate Sum from 0.31.2, which kiln reads as
  // Slice -> Add -> SliceUpdate.
  EXPECT_EQ(info("0.30.1", "slice_update_add").functions[0].primitive_histogram.count("Scatter"), 1u);
  auto su = info("0.31.2", "slice_update_add").functions[0].primitive_histogram;
  EXPECT_EQ(su["SliceUpdate"], 1u);
  EXPECT_EQ(su["Slice"], 1u);
  EXPECT_EQ(su["Add"], 1u);
  // A metal kernel exported on a machine without Metal (0.32.0 on): its compile options follow shared_memory.
  auto ck = node(info("0.32.0", "custom_kernel"), "CustomKernel");
  EXPECT_THAT(ck.state_text, HasSubstr("name=\"custom_kernel_scale2_floatc_float\""));
  EXPECT_THAT(ck.state_text, HasSubstr("init_value=0"));
  // Metadata from 0.32.1.
  EXPECT_EQ(info("0.32.1", "metadata").metadata, "kiln fixture: {\"model\": \"tiny\", \"step\": 7}");
  EXPECT_EQ(info("0.32.2", "plain_ops").metadata, "");
  // DivMod floors from 0.32.2 (same layout): the release implies the node's `floor`.
  EXPECT_EQ(node(info("0.32.1", "divmod"), "DivMod").state_text, "floor=false");
  for (auto& v : {"0.32.2", "0.32.3", "0.32.4"}) EXPECT_EQ(node(info(v, "divmod"), "DivMod").state_text, "floor=true") << v;
  // `//`: Divide (+ Floor for floats) up to 0.32.2, an integer correction graph in 0.32.3, FloorDivide in 0.32.4.
  EXPECT_EQ(info("0.32.2", "floor_divide").functions[0].primitive_histogram.count("FloorDivide"), 0u);
  EXPECT_EQ(info("0.32.3", "floor_divide").functions[0].primitive_histogram.count("FloorDivide"), 0u);
  EXPECT_EQ(info("0.32.4", "floor_divide").functions[0].primitive_histogram["FloorDivide"], 2u);
  // FFT's odd_out (0.32.4) is derived from the recorded output shape: the state is the same everywhere.
  for (auto& v : {"0.32.1", "0.32.4"}) {
    EXPECT_EQ(info(v, "irfft_odd").functions[0].primitive_histogram["FFT"], 3u) << v;
  }
}

namespace {

// Round trips that cannot be byte-identical: the target has no field for a value (a hint, or the
// high padding of a strided convolution), or kiln reads the node as several (reducing SliceUpdate).
bool lossy(const std::string& version, const std::string& name, const fmt::FormatVersion& target) {
  fmt::FormatVersion src;
  fmt::FormatVersion::parse(version, src);
  if ((name == "gather_mm_sorted" || name == "gather_qmm_sorted") && target < fmt::FormatVersion{0, 25, 0}) return true;
  if (name == "conv_general_asym" && target < fmt::FormatVersion{0, 25, 2}) return true;
  if (name == "slice_update_add" && src >= fmt::FormatVersion{0, 31, 2}) return true;
  return false;
}

struct Tally {
  int identical = 0, refused = 0, lossy = 0, metadata = 0;
};

void round_trip(const std::string& label, const std::vector<uint8_t>& bytes, const std::string& version,
                const std::string& name, Tally& t, std::map<std::string, std::set<std::string>>& refusals) {
  fmt::FormatVersion home;
  ASSERT_TRUE(fmt::FormatVersion::parse(version, home));
  std::shared_ptr<fmt::MemorySource> keep0;
  bool has_metadata = !parse_mem(bytes, keep0).metadata.empty();
  for (auto& target : targets()) {
    // Like convert_file, metadata is never dropped implicitly (tested in VersionsApi.ConvertFile).
    if (has_metadata && !fmt::header_has_metadata(target)) {
      ++t.metadata;
      continue;
    }
    std::vector<uint8_t> there;
    try {
      there = convert(bytes, target);
    } catch (const std::invalid_argument& e) {
      std::string msg = e.what();
      EXPECT_THAT(msg, HasSubstr("cannot be written for MLX " + target.str() + ": ")) << label;
      EXPECT_EQ(msg.rfind("[convert] ", 0), 0u) << label << ": " << msg;
      refusals[msg.substr(10, msg.find(' ', 10) - 10)].insert(target.str());
      ++t.refused;
      continue;
    }
    std::shared_ptr<fmt::MemorySource> keep;
    auto parsed = parse_mem(there, keep);
    EXPECT_EQ(parsed.version, target.str());
    auto back = write_as(parsed, home, /*target_reads=*/false);
    if (lossy(version, name, target)) {
      ++t.lossy;
      continue;
    }
    if (back != bytes) {
      ADD_FAILURE() << label << " -> " << target.str() << " -> " << version << " is not byte-identical";
    } else {
      ++t.identical;
    }
  }
}

}  // namespace

TEST(VersionsGolden, RealFilesRoundTripThroughEveryLayout) {
  Tally t;
  std::map<std::string, std::set<std::string>> refusals;
  for (auto& c : fixture_cases()) {
    if (kUnsupported.count(c.name())) continue;
    round_trip(c.version + "/" + c.name(), read_bytes(c.file().string()), c.version, c.name(), t, refusals);
  }
  std::printf("[versions] real files: %d identical round trips, %d refused, %d lossy by design\n", t.identical,
              t.refused, t.lossy);
  EXPECT_GE(t.identical, 3000);
  // What refused, and where: each refusal is a documented layout limit.
  for (auto& [what, where] : refusals) {
    std::string s;
    for (auto& v : where) s += " " + v;
    std::printf("[versions]   refused %s for%s\n", what.c_str(), s.c_str());
  }
}

// The MLX 0.30.1 corpus through every layout and back to 0.30.1, byte for byte.
TEST(VersionsGolden, MlxCorpusRoundTripsThroughEveryLayout) {
  Tally t;
  std::map<std::string, std::set<std::string>> refusals;
  int files = 0;
  for (auto& path : golden_files()) {
    auto bytes = read_bytes(path);
    try {
      std::shared_ptr<fmt::MemorySource> keep;
      parse_mem(bytes, keep);
    } catch (const std::invalid_argument& e) {
      continue;  // a primitive no family has (reported by FormatGolden)
    }
    ++files;
    round_trip(fs::path(path).filename().string(), bytes, "0.30.1", fs::path(path).stem().string(), t, refusals);
  }
  std::printf("[versions] MLX 0.30.1 corpus: %d files, %d identical round trips, %d refused\n", files, t.identical,
              t.refused);
  EXPECT_GE(files, 150);
  EXPECT_EQ(t.lossy, 0);
  for (auto& [what, where] : refusals) {
    std::string s;
    for (auto& v : where) s += " " + v;
    std::printf("[versions]   refused %s for%s\n", what.c_str(), s.c_str());
  }
}
