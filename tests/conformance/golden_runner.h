// Running a manifest of exported functions (the golden corpus format, tests/golden/README.md) through
// kiln: import each case's file, replay every call and compare every output (shape, dtype, then
// bit-exact or allclose with the case's tolerances, NaN equal to NaN). Shared by the conformance tests
// (kiln_tests) and the interop runner (kiln_interop), so both judge a case the same way.
#pragma once

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "kiln/kiln.h"
#include "unit/test_util.h"

namespace kiln_golden {

namespace fs = std::filesystem;
using kiln::operator<<;

inline nlohmann::json load_manifest(const fs::path& root) {
  std::ifstream f(root / "manifest.json");
  if (!f) throw std::runtime_error("cannot open " + (root / "manifest.json").string());
  return nlohmann::json::parse(f);
}

// The primitive named by a "not implemented yet" error, or empty.
inline std::string unsupported_primitive(const std::string& msg) {
  for (const char* key : {"Unable to deserialize primitive ", "has no kernel on the "}) {
    auto p = msg.find(key);
    if (p == std::string::npos) continue;
    if (std::string(key).rfind("Unable", 0) == 0) {
      auto s = msg.substr(p + std::strlen(key));
      return s.substr(0, s.find_first_of(" \n."));
    }
    auto q = msg.rfind("Primitive ", p);
    if (q != std::string::npos) return msg.substr(q + 10, p - q - 11);
  }
  return "";
}

// Paths in a manifest are relative to its folder (an absolute path stays as it is).
inline kiln::array load_npy(const fs::path& root, const std::string& rel) { return kiln::load((root / rel).string()); }

inline void call_inputs(const nlohmann::json& call, const fs::path& root, kiln::Args& args, kiln::Kwargs& kwargs) {
  for (auto& a : call["args"]) args.push_back(load_npy(root, a["file"]));
  for (auto& [name, v] : call["kwargs"].items()) kwargs.insert({name, load_npy(root, v["file"])});
}

// Compare one output; returns an empty string when it matches.
inline std::string compare(kiln::array got, kiln::array want, const nlohmann::json& c, bool abs_out) {
  namespace mx = kiln;
  if (std::string mismatch = test_util::shape_dtype_mismatch(got, want); !mismatch.empty()) return mismatch;
  std::ostringstream why;
  if (c["exact"].get<bool>()) {
    mx::array g = mx::contiguous(got);
    mx::eval(g);
    if (g.nbytes() && std::memcmp(g.raw_data(), want.raw_data(), g.nbytes()) != 0) {
      return "not bit-exact";
    }
    return "";
  }
  if (abs_out) {
    got = mx::abs(got);
    want = mx::abs(want);
  }
  double rtol = c["rtol"].get<double>(), atol = c["atol"].get<double>();
  if (!mx::allclose(got, want, rtol, atol, /*equal_nan=*/true).item<bool>()) {
    auto diff = mx::max(mx::abs(mx::astype(got, mx::complex64) - mx::astype(want, mx::complex64)));
    why << "not allclose (rtol " << rtol << ", atol " << atol << "), max abs diff "
        << mx::astype(diff, mx::float32).item<float>();
    return why.str();
  }
  return "";
}

// Run every call of a case through `fn`; returns the first mismatch or empty.
inline std::string run_calls(const kiln::ImportedFunction& fn, const nlohmann::json& c, const fs::path& root) {
  std::set<int> abs_outputs;
  for (auto& i : c["abs_outputs"]) abs_outputs.insert(i.get<int>());
  int k = 0;
  for (auto& call : c["calls"]) {
    kiln::Args args;
    kiln::Kwargs kwargs;
    call_inputs(call, root, args, kwargs);
    auto outs = fn(args, kwargs);
    auto& want = call["outputs"];
    if (outs.size() != want.size()) {
      return "call " + std::to_string(k) + ": " + std::to_string(outs.size()) + " outputs, expected " +
             std::to_string(want.size());
    }
    kiln::eval(outs);
    for (size_t i = 0; i < outs.size(); ++i) {
      auto w = load_npy(root, want[i]["file"]);
      auto why = compare(outs[i], w, c, abs_outputs.count(static_cast<int>(i)) > 0);
      if (!why.empty()) return "call " + std::to_string(k) + " output " + std::to_string(i) + ": " + why;
    }
    ++k;
  }
  return "";
}

enum class Status { Passed, Failed, Unsupported };
struct Outcome {
  Status status;
  std::string reason;
};

// Import the case's file and run it; a primitive kiln lacks is reported as Unsupported (its name).
inline Outcome evaluate_case(const nlohmann::json& c, const fs::path& root, const kiln::ImportOptions& options = {}) {
  const std::string file = (root / c["file"].get<std::string>()).string();
  try {
    auto fn = kiln::import_function(file, options);
    auto why = run_calls(fn, c, root);
    return {why.empty() ? Status::Passed : Status::Failed, why};
  } catch (const std::exception& e) {
    std::string prim = unsupported_primitive(e.what());
    if (!prim.empty()) return {Status::Unsupported, prim};
    return {Status::Failed, std::string("exception: ") + e.what()};
  }
}

// kiln re-exports `fn` (an imported case) by tracing it once per distinct signature among the case's
// calls (the first calls are the exported ones; later calls of a shapeless case are refused as
// already exported). `make(f, shapeless)` opens the exporter (the file, layout and options are the
// caller's).
template <class MakeExporter>
void export_case(const kiln::ImportedFunction& fn, const nlohmann::json& c, const fs::path& root, MakeExporter make) {
  bool shapeless = c["shapeless"].get<bool>();
  kiln::ArgsKwargsFn f = [&fn](const kiln::Args& a, const kiln::Kwargs& k) { return fn(a, k); };
  kiln::FunctionExporter ex = make(f, shapeless);
  for (auto& call : c["calls"]) {
    kiln::Args args;
    kiln::Kwargs kwargs;
    call_inputs(call, root, args, kwargs);
    try {
      ex(args, kwargs);
    } catch (const std::invalid_argument& e) {
      if (std::string(e.what()).find("twice with the same signature") == std::string::npos) throw;
    }
  }
  ex.close();
}

}  // namespace kiln_golden
