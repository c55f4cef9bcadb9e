// Running one (possibly corrupt) file through import and a call, with its outcome, time and heap peak.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "alloc_counter.h"
#include "format/validate.h"
#include "hostile_util.h"
#include "kiln/kiln.h"

namespace kiln_test {

// What happened to one variant.
struct Outcome {
  enum Kind { Rejected, Ran, NoMatch, CallError, Bad } kind = Bad;
  std::string message;      // the error text (Rejected, NoMatch, CallError) or what went wrong (Bad)
  double seconds = 0;
  uint64_t peak = 0;        // heap bytes above the starting level (0 when not counted)
  uint64_t output_bytes = 0;
};

inline bool kiln_message(const std::string& m) { return m.size() > 2 && m[0] == '['; }

// Import `bytes`; when it loads, call it with `args`/`kwargs` and evaluate. Outputs must have the
// dtypes (and, unless shapeless, the shapes) that one of the file's validated records declares.
inline Outcome run_variant(const std::vector<uint8_t>& bytes, const kiln::Args& args, const kiln::Kwargs& kwargs,
                           const kiln::ImportOptions& options = kiln::ImportOptions{}) {
  Outcome r;
  // Start with an empty buffer cache: cached blocks from earlier cases would otherwise be reused
  // inside the measured region and hide allocations; blocks cached inside it count against the peak.
  kiln::clear_cache();
  uint64_t base = live_bytes();
  reset_peak();
  auto t0 = std::chrono::steady_clock::now();
  bool loaded = false;
  try {
    auto f = import_bytes(bytes, options);
    loaded = true;
    std::vector<kiln::array> outs;
    try {
      outs = f(args, kwargs);
    } catch (const std::invalid_argument& e) {
      std::string m = e.what();
      if (m.find("No imported function found") != std::string::npos) {
        r.kind = Outcome::NoMatch;
        r.message = m;
        outs.clear();
      } else {
        throw;
      }
    }
    if (r.kind != Outcome::NoMatch) {
      kiln::eval(outs);
      const auto& info = f.info();
      bool ok = false;
      for (auto& fn : info.functions) {
        if (fn.outputs.size() != outs.size()) continue;
        bool same = true;
        for (size_t k = 0; k < outs.size() && same; ++k) {
          same = outs[k].dtype() == fn.outputs[k].dtype && outs[k].is_available() &&
                 (info.shapeless || outs[k].shape() == fn.outputs[k].shape);
        }
        ok |= same;
      }
      for (auto& o : outs) r.output_bytes += o.nbytes();
      r.kind = ok ? Outcome::Ran : Outcome::Bad;
      if (!ok) r.message = "outputs differ from every record's declared outputs";
    }
  } catch (const std::invalid_argument& e) {
    r.kind = loaded ? Outcome::CallError : Outcome::Rejected;
    r.message = e.what();
    if (!kiln_message(r.message)) r.kind = Outcome::Bad;
  } catch (const std::runtime_error& e) {
    r.kind = loaded ? Outcome::CallError : Outcome::Rejected;
    r.message = e.what();
    if (!kiln_message(r.message)) r.kind = Outcome::Bad;
  } catch (const std::exception& e) {
    r.kind = Outcome::Bad;
    r.message = std::string("unexpected exception type: ") + e.what();
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  uint64_t peak = peak_bytes();
  r.peak = peak > base ? peak - base : 0;
  return r;
}

}  // namespace kiln_test
