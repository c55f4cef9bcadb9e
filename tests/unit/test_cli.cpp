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

// ---- kiln convert and versions ----

std::vector<uint8_t> file_bytes(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(f), {});
}

fs::path cli_tmp(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("kiln_cli_conv_" + std::to_string(::getpid()));
  fs::create_directories(d);
  return d / name;
}

TEST(Cli, ConvertHelpAndUsageErrors) {
  auto h = run_cli("convert --help");
  EXPECT_EQ(h.code, 0);
  EXPECT_NE(h.out.find("usage: kiln convert IN OUT [--to VERSION] [--metadata TEXT]"), std::string::npos) << h.out;
  EXPECT_NE(h.out.find("0.22.0"), std::string::npos);
  EXPECT_NE(h.out.find("0.32.2"), std::string::npos);
  auto top = run_cli("--help");
  EXPECT_NE(top.out.find("convert"), std::string::npos);
  auto one = run_cli("convert only.mlxfn");
  EXPECT_EQ(one.code, 2);
  EXPECT_EQ(one.err, "kiln convert: expects IN and OUT files (see kiln convert --help)\n");
  auto bogus = run_cli("convert a b --frob");
  EXPECT_EQ(bogus.code, 2);
  EXPECT_NE(bogus.err.find("unknown option '--frob'"), std::string::npos);
  auto to = run_cli("convert " + (kGolden / "unary_abs/unary_abs.mlxfn").string() + " " + cli_tmp("x").string() +
                    " --to 0.99.0");
  EXPECT_EQ(to.code, 1);
  EXPECT_EQ(to.err, "kiln convert: [convert] MLX 0.99.0 is newer than the newest layout kiln knows (0.32.4).\n");
  auto missing = run_cli("convert " + (kGolden / "unary_abs/unary_abs.mlxfn").string() + " " + cli_tmp("x").string() +
                         " --to");
  EXPECT_EQ(missing.code, 2);
  EXPECT_NE(missing.err.find("--to expects a value"), std::string::npos);
  EXPECT_FALSE(fs::exists(cli_tmp("x")));
}

TEST(Cli, ConvertMetadataAndBack) {
  auto src = kGolden / "binary_add/binary_add.mlxfn";
  auto mid = cli_tmp("add-0.32.1.mlxfn"), back = cli_tmp("add-back.mlxfn");
  auto r = run_cli("convert " + src.string() + " " + mid.string() + " --to 0.32.1 --metadata 'hello world'");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("MLX 0.32.1 layout, 1 function"), std::string::npos) << r.out;
  auto t = run_cli("inspect " + mid.string());
  ASSERT_EQ(t.code, 0) << t.err;
  EXPECT_NE(t.out.find("version:    0.32.1 (read as the 0.32.1 layout)"), std::string::npos) << t.out;
  EXPECT_NE(t.out.find("metadata:   \"hello world\""), std::string::npos) << t.out;
  auto j = nlohmann::json::parse(run_cli("inspect --json " + mid.string()).out);
  EXPECT_EQ(j["metadata"], "hello world");
  EXPECT_EQ(j["version"], "0.32.1");
  // The metadata has no place in 0.30.1: it must be dropped explicitly.
  auto no = run_cli("convert " + mid.string() + " " + back.string());
  EXPECT_EQ(no.code, 1);
  EXPECT_EQ(lines(no.err), 1u);
  EXPECT_NE(no.err.find("pass an empty metadata to drop it"), std::string::npos) << no.err;
  EXPECT_FALSE(fs::exists(back));
  auto ok = run_cli("convert " + mid.string() + " " + back.string() + " --to=0.30.1 --metadata ''");
  ASSERT_EQ(ok.code, 0) << ok.err;
  EXPECT_EQ(file_bytes(back), file_bytes(src));
  // The converted file runs like the original.
  auto out = cli_tmp("run-out");
  auto run = run_cli("run " + mid.string() + " --arg " + (kGolden / "binary_add/call0_arg0.npy").string() + " --arg " +
                     (kGolden / "binary_add/call0_arg1.npy").string() + " --out " + out.string());
  ASSERT_EQ(run.code, 0) << run.err;
  EXPECT_TRUE(kiln::allclose(kiln::load((out / "out0.npy").string()),
                             kiln::load((kGolden / "binary_add/call0_out0.npy").string()))
                  .item<bool>());
  fs::remove_all(cli_tmp("").parent_path());
}

