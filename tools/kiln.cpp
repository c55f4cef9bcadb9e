// The kiln command-line tool: run, inspect and benchmark .mlxfn files.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "kiln/kiln.h"

namespace fs = std::filesystem;
using kiln::operator<<;

namespace {

struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

const char* kMainHelp =
    "usage: kiln <command> [options]\n"
    "\n"
    "Run, inspect and benchmark functions exported to MLX's .mlxfn format (by MLX or by kiln).\n"
    "\n"
    "commands:\n"
    "  run       call a function with .npy inputs and write its outputs as .npy files\n"
    "  inspect   show a file's format version, metadata, signatures, tape, primitives, streams and constants\n"
    "  convert   rewrite a file in another MLX release's layout (e.g. so MLX 0.32.1 can load a 0.31 file)\n"
    "  bench     time importing a file and calling its function\n"
    "  dot       draw a file's graph (Graphviz DOT, or SVG/PNG through Graphviz's dot)\n"
    "  diff      compare two files structurally (signatures, primitives, states, constants)\n"
    "  to-onnx   convert a function to an ONNX model\n"
    "  version   print kiln's version\n"
    "\n"
    "Run 'kiln <command> --help' for a command's options.\n";

const char* kRunHelp =
    "usage: kiln run FILE [--arg A.npy]... [--kwarg NAME=B.npy]... [--out DIR] [--mlx-cpu-quirks]\n"
    "\n"
    "Import FILE, call it with the given positional (--arg, in order) and keyword (--kwarg) inputs,\n"
    "and write the outputs to DIR/out0.npy, DIR/out1.npy, ... (DIR defaults to the current directory).\n"
    "The call is matched to the stored trace with the same dtypes and shapes (any shape for shapeless\n"
    "files); if none matches, the available signatures are listed.\n"
    "  --mlx-cpu-quirks  reproduce the numbers of the writing MLX version's CPU backend, known bugs\n"
    "                    included (MLX < 0.31: mxfp8/nvfp4 quantized_matmul read as mxfp4); by default\n"
    "                    kiln computes the documented result\n";

const char* kInspectHelp =
    "usage: kiln inspect FILE [--json] [--tape]\n"
    "\n"
    "Print the format version (the MLX version in the header and the layout kiln read it with), the\n"
    "metadata string (files from MLX 0.32.1 on), the shapeless flag, each function's signature (inputs, keyword names,\n"
    "outputs), tape length, primitive histogram, streams, and the number and bytes of constants.\n"
    "  --json   machine-readable output\n"
    "  --tape   also list every tape entry with its state\n";

const char* kBenchHelp =
    "usage: kiln bench FILE [--arg A.npy]... [--kwarg NAME=B.npy]... [--iters N] [--warmup W] [--profile]\n"
    "\n"
    "Time importing FILE and calling it (evaluated) on the given inputs. Prints two lines:\n"
    "  import_us <microseconds to import the file>\n"
    "  median_us <median microseconds of one evaluated call over N iterations (default 20)>\n"
    "With --profile, then one 'profile' line per primitive: its time per call (the timed calls' mean), kernel\n"
    "calls and graph nodes per call, and its share; fused element-wise groups count as 'fused', graph\n"
    "passes and fusion planning as '(planning)', building each call's graph as '(call: graph)' and\n"
    "releasing its outputs as '(release)'. From the second call on, a call runs as one ImportedCall node\n"
    "(a plan made once): its steps count under their primitives, ImportedCall only for its own time.\n";

const char* kDotHelp =
    "usage: kiln dot FILE [--function I] [-o OUT.dot|OUT.svg|OUT.png]\n"
    "\n"
    "Write function I (1-based, in file order; default 1) of FILE as a Graphviz graph, as the file stores\n"
    "it: inputs (arg0, arg1, ... or their keyword) and outputs as blue and green houses, constants as grey\n"
    "boxes, primitives as ellipses with their state, edges labelled with shapes and dtypes. Without -o the\n"
    "DOT text goes to standard output; an .svg or .png OUT is rendered by Graphviz's `dot` program\n"
    "(Debian package graphviz).\n";

const char* kDiffHelp =
    "usage: kiln diff A B\n"
    "\n"
    "Compare two .mlxfn files structurally, function by function: signatures, the primitives of each\n"
    "tape with their states and wiring (ids renamed to positions), and constants by content (a hash of\n"
    "their bytes). Prints what differs, and notes on what does not matter to the computation (header\n"
    "version and layout, metadata). Exit status 0 when equal, 1 when they differ, 2 on errors.\n";

const char* kConvertHelp =
    "usage: kiln convert IN OUT [--to VERSION] [--metadata TEXT]\n"
    "\n"
    "Rewrite the .mlxfn file IN for another MLX release and write it to OUT. MLX's files change layout\n"
    "between releases and MLX never checks the version it reads, so a file must be written in the\n"
    "layout of the MLX that loads it. kiln reads IN in the layout of the MLX version its header names.\n"
    "  --to VERSION     the MLX release to write for (default 0.30.1); one of:\n"
    "                   VERSIONS\n"
    "  --metadata TEXT  the header metadata string (layouts from 0.32.1 only); by default IN's metadata is\n"
    "                   kept, and converting a file with metadata to an older layout needs --metadata ''\n"
    "Refuses, naming the primitive, when VERSION cannot express a node of IN (for example a primitive\n"
    "that release cannot serialize, or a state value its layout has no field for). OUT is written\n"
    "completely or not at all.\n";

bool wants_help(const std::vector<std::string>& a) {
  return std::find(a.begin(), a.end(), "--help") != a.end() || std::find(a.begin(), a.end(), "-h") != a.end();
}

struct CallInputs {
  std::string file;
  kiln::Args args;
  kiln::Kwargs kwargs;
  std::string out_dir = ".";
  int iters = 20;
  int warmup = 2;
  bool json = false;
  bool tape = false;
  bool quirks = false;
  bool profile = false;
};

int parse_int(const std::string& flag, const std::string& v) {
  try {
    size_t pos = 0;
    int n = std::stoi(v, &pos);
    if (pos != v.size() || n < 1) throw std::invalid_argument("");
    return n;
  } catch (...) {
    throw UsageError(flag + " expects a positive integer, found '" + v + "'");
  }
}

CallInputs parse(const std::vector<std::string>& a, const std::string& cmd) {
  CallInputs c;
  auto value = [&](size_t& i) -> const std::string& {
    if (i + 1 >= a.size()) throw UsageError(a[i] + " expects a value");
    return a[++i];
  };
  for (size_t i = 0; i < a.size(); ++i) {
    const std::string& s = a[i];
    if (s == "--arg" && cmd != "inspect") {
      c.args.push_back(kiln::load(value(i)));
    } else if (s == "--kwarg" && cmd != "inspect") {
      const std::string& kv = value(i);
      auto eq = kv.find('=');
      if (eq == std::string::npos || eq == 0) throw UsageError("--kwarg expects NAME=FILE.npy, found '" + kv + "'");
      std::string name = kv.substr(0, eq);
      if (c.kwargs.count(name)) throw UsageError("keyword '" + name + "' given twice");
      c.kwargs.insert({name, kiln::load(kv.substr(eq + 1))});
    } else if (s == "--out" && cmd == "run") {
      c.out_dir = value(i);
    } else if (s == "--iters" && cmd == "bench") {
      c.iters = parse_int(s, value(i));
    } else if (s == "--warmup" && cmd == "bench") {
      c.warmup = parse_int(s, value(i));
    } else if (s == "--profile" && cmd == "bench") {
      c.profile = true;
    } else if (s == "--mlx-cpu-quirks" && cmd == "run") {
      c.quirks = true;
    } else if (s == "--json" && cmd == "inspect") {
      c.json = true;
    } else if (s == "--tape" && cmd == "inspect") {
      c.tape = true;
    } else if (!s.empty() && s[0] == '-') {
      throw UsageError("unknown option '" + s + "' for 'kiln " + cmd + "' (see kiln " + cmd + " --help)");
    } else if (c.file.empty()) {
      c.file = s;
    } else {
      throw UsageError("unexpected argument '" + s + "' (only one FILE is taken)");
    }
  }
  if (c.file.empty()) throw UsageError("missing FILE (see kiln " + cmd + " --help)");
  return c;
}

std::string shape_text(const kiln::Shape& s) {
  std::ostringstream os;
  os << s;
  return os.str();
}

std::string spec_text(const kiln::ArraySpec& s) { return shape_text(s.shape) + " " + kiln::dtype_name(s.dtype); }

std::string device_text(const kiln::StreamInfo& s) {
  std::string d = s.device_type == 0 ? "cpu" : s.device_type == 1 ? "gpu" : "device" + std::to_string(s.device_type);
  return d + ":" + std::to_string(s.device_index);
}

int cmd_run(const std::vector<std::string>& a) {
  if (wants_help(a)) {
    std::cout << kRunHelp;
    return 0;
  }
  auto c = parse(a, "run");
  kiln::ImportOptions options;
  options.writer_cpu_quirks = c.quirks;
  auto fn = kiln::import_function(c.file, options);
  auto outs = fn(c.args, c.kwargs);
  kiln::eval(outs);
  fs::create_directories(c.out_dir);
  for (size_t i = 0; i < outs.size(); ++i) {
    auto path = (fs::path(c.out_dir) / ("out" + std::to_string(i) + ".npy")).string();
    kiln::save(path, outs[i]);
    std::cout << path << " " << shape_text(outs[i].shape()) << " " << kiln::dtype_name(outs[i].dtype()) << "\n";
  }
  return 0;
}

nlohmann::json spec_json(const kiln::ArraySpec& s) {
  return {{"shape", s.shape}, {"dtype", kiln::dtype_name(s.dtype)}};
}

int cmd_inspect(const std::vector<std::string>& a) {
  if (wants_help(a)) {
    std::cout << kInspectHelp;
    return 0;
  }
  auto c = parse(a, "inspect");
  auto fn = kiln::import_function(c.file);
  const kiln::FileInfo& info = fn.info();
  if (c.json) {
    nlohmann::json j;
    j["file"] = c.file;
    j["version"] = info.version;
    j["format"] = info.format;
    j["metadata"] = info.metadata;
    j["shapeless"] = info.shapeless;
    j["file_bytes"] = info.file_bytes;
    j["constants"] = info.constants;
    j["constant_bytes"] = info.constant_bytes;
    j["functions"] = nlohmann::json::array();
    for (auto& f : info.functions) {
      nlohmann::json fj;
      size_t np = f.num_positional();
      fj["positional_inputs"] = nlohmann::json::array();
      fj["keyword_inputs"] = nlohmann::json::object();
      for (size_t i = 0; i < f.inputs.size(); ++i) {
        if (i < np) fj["positional_inputs"].push_back(spec_json(f.inputs[i]));
        else fj["keyword_inputs"][f.kwarg_keys[i - np]] = spec_json(f.inputs[i]);
      }
      fj["outputs"] = nlohmann::json::array();
      for (auto& o : f.outputs) fj["outputs"].push_back(spec_json(o));
      fj["tape_length"] = f.tape.size();
      fj["primitives"] = f.num_primitives;
      fj["primitive_histogram"] = f.primitive_histogram;
      fj["streams"] = nlohmann::json::array();
      for (auto& [s, n] : f.streams) {
        fj["streams"].push_back({{"index", s.index}, {"device", device_text(s)}, {"nodes", n}});
      }
      fj["new_constants"] = f.new_constants;
      fj["new_constant_bytes"] = f.new_constant_bytes;
      if (c.tape) {
        fj["tape"] = nlohmann::json::array();
        for (auto& t : f.tape) {
          nlohmann::json tj{{"id", t.id}};
          if (t.kind == kiln::TapeEntryInfo::Kind::Input) tj["kind"] = "input";
          if (t.kind == kiln::TapeEntryInfo::Kind::Constant) tj["kind"] = "constant";
          if (t.kind == kiln::TapeEntryInfo::Kind::Primitive) {
            tj["kind"] = "primitive";
            tj["name"] = t.name;
            tj["display_name"] = t.display_name;
            tj["inputs"] = t.input_ids;
            tj["state"] = t.state_text;
            tj["stream"] = {{"index", t.stream.index}, {"device", device_text(t.stream)}};
          }
          tj["outputs"] = nlohmann::json::array();
          for (auto& o : t.outputs) tj["outputs"].push_back(spec_json(o));
          fj["tape"].push_back(tj);
        }
      }
      j["functions"].push_back(fj);
    }
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  std::cout << "file:       " << c.file << " (" << info.file_bytes << " bytes)\n";
  std::cout << "version:    " << info.version << " (read as the " << info.format << " layout)\n";
  // Metadata is arbitrary bytes: show it as a quoted JSON string so control characters stay on one line.
  std::cout << "metadata:   " << nlohmann::json(info.metadata).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)
            << "\n";
  std::cout << "shapeless:  " << (info.shapeless ? "yes" : "no") << "\n";
  std::cout << "functions:  " << info.functions.size() << "\n";
  std::cout << "constants:  " << info.constants << " (" << info.constant_bytes << " bytes)\n";
  for (size_t k = 0; k < info.functions.size(); ++k) {
    auto& f = info.functions[k];
    size_t np = f.num_positional();
    std::cout << "\nfunction " << k + 1 << ": " << np << " positional and " << f.kwarg_keys.size()
              << " keyword inputs\n";
    for (size_t i = 0; i < f.inputs.size(); ++i) {
      if (i < np) std::cout << "  input " << i << ": " << spec_text(f.inputs[i]) << "\n";
      else std::cout << "  input \"" << f.kwarg_keys[i - np] << "\": " << spec_text(f.inputs[i]) << "\n";
    }
    for (size_t i = 0; i < f.outputs.size(); ++i) std::cout << "  output " << i << ": " << spec_text(f.outputs[i]) << "\n";
    std::cout << "  tape: " << f.tape.size() << " entries, " << f.num_primitives << " primitive nodes\n";
    std::cout << "  primitives:";
    for (auto& [name, n] : f.primitive_histogram) std::cout << " " << name << "×" << n;
    std::cout << "\n  streams:";
    for (auto& [s, n] : f.streams) std::cout << " " << s.index << "@" << device_text(s) << " (" << n << " nodes)";
    std::cout << "\n  constants first stored here: " << f.new_constants << " (" << f.new_constant_bytes << " bytes)\n";
    if (c.tape) {
      for (auto& t : f.tape) {
        std::cout << "    #" << t.id << " ";
        if (t.kind == kiln::TapeEntryInfo::Kind::Input) std::cout << "input";
        if (t.kind == kiln::TapeEntryInfo::Kind::Constant) std::cout << "constant";
        if (t.kind == kiln::TapeEntryInfo::Kind::Primitive) {
          std::cout << t.display_name << "(";
          for (size_t i = 0; i < t.input_ids.size(); ++i) std::cout << (i ? ", #" : "#") << t.input_ids[i];
          std::cout << ")";
          if (!t.state_text.empty()) std::cout << " [" << t.state_text << "]";
        }
        for (auto& o : t.outputs) std::cout << " -> " << spec_text(o);
        std::cout << "\n";
      }
    }
  }
  return 0;
}

int cmd_convert(const std::vector<std::string>& a) {
  if (wants_help(a)) {
    std::string help = kConvertHelp, list;
    for (auto& v : kiln::format::supported_versions()) list += (list.empty() ? "" : " ") + v;
    help.replace(help.find("VERSIONS"), 8, list);
    std::cout << help;
    return 0;
  }
  std::vector<std::string> files;
  kiln::ConvertOptions opt;
  for (size_t i = 0; i < a.size(); ++i) {
    const std::string& s = a[i];
    if (s == "--to" || s == "--metadata") {
      if (i + 1 >= a.size()) throw UsageError(s + " expects a value");
      if (s == "--to") {
        opt.version = a[++i];
      } else {
        opt.metadata = a[++i];
      }
    } else if (s.rfind("--to=", 0) == 0) {
      opt.version = s.substr(5);
    } else if (s.rfind("--metadata=", 0) == 0) {
      opt.metadata = s.substr(11);
    } else if (!s.empty() && s[0] == '-') {
      throw UsageError("unknown option '" + s + "' for 'kiln convert' (see kiln convert --help)");
    } else {
      files.push_back(s);
    }
  }
  if (files.size() != 2) {
    throw UsageError(files.size() < 2 ? "expects IN and OUT files (see kiln convert --help)"
                                      : "unexpected argument '" + files[2] + "' (only IN and OUT are taken)");
  }
  kiln::convert_file(files[0], files[1], opt);
  auto info = kiln::import_function(files[1]).info();
  std::cout << files[1] << ": MLX " << info.version << " layout, " << info.functions.size() << " function"
            << (info.functions.size() == 1 ? "" : "s") << ", " << info.file_bytes << " bytes\n";
  return 0;
}

int cmd_bench(const std::vector<std::string>& a) {
  if (wants_help(a)) {
    std::cout << kBenchHelp;
    return 0;
  }
  auto c = parse(a, "bench");
  using clock = std::chrono::steady_clock;
  auto t0 = clock::now();
  auto fn = kiln::import_function(c.file);
  auto t1 = clock::now();
  // With --profile, the time spent building each call's graph (matching and replaying the record) and
  // in releasing its outputs, next to the evaluator's own rows.
  double call_s = 0, release_s = 0;
  bool timing = false;
  auto call = [&] {
    auto s = clock::now();
    auto outs = fn(c.args, c.kwargs);
    auto e = clock::now();
    kiln::eval(outs);
    auto r = clock::now();
    outs.clear();
    if (timing) {
      call_s += std::chrono::duration<double>(e - s).count();
      release_s += std::chrono::duration<double>(clock::now() - r).count();
    }
  };
  for (int i = 0; i < c.warmup; ++i) call();
  if (c.profile) {
    kiln::profile_report(true);
    kiln::set_profiling(true);
    timing = true;
  }
  std::vector<double> us;
  for (int i = 0; i < c.iters; ++i) {
    auto s = clock::now();
    call();
    us.push_back(std::chrono::duration<double, std::micro>(clock::now() - s).count());
  }
  std::sort(us.begin(), us.end());
  double median = us.size() % 2 ? us[us.size() / 2] : 0.5 * (us[us.size() / 2 - 1] + us[us.size() / 2]);
  std::cout << "import_us " << std::chrono::duration<double, std::micro>(t1 - t0).count() << "\n";
  std::cout << "median_us " << median << "\n";
  if (c.profile) {
    kiln::set_profiling(false);
    auto rows = kiln::profile_report(true);
    rows.push_back({"(call: graph)", c.iters, 0, call_s});
    rows.push_back({"(release)", c.iters, 0, release_s});
    double total = 0;
    for (auto& r : rows) total += r.seconds;
    std::printf("profile (per call, over %d calls): %-18s %10s %8s %8s %6s\n", c.iters, "primitive", "us", "kernels",
                "nodes", "share");
    for (auto& r : rows) {
      std::printf("profile %-18s %10.1f %8.1f %8.1f %5.1f%%\n", r.primitive.c_str(), r.seconds * 1e6 / c.iters,
                  double(r.calls) / c.iters, double(r.nodes) / c.iters, total > 0 ? 100 * r.seconds / total : 0.0);
    }
  }
  return 0;
}

std::string one_line(std::string s);

int cmd_dot(const std::vector<std::string>& a) {
  if (wants_help(a)) {
    std::cout << kDotHelp;
    return 0;
  }
  std::string file, out;
  size_t function = 1;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i] == "--function" || a[i] == "-o") {
      if (i + 1 >= a.size()) throw UsageError(a[i] + " expects a value");
      if (a[i] == "-o") {
        out = a[++i];
      } else {
        function = static_cast<size_t>(parse_int(a[i], a[i + 1]));
        ++i;
      }
    } else if (!a[i].empty() && a[i][0] == '-') {
      throw UsageError("unknown option '" + a[i] + "' for 'kiln dot' (see kiln dot --help)");
    } else if (file.empty()) {
      file = a[i];
    } else {
      throw UsageError("unexpected argument '" + a[i] + "' (only one FILE is taken)");
    }
  }
  if (file.empty()) throw UsageError("missing FILE (see kiln dot --help)");
  auto fn = kiln::import_function(file);
  std::ostringstream dot;
  kiln::export_to_dot(dot, fn, function - 1);
  if (out.empty()) {
    std::cout << dot.str();
    return 0;
  }
  const std::string ext = fs::path(out).extension().string();
  if (ext == ".dot" || ext == ".gv") {
    std::ofstream f(out, std::ios::binary);
    f << dot.str();
    if (!f) throw std::runtime_error("cannot write " + out);
    return 0;
  }
  if (ext != ".svg" && ext != ".png") {
    throw UsageError("-o expects a .dot, .gv, .svg or .png file, found '" + out + "'");
  }
  // Rendered by Graphviz into a temporary file next to OUT, renamed when complete.
  const std::string tmp = out + ".tmp-kiln";
  const std::string cmd = "dot -T" + ext.substr(1) + " -o '" + tmp + "'";
  if (out.find('\'') != std::string::npos) throw UsageError("-o: a file name with a quote is not supported");
  FILE* p = popen(cmd.c_str(), "w");
  if (!p) throw std::runtime_error("cannot run Graphviz's dot (install the Debian package graphviz)");
  const std::string text = dot.str();
  const size_t wrote = std::fwrite(text.data(), 1, text.size(), p);
  const int rc = pclose(p);
  if (wrote != text.size() || rc != 0) {
    std::error_code ec;
    fs::remove(tmp, ec);
    throw std::runtime_error("Graphviz's dot failed (exit status " + std::to_string(rc) +
                             "; is the Debian package graphviz installed?)");
  }
  fs::rename(tmp, out);
  return 0;
}

