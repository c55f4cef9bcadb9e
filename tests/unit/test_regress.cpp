// Every input the fuzzers ever found a problem with (tests/regress/, README "Hostile files") replayed
// through the fuzz targets' own checks (fuzz/fuzz_common.h): whole files through the reader and the
// run target, node inputs (tests/regress/node/) through the node target.
#include <gtest/gtest.h>

#include <filesystem>

#include "fuzz_common.h"
#include "test_export_util.h"

namespace fs = std::filesystem;
using namespace kiln_test;

namespace {
std::vector<fs::path> files_in(const fs::path& dir) {
  std::vector<fs::path> out;
  if (fs::exists(dir)) {
    for (auto& e : fs::directory_iterator(dir)) {
      if (e.is_regular_file() && e.path().filename() != "README.md") out.push_back(e.path());
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}
}  // namespace

TEST(FuzzRegress, FileFindings) {
  auto files = files_in(fs::path(KILN_TEST_DATA) / "regress");
  // The fuzzers' seeds too: every golden file passes the same checks.
  for (auto& d : fs::directory_iterator(fs::path(KILN_TEST_DATA) / "golden" / "mlx-0.30.1")) {
    if (d.is_directory()) files.push_back(d.path() / (d.path().filename().string() + ".mlxfn"));
  }
  ASSERT_GT(files.size(), 100u);
  for (auto& p : files) {
    auto b = read_bytes(p.string());
    EXPECT_EQ(kiln_fuzz::check_reader(b.data(), b.size()), "") << p;
    EXPECT_EQ(kiln_fuzz::check_run(b.data(), b.size()), "") << p;
  }
}

TEST(FuzzRegress, NodeFindings) {
  for (auto& p : files_in(fs::path(KILN_TEST_DATA) / "regress" / "node")) {
    auto b = read_bytes(p.string());
    EXPECT_EQ(kiln_fuzz::check_node(b.data(), b.size()), "") << p;
  }
}