TEST(Cli, ConvertRefusalNamesThePrimitive) {
  auto out = cli_tmp("lse-0.24.0.mlxfn");
  auto r = run_cli("convert " + (kGolden / "logsumexp/logsumexp.mlxfn").string() + " " + out.string() + " --to 0.24.0");
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.err, "kiln convert: [convert] LogSumExp cannot be written for MLX 0.24.0: MLX can serialize it only "
                   "from 0.24.2.\n");
  EXPECT_FALSE(fs::exists(out));
  auto s = run_cli("convert " + (kGolden / "fast_sdpa_sinks/fast_sdpa_sinks.mlxfn").string() + " " + out.string() +
                   " --to 0.29.0");
  EXPECT_EQ(s.code, 1);
  EXPECT_NE(s.err.find("[convert] ScaledDotProductAttention with has_sinks=true cannot be written for MLX 0.29.0"),
            std::string::npos)
      << s.err;
  EXPECT_FALSE(fs::exists(out));
  auto ok = run_cli("convert " + (kGolden / "fast_sdpa_sinks/fast_sdpa_sinks.mlxfn").string() + " " + out.string() +
                    " --to 0.29.1");
  EXPECT_EQ(ok.code, 0) << ok.err;
  fs::remove_all(cli_tmp("").parent_path());
}

TEST(Cli, NewerVersionIsNamed) {
  // A real 0.32.4 file is read; the same bytes with the header "0.99.0" are refused naming it.
  auto f = fs::path(KILN_TEST_DATA) / "golden" / "versions" / "0.32.4" / "plain_ops" / "plain_ops.mlxfn";
  auto ok = run_cli("inspect " + f.string());
  EXPECT_EQ(ok.code, 0) << ok.err;
  std::ifstream in(f, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_EQ(bytes.substr(8, 6), "0.32.4");
  bytes.replace(8, 6, "0.99.0");
  auto newer = cli_tmp("newer.mlxfn");
  std::ofstream(newer, std::ios::binary) << bytes;
  auto r = run_cli("inspect " + newer.string());
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(lines(r.err), 1u);
  EXPECT_NE(r.err.find("written by MLX 0.99.0, which is newer than the newest layout kiln knows (0.32.4)"),
            std::string::npos)
      << r.err;
  auto v = run_cli("version");
  EXPECT_NE(v.out.find("0.22.0 to 0.32.4"), std::string::npos) << v.out;
  fs::remove_all(cli_tmp("").parent_path());
}

}  // namespace

// ---- kiln bench --profile, kiln dot, kiln diff ----

TEST(Cli, BenchProfileListsPrimitives) {
  auto r = run_cli("bench " + (kGolden / "addmm/addmm.mlxfn").string() + " --arg " +
                   (kGolden / "addmm/call0_arg0.npy").string() + " --arg " + (kGolden / "addmm/call0_arg1.npy").string() +
                   " --arg " + (kGolden / "addmm/call0_arg2.npy").string() + " --iters 4 --profile");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("median_us"), std::string::npos);
  // One AddMM kernel per call, and the planning line.
  EXPECT_NE(r.out.find("profile AddMM"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("profile (planning)"), std::string::npos) << r.out;
  std::istringstream is(r.out.substr(r.out.find("profile AddMM")));
  std::string tag, name;
  double us = -1, kernels = -1, nodes = -1;
  is >> tag >> name >> us >> kernels >> nodes;
  EXPECT_GE(us, 0);
  EXPECT_EQ(kernels, 1.0);
  EXPECT_EQ(nodes, 1.0);
}

