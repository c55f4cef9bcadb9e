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
#include <type_traits>
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

// Which MLX release's layout to write, and the header metadata (kiln extension; MLX's files change
// layout between releases, spec section 5). `version` is a release from kiln::format::supported_versions()
// (or one between two of them); `metadata` needs a layout that has it (0.32.1 and later). Writing
// refuses, naming the primitive and the version, when the layout cannot express a node of the trace.
struct ExportOptions {
  std::string version = "0.30.1";
  std::string metadata;
  bool shapeless = false;
};

// The file forms take MLX 0.32.1's `metadata` argument too: a non-empty one selects the 0.32.1 layout
// (the first with a metadata field, as MLX 0.32.1 writes it); an empty one keeps the default 0.30.1.
FunctionExporter exporter(const std::string& file, const ArgsFn& fun, bool shapeless = false,
                          const std::string& metadata = "");
FunctionExporter exporter(const std::string& file, const KwargsFn& fun, bool shapeless = false,
                          const std::string& metadata = "");
FunctionExporter exporter(const std::string& file, const ArgsKwargsFn& fun, bool shapeless = false,
                          const std::string& metadata = "");
FunctionExporter exporter(const std::string& file, const ArgsFn& fun, const ExportOptions& options);
FunctionExporter exporter(const std::string& file, const KwargsFn& fun, const ExportOptions& options);
FunctionExporter exporter(const std::string& file, const ArgsKwargsFn& fun, const ExportOptions& options);
FunctionExporter exporter(const ExportCallback& callback, const ArgsFn& fun, bool shapeless = false);
FunctionExporter exporter(const ExportCallback& callback, const KwargsFn& fun, bool shapeless = false);
FunctionExporter exporter(const ExportCallback& callback, const ArgsKwargsFn& fun, bool shapeless = false);

void export_function(const std::string& file, const ArgsFn& fun, const Args& args, bool shapeless = false,
                     const std::string& metadata = "");
void export_function(const std::string& file, const KwargsFn& fun, const Kwargs& kwargs, bool shapeless = false,
                     const std::string& metadata = "");
void export_function(const std::string& file, const ArgsKwargsFn& fun, const Args& args, const Kwargs& kwargs,
                     bool shapeless = false, const std::string& metadata = "");
void export_function(const std::string& file, const ArgsFn& fun, const Args& args, const ExportOptions& options);
void export_function(const std::string& file, const KwargsFn& fun, const Kwargs& kwargs,
                     const ExportOptions& options);
void export_function(const std::string& file, const ArgsKwargsFn& fun, const Args& args, const Kwargs& kwargs,
                     const ExportOptions& options);
void export_function(const ExportCallback& callback, const ArgsFn& fun, const Args& args, bool shapeless = false);
void export_function(const ExportCallback& callback, const KwargsFn& fun, const Kwargs& kwargs,
                     bool shapeless = false);
void export_function(const ExportCallback& callback, const ArgsKwargsFn& fun, const Args& args,
                     const Kwargs& kwargs, bool shapeless = false);

// Rewrite an .mlxfn file (from any MLX version kiln reads) in another release's layout, e.g. so that
// MLX 0.32.1 can load a file written by 0.31. `metadata`: unset keeps the input's metadata (refused
// when the target layout has none and the input's is not empty); set, it replaces it. Refuses with
// "[convert] <primitive> ... cannot be written for MLX <version>: ..." when the target cannot express
// a node. The output appears complete or not at all (written to a temporary file, then renamed).
struct ConvertOptions {
  std::string version = "0.30.1";
  std::optional<std::string> metadata;
};
void convert_file(const std::string& in, const std::string& out, const ConvertOptions& options = {});

namespace format {
// The MLX releases whose layouts kiln reads and writes ("0.22.0", ..., "0.32.1"), oldest first.
std::vector<std::string> supported_versions();
}  // namespace format

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
  // Constant entries: the value, loaded from the file when it is first evaluated (kiln diff hashes it).
  array value;
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
  std::string metadata;       // the header's metadata string (layouts from MLX 0.32.1; else empty)
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
  // The metadata saved with the function (MLX 0.32.1's ImportedFunction::metadata()); empty for
  // layouts without it.
  const std::string& metadata() const;

  explicit ImportedFunction(std::shared_ptr<detail::FunctionTable> table);

 private:
  friend void export_events(const ImportedFunction& fn, size_t function, const ExportCallback& callback);
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
  // Reproduce the numbers MLX's CPU backend gave for this file, bugs included, when the file was
  // written by an MLX version with a known CPU bug on a CPU stream. Off by default: kiln computes the
  // documented semantics. Today one quirk exists: before 0.31, MLX's CPU computes QuantizedMatmul and
  // GatherQMM of the mxfp8 and nvfp4 modes by reading the operands as mxfp4 data.
  bool writer_cpu_quirks = false;
};

