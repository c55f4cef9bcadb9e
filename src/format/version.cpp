#include "format/version.h"

#include <cctype>

namespace kiln::format {

std::string FormatVersion::str() const {
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
}

bool FormatVersion::parse(const std::string& text, FormatVersion& out) {
  int parts[3] = {0, 0, 0};
  size_t i = 0;
  for (int k = 0; k < 3; ++k) {
    if (i >= text.size() || !std::isdigit(static_cast<unsigned char>(text[i]))) return false;
    long v = 0;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])) && v < 100000) {
      v = v * 10 + (text[i++] - '0');
    }
    parts[k] = static_cast<int>(v);
    if (k < 2) {
      if (i >= text.size() || text[i] != '.') return false;
      ++i;
    }
  }
  out = FormatVersion{parts[0], parts[1], parts[2]};
  return true;
}

bool is_implemented(const FormatVersion& v) { return v == kV0_30_1; }

FormatVersion reader_layout(const std::string& header) {
  // Only the 0.30.1 layout exists so far; like MLX 0.30.1 itself, decode every file with it.
  FormatVersion v;
  if (FormatVersion::parse(header, v) && is_implemented(v)) return v;
  return kV0_30_1;
}

bool header_has_metadata(const FormatVersion& v) { return v >= FormatVersion{0, 32, 1}; }

const std::vector<Field>& disk_fields(const PrimitiveDef& def, const FormatVersion&) { return def.fields; }

State to_schema(const PrimitiveDef&, const FormatVersion&, std::vector<Value> disk) {
  State s;
  s.values = std::move(disk);
  return s;
}

std::vector<Value> from_schema(const PrimitiveDef&, const FormatVersion&, const State& state) { return state.values; }

}  // namespace kiln::format