TEST(Cli, DotDrawsTheFileGraph) {
  auto r = run_cli("dot " + (kGolden / "addmm/addmm.mlxfn").string());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("digraph {", 0), 0u) << r.out;
  for (const char* s : {"in0 [label=\"arg0\\n(3,5) float32\"", "shape=invhouse", "AddMM\\nalpha=0.5, beta=2",
                        "in1 -> n0 [label=\"(3,4) float32\"]", "out0 [label=\"output 0\\n(3,5) float32\"",
                        "shape=house", "n0 -> out0"}) {
    EXPECT_NE(r.out.find(s), std::string::npos) << s << "\n" << r.out;
  }
  // Keyword inputs are named by their keyword; constants are grey boxes.
  auto kw = run_cli("dot " + (kGolden / "args_and_kwargs/args_and_kwargs.mlxfn").string());
  ASSERT_EQ(kw.code, 0) << kw.err;
  auto info = kiln::import_function((kGolden / "args_and_kwargs/args_and_kwargs.mlxfn").string()).info();
  for (auto& k : info.functions[0].kwarg_keys) EXPECT_NE(kw.out.find("label=\"" + k + "\\n"), std::string::npos) << k;
  auto c = run_cli("dot " + (kGolden / "pad_constant/pad_constant.mlxfn").string());
  ASSERT_EQ(c.code, 0) << c.err;
  EXPECT_NE(c.out.find("[label=\"constant\\n"), std::string::npos) << c.out;
  // A function the file does not have.
  auto bad = run_cli("dot " + (kGolden / "addmm/addmm.mlxfn").string() + " --function 3");
  EXPECT_EQ(bad.code, 1);
  EXPECT_NE(bad.err.find("The file has 1 function(s); function 3 does not exist"), std::string::npos) << bad.err;
  auto ext = run_cli("dot " + (kGolden / "addmm/addmm.mlxfn").string() + " -o " + cli_tmp("g.txt").string());
  EXPECT_EQ(ext.code, 2);
  EXPECT_NE(ext.err.find("-o expects a .dot, .gv, .svg or .png file"), std::string::npos) << ext.err;
}

TEST(Cli, DotWritesDotAndRendersThroughGraphviz) {
  const fs::path dotf = cli_tmp("g.dot");
  auto r = run_cli("dot " + (kGolden / "addmm/addmm.mlxfn").string() + " -o " + dotf.string());
  ASSERT_EQ(r.code, 0) << r.err;
  auto bytes = file_bytes(dotf);
  EXPECT_EQ(std::string(bytes.begin(), bytes.begin() + 9), "digraph {");
  if (std::system("command -v dot >/dev/null 2>&1") != 0) {
    GTEST_SKIP() << "Graphviz's dot is not installed (scripts/setup.sh installs the Debian package graphviz)";
  }
  const fs::path svg = cli_tmp("g.svg"), png = cli_tmp("g.png");
  auto s = run_cli("dot " + (kGolden / "addmm/addmm.mlxfn").string() + " -o " + svg.string());
  ASSERT_EQ(s.code, 0) << s.err;
  auto sb = file_bytes(svg);
  const std::string text(sb.begin(), sb.end());
  EXPECT_NE(text.find("<svg"), std::string::npos);
  EXPECT_NE(text.find("AddMM"), std::string::npos);
  auto p = run_cli("dot " + (kGolden / "addmm/addmm.mlxfn").string() + " -o " + png.string());
  ASSERT_EQ(p.code, 0) << p.err;
  auto pb = file_bytes(png);
  ASSERT_GT(pb.size(), 8u);
  EXPECT_EQ(pb[1], 'P');
  EXPECT_EQ(pb[2], 'N');
  EXPECT_EQ(pb[3], 'G');
  EXPECT_FALSE(fs::exists(png.string() + ".tmp-kiln"));
}

