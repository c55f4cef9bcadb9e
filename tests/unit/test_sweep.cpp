// Reference sweep: one table-driven test per case of tests/reference/sweep/manifest.json, written by
// tests/reference/gen_sweep.py with real MLX 0.30.1 (or an independent reference where the case has a
// note). Each case names an op by its MLX python name; test_sweep_ops.cpp maps it to the kiln call.
// Inputs marked with a view are built here from their stored base array (transpose, strided or
// reversed slice, broadcast) so the kernel sees strides. Outputs are compared bit for bit where the
// case says `exact` (and for integers and bools), else with per-dtype tolerances scaled by the case's
// `tol` (NaN equal to NaN, infinities equal by sign). A case with `error` must throw as MLX does.
//
// The sweep runs as one ctest entry (`sweep`, see tests/CMakeLists.txt) and by name:
//   kiln_tests --gtest_filter='Sweep*'          kiln_tests --gtest_filter='Sweep/SweepCase.Run/sum_*'
// SweepCoverage.EveryPrimitiveIsExercised records the primitive names of the lazy graph each case's kiln
// call builds, and fails when a registered primitive is exercised by no case (kExcluded aside), or by no
// case with an empty array or a strided input (kNoEmptyCase / kNoStridedCase aside).
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <unordered_set>

#include "kiln/kiln.h"
#include "kiln/primitive.h"
#include "unit/sweep_ops.h"
#include "unit/test_util.h"

