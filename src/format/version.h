// Format versions: every layout decision that depends on the MLX version lives here, so that other
// versions (spec section 5) become per-version adjustments rather than edits across the codec.
#pragma once

#include <compare>
#include <string>
#include <vector>

#include "kiln/primitive.h"

namespace kiln::format {

struct FormatVersion {
  int major = 0;
  int minor = 30;
  int patch = 1;
  auto operator<=>(const FormatVersion&) const = default;
  std::string str() const;
  // The leading "major.minor.patch" of a header string ("0.30.1", "0.30.1.dev2025+abc", ...);
  // nullopt-like fallback: returns false when the text does not start with three numbers.
  static bool parse(const std::string& text, FormatVersion& out);
};

// The layout kiln writes by default, and the only one issue 3 implements.
inline constexpr FormatVersion kV0_30_1{0, 30, 1};
inline constexpr FormatVersion kDefaultVersion = kV0_30_1;

// The layout used to decode a file whose header says `header`: the version when kiln implements its
// layout, otherwise the nearest implemented one (MLX itself never checks the string).
FormatVersion reader_layout(const std::string& header);
// The version names kiln can write and read with their exact layouts.
bool is_implemented(const FormatVersion& v);

// Header: whether a metadata string (H4) follows the shapeless flag (from 0.32.1).
bool header_has_metadata(const FormatVersion& v);

// The on-disk state fields of `def` at version `v`. For 0.30.1 this is the registry schema itself;
// later versions (SliceUpdate's leading reduce type from 0.31.2, CustomKernel's compile options from
// 0.32.0, SDPA's force_fused) and older layouts (section 5.0.3) are adjustments made here together
// with to_schema / from_schema below.
const std::vector<Field>& disk_fields(const PrimitiveDef& def, const FormatVersion& v);
// Convert decoded on-disk values to the registry schema, and back. Identity at 0.30.1.
State to_schema(const PrimitiveDef& def, const FormatVersion& v, std::vector<Value> disk);
std::vector<Value> from_schema(const PrimitiveDef& def, const FormatVersion& v, const State& state);

}  // namespace kiln::format
