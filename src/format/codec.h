// The .mlxfn codec: encodings of the compound values of the format (spec 1.3-1.4) and of primitive
// states, generically from each PrimitiveDef's field schema. The file layout is summarised in
// src/format/README.md.
#pragma once

#include <string>
#include <vector>

#include "format/bytes.h"
#include "format/compat/version.h"
#include "kiln/export.h"
#include "kiln/primitive.h"

namespace kiln::format {

// ShapeEnc: u64 ndim + int32 each.
void write_shape(ByteWriter& w, const Shape& s);
Shape read_shape(ByteReader& r, const char* what);
// DtypeEnc: int32 code + u8 itemsize. The reader requires a known code with its table itemsize.
// The code depends on the layout (spec 5.0.2 A1); the writer checks expressibility beforehand.
// Reading: codes 11 and 12 mean different dtypes before 0.23.0, and unless `mlx_rules` (decode as
// MLX itself would, trusting the layout) the item size settles which numbering a file used.
void write_dtype(ByteWriter& w, Dtype t, const FormatVersion& v = kDefaultVersion);
Dtype read_dtype(ByteReader& r, const char* what, const FormatVersion& v = kDefaultVersion, bool mlx_rules = false);
// StreamEnc: int32 index, int32 device type, int32 device index.
void write_stream(ByteWriter& w, const StreamInfo& s);
StreamInfo read_stream(ByteReader& r, const char* what);
// IdList: u64 n + u64 each.
void write_ids(ByteWriter& w, const std::vector<uint64_t>& ids);
std::vector<uint64_t> read_ids(ByteReader& r, const char* what);

// One state field. Throws std::logic_error when the value's type does not fit the field type (a
// registry row and its op builder disagree).
// `mlx_rules` reproduces MLX's own reader at `ver` (its optional<float> bug before 0.31.1, spec 5.1 B2).
void write_field(ByteWriter& w, const Field& f, const Value& v, const std::string& prim,
                 const FormatVersion& ver = kDefaultVersion);
Value read_field(ByteReader& r, const Field& f, const std::string& prim, const FormatVersion& ver = kDefaultVersion,
                 bool mlx_rules = false);

// A whole state in the on-disk layout of `v`. read_disk_state returns the on-disk values (to_schema
// in version.h turns them into the registry state once the node's shapes are known); read_state does
// both for layouts that need no shapes.
void write_state(ByteWriter& w, const PrimitiveDef& def, const State& s, const FormatVersion& v,
                 const std::vector<ArraySpec>& outputs = {});
std::vector<Value> read_disk_state(ByteReader& r, const PrimitiveDef& def, const FormatVersion& v,
                                   bool mlx_rules = false);
State read_state(ByteReader& r, const PrimitiveDef& def, const FormatVersion& v);

// Human-readable forms, for inspection and error messages.
std::string value_text(const Value& v);
std::string state_text(const PrimitiveDef& def, const State& s);  // "type=2, axes=[1]"
std::string spec_text(const ArraySpec& s);                         // "(2,3) float32"

}  // namespace kiln::format