TEST(Cli, DiffComparesStructureAndConstants) {
  const std::string a = (kGolden / "addmm/addmm.mlxfn").string();
  auto same = run_cli("diff " + a + " " + a);
  EXPECT_EQ(same.code, 0) << same.out << same.err;
  EXPECT_NE(same.out.find("equal:"), std::string::npos);
  // A conversion to another layout changes nothing that matters: a note, still equal.
  const fs::path conv = cli_tmp("addmm_0321.mlxfn");
  ASSERT_EQ(run_cli("convert " + a + " " + conv.string() + " --to 0.32.1").code, 0);
  auto c = run_cli("diff " + a + " " + conv.string());
  EXPECT_EQ(c.code, 0) << c.out;
  EXPECT_NE(c.out.find("note: header version 0.30.1 (layout 0.30.1) vs 0.32.1"), std::string::npos) << c.out;
  // Different functions.
  auto d = run_cli("diff " + a + " " + (kGolden / "binary_add/binary_add.mlxfn").string());
  EXPECT_EQ(d.code, 1);
  EXPECT_NE(d.out.find("differs: function 1: signature"), std::string::npos) << d.out;
  // Errors: exit status 2.
  auto e = run_cli("diff " + a + " /nonexistent/x.mlxfn");
  EXPECT_EQ(e.code, 2);
  EXPECT_NE(e.err.find("kiln diff:"), std::string::npos);
  EXPECT_EQ(run_cli("diff " + a).code, 2);
}

TEST(Cli, DiffFindsAChangedConstantOrPrimitive) {
  namespace mx = kiln;
  auto write = [](const fs::path& p, float c, bool use_mul) {
    auto w = mx::array({1.0f, 2.0f, c});
    mx::eval(w);
    mx::export_function(
        p.string(),
        [w, use_mul](const mx::Args& a) {
          return std::vector<mx::array>{use_mul ? mx::multiply(a[0], w) : mx::add(a[0], w)};
        },
        {mx::zeros({3})});
  };
  const fs::path p1 = cli_tmp("c1.mlxfn"), p2 = cli_tmp("c2.mlxfn"), p3 = cli_tmp("c3.mlxfn"), p4 = cli_tmp("c4.mlxfn");
  write(p1, 3.0f, false);
  write(p2, 3.0f, false);
  write(p3, 3.5f, false);
  write(p4, 3.0f, true);
  auto eq = mx::diff_functions(mx::import_function(p1.string()), mx::import_function(p2.string()));
  EXPECT_TRUE(eq.equal());
  auto cst = mx::diff_functions(mx::import_function(p1.string()), mx::import_function(p3.string()));
  ASSERT_FALSE(cst.equal());
  EXPECT_NE(cst.differences[0].find("constant const0 (3) float32 #"), std::string::npos) << cst.differences[0];
  auto prim = mx::diff_functions(mx::import_function(p1.string()), mx::import_function(p4.string()));
  ASSERT_FALSE(prim.equal());
  EXPECT_NE(prim.differences[0].find("Add(in0, const0)"), std::string::npos) << prim.differences[0];
  EXPECT_NE(prim.differences[0].find("Multiply(in0, const0)"), std::string::npos) << prim.differences[0];
  auto r = run_cli("diff " + p1.string() + " " + p3.string());
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("differs: function 1: tape entry"), std::string::npos) << r.out;
}

TEST(Profile, CountsKernelsPerPrimitive) {
  namespace mx = kiln;
  mx::profile_report(true);
  EXPECT_FALSE(mx::set_profiling(true));
  auto x = mx::ones({64, 64});
  auto y = mx::matmul(mx::exp(x), x);
  mx::eval(y);
  EXPECT_TRUE(mx::set_profiling(false));
  auto rows = mx::profile_report(true);
  bool saw_matmul = false;
  for (auto& r : rows) {
    EXPECT_GE(r.seconds, 0.0);
    if (r.primitive == "Matmul") {
      saw_matmul = true;
      EXPECT_EQ(r.calls, 1);
      EXPECT_EQ(r.nodes, 1);
    }
  }
  EXPECT_TRUE(saw_matmul);
  EXPECT_TRUE(mx::profile_report(true).empty());  // reset
  mx::eval(mx::exp(mx::ones({4})));               // off: nothing recorded
  EXPECT_TRUE(mx::profile_report(true).empty());
}
