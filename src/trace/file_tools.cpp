// Tools over an imported file's function table (export.h): its graph in Graphviz DOT as the file stores
// it (`kiln dot`), and the structural comparison of two files (`kiln diff`).
#include <cstring>
#include <ostream>
#include <sstream>
#include <string>
#include <unordered_map>

#include "kiln/export.h"
#include "kiln/ops.h"

namespace kiln {

namespace {

// "n" + 7 -> "n7" (written out: GCC 12 misreports `"n" + std::to_string(k)` under -Wrestrict).
std::string tag(const char* prefix, size_t k) {
  std::string s(prefix);
  s += std::to_string(k);
  return s;
}

std::string spec_text(const ArraySpec& s) {
  std::ostringstream os;
  os << "(";
  for (size_t i = 0; i < s.shape.size(); ++i) os << (i ? "," : "") << s.shape[i];
  os << ") " << dtype_name(s.dtype);
  return os.str();
}

// Text safe inside a DOT double-quoted string.
std::string quoted(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

const FunctionInfo& function_at(const FileInfo& info, size_t function, const char* api) {
  if (function >= info.functions.size()) {
    throw std::out_of_range(std::string(api) + " The file has " + std::to_string(info.functions.size()) +
                            " function(s); function " + std::to_string(function + 1) + " does not exist.");
  }
  return info.functions[function];
}

// The name of input k of a function: arg<k> for positional inputs, the keyword for keyword inputs.
std::string input_name(const FunctionInfo& f, size_t k) {
  const size_t np = f.num_positional();
  return k < np ? tag("arg", k) : f.kwarg_keys[k - np];
}

// 64-bit FNV-1a over a constant's dtype, shape and bytes (row-major), 8 bytes at a time.
uint64_t content_hash(const array& value) {
  array a = value;
  a.eval();
  if (!a.row_contiguous()) {
    a = contiguous(a);
    a.eval();
  }
  uint64_t h = 1469598103934665603ull;
  auto mix = [&](uint64_t v) {
    h ^= v;
    h *= 1099511628211ull;
  };
  mix(static_cast<uint64_t>(a.dtype().code()));
  for (auto d : a.shape()) mix(static_cast<uint64_t>(d));
  const auto* p = static_cast<const unsigned char*>(a.raw_data());
  const size_t n = a.nbytes();
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t v;
    std::memcpy(&v, p + i, 8);
    mix(v);
  }
  for (; i < n; ++i) mix(p[i]);
  return h;
}

// A tape entry's identity for comparison: what it is, with ids renamed to positions.
struct Canon {
  std::vector<std::string> entries;  // one line per tape entry
  std::vector<std::string> outputs;  // the value each output is
};

Canon canonical(const FunctionInfo& f) {
  Canon c;
  std::unordered_map<uint64_t, std::string> ref;  // id -> "in3", "const2", "n7", "n7.1"
  for (size_t k = 0; k < f.input_ids.size(); ++k) ref[f.input_ids[k]] = tag("in", k);
  size_t nconst = 0, nprim = 0;
  for (const TapeEntryInfo& e : f.tape) {
    std::ostringstream line;
    switch (e.kind) {
      case TapeEntryInfo::Kind::Input: {
        auto it = ref.find(e.id);
        line << "input " << (it == ref.end() ? "?" : it->second) << " " << spec_text(e.outputs.at(0));
        break;
      }
      case TapeEntryInfo::Kind::Constant: {
        const std::string name = tag("const", nconst++);
        ref[e.id] = name;
        line << "constant " << name << " " << spec_text(e.outputs.at(0)) << " #" << std::hex
             << content_hash(e.value);
        break;
      }
      case TapeEntryInfo::Kind::Primitive: {
        const std::string name = tag("n", nprim++);
        line << name << " = " << e.name << "(";
        for (size_t i = 0; i < e.input_ids.size(); ++i) {
          auto it = ref.find(e.input_ids[i]);
          line << (i ? ", " : "") << (it == ref.end() ? "?" : it->second);
        }
        line << ") {" << e.state_text << "} ->";
        for (size_t k = 0; k < e.output_ids.size(); ++k) {
          std::string out_name = name;
          if (e.output_ids.size() > 1) out_name.append(".").append(std::to_string(k));
          ref[e.output_ids[k]] = out_name;
          line << " " << spec_text(e.outputs.at(k));
        }
        break;
      }
    }
    c.entries.push_back(line.str());
  }
  for (auto id : f.output_ids) {
    auto it = ref.find(id);
    c.outputs.push_back(it == ref.end() ? "?" : it->second);
  }
  return c;
}

std::string signature_text(const FunctionInfo& f) {
  std::ostringstream os;
  os << "(";
  for (size_t k = 0; k < f.inputs.size(); ++k) os << (k ? ", " : "") << input_name(f, k) << ": " << spec_text(f.inputs[k]);
  os << ") -> (";
  for (size_t k = 0; k < f.outputs.size(); ++k) os << (k ? ", " : "") << spec_text(f.outputs[k]);
  os << ")";
  return os.str();
}

}  // namespace

void export_to_dot(std::ostream& os, const ImportedFunction& fn, size_t function) {
  const FunctionInfo& f = function_at(fn.info(), function, "[export_to_dot]");
  std::unordered_map<uint64_t, std::string> node;  // value id -> DOT node
  std::unordered_map<uint64_t, ArraySpec> spec;
  os << "digraph {\n  node [fontname=\"Helvetica\", fontsize=11];\n  edge [fontname=\"Helvetica\", fontsize=9];\n";
  for (size_t k = 0; k < f.input_ids.size(); ++k) {
    const std::string id = tag("in", k);
    node[f.input_ids[k]] = id;
    spec[f.input_ids[k]] = f.inputs[k];
    os << "  " << id << " [label=\"" << quoted(input_name(f, k).append("\n").append(spec_text(f.inputs[k])))
       << "\", shape=invhouse, style=filled, fillcolor=\"#cfe2ff\"];\n";
  }
  size_t nconst = 0, nprim = 0;
  for (const TapeEntryInfo& e : f.tape) {
    if (e.kind == TapeEntryInfo::Kind::Constant) {
      const std::string id = tag("c", nconst++);
      node[e.id] = id;
      spec[e.id] = e.outputs.at(0);
      os << "  " << id << " [label=\"" << quoted(std::string("constant\n").append(spec_text(e.outputs.at(0))))
         << "\", shape=box, style=\"rounded,filled\", fillcolor=\"#e9e9e9\"];\n";
    } else if (e.kind == TapeEntryInfo::Kind::Primitive) {
      const std::string id = tag("n", nprim++);
      std::string label = e.display_name;
      if (!e.state_text.empty()) label += "\n" + e.state_text;
      os << "  " << id << " [label=\"" << quoted(label) << "\", shape=ellipse];\n";
      for (auto in : e.input_ids) {
        auto it = node.find(in);
        const std::string src = it == node.end() ? "missing" : it->second;
        const std::string lab = spec.count(in) ? spec_text(spec.at(in)) : "";
        os << "  " << src << " -> " << id << " [label=\"" << quoted(lab) << "\"];\n";
      }
      for (size_t k = 0; k < e.output_ids.size(); ++k) {
        node[e.output_ids[k]] = id;
        spec[e.output_ids[k]] = e.outputs.at(k);
      }
    }
  }
  for (size_t k = 0; k < f.output_ids.size(); ++k) {
    const std::string id = tag("out", k);
    os << "  " << id << " [label=\"" << quoted(std::string("output ").append(std::to_string(k)).append("\n").append(spec_text(f.outputs[k])))
       << "\", shape=house, style=filled, fillcolor=\"#d3f2d3\"];\n";
    auto it = node.find(f.output_ids[k]);
    os << "  " << (it == node.end() ? "missing" : it->second) << " -> " << id << " [label=\""
       << quoted(spec_text(f.outputs[k])) << "\"];\n";
  }
  os << "}\n";
}

FileDiff diff_functions(const ImportedFunction& a, const ImportedFunction& b) {
  const FileInfo& A = a.info();
  const FileInfo& B = b.info();
  FileDiff d;
  if (A.version != B.version || A.format != B.format) {
    d.notes.push_back("header version " + A.version + " (layout " + A.format + ") vs " + B.version + " (layout " +
                      B.format + ")");
  }
  if (A.metadata != B.metadata) d.notes.push_back("metadata differs");
  if (A.shapeless != B.shapeless) {
    d.differences.push_back(std::string("shapeless: ") + (A.shapeless ? "yes" : "no") + " vs " +
                            (B.shapeless ? "yes" : "no"));
  }
  if (A.functions.size() != B.functions.size()) {
    d.differences.push_back(std::to_string(A.functions.size()) + " function(s) vs " +
                            std::to_string(B.functions.size()));
  }
  const size_t n = std::min(A.functions.size(), B.functions.size());
  for (size_t i = 0; i < n; ++i) {
    const std::string fn = "function " + std::to_string(i + 1) + ": ";
    const FunctionInfo& fa = A.functions[i];
    const FunctionInfo& fb = B.functions[i];
    const std::string sa = signature_text(fa), sb = signature_text(fb);
    if (sa != sb) {
      d.differences.push_back(fn + "signature " + sa + " vs " + sb);
      continue;
    }
    const Canon ca = canonical(fa), cb = canonical(fb);
    size_t shown = 0;
    const size_t m = std::min(ca.entries.size(), cb.entries.size());
    for (size_t k = 0; k < m && shown < 10; ++k) {
      if (ca.entries[k] != cb.entries[k]) {
        d.differences.push_back(fn + "tape entry " + std::to_string(k) + ": " + ca.entries[k] + "  vs  " +
                                cb.entries[k]);
        ++shown;
      }
    }
    if (ca.entries.size() != cb.entries.size()) {
      d.differences.push_back(fn + std::to_string(ca.entries.size()) + " tape entries vs " +
                              std::to_string(cb.entries.size()));
    }
    if (ca.outputs != cb.outputs) {
      for (size_t k = 0; k < ca.outputs.size() && k < cb.outputs.size(); ++k) {
        if (ca.outputs[k] != cb.outputs[k]) {
          d.differences.push_back(fn + "output " + std::to_string(k) + " is " + ca.outputs[k] + " vs " + cb.outputs[k]);
        }
      }
    }
  }
  return d;
}

}  // namespace kiln
