// kiln's half of the interop tests against real MLX (scripts/interop/run.sh drives both halves):
//
//   kiln_interop export GOLDEN_DIR OUT_DIR --version V [--convert]
//       kiln imports every golden case, re-exports it (one trace per signature, as the round-trip
//       conformance test does) in MLX V's layout to OUT_DIR/NAME.mlxfn, and writes OUT_DIR/manifest.json
//       (the golden cases, pointing at kiln's files and the golden inputs/outputs) for MLX to check.
//       --convert: the file is kiln::convert_file's rewrite of the golden file (`kiln convert`) instead.
//   kiln_interop check DIR --version V [--expect FILE]
//       kiln imports every case of DIR/manifest.json (written by MLX V, scripts/interop/gen_cases.py)
//       and must reproduce MLX's outputs (tests/conformance/golden_runner.h judges a case).
//
// A case is passed, failed, or skipped with a printed reason (the manifest's "skip": what MLX could
// not export; or an entry of the expectations file, checked against the actual error text). Exit
// status: 0 when nothing failed, 1 otherwise.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <nlohmann/json.hpp>
#include <string>
#include <tuple>

#include "conformance/golden_runner.h"
#include "kiln/kiln.h"

namespace fs = std::filesystem;
using nlohmann::json;
using kiln_golden::Status;

