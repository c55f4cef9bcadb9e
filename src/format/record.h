// The in-memory form of a function record: what the tracer produces, the writer and the callback
// serialize, and the reader rebuilds (with validation) for replay and inspection.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

#include "format/bytes.h"
#include "format/compat/version.h"
#include "kiln/export.h"
#include "kiln/primitive.h"

namespace kiln::format {

struct Entry {
  enum class Kind : uint8_t { Input, Constant, Primitive };
  Kind kind = Kind::Primitive;
  uint64_t id = 0;                 // this entry's id (for multi-output nodes: one of out_ids)
  std::vector<ArraySpec> specs;    // outputs (primitive), or the input's / constant's spec
  std::vector<uint64_t> out_ids;   // one id per output; {id} for single-output nodes
  // Primitive entries.
  const PrimitiveDef* def = nullptr;
  State state;
  StreamInfo stream;
  std::vector<uint64_t> inputs;
  // Constant entries: the data (export) or the shared, lazily loaded constant (import).
  array value;
  bool payload = false;  // import: this entry carried the payload (first occurrence in the file)
  // In memory only, never written: the Node::extra replay gives the node (compile's Compiled entries
  // carry their fused group here, src/transforms/compile_fuse.cpp).
  std::shared_ptr<const void> extra;
};

struct Record {
  std::vector<std::string> kwarg_keys;  // sorted
  std::vector<uint64_t> input_ids;      // positional, then keyword (in kwarg_keys order)
  std::vector<ArraySpec> inputs;
  std::vector<uint64_t> output_ids;
  std::vector<Entry> tape;
};

StreamInfo stream_info(const Stream& s);

// Header H1-H3 (and H4 from 0.32.1).
void write_header(ByteWriter& w, const FormatVersion& v, int32_t count, bool shapeless,
                  const std::string& metadata = "");
// One function record. Constants whose id is in `written` get no payload; the ids of constants
// whose payload this record carries are appended to `added` (the caller commits them once the
// record is on disk).
// Refuses ("[<api>] <what> cannot be written for MLX <v>: ...") before writing anything when `v`
// cannot express a node, state value or dtype of the record, or (`target_reads`) when MLX `v`'s own
// reader would rebuild a node wrongly (check_writable). Tests that reproduce MLX's writer bytes turn
// `target_reads` off.
void write_record(ByteWriter& w, const Record& rec, const FormatVersion& v, const std::unordered_set<uint64_t>& written,
                  std::vector<uint64_t>& added, const std::string& api = "export_function", bool target_reads = true);
void check_writable(const Record& rec, const FormatVersion& v, const std::string& api, bool target_reads = true);

// MLX's serialized name check (spec 3.1, 3.6): throws "[export_function] Unable to serialize
// primitive <X>" (callback: "Unable to get state for primitive <X>") for a node kiln cannot write.
void check_serializable(const Record& rec, bool callback);

struct ParsedFile {
  std::string version;  // H1 as written
  FormatVersion layout;
  bool shapeless = false;
  std::string metadata;
  uint64_t file_bytes = 0;
  std::vector<Record> records;
  size_t constants = 0;
  uint64_t constant_bytes = 0;
};

// Builds the constant for a payload of `nbytes` at `offset` (the importer makes a lazy Load node).
using ConstantFactory = std::function<array(const ArraySpec& spec, uint64_t offset, uint64_t nbytes)>;

struct ReadOptions {
  // Decode with this layout whatever the header says (as MLX of that version does: it never reads
  // the header's version); by default the layout comes from the header (reader_layout).
  std::optional<FormatVersion> layout;
  // Reproduce that MLX's own reader where it differs from a correct one: dtype codes taken as its
  // table says, and its optional<float> bug (0.30.0 - 0.31.0). For readability checks.
  bool mlx_rules = false;
};

// Parse and validate a whole file (spec 2.8). Only constant payloads are left on disk.
ParsedFile read_file(const Source& src, const ConstantFactory& make_constant, const ReadOptions& options = {});

}  // namespace kiln::format
