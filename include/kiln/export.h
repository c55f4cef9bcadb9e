// kiln: exporting traced functions to MLX's `.mlxfn` format and importing them back. The API mirrors
// MLX's mlx/export.h (code written for mlx::core compiles with `namespace mx = kiln;`); kiln adds
// FileInfo, a parsed view of a file's function table for tools such as `kiln inspect`.
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

#include "kiln/array.h"
#include "kiln/primitive.h"

namespace kiln {

using Args = std::vector<array>;
using Kwargs = std::unordered_map<std::string, array>;

// One value of a primitive's state as reported to export callbacks. Unlike MLX 0.30.1, kiln keeps
// Dtype and optional<float> values; only the zero-byte fallback placeholder is dropped. Note that
// Shape and std::vector<int> are the same alternative here (std::vector<int32_t>).
using StateT = Value;

using ExportCallbackInput = std::unordered_map<
    std::string,
    std::variant<std::vector<std::tuple<std::string, Shape, Dtype>>,  // inputs / outputs: (name, shape, dtype)
                 std::vector<std::pair<std::string, array>>,         // constants: (name, value)
                 std::vector<std::pair<std::string, std::string>>,   // keywords: (keyword, name)
                 std::vector<StateT>,                                // arguments
                 std::string>>;                                      // type, name
using ExportCallback = std::function<void(const ExportCallbackInput&)>;

using ArgsFn = std::function<std::vector<array>(const Args&)>;
using KwargsFn = std::function<std::vector<array>(const Kwargs&)>;
using ArgsKwargsFn = std::function<std::vector<array>(const Args&, const Kwargs&)>;

namespace detail {
struct ExporterImpl;
struct FunctionTable;
}  // namespace detail

// Writes several traces (signatures) of one function into one file, or sends them to a callback.
struct FunctionExporter {
  void operator()(const std::initializer_list<array>& args) { (*this)(Args(args)); }
  void operator()(const Args& args);
  void operator()(const Kwargs& kwargs);
  void operator()(const Args& args, const Kwargs& kwargs);

  // Forbid further exports. The file on disk is complete after every successful trace.
  void close();

  FunctionExporter(const FunctionExporter&) = delete;
  FunctionExporter& operator=(const FunctionExporter&) = delete;
  FunctionExporter(FunctionExporter&&) noexcept = default;
  FunctionExporter& operator=(FunctionExporter&&) noexcept = default;
  ~FunctionExporter();

  explicit FunctionExporter(std::shared_ptr<detail::ExporterImpl> impl);