namespace {

namespace fs = std::filesystem;
using namespace sweep;
using kiln::operator<<;

const fs::path kDir = fs::path(KILN_TEST_DATA) / "reference" / "sweep";
// Cases for primitives MLX 0.30.1 lacks (SearchSorted, FloorDivide, flooring DivMod), from MLX 0.32.4
// (gen_sweep.py with SWEEP_NEWER=1): same format, read after the main manifest.
const fs::path kNewerDir = fs::path(KILN_TEST_DATA) / "reference" / "sweep_newer";

// Primitives no sweep case can exercise, and why.
const std::map<std::string, std::string> kExcluded = {
    // Reads a constant of an imported .mlxfn lazily; only the importer creates it (tests: test_import).
    {"Load", "created only by the .mlxfn importer"},
    // A GPU kernel: kiln records and exports it but raises a named error when asked to run it on the CPU.
    {"CustomKernel", "cannot run on the CPU by design (raises naming the kernel)"},
    // custom_function's node (autodiff): created only by kiln::custom_function (tests: test_autodiff).
    {"CustomTransforms", "created only by custom_function / custom_vjp / checkpoint"},
    // compile's fused group: created only by compile (tests: test_compile_fuse, bit-identical to unfused).
    {"Compiled", "created only by compile's fusion of element-wise groups"},
    // An imported function's call: created only by import_function's calls (tests: test_program).
    {"ImportedCall", "created only by an imported function's call"},
};

// Primitives that cannot receive an empty array or a strided input, and why.
const std::map<std::string, std::string> kNoEmptyCase = {
    {"ArgReduce", "MLX rejects argmin/argmax of any empty array (must-fail cases check kiln does too)"},
    {"LogSumExp", "MLX rejects logsumexp of an empty array (must-fail cases check kiln does too)"},
    {"Softmax", "softmax returns an empty input as it is, without a node (as MLX)"},
    {"Hadamard", "MLX rejects an empty hadamard_transform (a must-fail case checks kiln does too)"},
};
const std::map<std::string, std::string> kNoStridedCase = {
    {"Arange", "no array input"},
    {"Full", "its input is the fill value, which the op broadcasts and casts first"},
    {"AsStrided", "the op flattens its input first (as MLX), so the node reads a contiguous array"},
    {"NumberOfElements", "reads only its input's shape"},
};

// Cases whose reference is not MLX 0.30.1's output, because MLX is wrong there or crashes; the generator
// stored an independent reference instead (numpy, or MLX's float32 path) and marked the case with a
// note. Every case with a note must be listed here, and every listed case must carry a note.
const std::vector<std::pair<std::string, std::vector<std::string>>> kExpectedDifferences = {
    {"MLX 0.30.1 takes a complex number's truth from its real part (0+1j is false); kiln uses both parts, as "
     "NumPy, JAX and PyTorch do",
     {"logical_not_c64_special", "logical_and_c64_special", "logical_or_c64_special", "astype_c64_special_to_b",
      "any_c64_special", "all_c64_special", "where_c64cond_special"}},
    {"MLX 0.30.1 maps +-inf to 0 in float16 and bfloat16 (its limits lookup); kiln to the largest finite value, as "
     "NumPy and MLX's own float32",
     {"nan_to_num_f16", "nan_to_num_bf16"}},
    {"MLX 0.30.1 accumulates a bfloat16 all-axes sum in bfloat16 (0.06 off here); kiln in float, rounding once",
     {"sum_bf16_all"}},
    {"MLX 0.30.1 accumulates a bfloat16 quantized_matmul in bfloat16 (0.27 off here); kiln in float, rounding once; "
     "the reference is numpy's matmul of the dequantized weights",
     {"quantized_matmul_affine_bf16_g64_b8_t1"}},
    {"MLX 0.30.1 quantizes float64 input wrongly in mxfp8 / nvfp4 modes (dequantized errors of 6-8); the reference "
     "is the float32 quantization of the same values",
     {"quantize_mxfp8_f64", "quantize_nvfp4_f64"}},
    {"MLX 0.30.1 rejects an empty dequantize ('[reshape] Cannot infer the shape of an empty array'); kiln returns "
     "the empty result",
     {"dequantize_affine_empty"}},
    {"MLX 0.30.1 crashes (SIGFPE / SIGSEGV) on these empty inputs; the reference is the empty result",
     {"cumsum_f32_empty", "cumsum_i32_empty_flat", "cumprod_f32_empty", "cumprod_i32_empty_flat", "cummax_f32_empty",
      "cummax_i32_empty_flat", "cummin_f32_empty", "cummin_i32_empty_flat", "logcumsumexp_f32_empty",
      "logcumsumexp_i32_empty_flat", "sort_f32_empty", "argsort_f32_empty", "quantized_matmul_affine_empty"}},
    {"MLX 0.30.1 fails inside its CPU evaluation (only float32 / no float64 kernel / crash); kiln computes it, "
     "checked against numpy or MLX's float32 result",
     {"gather_mm_f16", "gather_mm_bf16", "gather_mm_f64", "block_masked_mm_f16", "block_masked_mm_bf16",
      "block_masked_mm_f64", "hadamard_transform_f64", "conv_transpose1d_f64", "conv_transpose2d_f64",
      "quantize_affine_f64_g64_b3", "quantize_affine_f64_g64_b4", "quantize_affine_f64_g64_b8", "divmod_b",
      "divmod_b_Ta"}},
    {"MLX 0.30.1 aborts the process (std::terminate) on complex64 erf / erfinv; kiln rejects them",
     {"erf_c64", "erf_c64_S", "erf_c64_special", "erf_c64_empty", "erfinv_c64", "erfinv_c64_S", "erfinv_c64_special",
      "erfinv_c64_empty"}},
    {"MLX 0.30.1's CPU quantized_matmul / gather_qmm decode mxfp8 and nvfp4 with the mxfp4 decoder (fixed in 0.31); "
     "the reference is numpy's dequantize + matmul",
     {"kiln_qmm_numpy_mxfp8_t1", "kiln_qmm_numpy_mxfp8_t0", "kiln_qmm_numpy_nvfp4_t1", "kiln_qmm_numpy_nvfp4_t0",
      "kiln_gather_qmm_numpy_mxfp8", "kiln_gather_qmm_numpy_nvfp4"}},
};

const std::string* expected_difference(const std::string& name) {
  for (auto& [why, names] : kExpectedDifferences) {
    for (auto& n : names) {
      if (n == name) return &why;
    }
  }
  return nullptr;
}

// ---------------------------------------------------------------- manifest

struct Case {
  std::string name;
  json j;
};

const std::vector<Case>& cases() {
  static const std::vector<Case> all = [] {
    std::vector<Case> out;
    for (auto& dir : {kDir, kNewerDir}) {
      std::ifstream f(dir / "manifest.json");
      if (!f) return out;
      json m = json::parse(f);
      for (auto& c : m["cases"]) out.push_back({c["name"].get<std::string>(), c});
    }
    return out;
  }();
  return all;
}

const Case& find_case(const std::string& name) {
  static const std::map<std::string, const Case*> index = [] {
    std::map<std::string, const Case*> m;
    for (auto& c : cases()) m[c.name] = &c;
    return m;
  }();
  return *index.at(name);
}

// Parsing the manifest costs every process of the suite; skip it where the filter cannot select a sweep
// case (ctest runs each other test in its own process with a plain filter).
std::vector<std::string> case_names() {
  const std::string filter = GTEST_FLAG_GET(filter);
  const bool wanted = filter.empty() || filter.find("Sweep") != std::string::npos ||
                      filter[0] == '*' || filter[0] == '?' || filter[0] == '-';
  std::vector<std::string> out;
  if (!wanted) return out;
  for (auto& c : cases()) out.push_back(c.name);
  return out;
}

// Manifest file names are 12 hex digits of the file's hash, without ".npy".
// (Files of the newer manifest live in its own folder; names are content hashes, so never ambiguous.)
mx::array load(const std::string& name) {
  auto p = kDir / (name + ".npy");
  if (!fs::exists(p)) p = kNewerDir / (name + ".npy");
  return mx::load(p.string());
}

// ---------------------------------------------------------------- derivations (as gen_sweep.py DERIVE)

Arrays derive_partition(const Arrays& x, const json& p, const Arrays& outs, bool arg) {
  int ax = gi(p, "axis", -1);
  mx::array v = arg ? mx::take_along_axis(x[0], outs[0], ax) : outs[0];
  int axn = ax < 0 ? ax + static_cast<int>(v.ndim()) : ax;
  int n = v.shape(axn);
  int k = ((gi(p, "kth") % n) + n) % n;
  auto vk = mx::take(v, mx::array({k}), ax);
  auto lo = mx::take(v, mx::arange(0, k), ax);
  auto hi = mx::take(v, mx::arange(k, n), ax);
  auto ok = mx::logical_and(mx::all(mx::less_equal(lo, vk)), mx::all(mx::greater_equal(hi, vk)));
  return {mx::sort(v, ax), vk, ok};
}

Arrays derive_eig(const Arrays& outs, bool vectors) {
  auto w = outs[0];
  auto key = mx::add(mx::real(w), mx::multiply(mx::imag(w), mx::array(1e-3f)));
  auto order = mx::argsort(key, -1);
  Arrays res{mx::take_along_axis(w, order, -1)};
  if (vectors) {
    auto v = mx::abs(outs[1]);
    res.push_back(mx::take_along_axis(v, mx::broadcast_to(mx::expand_dims(order, -2), v.shape()), -1));
  }
  return res;
}

Arrays derive(const std::string& how, const Arrays& x, const json& p, const Arrays& outs) {
  Arrays r;
  if (how == "abs") {
    for (auto& o : outs) r.push_back(mx::abs(o));
  } else if (how == "sorted") {
    for (auto& o : outs) r.push_back(mx::sort(o, gi(p, "axis", -1)));
  } else if (how == "partition" || how == "argpartition") {
    r = derive_partition(x, p, outs, how == "argpartition");
  } else if (how == "eig" || how == "eigvals") {
    r = derive_eig(outs, how == "eig");
  } else if (how == "svd") {
    auto& u = outs[0];
    auto& s = outs[1];
    auto& vt = outs[2];
    int k = s.shape(-1);
    int nd = static_cast<int>(u.ndim());
    mx::Shape z(nd, 0), us = u.shape(), vs = vt.shape();
    us[nd - 1] = k;
    vs[nd - 2] = k;
    r = {mx::abs(mx::slice(u, z, us)), s, mx::abs(mx::slice(vt, z, vs))};
  } else {
    throw std::runtime_error("unknown derivation " + how);
  }
  return r;
}

// ---------------------------------------------------------------- inputs, graph walk, comparison

// Build a case's inputs, evaluated; a view input shares its base's buffer (checked), so the op's kernel
// reads it through strides.
Arrays build_inputs(const json& c, std::vector<std::string>* problems) {
  Arrays xs;
  for (auto& in : c["inputs"]) {
    if (in.is_string()) {
      xs.push_back(load(in.get<std::string>()));
      continue;
    }
    // [file, view]: the view as gen_sweep.py view_code() writes it, applied to the stored base.
    mx::array base = load(in[0].get<std::string>());
    const json& v = in[1];
    const int r = static_cast<int>(base.ndim());
    std::string kind = v.is_string() ? v.get<std::string>() : v[0].get<std::string>();
    mx::array a = base;
    if (kind == "T") {  // the axes reversed
      std::vector<int> axes(r);
      for (int i = 0; i < r; ++i) axes[i] = r - 1 - i;
      a = mx::transpose(base, axes);
    } else if (kind == "S") {  // start 1 on every axis, step 2 on the last
      mx::Shape start(r, 1), strides(r, 1);
      strides[r - 1] = 2;
      a = mx::slice(base, start, base.shape(), strides);
    } else if (kind == "R") {  // the last axis reversed
      mx::Shape start(r, 0), stop = base.shape(), strides(r, 1);
      start[r - 1] = base.shape(r - 1) - 1;
      stop[r - 1] = -base.shape(r - 1) - 1;
      strides[r - 1] = -1;
      a = mx::slice(base, start, stop, strides);
    } else if (kind == "B") {
      a = mx::broadcast_to(base, v[1].get<mx::Shape>());
    } else {
      throw std::runtime_error("unknown view " + v.dump());
    }
    a.eval();
    if (problems && a.size() > 0 && a.buffer() != base.buffer()) {
      problems->push_back("input view '" + kind + "' was copied instead of viewing its base");
    }
    xs.push_back(a);
  }
  return xs;
}

// What one primitive saw across the cases: input dtypes, an empty input or output, an evaluated
// input that is not row-contiguous (a view the kernel reads through strides).
struct Seen {
  int cases = 0;
  std::set<std::string> dtypes;
  bool empty = false;
  bool strided = false;
};

// Whether a node input is a non-contiguous view when the kernel reads it: an evaluated strided array,
// or a view-making node (ExpandDims, Squeeze, Transpose, Broadcast, Slice) over one.
bool reaches_strided(const mx::array& in) {
  if (in.size() <= 1) return false;
  if (!in.has_primitive()) return !in.row_contiguous();
  static const std::set<std::string> views = {"ExpandDims", "Squeeze", "Transpose", "Broadcast", "Slice"};
  if (!views.count(in.node()->def->name)) return false;
  for (auto& x : in.node()->inputs) {
    if (reaches_strided(x)) return true;
  }
  return false;
}

// Walk the lazy graph behind `outs` (evaluated arrays end the walk), noting each primitive once.
void record_graph(const Arrays& outs, std::map<std::string, Seen>& seen) {
  std::unordered_set<const mx::Node*> visited;
  std::set<std::string> names;
  std::vector<mx::array> stack(outs.begin(), outs.end());
  while (!stack.empty()) {
    mx::array a = stack.back();
    stack.pop_back();
    if (!a.has_primitive()) continue;
    const mx::Node* n = a.node().get();
    if (!visited.insert(n).second) continue;
    Seen& s = seen[n->def->name];
    if (names.insert(n->def->name).second) ++s.cases;
    for (auto& spec : n->specs) s.empty = s.empty || mx::shape_size(spec.shape) == 0;
    for (auto& in : n->inputs) {
      std::ostringstream d;
      d << in.dtype();
      s.dtypes.insert(d.str());
      s.empty = s.empty || in.size() == 0;
      s.strided = s.strided || reaches_strided(in);
      stack.push_back(in);
    }
  }
}

bool inexact(mx::Dtype t) { return mx::is_inexact(t); }

// Values as (real, imag) doubles, row-major.
std::vector<std::complex<double>> values(const mx::array& a) {
  std::vector<std::complex<double>> out(a.size());
  if (a.dtype() == mx::complex64) {
    auto c = mx::contiguous(a);
    c.eval();
    auto* p = c.data<mx::complex64_t>();
    for (size_t i = 0; i < out.size(); ++i) out[i] = {p[i].real(), p[i].imag()};
  } else {
    auto c = mx::contiguous(mx::astype(a, mx::float64));
    c.eval();
    auto* p = c.data<double>();
    for (size_t i = 0; i < out.size(); ++i) out[i] = {p[i], 0.0};
  }
  return out;
}

std::string fmt(std::complex<double> v, bool cplx) {
  std::ostringstream s;
  s.precision(9);
  if (cplx) {
    s << v.real() << (std::signbit(v.imag()) ? "-" : "+") << std::abs(v.imag()) << "j";
  } else {
    s << v.real();
  }
  return s.str();
}

bool same_bits(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  return a == b && std::signbit(a) == std::signbit(b);
}

bool close(double g, double w, double rtol, double atol) {
  if (std::isnan(g) || std::isnan(w)) return std::isnan(g) && std::isnan(w);
  if (std::isinf(g) || std::isinf(w)) return g == w;
  return std::abs(g - w) <= atol + rtol * std::abs(w);
}

// Tolerances of inexact outputs by dtype, scaled by a case's `tol` (gen_sweep.py TOL). MLX's CPU
// computes many float64 ops with float32 accuracy, hence the loose float64 entry.
std::pair<double, double> tolerance(mx::Dtype t) {
  if (t == mx::float16) return {2e-3, 2e-3};
  if (t == mx::bfloat16) return {1.6e-2, 1.6e-2};
  if (t == mx::float64) return {1e-6, 1e-6};
  return {2e-5, 2e-6};  // float32, complex64
}

std::string compare(const mx::array& got, const mx::array& want, bool exact, double tol) {
  if (std::string mismatch = test_util::shape_dtype_mismatch(got, want); !mismatch.empty()) return mismatch;
  std::ostringstream why;
  if (got.size() == 0) return "";
  if (got.dtype() == mx::bool_) {
    // By truth value: a bool made by view() holds the source's raw bytes (MLX's writer stores them as 1).
    auto g = mx::contiguous(got);
    g.eval();
    auto* gp = static_cast<const uint8_t*>(g.raw_data());
    auto* wp = static_cast<const uint8_t*>(want.raw_data());
    for (size_t i = 0; i < g.size(); ++i) {
      if ((gp[i] != 0) != (wp[i] != 0)) {
        why << "element " << i << ": " << (gp[i] != 0) << " != expected " << (wp[i] != 0);
        return why.str();
      }
    }
    return "";
  }
  if (!inexact(got.dtype())) {
    auto g = mx::contiguous(got);
    g.eval();
    if (std::memcmp(g.raw_data(), want.raw_data(), g.nbytes()) == 0) return "";
    auto gv = values(got), wv = values(want);
    for (size_t i = 0; i < gv.size(); ++i) {
      if (gv[i] != wv[i]) {
        why << "element " << i << ": " << gv[i].real() << " != expected " << wv[i].real();
        return why.str();
      }
    }
    return "bytes differ";
  }
  const bool cplx = got.dtype() == mx::complex64;
  const double rtol = exact ? 0 : tolerance(got.dtype()).first * tol;
  const double atol = exact ? 0 : tolerance(got.dtype()).second * tol;
  auto gv = values(got), wv = values(want);
  size_t bad = 0, first = 0;
  double worst = 0;
  for (size_t i = 0; i < gv.size(); ++i) {
    bool ok = exact ? same_bits(gv[i].real(), wv[i].real()) && same_bits(gv[i].imag(), wv[i].imag())
                    : close(gv[i].real(), wv[i].real(), rtol, atol) && close(gv[i].imag(), wv[i].imag(), rtol, atol);
    if (!ok) {
      if (bad++ == 0) first = i;
      double d = std::abs(gv[i] - wv[i]);
      if (std::isfinite(d)) worst = std::max(worst, d);
    }
  }
  if (!bad) return "";
  why << bad << " of " << gv.size() << " elements differ" << (exact ? " (exact)" : "") << "; first at " << first
      << ": " << fmt(gv[first], cplx) << " != expected " << fmt(wv[first], cplx);
  if (!exact) why << " (rtol " << rtol << ", atol " << atol << ", max abs diff " << worst << ")";
  return why.str();
}

// ---------------------------------------------------------------- the tests

class SweepCase : public ::testing::TestWithParam<std::string> {};

TEST_P(SweepCase, Run) {
  const Case& c = find_case(GetParam());
  const json& j = c.j;
  const std::string op = j["op"].get<std::string>();
  const json params = j.value("params", json::object());
  auto it = ops().find(op);
  ASSERT_NE(it, ops().end()) << "no kiln mapping for op " << op;
  if (expected_difference(c.name)) {
    EXPECT_EQ(j.value("ref", "mlx"), "numpy") << "an expected difference must carry an independent reference";
  }
  std::vector<std::string> problems;
  Arrays xs = build_inputs(j, &problems);
  for (auto& pr : problems) ADD_FAILURE() << pr;
  if (j.contains("error")) {
    // MLX rejects this call: kiln must throw std::invalid_argument naming the same API.
    const std::string want = j["error"].get<std::string>();
    try {
      Arrays outs = it->second(xs, params);
      mx::eval(outs);
    } catch (const std::invalid_argument& e) {
      const std::string got = e.what();
      if (want.rfind("[", 0) == 0) {
        const std::string api = want.substr(0, want.find(']') + 1);
        EXPECT_EQ(got.substr(0, got.find(']') + 1), api) << "kiln: " << got << "\nMLX:  " << want;
      } else {  // MLX's message names no API: kiln's must still contain it
        EXPECT_NE(got.find(want), std::string::npos) << "kiln: " << got << "\nMLX:  " << want;
      }
      return;
    } catch (const std::exception& e) {
      FAIL() << "kiln threw " << typeid(e).name() << " (not std::invalid_argument): " << e.what() << "\nMLX: " << want;
    }
    FAIL() << "kiln accepts what MLX rejects: " << want;
  }
  Arrays outs;
  try {
    outs = it->second(xs, params);
    mx::eval(outs);
    if (j.contains("derive")) {
      outs = derive(j["derive"].get<std::string>(), xs, params, outs);
      mx::eval(outs);
    }
  } catch (const std::exception& e) {
    FAIL() << "kiln threw: " << e.what();
  }
  auto& want = j["outputs"];
  ASSERT_EQ(outs.size(), want.size()) << "number of outputs";
  for (size_t i = 0; i < outs.size(); ++i) {
    auto w = load(want[i].get<std::string>());
    auto why = compare(outs[i], w, j.value("exact", false), j.value("tol", 1.0));
    EXPECT_TRUE(why.empty()) << "output " << i << ": " << why;
    if (!why.empty() && std::getenv("KILN_SWEEP_VERBOSE")) {
      for (size_t k = 0; k < xs.size(); ++k) std::cout << "input " << k << ":\n" << xs[k] << "\n";
      std::cout << "kiln:\n" << outs[i] << "\nexpected:\n" << w << "\n";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Sweep, SweepCase, ::testing::ValuesIn(case_names()),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(SweepCase);

TEST(SweepCoverage, EveryPrimitiveIsExercised) {
  ASSERT_FALSE(cases().empty()) << "missing " << (kDir / "manifest.json");
  std::map<std::string, Seen> seen;
  for (auto& c : cases()) {
    auto it = ops().find(c.j["op"].get<std::string>());
    ASSERT_NE(it, ops().end()) << c.name << ": no kiln mapping for op " << c.j["op"];
    if (c.j.contains("error")) continue;
    try {
      Arrays xs = build_inputs(c.j, nullptr);
      record_graph(it->second(xs, c.j.value("params", json::object())), seen);
    } catch (const std::exception&) {
      // A failing case is reported by its own test; it exercises nothing here.
    }
  }
  std::string missing, no_empty, no_strided;
  for (auto* def : mx::registry::all()) {
    const std::string& name = def->name;
    if (kExcluded.count(name)) {
      EXPECT_EQ(seen.count(name), 0u) << name << " is excluded but a case exercises it";
      continue;
    }
    auto it = seen.find(name);
    if (it == seen.end()) {
      missing += " " + name;
      continue;
    }
    if (!it->second.empty && !kNoEmptyCase.count(name)) no_empty += " " + name;
    if (!it->second.strided && !kNoStridedCase.count(name)) no_strided += " " + name;
    if (std::getenv("KILN_SWEEP_VERBOSE")) {
      std::cout << name << ": " << it->second.cases << " cases, inputs";
      for (auto& d : it->second.dtypes) std::cout << " " << d;
      std::cout << (it->second.empty ? ", empty" : "") << (it->second.strided ? ", strided" : "") << "\n";
    }
  }
  EXPECT_TRUE(missing.empty()) << "primitives no sweep case exercises:" << missing;
  EXPECT_TRUE(no_empty.empty()) << "primitives no sweep case gives an empty input or output:" << no_empty;
  EXPECT_TRUE(no_strided.empty()) << "primitives no sweep case gives a non-contiguous input:" << no_strided;
  for (auto& [name, why] : kExcluded) EXPECT_NE(mx::registry::find(name), nullptr) << name << " (" << why << ")";
}

TEST(SweepCoverage, ExpectedDifferencesMatchTheManifest) {
  std::set<std::string> listed;
  for (auto& [why, names] : kExpectedDifferences) listed.insert(names.begin(), names.end());
  for (auto& c : cases()) {
    if (c.j.contains("note")) {
      EXPECT_TRUE(listed.count(c.name)) << c.name << " has a non-MLX reference (" << c.j["note"]
                                        << ") but is not in kExpectedDifferences";
    }
    listed.erase(c.name);
  }
  for (auto& n : listed) ADD_FAILURE() << n << " is listed in kExpectedDifferences but is not a sweep case";
}

}  // namespace