// Parse `file` completely (constants stay on disk until a call needs them) and return a callable.
// Throws "[import_function] ..." on a file that cannot be opened or is malformed, or that exceeds
// the limits of `options`.
ImportedFunction import_function(const std::string& file);
ImportedFunction import_function(const std::string& file, const ImportOptions& options);

// kiln extension: build now the one-time tables that the first import_function (or the first evaluation)
// would otherwise build: the primitive registry, each MLX release's file layouts, the CPU kernel table
// (~0.1-0.2 ms). `import kiln` calls it, as importing MLX registers MLX's; calling it again does nothing.
void prepare_import();

// kiln extension (converters such as `kiln to-onnx`): function `function` (0-based, in file order) of an
// imported file sent to `callback` as the export callback events MLX's exporter would send for it
// (inputs, keyword_inputs, outputs, constants, one primitive event per tape node). Throws
// std::out_of_range for a function the file does not have.
void export_events(const ImportedFunction& fn, size_t function, const ExportCallback& callback);

}  // namespace kiln

// ---- Graphviz export of a lazy graph (MLX's export_to_dot, mlx/graph_utils.h) ----
#include <iosfwd>

namespace kiln {
// Writes the graph behind `outputs` (every unevaluated array they depend on, stopping at arrays
// without a primitive) in Graphviz DOT, in MLX's layout: a `rank=source` node per input, a rectangle
// labelled with the primitive's name per node, a `rank=sink` node per array no other node uses, and
// edges input -> primitive -> output. Arrays are named "A", "B", ..., "Z", "AA", ... in order of first
// use, except those given a name in `names` (an array and its name; MLX's NodeNamer::set_name).
void export_to_dot(std::ostream& os, const std::vector<array>& outputs,
                   const std::vector<std::pair<array, std::string>>& names = {});

// A text listing of the same graph, as MLX's print_graph: "Inputs: " and "Outputs: " lines naming each
// array with its shape and dtype ("A [(2,3), float32]"), then one line per node in evaluation order,
// "<primitive> <inputs> -> <outputs>". Names as export_to_dot's.
void print_graph(std::ostream& os, const std::vector<array>& outputs,
                 const std::vector<std::pair<array, std::string>>& names = {});
template <typename... Arrays>
  requires(sizeof...(Arrays) > 0 && (std::is_same_v<std::decay_t<Arrays>, array> && ...))
void print_graph(std::ostream& os, Arrays&&... outputs) {
  print_graph(os, std::vector<array>{std::forward<Arrays>(outputs)...});
}
template <typename... Arrays>
  requires(sizeof...(Arrays) > 0 && (std::is_same_v<std::decay_t<Arrays>, array> && ...))
void export_to_dot(std::ostream& os, Arrays&&... outputs) {
  export_to_dot(os, std::vector<array>{std::forward<Arrays>(outputs)...});
}

struct ImportedFunction;

// kiln extension (`kiln dot`): function `function` (0-based, in file order) of an imported file as the
// file stores it, in Graphviz DOT: one node per input (named arg0, arg1, ... or by keyword), constant,
// primitive (its display name and state) and output, styled apart (inputs and outputs as blue and
// green house shapes, constants as grey boxes, primitives as ellipses), and one edge per use labelled
// with the array's shape and dtype. Throws std::out_of_range for a function the file does not have.
void export_to_dot(std::ostream& os, const ImportedFunction& fn, size_t function = 0);

// kiln extension (`kiln diff`): two imported files compared structurally, function by function:
// signatures (inputs, keyword names, outputs), the tape's primitives, their states and how they are
// wired (ids renamed to positions, so two writers' numbering does not matter) and the constants by
// content (a 64-bit hash of shape, dtype and bytes, which loads them). `differences` lists what
// differs (empty when the files compute the same thing); `notes` what differs without mattering to
// the computation (header version and layout, metadata).
struct FileDiff {
  std::vector<std::string> differences;
  std::vector<std::string> notes;
  bool equal() const { return differences.empty(); }
};
FileDiff diff_functions(const ImportedFunction& a, const ImportedFunction& b);
}  // namespace kiln