const char* kToOnnxHelp =
    "usage: kiln to-onnx IN.mlxfn OUT.onnx [--opset N] [--function I] [--external-data] [--matmul-nbits]\n"
    "\n"
    "Convert function I (1-based, in file order; default 1) of IN to an ONNX model: inputs arg0, arg1, ...\n"
    "(positional) and by keyword, outputs out0, out1, ..., constants as initializers.\n"
    "  --opset N          the ONNX opset to target (default 21; 18 to 23)\n"
    "  --external-data    initializers of 1 KiB and more go to OUT.onnx.data beside the model (models over 2 GB)\n"
    "  --matmul-nbits     affine 4-bit quantized matmuls with constant weights as ONNX Runtime's\n"
    "                     com.microsoft.MatMulNBits (instead of DequantizeLinear + MatMul)\n"
    "Exit status 3 when the function cannot be expressed in ONNX (the reason is printed), 1 on other errors.\n";

int cmd_to_onnx(const std::vector<std::string>& a) {
  if (wants_help(a)) {
    std::cout << kToOnnxHelp;
    return 0;
  }
  std::vector<std::string> files;
  kiln::OnnxOptions options;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i] == "--opset" || a[i] == "--function") {
      if (i + 1 >= a.size()) throw UsageError(a[i] + " expects a value");
      const int v = static_cast<int>(parse_int(a[i], a[i + 1]));
      if (a[i] == "--function") {
        if (v < 1) throw UsageError("--function expects a number from 1, found " + a[i + 1]);
        options.function = static_cast<size_t>(v - 1);
      } else {
        options.opset = v;
      }
      ++i;
    } else if (a[i] == "--external-data") {
      options.external_data = true;
    } else if (a[i] == "--matmul-nbits") {
      options.matmul_nbits = true;
    } else if (!a[i].empty() && a[i][0] == '-') {
      throw UsageError("unknown option '" + a[i] + "' for 'kiln to-onnx' (see kiln to-onnx --help)");
    } else {
      files.push_back(a[i]);
    }
  }
  if (files.size() != 2) throw UsageError("expects IN.mlxfn and OUT.onnx (see kiln to-onnx --help)");
  try {
    kiln::to_onnx(files[0], files[1], options);
  } catch (const kiln::OnnxRefusal& e) {
    std::cerr << "kiln to-onnx: refused: " << one_line(e.what()) << "\n";
    return 3;
  }
  return 0;
}

