// The shape of the house (issue 11): rows in src/primitives/<family>/, CPU kernels in
// src/backend/cpu/kernels/<family>/ under the same names, both family lists naming exactly those
// folders, stages including only earlier stages, no build-time scaffolding (weak symbols,
// __has_include), and every row with a kernel on the CPU backend (or a reason in the table below).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "core/kernels.h"
#include "kiln/kiln.h"

namespace fs = std::filesystem;
namespace mx = kiln;
using ::testing::HasSubstr;

namespace {

const fs::path kSrc = fs::path(KILN_TEST_DATA) / ".." / "src";
const fs::path kInclude = fs::path(KILN_TEST_DATA) / ".." / "include";

std::string read_text(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::vector<fs::path> sources_under(const fs::path& dir) {
  std::vector<fs::path> out;
  for (auto& e : fs::recursive_directory_iterator(dir)) {
    auto ext = e.path().extension();
    if (e.is_regular_file() && (ext == ".cpp" || ext == ".h")) out.push_back(e.path());
  }
  return out;
}

std::vector<std::string> quoted_includes(const fs::path& p) {
  static const std::regex re(R"re(^\s*#\s*include\s*"([^"]+)")re");
  std::vector<std::string> out;
  std::istringstream in(read_text(p));
  std::string line;
  while (std::getline(in, line)) {
    std::smatch m;
    if (std::regex_search(line, m, re)) out.push_back(m[1]);
  }
  return out;
}

std::set<std::string> subfolders(const fs::path& dir) {
  std::set<std::string> out;
  for (auto& e : fs::directory_iterator(dir)) {
    if (e.is_directory()) out.insert(e.path().filename().string());
  }
  return out;
}

// The names inside X(...) of a family list macro.
std::set<std::string> listed_families(const fs::path& header, const std::string& macro) {
  std::string text = read_text(header);
  size_t at = text.find("#define " + macro);
  EXPECT_NE(at, std::string::npos) << macro << " not found in " << header;
  if (at == std::string::npos) return {};
  // The macro runs over continuation lines.
  std::string body;
  std::istringstream in(text.substr(at));
  std::string line;
  while (std::getline(in, line)) {
    body += line + "\n";
    if (line.empty() || line.back() != '\\') break;
  }
  std::set<std::string> out;
  static const std::regex re(R"(X\((\w+)\))");
  for (auto it = std::sregex_iterator(body.begin(), body.end(), re); it != std::sregex_iterator(); ++it) {
    out.insert((*it)[1]);
  }
  return out;
}

TEST(Layout, FamilyFoldersMirrorEachOther) {
  auto rows = subfolders(kSrc / "primitives");
  auto kernels = subfolders(kSrc / "backend" / "cpu" / "kernels");
  EXPECT_FALSE(rows.empty());
  EXPECT_EQ(rows, kernels) << "src/primitives/<family>/ and src/backend/cpu/kernels/<family>/ must match";
  EXPECT_EQ(listed_families(kSrc / "primitives" / "families.h", "KILN_FAMILIES(X)"), rows);
  // The CPU kernel list is the row families' own list (a family without CPU kernels fails to link).
  EXPECT_NE(read_text(kSrc / "backend" / "cpu" / "kernels" / "families.h").find("KILN_FAMILIES(KILN_CALL_CPU_FAMILY)"),
            std::string::npos);
}

TEST(Layout, EveryKernelFileLivesUnderItsBackend) {
  // No kernel registration outside src/backend/, no row definition inside it.
  for (auto& p : sources_under(kSrc)) {
    std::string rel = fs::relative(p, kSrc).generic_string();
    std::string text = read_text(p);
    bool in_backend = rel.rfind("backend/", 0) == 0;
    if (!in_backend) EXPECT_EQ(text.find("KernelTable& table"), std::string::npos) << rel;
    if (in_backend) EXPECT_EQ(text.find("registry::define("), std::string::npos) << rel;
  }
}

TEST(Layout, StagesIncludeOnlyEarlierStages) {
  // core <- primitives <- backend <- format <- trace <- transforms <- onnx; io sits beside core (array files).
  const std::map<std::string, std::set<std::string>> forbidden = {
      {"core", {"io", "primitives", "backend", "format", "trace", "transforms", "onnx"}},
      {"io", {"primitives", "backend", "format", "trace", "transforms", "onnx"}},
      {"primitives", {"backend", "format", "trace", "transforms", "onnx"}},
      {"backend", {"format", "trace", "transforms", "onnx"}},
      {"format", {"trace", "transforms", "onnx"}},
      {"trace", {"transforms", "onnx"}},
      {"transforms", {"onnx"}},
  };
  size_t checked = 0;
  for (auto& [stage, banned] : forbidden) {
    for (auto& p : sources_under(kSrc / stage)) {
      for (auto& inc : quoted_includes(p)) {
        ++checked;
        std::string top = inc.substr(0, inc.find('/'));
        EXPECT_EQ(banned.count(top), 0u) << fs::relative(p, kSrc).generic_string() << " includes " << inc;
      }
    }
  }
  EXPECT_GT(checked, 100u);
}

TEST(Layout, NoBuildTimeScaffolding) {
  std::vector<fs::path> files = sources_under(kSrc);
  for (auto& p : sources_under(kInclude)) files.push_back(p);
  for (auto& p : files) {
    std::string text = read_text(p);
    EXPECT_EQ(text.find("__has_include"), std::string::npos) << p;
    EXPECT_EQ(text.find("__attribute__((weak"), std::string::npos) << p;
    EXPECT_EQ(text.find("[[gnu::weak"), std::string::npos) << p;
  }
}

// Rows that have no CPU kernel, each with its reason. A row listed here that gains a kernel, or a row
// without a kernel that is not listed, fails the test.
const std::map<std::string, std::string> kNoCpuKernel = {

};

TEST(KernelTables, EveryRowHasACpuKernelOrAReason) {
  const auto& cpu = mx::detail::kernels_for(mx::Device{mx::Device::cpu});
  EXPECT_EQ(cpu.backend(), mx::detail::Backend::cpu);
  std::set<std::string> missing;
  for (const mx::PrimitiveDef* def : mx::registry::all()) {
    if (!cpu.find(*def)) missing.insert(def->name);
  }
  std::set<std::string> listed;
  for (auto& [name, why] : kNoCpuKernel) {
    listed.insert(name);
    EXPECT_NE(mx::registry::find(name), nullptr) << "stale entry: no row " << name;
  }
  EXPECT_EQ(missing, listed);
  EXPECT_EQ(cpu.covered().size() + missing.size(), mx::registry::all().size());
}

TEST(KernelTables, GpuNodesRunOnTheCpuUntilAGpuBackendExists) {
  const auto& gpu = mx::detail::kernels_for(mx::Device{mx::Device::gpu});
  EXPECT_EQ(gpu.backend(), mx::detail::Backend::cpu);
  // A node recorded on a GPU stream evaluates through that table.
  auto a = mx::add(mx::array({1.0f, 2.0f}), mx::array({3.0f, 4.0f}), mx::Stream(0, mx::Device::gpu));
  a.eval();
  EXPECT_EQ(a.data<float>()[1], 6.0f);
}

TEST(KernelTables, UnknownNamesAndTwiceRegisteredKernelsFailAtRegistration) {
  mx::detail::KernelTable t(mx::detail::Backend::cuda);
  auto k = [](const mx::Node&, const std::vector<mx::array>&, std::vector<mx::array>&) {};
  try {
    t.add("NoSuchPrimitive", k);
    FAIL() << "expected a throw";
  } catch (const std::logic_error& e) {
    EXPECT_THAT(e.what(), HasSubstr("cuda kernel table names a primitive the registry does not have: NoSuchPrimitive"));
  }
  t.add("Abs", k);
  EXPECT_NE(t.find(mx::registry::get("Abs")), nullptr);
  EXPECT_EQ(t.find(mx::registry::get("Add")), nullptr);
  try {
    t.add("Abs", k);
    FAIL() << "expected a throw";
  } catch (const std::logic_error& e) {
    EXPECT_THAT(e.what(), HasSubstr("Primitive Abs has two kernels on the cuda backend"));
  }
  try {
    t.get(mx::registry::get("Add"), {});
    FAIL() << "expected a throw";
  } catch (const std::invalid_argument& e) {
    EXPECT_THAT(e.what(), HasSubstr("[eval] Primitive Add has no kernel on the cuda backend"));
  }
  EXPECT_EQ(t.covered().size(), 1u);
}

}  // namespace