namespace {

struct Options {
  std::string version;
  bool convert = false;  // export: kiln::convert_file rewrites the golden file instead of re-tracing it
  std::string expect;
};

std::string one_line(std::string s) {
  for (auto& ch : s) {
    if (ch == '\n') ch = ' ';
  }
  return s;
}

// Whether MLX `version`'s header has the metadata string (0.32.1 on, spec 5.1 A3).
bool has_metadata(const std::string& version) {
  int a = 0, b = 0, c = 0;
  std::sscanf(version.c_str(), "%d.%d.%d", &a, &b, &c);
  return std::make_tuple(a, b, c) >= std::make_tuple(0, 32, 1);
}

// What kiln writes into the header of a case's file where the layout has metadata; MLX must read it back.
std::string case_metadata(const std::string& name) { return "kiln interop: " + name; }

// Opens kiln's exporter for the layout of MLX `version`.
kiln::FunctionExporter open_exporter(const std::string& path, const kiln::ArgsKwargsFn& f, bool shapeless,
                                     const std::string& version, const std::string& metadata) {
  kiln::ExportOptions opt;
  opt.version = version;
  opt.shapeless = shapeless;
  opt.metadata = metadata;
  return kiln::exporter(path, f, opt);
}

// MLX's fused "fast" primitives in a file: MLX has GPU kernels for them only (on a CPU stream MLX traces
// their unfused fallback instead), so CPU-only MLX cannot evaluate a file that holds them.
json fused_primitives(const kiln::FileInfo& info) {
  static const std::set<std::string> fused = {"RMSNorm",    "RMSNormVJP", "LayerNorm",
                                              "LayerNormVJP", "RoPE",     "ScaledDotProductAttention"};
  std::set<std::string> found;
  for (auto& f : info.functions) {
    for (auto& [name, n] : f.primitive_histogram) {
      if (fused.count(name)) found.insert(name);
    }
  }
  return json(found);
}

bool has_gpu_stream(const kiln::FileInfo& info) {
  for (auto& f : info.functions) {
    for (auto& [s, n] : f.streams) {
      if (s.device_type != 0) return true;
    }
  }
  return false;
}

int cmd_export(const fs::path& golden_dir, const fs::path& out, const Options& o) {
  const fs::path golden = fs::absolute(golden_dir);
  json m = kiln_golden::load_manifest(golden);
  fs::create_directories(out);
  auto known = kiln::format::supported_versions();
  if (std::find(known.begin(), known.end(), o.version) == known.end()) {
    // Fail once with kiln's own reason rather than once per case.
    try {
      kiln::exporter((out / "probe.mlxfn").string(), [](const kiln::Args& a) { return a; },
                     kiln::ExportOptions{o.version, "", false});
    } catch (const std::exception& e) {
      std::cout << "kiln cannot write the MLX " << o.version << " layout: " << e.what() << "\n";
      return 1;
    }
  }
  json cases = json::array();
  int written = 0, skipped = 0, failed = 0;
  for (auto c : m["cases"]) {
    const std::string name = c["name"];
    // Inputs and expected outputs stay in the golden folder: absolute paths in the new manifest.
    for (auto& call : c["calls"]) {
      for (auto& a : call["args"]) a["file"] = (golden / a["file"].get<std::string>()).string();
      for (auto& [k, v] : call["kwargs"].items()) v["file"] = (golden / v["file"].get<std::string>()).string();
      for (auto& w : call["outputs"]) w["file"] = (golden / w["file"].get<std::string>()).string();
    }
    // Every case kiln imports is written (its own replay is judged by the conformance tests).
    const std::string file = name + ".mlxfn";
    try {
      auto fn = kiln::import_function((golden / c["file"].get<std::string>()).string());
      const std::string path = (out / file).string();
      std::string metadata = has_metadata(o.version) ? case_metadata(name) : "";
      if (o.convert) {
        kiln::convert_file((golden / c["file"].get<std::string>()).string(), path,
                           kiln::ConvertOptions{o.version, metadata.empty() ? std::nullopt
                                                                            : std::optional<std::string>(metadata)});
      } else {
        kiln_golden::export_case(fn, c, golden, [&](const kiln::ArgsKwargsFn& f, bool shapeless) {
          return open_exporter(path, f, shapeless, o.version, metadata);
        });
      }
      if (!metadata.empty()) c["metadata"] = metadata;
      auto written_info = kiln::import_function(path).info();
      c["gpu_streams"] = has_gpu_stream(written_info);
      c["fused_primitives"] = fused_primitives(written_info);
      ++written;
    } catch (const std::exception& e) {
      std::string prim = kiln_golden::unsupported_primitive(e.what());
      const std::string msg = e.what();
      if (!prim.empty()) {
        c["skip"] = "kiln does not have primitive " + prim + " (see the conformance tests), so it cannot write this case";
        ++skipped;
      } else if (msg.find(" cannot be written for MLX " + o.version + ": ") != std::string::npos) {
        // A node this release cannot express with the same meaning (e.g. MLX 0.30.1's truncating DivMod
        // for 0.32.2 on, which floors): kiln refuses by design (tests/unit/test_versions*.cpp).
        c["skip"] = "kiln refuses to write it for this release: " + one_line(msg);
        std::cout << "  SKIPPED  " << name << ": " << c["skip"].get<std::string>() << "\n";
        ++skipped;
      } else {
        c["error"] = std::string("kiln could not write the file: ") + one_line(e.what());
        std::cout << "  FAILED   " << name << ": " << c["error"].get<std::string>() << "\n";
        ++failed;
      }
    }
    c["file"] = file;
    cases.push_back(c);
  }
  std::ofstream(out / "manifest.json") << json{{"producer", std::string(o.convert ? "kiln convert" : "kiln") + " (MLX " + o.version + " layout)"}, {"cases", cases}}.dump(1);
  std::cout << "kiln " << (o.convert ? "converted " : "re-exported ") << written << " of " << cases.size()
            << " golden cases to the MLX " << o.version << " layout (" << skipped << " skipped: primitives kiln lacks or nodes this release cannot express, " << failed
            << " failed)\n";
  return failed ? 1 : 0;
}

// Entries of the expectations file for this side and version: case name -> entry.
std::map<std::string, json> expectations(const std::string& file, const std::string& side,
                                         const std::string& version) {
  std::map<std::string, json> out;
  if (file.empty()) return out;
  std::ifstream f(file);
  if (!f) throw std::runtime_error("cannot open " + file);
  json j = json::parse(f);
  for (auto& e : j["entries"]) {
    if (e["side"] != side) continue;
    bool applies = false;
    for (auto& v : e["versions"]) applies |= v == version || v == "*";
    if (!applies) continue;
    for (auto& n : e["cases"]) out[n.get<std::string>()] = e;
  }
  return out;
}

int cmd_check(const fs::path& dir, const Options& o) {
  json m = kiln_golden::load_manifest(dir);
  auto expect = expectations(o.expect, "mlx_to_kiln", o.version);
  int passed = 0, failed = 0, skipped = 0, known = 0;
  // kind + reason -> case names, in first-seen order, so a reason shared by many cases prints once.
  std::vector<std::pair<std::string, std::vector<std::string>>> lines;
  for (auto& c : m["cases"]) {
    const std::string name = c["name"];
    std::string kind, text;
    if (c.contains("skip")) {
      kind = "skipped";
      text = c["skip"];
    } else if (c.contains("error")) {
      kind = "failed";
      text = c["error"];
    } else {
      auto r = kiln_golden::evaluate_case(c, dir);
      if (r.status == Status::Passed && c.contains("metadata")) {
        // MLX wrote a header metadata string (0.32.1 on): kiln must read it back unchanged.
        auto got = kiln::import_function((dir / c["file"].get<std::string>()).string()).metadata();
        if (got != c["metadata"].get<std::string>()) {
          r = {Status::Failed, "metadata '" + got + "' != expected '" + c["metadata"].get<std::string>() + "'"};
        }
      }
      std::string why = r.status == Status::Unsupported ? "unsupported primitive " + r.reason : r.reason;
      auto e = expect.find(name);
      if (e == expect.end()) {
        kind = r.status == Status::Passed ? "passed" : "failed";
        text = why;
      } else if (r.status == Status::Passed) {
        kind = "failed";
        text = "listed as '" + e->second["kind"].get<std::string>() + "' (" + e->second["reason"].get<std::string>() +
               ") but kiln now passes: update the expectations";
      } else if (why.find(e->second.value("error", "")) != std::string::npos) {
        kind = e->second["kind"] == "known" ? "known" : "skipped";
        text = e->second["reason"].get<std::string>() + "; kiln says: " + one_line(why);
        if (e->second.value("passes_with", "") == "writer_cpu_quirks") {
          // The difference is MLX's CPU bug: kiln's opt-in emulation of it must reproduce MLX exactly.
          kiln::ImportOptions quirks;
          quirks.writer_cpu_quirks = true;
          auto q = kiln_golden::evaluate_case(c, dir, quirks);
          if (q.status == Status::Passed) {
            text += "; with ImportOptions::writer_cpu_quirks kiln reproduces MLX's numbers";
          } else {
            kind = "failed";
            text += "; but with ImportOptions::writer_cpu_quirks: " + one_line(q.reason);
          }
        }
      } else {
        kind = "failed";
        text = one_line(why) + " (expected " + e->second["kind"].get<std::string>() + ": " +
               e->second["reason"].get<std::string>() + ")";
      }
    }
    if (kind == "passed") ++passed;
    if (kind == "failed") ++failed;
    if (kind == "skipped") ++skipped;
    if (kind == "known") ++known;
    if (kind != "passed") {
      std::string k = kind;
      for (auto& ch : k) ch = static_cast<char>(std::toupper(ch));
      std::string key = k + std::string(9 - k.size(), ' ') + "\x1f" + one_line(text);
      auto it = std::find_if(lines.begin(), lines.end(), [&](auto& l) { return l.first == key; });
      if (it == lines.end()) lines.push_back({key, {name}});
      else it->second.push_back(name);
    }
  }
  std::cout << "mlx_to_kiln (files by " << m.value("producer", std::string("?")) << "): " << passed << " passed, "
            << failed << " failed, " << skipped << " skipped, " << known << " known differences (of "
            << m["cases"].size() << " cases)\n";
  for (auto& [key, names] : lines) {
    auto sep = key.find('\x1f');
    std::cout << "  " << key.substr(0, sep) << names[0];
    for (size_t i = 1; i < names.size() && i < 4; ++i) std::cout << ", " << names[i];
    if (names.size() > 4) std::cout << " and " << names.size() - 4 << " more cases";
    std::cout << ": " << key.substr(sep + 1) << "\n";
  }
  if (passed == 0) {
    std::cout << "no case passed\n";
    return 1;
  }
  return failed ? 1 : 0;
}

const char* kUsage =
    "usage: kiln_interop export GOLDEN_DIR OUT_DIR --version V [--convert]\n"
    "       kiln_interop check DIR --version V [--expect FILE]\n";

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> a(argv + 1, argv + argc);
  Options o;
  std::vector<std::string> pos;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i] == "--version" && i + 1 < a.size()) {
      o.version = a[++i];
    } else if (a[i] == "--convert") {
      o.convert = true;
    } else if (a[i] == "--expect" && i + 1 < a.size()) {
      o.expect = a[++i];
    } else {
      pos.push_back(a[i]);
    }
  }
  try {
    if (pos.size() == 3 && pos[0] == "export" && !o.version.empty()) return cmd_export(pos[1], pos[2], o);
    if (pos.size() == 2 && pos[0] == "check" && !o.version.empty()) return cmd_check(pos[1], o);
  } catch (const std::exception& e) {
    std::cerr << "kiln_interop: " << e.what() << "\n";
    return 1;
  }
  std::cerr << kUsage;
  return 2;
}