 private:
  std::shared_ptr<detail::ExporterImpl> impl_;
};

FunctionExporter exporter(const std::string& file, const ArgsFn& fun, bool shapeless = false);
FunctionExporter exporter(const std::string& file, const KwargsFn& fun, bool shapeless = false);
FunctionExporter exporter(const std::string& file, const ArgsKwargsFn& fun, bool shapeless = false);
FunctionExporter exporter(const ExportCallback& callback, const ArgsFn& fun, bool shapeless = false);
FunctionExporter exporter(const ExportCallback& callback, const KwargsFn& fun, bool shapeless = false);
FunctionExporter exporter(const ExportCallback& callback, const ArgsKwargsFn& fun, bool shapeless = false);

void export_function(const std::string& file, const ArgsFn& fun, const Args& args, bool shapeless = false);
void export_function(const std::string& file, const KwargsFn& fun, const Kwargs& kwargs, bool shapeless = false);
void export_function(const std::string& file, const ArgsKwargsFn& fun, const Args& args, const Kwargs& kwargs,
                     bool shapeless = false);
void export_function(const ExportCallback& callback, const ArgsFn& fun, const Args& args, bool shapeless = false);
void export_function(const ExportCallback& callback, const KwargsFn& fun, const Kwargs& kwargs,
                     bool shapeless = false);
void export_function(const ExportCallback& callback, const ArgsKwargsFn& fun, const Args& args,
                     const Kwargs& kwargs, bool shapeless = false);

// ---- The parsed function table (what `kiln inspect` prints) ----

struct StreamInfo {
  int32_t index = 0;        // the exporting process's stream index (meaningless on import)
  int32_t device_type = 0;  // 0 cpu, 1 gpu
  int32_t device_index = 0;
  auto operator<=>(const StreamInfo&) const = default;
};

// One tape entry as stored in the file.
struct TapeEntryInfo {
  enum class Kind { Input, Constant, Primitive };
  Kind kind = Kind::Primitive;
  uint64_t id = 0;
  // Primitive entries only:
  std::string name;                    // canonical serialized name (e.g. "Reduce")
  std::string display_name;            // MLX's display name (e.g. "Sum")
  std::vector<uint64_t> input_ids;
  StreamInfo stream;
  std::vector<Value> state;            // in schema order
  std::string state_text;              // e.g. "type=2, axes=[1]"
  std::vector<uint64_t> output_ids;    // every output (siblings included); {id} for single-output nodes
  std::vector<ArraySpec> outputs;      // recorded shapes and dtypes, one per output id
  // Constant entries: shape and dtype, and whether this entry carried the payload (first occurrence).
  bool payload = false;
};

// One function record (one exported signature).
struct FunctionInfo {
  std::vector<std::string> kwarg_keys;   // sorted; the last kwarg_keys.size() inputs are keyword inputs
  std::vector<uint64_t> input_ids;
  std::vector<ArraySpec> inputs;         // positional inputs first, then keyword inputs
  std::vector<uint64_t> output_ids;
  std::vector<ArraySpec> outputs;
  std::vector<TapeEntryInfo> tape;       // in file order
  size_t num_positional() const { return inputs.size() - kwarg_keys.size(); }
  size_t num_primitives = 0;
  std::map<std::string, size_t> primitive_histogram;  // canonical name -> node count
  std::map<StreamInfo, size_t> streams;               // stream -> primitive node count
  size_t new_constants = 0;                          // constants whose payload is in this record
  uint64_t new_constant_bytes = 0;
  // Working-memory estimate of one call at the recorded shapes (ImportOptions::max_call_bytes).
  uint64_t peak_bytes = 0;
};

struct FileInfo {
  std::string version;        // header string as written (e.g. "0.30.1")
  std::string format;         // the layout kiln used to decode it (e.g. "0.30.1")
  bool shapeless = false;
  uint64_t file_bytes = 0;
  std::vector<FunctionInfo> functions;  // in file order
  size_t constants = 0;                 // distinct constants in the file
  uint64_t constant_bytes = 0;          // their payload bytes
};

// A function loaded from a file. Copies share the table (and the lazily loaded constants).
struct ImportedFunction {
  std::vector<array> operator()(const std::initializer_list<array>& args) const { return (*this)(Args(args)); }
  std::vector<array> operator()(const Args& args) const;
  std::vector<array> operator()(const Kwargs& kwargs) const;
  std::vector<array> operator()(const Args& args, const Kwargs& kwargs) const;

  // The parsed structure of the file (kiln extension).
  const FileInfo& info() const;

  explicit ImportedFunction(std::shared_ptr<detail::FunctionTable> table);

 private:
  std::shared_ptr<detail::FunctionTable> table_;
};

// Limits that keep a malformed or hostile file from taking unbounded memory (README "Hostile
// files"). Sizes are logical bytes (elements x item size); 0 disables a limit.
struct ImportOptions {
  // Largest array any node or constant of the file may have: checked on the recorded shapes at
  // import, and on the re-inferred shapes of a shapeless call before anything runs.
  uint64_t max_array_bytes = uint64_t(4) << 30;
  // Largest working memory of one call: the peak, over the tape in file order, of the bytes of the
  // node outputs and constants alive at once (every output counted as a new allocation; call inputs
  // not counted). Checked like max_array_bytes.
  uint64_t max_call_bytes = uint64_t(16) << 30;
};

// Parse `file` completely (constants stay on disk until a call needs them) and return a callable.
// Throws "[import_function] ..." on a file that cannot be opened or is malformed, or that exceeds
// the limits of `options`.
ImportedFunction import_function(const std::string& file);
ImportedFunction import_function(const std::string& file, const ImportOptions& options);

}  // namespace kiln