int cmd_diff(const std::vector<std::string>& a) {
  if (wants_help(a)) {
    std::cout << kDiffHelp;
    return 0;
  }
  std::vector<std::string> files;
  for (auto& s : a) {
    if (!s.empty() && s[0] == '-') throw UsageError("unknown option '" + s + "' for 'kiln diff' (see kiln diff --help)");
    files.push_back(s);
  }
  if (files.size() != 2) throw UsageError("expects two files A and B (see kiln diff --help)");
  kiln::FileDiff d;
  try {
    d = kiln::diff_functions(kiln::import_function(files[0]), kiln::import_function(files[1]));
  } catch (const std::exception& e) {
    std::cerr << "kiln diff: " << one_line(e.what()) << "\n";
    return 2;
  }
  for (auto& n : d.notes) std::cout << "note: " << n << "\n";
  for (auto& x : d.differences) std::cout << "differs: " << x << "\n";
  if (d.equal()) std::cout << "equal: " << files[0] << " and " << files[1] << " compute the same functions\n";
  return d.equal() ? 0 : 1;
}

// Errors are reported on one line.
std::string one_line(std::string s) {
  for (auto& ch : s) {
    if (ch == '\n') ch = ' ';
  }
  std::string out;
  for (char ch : s) {
    if (ch == ' ' && !out.empty() && out.back() == ' ') continue;
    out += ch;
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) {
    std::cerr << kMainHelp;
    return 2;
  }
  std::string cmd = args[0];
  args.erase(args.begin());
  if (cmd == "--help" || cmd == "-h" || cmd == "help") {
    std::cout << kMainHelp;
    return 0;
  }
  const std::map<std::string, std::function<int(const std::vector<std::string>&)>> commands = {
      {"run", cmd_run},     {"inspect", cmd_inspect}, {"convert", cmd_convert},
      {"bench", cmd_bench}, {"dot", cmd_dot},         {"diff", cmd_diff},
      {"to-onnx", cmd_to_onnx}};
  if (cmd == "version" || cmd == "--version") {
    auto v = kiln::format::supported_versions();
    std::cout << "kiln 0.1.0 (reads and writes the .mlxfn layouts of MLX " << v.front() << " to " << v.back()
              << "; writes 0.30.1 by default)\n";
    return 0;
  }
  auto it = commands.find(cmd);
  if (it == commands.end()) {
    std::cerr << "kiln: unknown command '" << cmd
              << "' (expected run, inspect, convert, bench, dot, diff, to-onnx or version; see kiln --help)\n";
    return 2;
  }
  try {
    return it->second(args);
  } catch (const UsageError& e) {
    std::cerr << "kiln " << cmd << ": " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "kiln " << cmd << ": " << one_line(e.what()) << "\n";
    return 1;
  }
}
