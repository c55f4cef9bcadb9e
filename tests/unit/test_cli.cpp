// The kiln command-line tool, run as a separate process.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "kiln/kiln.h"

namespace fs = std::filesystem;

namespace {

struct Result {
  int code;
  std::string out;  // stdout
  std::string err;  // stderr
};

const fs::path kGolden = fs::path(KILN_TEST_DATA) / "golden" / "mlx-0.30.1";

Result run_cli(const std::string& args) {
  static int n = 0;
  fs::path dir = fs::temp_directory_path() / ("kiln_cli_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  auto out = dir / ("o" + std::to_string(n));
  auto err = dir / ("e" + std::to_string(n++));
  std::string cmd = std::string(KILN_CLI_PATH) + " " + args + " >" + out.string() + " 2>" + err.string();
  int rc = std::system(cmd.c_str());
  auto slurp = [](const fs::path& p) {
    std::ifstream f(p);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
  };
  return {WEXITSTATUS(rc), slurp(out), slurp(err)};
}

size_t lines(const std::string& s) {
  size_t n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

TEST(Cli, HelpForEveryCommand) {
  auto r = run_cli("--help");
  EXPECT_EQ(r.code, 0);
  for (const char* c : {"run", "inspect", "bench"}) EXPECT_NE(r.out.find(c), std::string::npos);
  for (const char* c : {"run", "inspect", "bench"}) {
    auto h = run_cli(std::string(c) + " --help");
    EXPECT_EQ(h.code, 0) << c;
    EXPECT_NE(h.out.find(std::string("usage: kiln ") + c), std::string::npos) << h.out;
  }
}

TEST(Cli, ErrorsAreOneLineAndNonZero) {
  auto r = run_cli("run /nonexistent/file.mlxfn");
  EXPECT_NE(r.code, 0);
  EXPECT_EQ(lines(r.err), 1u) << r.err;
  EXPECT_NE(r.err.find("Failed to open"), std::string::npos) << r.err;
  auto u = run_cli("frobnicate");
  EXPECT_NE(u.code, 0);
  EXPECT_EQ(lines(u.err), 1u);
  EXPECT_NE(u.err.find("unknown command 'frobnicate'"), std::string::npos);
  auto o = run_cli("inspect x.mlxfn --bogus");
  EXPECT_NE(o.code, 0);
  EXPECT_NE(o.err.find("unknown option '--bogus'"), std::string::npos);
  auto b = run_cli("bench " + (kGolden / "unary_abs/unary_abs.mlxfn").string() + " --iters zero");
  EXPECT_NE(b.code, 0);
  EXPECT_NE(b.err.find("--iters expects a positive integer"), std::string::npos);
  // A call that matches no stored signature lists them, still on one line.
  auto m = run_cli("run " + (kGolden / "unary_abs/unary_abs.mlxfn").string());
  EXPECT_NE(m.code, 0);
  EXPECT_EQ(lines(m.err), 1u) << m.err;
  EXPECT_NE(m.err.find("No imported function found"), std::string::npos) << m.err;
}

TEST(Cli, RunWritesOutputs) {
  fs::path out = fs::temp_directory_path() / ("kiln_cli_run_" + std::to_string(::getpid()));
  auto r = run_cli("run " + (kGolden / "args_and_kwargs/args_and_kwargs.mlxfn").string() + " --arg " +
                   (kGolden / "args_and_kwargs/call0_arg0.npy").string() + " --kwarg b=" +
                   (kGolden / "args_and_kwargs/call0_kw_b.npy").string() + " --out " + out.string());
  ASSERT_EQ(r.code, 0) << r.err;
  auto got = kiln::load((out / "out0.npy").string());
  auto want = kiln::load((kGolden / "args_and_kwargs/call0_out0.npy").string());
  EXPECT_TRUE(kiln::allclose(got, want, 1e-5, 1e-6).item<bool>());
  fs::remove_all(out);
}

// --mlx-cpu-quirks reproduces MLX 0.30.1's CPU numbers for an nvfp4 product (ImportOptions::writer_cpu_quirks);
// without it kiln computes the true product, which differs.
TEST(Cli, RunWithMlxCpuQuirks) {
  const fs::path c = kGolden / "quantized_matmul_nvfp4";
  fs::path out = fs::temp_directory_path() / ("kiln_cli_quirks_" + std::to_string(::getpid()));
  std::string args = (c / "quantized_matmul_nvfp4.mlxfn").string();
  for (int i = 0; i < 3; ++i) args += " --arg " + (c / ("call0_arg" + std::to_string(i) + ".npy")).string();
  auto want = kiln::load((c / "call0_out0.npy").string());
  auto r = run_cli("run " + args + " --mlx-cpu-quirks --out " + out.string());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(kiln::allclose(kiln::load((out / "out0.npy").string()), want, 1e-3, 1e-3).item<bool>());
  r = run_cli("run " + args + " --out " + out.string());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_FALSE(kiln::allclose(kiln::load((out / "out0.npy").string()), want, 1e-3, 1e-3).item<bool>());
  fs::remove_all(out);
}

TEST(Cli, InspectJson) {
  auto r = run_cli("inspect --json " + (kGolden / "multi_trace_shared_constant/multi_trace_shared_constant.mlxfn").string());
  ASSERT_EQ(r.code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["version"], "0.30.1");
  EXPECT_EQ(j["shapeless"], false);
  EXPECT_GE(j["functions"].size(), 2u);
  EXPECT_GE(j["constants"].get<int>(), 1);
  EXPECT_GT(j["functions"][0]["tape_length"].get<int>(), 0);
  EXPECT_FALSE(j["functions"][0]["primitive_histogram"].empty());
  EXPECT_FALSE(j["functions"][0]["streams"].empty());
  auto t = run_cli("inspect " + (kGolden / "multi_trace_shared_constant/multi_trace_shared_constant.mlxfn").string());
  ASSERT_EQ(t.code, 0);
  EXPECT_NE(t.out.find("function 2"), std::string::npos) << t.out;
}

TEST(Cli, BenchPrintsTimings) {
  auto r = run_cli("bench " + (kGolden / "unary_exp/unary_exp.mlxfn").string() + " --arg " +
                   (kGolden / "unary_exp/call0_arg0.npy").string() + " --iters 5");
  ASSERT_EQ(r.code, 0) << r.err;
  double import_us = -1, median_us = -1;
  std::istringstream is(r.out);
  std::string key;
  double v;
  while (is >> key >> v) {
    if (key == "import_us") import_us = v;
    if (key == "median_us") median_us = v;
  }
  EXPECT_GT(import_us, 0);
  EXPECT_GT(median_us, 0);
}

}  // namespace
