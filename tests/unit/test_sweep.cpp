// Reference sweep: one table-driven test per case of tests/reference/sweep/manifest.json, written by
// tests/reference/gen_sweep.py with real MLX 0.30.1 (or numpy where the case says "ref": "numpy").
// Each case names an op by its MLX python name; the table below maps it to the kiln call. Inputs marked
// with a view are built here from their stored base array (transpose, strided or reversed slice,
// broadcast) so the kernel sees strides. Outputs are compared bit for bit where the case says `exact`,
// else with the case's rtol/atol (NaN equal to NaN, infinities equal by sign).
//
// The sweep runs as one ctest entry (`sweep`, see tests/CMakeLists.txt) and by name:
//   kiln_tests --gtest_filter='Sweep*'          kiln_tests --gtest_filter='Sweep/SweepCase.Run/sum_*'
// SweepCoverage.EveryPrimitiveIsExercised records the primitive names of the lazy graph each case's kiln
// call builds, and fails when a registered primitive is exercised by no case (kExcluded aside).
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <cstdlib>
#include <iostream>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <unordered_set>

#include "kiln/kiln.h"
#include "kiln/primitive.h"

namespace {

namespace fs = std::filesystem;
namespace mx = kiln;
using json = nlohmann::json;
using Arrays = std::vector<mx::array>;
using kiln::operator<<;

const fs::path kDir = fs::path(KILN_TEST_DATA) / "reference" / "sweep";

// Primitives no sweep case can exercise, and why.
const std::map<std::string, std::string> kExcluded = {
    // Reads a constant of an imported .mlxfn lazily; only the importer creates it (tests: test_import).
    {"Load", "created only by the .mlxfn importer"},
    // A GPU kernel: kiln records and exports it but raises a named error when asked to run it on the CPU.
    {"CustomKernel", "cannot run on the CPU by design (raises naming the kernel)"},
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
    std::ifstream f(kDir / "manifest.json");
    if (!f) return out;
    json m = json::parse(f);
    for (auto& c : m["cases"]) out.push_back({c["name"].get<std::string>(), c});
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

mx::Dtype dtype_of(const std::string& s) {
  static const std::map<std::string, mx::Dtype> m = {
      {"bool", mx::bool_},       {"uint8", mx::uint8},     {"uint16", mx::uint16},   {"uint32", mx::uint32},
      {"uint64", mx::uint64},    {"int8", mx::int8},       {"int16", mx::int16},     {"int32", mx::int32},
      {"int64", mx::int64},      {"float16", mx::float16}, {"bfloat16", mx::bfloat16}, {"float32", mx::float32},
      {"float64", mx::float64},  {"complex64", mx::complex64}};
  return m.at(s);
}

// Manifest file names are 12 hex digits of the file's hash, without ".npy".
mx::array load(const std::string& name) { return mx::load((kDir / (name + ".npy")).string()); }

// ---------------------------------------------------------------- parameters

bool has(const json& p, const char* k) { return p.contains(k) && !p[k].is_null(); }
int gi(const json& p, const char* k, int d = 0) { return has(p, k) ? p[k].get<int>() : d; }
float gf(const json& p, const char* k, float d = 0) { return has(p, k) ? p[k].get<float>() : d; }
bool gb(const json& p, const char* k, bool d = false) { return has(p, k) ? p[k].get<bool>() : d; }
std::string gs(const json& p, const char* k, const std::string& d = "") {
  return has(p, k) ? p[k].get<std::string>() : d;
}
std::vector<int> gv(const json& p, const char* k) { return has(p, k) ? p[k].get<std::vector<int>>() : std::vector<int>{}; }
mx::Shape gshape(const json& p, const char* k) { return has(p, k) ? p[k].get<mx::Shape>() : mx::Shape{}; }
std::optional<int> gopt(const json& p, const char* k) {
  return has(p, k) ? std::optional<int>(p[k].get<int>()) : std::nullopt;
}
mx::Dtype gd(const json& p, const char* k = "dtype", mx::Dtype d = mx::float32) {
  return has(p, k) ? dtype_of(p[k].get<std::string>()) : d;
}
// A single int or a list of ints (conv strides and paddings).
std::vector<int> gints(const json& p, const char* k, int d, int n) {
  if (!has(p, k)) return std::vector<int>(n, d);
  if (p[k].is_number()) return std::vector<int>(n, p[k].get<int>());
  return p[k].get<std::vector<int>>();
}
std::pair<int, int> g2(const json& p, const char* k, int d) {
  auto v = gints(p, k, d, 2);
  return {v[0], v[1]};
}
std::tuple<int, int, int> g3(const json& p, const char* k, int d) {
  auto v = gints(p, k, d, 3);
  return {v[0], v[1], v[2]};
}

// ---------------------------------------------------------------- the op table

using OpFn = std::function<Arrays(const Arrays&, const json&)>;

Arrays one(mx::array a) { return {std::move(a)}; }

// Reductions with an optional axes list.
template <typename F, typename G>
Arrays reduce(F with_axes, G all_axes, const Arrays& x, const json& p) {
  bool kd = gb(p, "keepdims");
  if (has(p, "axes")) return one(with_axes(x[0], gv(p, "axes"), kd));
  return one(all_axes(x[0], kd));
}

const std::map<std::string, OpFn>& ops() {
  static const std::map<std::string, OpFn> table = [] {
    std::map<std::string, OpFn> t;
    using A = const Arrays&;
    using P = const json&;
    // ---- element-wise
#define UN(name, fn) t[name] = [](A x, P) { return one(fn(x[0])); };
    UN("abs", mx::abs) UN("negative", mx::negative) UN("sign", mx::sign) UN("square", mx::square)
    UN("floor", mx::floor) UN("ceil", mx::ceil) UN("logical_not", mx::logical_not)
    UN("bitwise_invert", mx::bitwise_invert) UN("conjugate", mx::conjugate) UN("real", mx::real)
    UN("imag", mx::imag) UN("exp", mx::exp) UN("expm1", mx::expm1) UN("log1p", mx::log1p) UN("sin", mx::sin)
    UN("cos", mx::cos) UN("tan", mx::tan) UN("sinh", mx::sinh) UN("cosh", mx::cosh) UN("tanh", mx::tanh)
    UN("arcsin", mx::arcsin) UN("arccos", mx::arccos) UN("arctan", mx::arctan) UN("arcsinh", mx::arcsinh)
    UN("arccosh", mx::arccosh) UN("arctanh", mx::arctanh) UN("sigmoid", mx::sigmoid) UN("erf", mx::erf)
    UN("erfinv", mx::erfinv) UN("log", mx::log) UN("log2", mx::log2) UN("log10", mx::log10) UN("sqrt", mx::sqrt)
    UN("rsqrt", mx::rsqrt) UN("reciprocal", mx::reciprocal) UN("degrees", mx::degrees) UN("radians", mx::radians)
    UN("isnan", mx::isnan) UN("isinf", mx::isinf) UN("isfinite", mx::isfinite) UN("isposinf", mx::isposinf)
    UN("isneginf", mx::isneginf) UN("stop_gradient", mx::stop_gradient)
#undef UN
    t["round"] = [](A x, P p) { return one(mx::round(x[0], gi(p, "decimals"))); };
    t["kiln.copy"] = [](A x, P) { return one(mx::copy(x[0])); };
    t["astype"] = [](A x, P p) { return one(mx::astype(x[0], gd(p))); };
    t["view"] = [](A x, P p) { return one(mx::view(x[0], gd(p))); };
    t["nan_to_num"] = [](A x, P p) {
      auto o = [&](const char* k) { return has(p, k) ? std::optional<float>(gf(p, k)) : std::nullopt; };
      return one(mx::nan_to_num(x[0], gf(p, "nan", 0.f), o("posinf"), o("neginf")));
    };
#define BIN(name, fn) t[name] = [](A x, P) { return one(fn(x[0], x[1])); };
    BIN("add", mx::add) BIN("subtract", mx::subtract) BIN("multiply", mx::multiply) BIN("divide", mx::divide)
    BIN("floor_divide", mx::floor_divide) BIN("remainder", mx::remainder) BIN("power", mx::power)
    BIN("maximum", mx::maximum) BIN("minimum", mx::minimum) BIN("arctan2", mx::arctan2)
    BIN("logaddexp", mx::logaddexp) BIN("equal", mx::equal) BIN("not_equal", mx::not_equal)
    BIN("greater", mx::greater) BIN("greater_equal", mx::greater_equal) BIN("less", mx::less)
    BIN("less_equal", mx::less_equal) BIN("logical_and", mx::logical_and) BIN("logical_or", mx::logical_or)
    BIN("bitwise_and", mx::bitwise_and) BIN("bitwise_or", mx::bitwise_or) BIN("bitwise_xor", mx::bitwise_xor)
    BIN("left_shift", mx::left_shift) BIN("right_shift", mx::right_shift)
#undef BIN
    t["divmod"] = [](A x, P) { return mx::divmod(x[0], x[1]); };
    t["array_equal"] = [](A x, P p) { return one(mx::array_equal(x[0], x[1], gb(p, "equal_nan"))); };
    t["isclose"] = [](A x, P p) {
      return one(mx::isclose(x[0], x[1], p["rtol"].get<double>(), p["atol"].get<double>(), gb(p, "equal_nan")));
    };
    t["allclose"] = [](A x, P p) {
      return one(mx::allclose(x[0], x[1], p["rtol"].get<double>(), p["atol"].get<double>(), gb(p, "equal_nan")));
    };
    t["where"] = [](A x, P) { return one(mx::where(x[0], x[1], x[2])); };
    t["clip"] = [](A x, P) { return one(mx::clip(x[0], x[1], x[2])); };
    // ---- reductions
#define RED(name, fn)                                                                                    \
  t[name] = [](A x, P p) {                                                                               \
    return reduce([](const mx::array& a, const std::vector<int>& ax, bool kd) { return fn(a, ax, kd); }, \
                  [](const mx::array& a, bool kd) { return fn(a, kd); }, x, p);                          \
  };
    RED("all", mx::all) RED("any", mx::any) RED("sum", mx::sum) RED("prod", mx::prod) RED("max", mx::max)
    RED("min", mx::min) RED("mean", mx::mean) RED("logsumexp", mx::logsumexp)
#undef RED
    t["var"] = [](A x, P p) {
      int dd = gi(p, "ddof");
      bool kd = gb(p, "keepdims");
      return one(has(p, "axes") ? mx::var(x[0], gv(p, "axes"), kd, dd) : mx::var(x[0], kd, dd));
    };
    t["std"] = [](A x, P p) {
      int dd = gi(p, "ddof");
      bool kd = gb(p, "keepdims");
      return one(has(p, "axes") ? mx::std(x[0], gv(p, "axes"), kd, dd) : mx::std(x[0], kd, dd));
    };
    t["argmin"] = [](A x, P p) {
      bool kd = gb(p, "keepdims");
      return one(has(p, "axis") ? mx::argmin(x[0], gi(p, "axis"), kd) : mx::argmin(x[0], kd));
    };
    t["argmax"] = [](A x, P p) {
      bool kd = gb(p, "keepdims");
      return one(has(p, "axis") ? mx::argmax(x[0], gi(p, "axis"), kd) : mx::argmax(x[0], kd));
    };
    t["softmax"] = [](A x, P p) {
      bool pr = gb(p, "precise");
      return one(has(p, "axes") ? mx::softmax(x[0], gv(p, "axes"), pr) : mx::softmax(x[0], pr));
    };
#define SCAN(name, fn)                                                                    \
  t[name] = [](A x, P p) {                                                                \
    bool rev = gb(p, "reverse"), inc = gb(p, "inclusive", true);                          \
    return one(has(p, "axis") ? fn(x[0], gi(p, "axis"), rev, inc) : fn(x[0], rev, inc)); \
  };
    SCAN("cumsum", mx::cumsum) SCAN("cumprod", mx::cumprod) SCAN("cummax", mx::cummax) SCAN("cummin", mx::cummin)
    SCAN("logcumsumexp", mx::logcumsumexp)
#undef SCAN
    // ---- shapes and views
    t["reshape"] = [](A x, P p) { return one(mx::reshape(x[0], gshape(p, "shape"))); };
    t["flatten"] = [](A x, P p) { return one(mx::flatten(x[0], gi(p, "start_axis", 0), gi(p, "end_axis", -1))); };
    t["unflatten"] = [](A x, P p) { return one(mx::unflatten(x[0], gi(p, "axis"), gshape(p, "shape"))); };
    t["squeeze"] = [](A x, P p) { return one(has(p, "axes") ? mx::squeeze(x[0], gv(p, "axes")) : mx::squeeze(x[0])); };
    t["expand_dims"] = [](A x, P p) { return one(mx::expand_dims(x[0], gv(p, "axes"))); };
    t["transpose"] = [](A x, P p) {
      return one(has(p, "axes") ? mx::transpose(x[0], gv(p, "axes")) : mx::transpose(x[0]));
    };
    t["swapaxes"] = [](A x, P p) { return one(mx::swapaxes(x[0], gi(p, "axis1"), gi(p, "axis2"))); };
    t["moveaxis"] = [](A x, P p) { return one(mx::moveaxis(x[0], gi(p, "source"), gi(p, "destination"))); };
    t["broadcast_to"] = [](A x, P p) { return one(mx::broadcast_to(x[0], gshape(p, "shape"))); };
    t["broadcast_arrays"] = [](A x, P) { return mx::broadcast_arrays(x); };
    t["as_strided"] = [](A x, P p) {
      return one(mx::as_strided(x[0], gshape(p, "shape"), p["strides"].get<mx::Strides>(),
                                p["offset"].get<size_t>()));
    };
    t["contiguous"] = [](A x, P p) { return one(mx::contiguous(x[0], gb(p, "allow_col_major"))); };
    t["atleast_1d"] = [](A x, P) { return one(mx::atleast_1d(x[0])); };
    t["atleast_2d"] = [](A x, P) { return one(mx::atleast_2d(x[0])); };
    t["atleast_3d"] = [](A x, P) { return one(mx::atleast_3d(x[0])); };
    t["slice"] = [](A x, P p) {
      return one(mx::slice(x[0], gshape(p, "start"), gshape(p, "stop"), gshape(p, "strides")));
    };
    t["slice_dynamic"] = [](A x, P p) { return one(mx::slice(x[0], x[1], gv(p, "axes"), gshape(p, "slice_size"))); };
    t["slice_update"] = [](A x, P p) {
      return one(mx::slice_update(x[0], x[1], gshape(p, "start"), gshape(p, "stop"), gshape(p, "strides")));
    };
    t["slice_update_dynamic"] = [](A x, P p) { return one(mx::slice_update(x[0], x[1], x[2], gv(p, "axes"))); };
    t["split"] = [](A x, P p) {
      int ax = gi(p, "axis", 0);
      if (p["indices"].is_number()) return mx::split(x[0], p["indices"].get<int>(), ax);
      return mx::split(x[0], gshape(p, "indices"), ax);
    };
    t["concatenate"] = [](A x, P p) { return one(mx::concatenate(x, gi(p, "axis", 0))); };
    t["stack"] = [](A x, P p) { return one(mx::stack(x, gi(p, "axis", 0))); };
    t["tile"] = [](A x, P p) { return one(mx::tile(x[0], gv(p, "reps"))); };
    t["repeat"] = [](A x, P p) {
      return one(has(p, "axis") ? mx::repeat(x[0], gi(p, "repeats"), gi(p, "axis")) : mx::repeat(x[0], gi(p, "repeats")));
    };
    t["roll"] = [](A x, P p) {
      if (p["shift"].is_number()) {
        return one(has(p, "axis") ? mx::roll(x[0], gi(p, "shift"), gi(p, "axis")) : mx::roll(x[0], gi(p, "shift")));
      }
      return one(mx::roll(x[0], gshape(p, "shift"), gv(p, "axis")));
    };
    t["pad"] = [](A x, P p) {
      std::vector<std::pair<int, int>> w;
      for (auto& e : p["pad_width"]) w.push_back({e[0].get<int>(), e[1].get<int>()});
      return one(mx::pad(x[0], w, x.size() > 1 ? x[1] : mx::array(0), gs(p, "mode", "constant")));
    };
    t["meshgrid"] = [](A x, P p) { return mx::meshgrid(x, gb(p, "sparse"), gs(p, "indexing", "xy")); };
    t["tril"] = [](A x, P p) { return one(mx::tril(x[0], gi(p, "k"))); };
    t["triu"] = [](A x, P p) { return one(mx::triu(x[0], gi(p, "k"))); };
    t["arange"] = [](A, P p) {
      return one(mx::arange(p["start"].get<double>(), p["stop"].get<double>(), p["step"].get<double>(), gd(p)));
    };
    t["linspace"] = [](A, P p) {
      return one(mx::linspace(p["start"].get<double>(), p["stop"].get<double>(), gi(p, "num"), gd(p)));
    };
    t["full"] = [](A x, P p) { return one(mx::full(gshape(p, "shape"), x[0], gd(p))); };
    t["zeros"] = [](A, P p) { return one(mx::zeros(gshape(p, "shape"), gd(p))); };
    t["ones"] = [](A, P p) { return one(mx::ones(gshape(p, "shape"), gd(p))); };
    t["zeros_like"] = [](A x, P) { return one(mx::zeros_like(x[0])); };
    t["ones_like"] = [](A x, P) { return one(mx::ones_like(x[0])); };
    t["eye"] = [](A, P p) { return one(mx::eye(gi(p, "n"), gi(p, "m", gi(p, "n")), gi(p, "k"), gd(p))); };
    t["identity"] = [](A, P p) { return one(mx::identity(gi(p, "n"), gd(p))); };
    t["tri"] = [](A, P p) { return one(mx::tri(gi(p, "n"), gi(p, "m", gi(p, "n")), gi(p, "k"), gd(p))); };
    // ---- indexing
    t["take"] = [](A x, P p) { return one(has(p, "axis") ? mx::take(x[0], x[1], gi(p, "axis")) : mx::take(x[0], x[1])); };
    t["take_along_axis"] = [](A x, P p) {  // no axis: of the flattened array (indices as given)
      if (!has(p, "axis")) return one(mx::take_along_axis(mx::reshape(x[0], {-1}), x[1], 0));
      return one(mx::take_along_axis(x[0], x[1], gi(p, "axis")));
    };
    t["put_along_axis"] = [](A x, P p) { return one(mx::put_along_axis(x[0], x[1], x[2], gi(p, "axis"))); };
    t["kiln.scatter_add_axis"] = [](A x, P p) { return one(mx::scatter_add_axis(x[0], x[1], x[2], gi(p, "axis"))); };
    t["gather"] = [](A x, P p) {
      return one(mx::gather(x[0], Arrays(x.begin() + 1, x.end()), gv(p, "axes"), gshape(p, "slice_sizes")));
    };
#define SCAT(name, fn) \
  t[name] = [](A x, P p) { return one(fn(x[0], Arrays(x.begin() + 1, x.end() - 1), x.back(), gv(p, "axes"))); };
    SCAT("scatter", mx::scatter) SCAT("scatter_add", mx::scatter_add) SCAT("scatter_prod", mx::scatter_prod)
    SCAT("scatter_max", mx::scatter_max) SCAT("scatter_min", mx::scatter_min)
#undef SCAT
    t["masked_scatter"] = [](A x, P) { return one(mx::masked_scatter(x[0], x[1], x[2])); };
    // ---- sorting
    t["sort"] = [](A x, P p) { return one(has(p, "axis") ? mx::sort(x[0], gi(p, "axis")) : mx::sort(x[0])); };
    t["argsort"] = [](A x, P p) { return one(has(p, "axis") ? mx::argsort(x[0], gi(p, "axis")) : mx::argsort(x[0])); };
    t["partition"] = [](A x, P p) { return one(mx::partition(x[0], gi(p, "kth"), gi(p, "axis", -1))); };
    t["argpartition"] = [](A x, P p) { return one(mx::argpartition(x[0], gi(p, "kth"), gi(p, "axis", -1))); };
    t["topk"] = [](A x, P p) { return one(mx::topk(x[0], gi(p, "k"), gi(p, "axis", -1))); };
    // ---- products
    t["matmul"] = [](A x, P) { return one(mx::matmul(x[0], x[1])); };
    t["addmm"] = [](A x, P p) { return one(mx::addmm(x[0], x[1], x[2], gf(p, "alpha", 1), gf(p, "beta", 1))); };
    t["block_masked_mm"] = [](A x, P p) {
      std::string m = gs(p, "masks");
      size_t k = 2;
      auto next = [&](char c) { return m.find(c) != std::string::npos ? std::optional<mx::array>(x[k++]) : std::nullopt; };
      auto mo = next('o');
      auto ml = next('l');
      auto mr = next('r');
      return one(mx::block_masked_mm(x[0], x[1], gi(p, "block_size"), mo, ml, mr));
    };
    t["gather_mm"] = [](A x, P p) {
      return one(mx::gather_mm(x[0], x[1], x.size() > 2 ? std::optional<mx::array>(x[2]) : std::nullopt,
                               x.size() > 3 ? std::optional<mx::array>(x[3]) : std::nullopt, gb(p, "sorted")));
    };
    t["hadamard_transform"] = [](A x, P p) {
      return one(mx::hadamard_transform(x[0], has(p, "scale") ? std::optional<float>(gf(p, "scale")) : std::nullopt));
    };
    t["tensordot"] = [](A x, P p) {
      if (p["axes"].is_number()) return one(mx::tensordot(x[0], x[1], gi(p, "axes")));
      return one(mx::tensordot(x[0], x[1], p["axes"][0].get<std::vector<int>>(), p["axes"][1].get<std::vector<int>>()));
    };
    t["inner"] = [](A x, P) { return one(mx::inner(x[0], x[1])); };
    t["outer"] = [](A x, P) { return one(mx::outer(x[0], x[1])); };
    t["kron"] = [](A x, P) { return one(mx::kron(x[0], x[1])); };
    // ---- convolutions
    t["conv1d"] = [](A x, P p) {
      return one(mx::conv1d(x[0], x[1], gi(p, "stride", 1), gi(p, "padding", 0), gi(p, "dilation", 1), gi(p, "groups", 1)));
    };
    t["conv2d"] = [](A x, P p) {
      return one(mx::conv2d(x[0], x[1], g2(p, "stride", 1), g2(p, "padding", 0), g2(p, "dilation", 1), gi(p, "groups", 1)));
    };
    t["conv3d"] = [](A x, P p) {
      return one(mx::conv3d(x[0], x[1], g3(p, "stride", 1), g3(p, "padding", 0), g3(p, "dilation", 1), gi(p, "groups", 1)));
    };
    t["conv_transpose1d"] = [](A x, P p) {
      return one(mx::conv_transpose1d(x[0], x[1], gi(p, "stride", 1), gi(p, "padding", 0), gi(p, "dilation", 1),
                                      gi(p, "output_padding", 0), gi(p, "groups", 1)));
    };
    t["conv_transpose2d"] = [](A x, P p) {
      return one(mx::conv_transpose2d(x[0], x[1], g2(p, "stride", 1), g2(p, "padding", 0), g2(p, "dilation", 1),
                                      g2(p, "output_padding", 0), gi(p, "groups", 1)));
    };
    t["conv_transpose3d"] = [](A x, P p) {
      return one(mx::conv_transpose3d(x[0], x[1], g3(p, "stride", 1), g3(p, "padding", 0), g3(p, "dilation", 1),
                                      g3(p, "output_padding", 0), gi(p, "groups", 1)));
    };
    t["conv_general"] = [](A x, P p) {
      int nd = static_cast<int>(x[0].ndim()) - 2;
      return one(mx::conv_general(x[0], x[1], gints(p, "stride", 1, nd), gints(p, "padding_lo", 0, nd),
                                  gints(p, "padding_hi", 0, nd), gints(p, "kernel_dilation", 1, nd),
                                  gints(p, "input_dilation", 1, nd), gi(p, "groups", 1), gb(p, "flip")));
    };
    // ---- fft
    t["fft.fft"] = [](A x, P p) {
      return one(has(p, "n") ? mx::fft::fft(x[0], gi(p, "n"), gi(p, "axis", -1)) : mx::fft::fft(x[0], gi(p, "axis", -1)));
    };
    t["fft.ifft"] = [](A x, P p) {
      return one(has(p, "n") ? mx::fft::ifft(x[0], gi(p, "n"), gi(p, "axis", -1)) : mx::fft::ifft(x[0], gi(p, "axis", -1)));
    };
    t["fft.rfft"] = [](A x, P p) {
      return one(has(p, "n") ? mx::fft::rfft(x[0], gi(p, "n"), gi(p, "axis", -1)) : mx::fft::rfft(x[0], gi(p, "axis", -1)));
    };
    t["fft.irfft"] = [](A x, P p) {
      return one(has(p, "n") ? mx::fft::irfft(x[0], gi(p, "n"), gi(p, "axis", -1))
                             : mx::fft::irfft(x[0], gi(p, "axis", -1)));
    };
    using NdFn = mx::array (*)(const mx::array&, const mx::Shape&, const std::vector<int>&, mx::StreamOrDevice);
    using NdAx = mx::array (*)(const mx::array&, const std::vector<int>&, mx::StreamOrDevice);
    using NdAll = mx::array (*)(const mx::array&, mx::StreamOrDevice);
    auto nd = [](NdFn with_s, NdAx with_axes, NdAll all, bool two) -> OpFn {
      return [=](A x, P p) {
        std::vector<int> axes = has(p, "axes") ? gv(p, "axes") : std::vector<int>{};
        if (!has(p, "axes") && two) axes = {-2, -1};
        if (has(p, "s")) return one(with_s(x[0], gshape(p, "s"), axes, {}));
        if (has(p, "axes") || two) return one(with_axes(x[0], axes, {}));
        return one(all(x[0], {}));
      };
    };
    t["fft.fftn"] = nd(mx::fft::fftn, mx::fft::fftn, mx::fft::fftn, false);
    t["fft.ifftn"] = nd(mx::fft::ifftn, mx::fft::ifftn, mx::fft::ifftn, false);
    t["fft.rfftn"] = nd(mx::fft::rfftn, mx::fft::rfftn, mx::fft::rfftn, false);
    t["fft.irfftn"] = nd(mx::fft::irfftn, mx::fft::irfftn, mx::fft::irfftn, false);
    t["fft.fft2"] = nd(mx::fft::fftn, mx::fft::fftn, mx::fft::fftn, true);
    t["fft.ifft2"] = nd(mx::fft::ifftn, mx::fft::ifftn, mx::fft::ifftn, true);
    t["fft.rfft2"] = nd(mx::fft::rfftn, mx::fft::rfftn, mx::fft::rfftn, true);
    t["fft.irfft2"] = nd(mx::fft::irfftn, mx::fft::irfftn, mx::fft::irfftn, true);
    t["fft.fftshift"] = [](A x, P p) {
      return one(has(p, "axes") ? mx::fft::fftshift(x[0], gv(p, "axes")) : mx::fft::fftshift(x[0]));
    };
    t["fft.ifftshift"] = [](A x, P p) {
      return one(has(p, "axes") ? mx::fft::ifftshift(x[0], gv(p, "axes")) : mx::fft::ifftshift(x[0]));
    };
    // ---- linalg
    t["linalg.norm"] = [](A x, P p) {
      std::optional<std::vector<int>> ax = has(p, "axis") ? std::optional(gv(p, "axis")) : std::nullopt;
      bool kd = gb(p, "keepdims");
      if (!has(p, "ord")) return one(mx::linalg::norm(x[0], ax, kd));
      if (p["ord"].is_string()) {
        auto o = p["ord"].get<std::string>();  // JSON has no infinity
        if (o == "inf" || o == "-inf") return one(mx::linalg::norm(x[0], o == "inf" ? INFINITY : -INFINITY, ax, kd));
        return one(mx::linalg::norm(x[0], o, ax, kd));
      }
      return one(mx::linalg::norm(x[0], p["ord"].get<double>(), ax, kd));
    };
    t["linalg.qr"] = [](A x, P) {
      auto [q, r] = mx::linalg::qr(x[0]);
      return Arrays{q, r};
    };
    t["linalg.svd"] = [](A x, P p) { return mx::linalg::svd(x[0], gb(p, "compute_uv", true)); };
    t["linalg.inv"] = [](A x, P) { return one(mx::linalg::inv(x[0])); };
    t["linalg.tri_inv"] = [](A x, P p) { return one(mx::linalg::tri_inv(x[0], gb(p, "upper"))); };
    t["linalg.cholesky"] = [](A x, P p) { return one(mx::linalg::cholesky(x[0], gb(p, "upper"))); };
    t["linalg.cholesky_inv"] = [](A x, P p) { return one(mx::linalg::cholesky_inv(x[0], gb(p, "upper"))); };
    t["linalg.pinv"] = [](A x, P) { return one(mx::linalg::pinv(x[0])); };
    t["linalg.lu"] = [](A x, P) { return mx::linalg::lu(x[0]); };
    t["linalg.lu_factor"] = [](A x, P) {
      auto [lu, piv] = mx::linalg::lu_factor(x[0]);
      return Arrays{lu, piv};
    };
    t["linalg.solve"] = [](A x, P) { return one(mx::linalg::solve(x[0], x[1])); };
    t["linalg.solve_triangular"] = [](A x, P p) {
      return one(mx::linalg::solve_triangular(x[0], x[1], gb(p, "upper")));
    };
    t["linalg.cross"] = [](A x, P p) { return one(mx::linalg::cross(x[0], x[1], gi(p, "axis", -1))); };
    t["linalg.eig"] = [](A x, P) {
      auto [w, v] = mx::linalg::eig(x[0]);
      return Arrays{w, v};
    };
    t["linalg.eigvals"] = [](A x, P) { return one(mx::linalg::eigvals(x[0])); };
    t["linalg.eigh"] = [](A x, P p) {
      auto [w, v] = mx::linalg::eigh(x[0], gs(p, "UPLO", "L"));
      return Arrays{w, v};
    };
    t["linalg.eigvalsh"] = [](A x, P p) { return one(mx::linalg::eigvalsh(x[0], gs(p, "UPLO", "L"))); };
    // ---- quantization
    t["quantize"] = [](A x, P p) {
      return mx::quantize(x[0], gopt(p, "group_size"), gopt(p, "bits"), gs(p, "mode", "affine"));
    };
    t["dequantize"] = [](A x, P p) {
      return one(mx::dequantize(x[0], x[1], x.size() > 2 ? std::optional<mx::array>(x[2]) : std::nullopt,
                                gopt(p, "group_size"), gopt(p, "bits"), gs(p, "mode", "affine"),
                                has(p, "dtype") ? std::optional<mx::Dtype>(gd(p)) : std::nullopt));
    };
    auto qmm = [](A x, P p) {
      bool aff = gs(p, "mode", "affine") == "affine";
      return one(mx::quantized_matmul(x[0], x[1], x[2], aff ? std::optional<mx::array>(x[3]) : std::nullopt,
                                      gb(p, "transpose", true), gopt(p, "group_size"), gopt(p, "bits"),
                                      gs(p, "mode", "affine")));
    };
    t["quantized_matmul"] = qmm;
    t["kiln.qmm_numpy"] = qmm;
    auto gqmm = [](A x, P p) {
      bool aff = gs(p, "mode", "affine") == "affine";
      size_t k = aff ? 4 : 3;
      return one(mx::gather_qmm(x[0], x[1], x[2], aff ? std::optional<mx::array>(x[3]) : std::nullopt, x[k], x[k + 1],
                                gb(p, "transpose", true), gopt(p, "group_size"), gopt(p, "bits"),
                                gs(p, "mode", "affine"), gb(p, "sorted")));
    };
    t["gather_qmm"] = gqmm;
    t["kiln.gather_qmm_numpy"] = gqmm;
    // ---- random (input 0 is the key)
    t["random.bits"] = [](A x, P p) { return one(mx::random::bits(gshape(p, "shape"), gi(p, "width", 4), x[0])); };
    t["random.split"] = [](A x, P p) { return one(mx::random::split(x[0], gi(p, "num", 2))); };
    t["random.uniform"] = [](A x, P p) { return one(mx::random::uniform(x[1], x[2], gshape(p, "shape"), gd(p), x[0])); };
    t["random.normal"] = [](A x, P p) {
      return one(mx::random::normal(gshape(p, "shape"), gd(p), gf(p, "loc", 0.f), gf(p, "scale", 1.f), x[0]));
    };
    t["random.randint"] = [](A x, P p) {
      return one(mx::random::randint(x[1], x[2], gshape(p, "shape"), gd(p, "dtype", mx::int32), x[0]));
    };
    t["random.bernoulli"] = [](A x, P p) {
      return one(has(p, "shape") ? mx::random::bernoulli(x[1], gshape(p, "shape"), x[0]) : mx::random::bernoulli(x[1], x[0]));
    };
    t["random.truncated_normal"] = [](A x, P p) {
      return one(mx::random::truncated_normal(x[1], x[2], gshape(p, "shape"), gd(p), x[0]));
    };
    t["random.gumbel"] = [](A x, P p) { return one(mx::random::gumbel(gshape(p, "shape"), gd(p), x[0])); };
    t["random.categorical"] = [](A x, P p) {
      if (has(p, "num_samples")) return one(mx::random::categorical(x[1], gi(p, "axis", -1), gi(p, "num_samples"), x[0]));
      return one(mx::random::categorical(x[1], gi(p, "axis", -1), x[0]));
    };
    t["random.laplace"] = [](A x, P p) {
      return one(mx::random::laplace(gshape(p, "shape"), gd(p), gf(p, "loc", 0.f), gf(p, "scale", 1.f), x[0]));
    };
    t["random.permutation"] = [](A x, P p) {
      if (x.size() > 1) return one(mx::random::permutation(x[1], gi(p, "axis", 0), x[0]));
      return one(mx::random::permutation(gi(p, "n"), x[0]));
    };
    t["random.multivariate_normal"] = [](A x, P p) {
      return one(mx::random::multivariate_normal(x[1], x[2], gshape(p, "shape"), gd(p), x[0]));
    };
    // ---- fused
    t["fast.rms_norm"] = [](A x, P p) {
      return one(mx::fast::rms_norm(x[0], x.size() > 1 ? std::optional<mx::array>(x[1]) : std::nullopt, gf(p, "eps")));
    };
    t["fast.layer_norm"] = [](A x, P p) {
      std::optional<mx::array> w, b;
      if (gb(p, "w")) w = x[1];
      if (gb(p, "b")) b = x.back();
      return one(mx::fast::layer_norm(x[0], w, b, gf(p, "eps")));
    };
    t["fast.rope"] = [](A x, P p) {
      std::optional<mx::array> freqs = gb(p, "freqs") ? std::optional<mx::array>(x.back()) : std::nullopt;
      std::optional<float> base = freqs ? std::nullopt : std::optional<float>(gf(p, "base"));
      if (gb(p, "offset_array")) {
        return one(mx::fast::rope(x[0], gi(p, "dims"), gb(p, "traditional"), base, gf(p, "scale"), x[1], freqs));
      }
      return one(mx::fast::rope(x[0], gi(p, "dims"), gb(p, "traditional"), base, gf(p, "scale"), gi(p, "offset"), freqs));
    };
    t["kiln.rope_inverse"] = [](A x, P p) {
      return one(mx::fast::detail::rope(x.back(), gi(p, "dims"), gb(p, "traditional"), gf(p, "base"), gf(p, "scale"),
                                        mx::array(gi(p, "offset")), std::nullopt, /*forward=*/false));
    };
    auto sdpa_args = [](A x, P p) {
      std::string mode = gs(p, "mask");
      size_t k = 3;
      std::optional<mx::array> mask, sinks;
      if (mode == "array") mask = x[k++];
      if (gb(p, "sinks")) sinks = x[k++];
      return std::make_tuple(mode == "causal" ? std::string("causal") : std::string(mode == "array" ? "array" : ""),
                             mask, sinks);
    };
    t["fast.scaled_dot_product_attention"] = [sdpa_args](A x, P p) {
      auto [mode, mask, sinks] = sdpa_args(x, p);
      return one(mx::fast::scaled_dot_product_attention(x[0], x[1], x[2], gf(p, "scale"), mode, mask, sinks));
    };
    t["kiln.sdpa_with_lse"] = [sdpa_args](A x, P p) {
      auto [mode, mask, sinks] = sdpa_args(x, p);
      return mx::fast::detail::scaled_dot_product_attention_with_lse(x[0], x[1], x[2], gf(p, "scale"), mode, mask,
                                                                     sinks);
    };
    t["kiln.rms_norm_vjp"] = [](A x, P p) { return mx::fast::detail::rms_norm_vjp(x[0], x[1], x[2], gf(p, "eps")); };
    t["kiln.layer_norm_vjp"] = [](A x, P p) {
      return mx::fast::detail::layer_norm_vjp(x[0], x[1], x[2], x[3], gf(p, "eps"));
    };
    // ---- graph utilities; nodes MLX emits only in shapeless traces, built directly
    t["depends"] = [](A x, P p) {
      int n = gi(p, "n");
      return mx::depends(Arrays(x.begin(), x.begin() + n), Arrays(x.begin() + n, x.end()));
    };
    t["kiln.broadcast_axes"] = [](A x, P p) {
      return Arrays{mx::make_array(mx::registry::get("BroadcastAxes"), mx::State{p["ignore_axes"].get<std::vector<int32_t>>()},
                                   x)};
    };
    t["kiln.number_of_elements"] = [](A x, P p) {
      return Arrays{mx::make_array(mx::registry::get("NumberOfElements"),
                                   mx::State{p["axes"].get<std::vector<int32_t>>(), gb(p, "inverted"), gd(p)}, {x[0]})};
    };
    return t;
  }();
  return table;
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
  std::ostringstream why;
  if (got.shape() != want.shape()) {
    why << "shape " << got.shape() << " != expected " << want.shape();
    return why.str();
  }
  if (got.dtype() != want.dtype()) {
    why << "dtype " << got.dtype() << " != expected " << want.dtype();
    return why.str();
  }
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
