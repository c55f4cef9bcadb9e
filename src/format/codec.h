// The .mlxfn codec: encodings of the compound values of the format (spec 1.3-1.4) and of primitive
// states, generically from each PrimitiveDef's field schema. The file layout is summarised in
// src/format/README.md.
#pragma once

#include <string>
#include <vector>

#include "format/bytes.h"
#include "format/version.h"
#include "kiln/export.h"
#include "kiln/primitive.h"

namespace kiln::format {

// ShapeEnc: u64 ndim + int32 each.
void write_shape(ByteWriter& w, const Shape& s);
Shape read_shape(ByteReader& r, const char* what);
// DtypeEnc: int32 code + u8 itemsize. The reader requires a known code with its table itemsize.
void write_dtype(ByteWriter& w, Dtype t);
Dtype read_dtype(ByteReader& r, const char* what);
// StreamEnc: int32 index, int32 device type, int32 device index.
void write_stream(ByteWriter& w, const StreamInfo& s);
StreamInfo read_stream(ByteReader& r, const char* what);
// IdList: u64 n + u64 each.
void write_ids(ByteWriter& w, const std::vector<uint64_t>& ids);
std::vector<uint64_t> read_ids(ByteReader& r, const char* what);

// One state field. Throws std::logic_error when the value's type does not fit the field type (a
// registry row and its op builder disagree).
void write_field(ByteWriter& w, const Field& f, const Value& v, const std::string& prim);
Value read_field(ByteReader& r, const Field& f, const std::string& prim);

// A whole state in the on-disk layout of `v`.
void write_state(ByteWriter& w, const PrimitiveDef& def, const State& s, const FormatVersion& v);
State read_state(ByteReader& r, const PrimitiveDef& def, const FormatVersion& v);

// Human-readable forms, for inspection and error messages.
std::string value_text(const Value& v);
std::string state_text(const PrimitiveDef& def, const State& s);  // "type=2, axes=[1]"
std::string spec_text(const ArraySpec& s);                         // "(2,3) float32"

}  // namespace kiln::format
