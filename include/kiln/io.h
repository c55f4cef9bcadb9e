// kiln I/O: MLX's array files.
//
// .npy (NumPy), with MLX's conventions (bfloat16 as '<V2', complex64 as '<c8', bool as '|b1').
// Loading is eager and validates every header field; a malformed or truncated file throws
// std::runtime_error (std::invalid_argument for a valid header naming an unsupported dtype), with a
// message that starts with "[load]" and says what was expected and what was found.
//
// .safetensors: an 8-byte little-endian header length, a JSON header
//   {"name": {"dtype": "F32", "shape": [2, 3], "data_offsets": [begin, end]}, ...,
//    "__metadata__": {"key": "value", ...}}
// and the tensors' bytes, row-major, little-endian. Codes: BOOL U8 U16 U32 U64 I8 I16 I32 I64 F16
// BF16 F32 F64 C64 (complex64, MLX's extension), and F8_E4M3 on loading only (converted to bfloat16,
// as MLX does). Loading is eager and checks the whole header before allocating: the header length
// (at most 100,000,000 bytes, as MLX and the reference implementation allow, and within the file),
// well-formed JSON (no duplicate keys), a known dtype, a non-negative shape whose element count times
// the item size equals end - begin, and offsets that tile the data section exactly (sorted by begin,
// the first at 0, each starting where the previous ended, the last ending at the end of the file: no
// overlap, no hole, no trailing bytes, as the format's specification requires). Metadata values must
// be strings ("__metadata__": null, which MLX writes when there is none, means none). Errors are
// std::runtime_error starting "[load_safetensors]" and say what was expected and what was found.
//
// .gguf (llama.cpp's model files, versions 2 and 3): a header ("GGUF", version, tensor and metadata
// counts), metadata key-value pairs, tensor infos (name, dimensions innermost first, ggml type, offset)
// and the aligned data (general.alignment, default 32). load_gguf reads F32, F16, BF16, F64 and I8 to
// I64 tensors as arrays of the row-major shape, and Q4_0, Q4_1 and Q8_0 tensors as MLX does, as its
// affine quantization with groups of 32 (`name` the packed uint32 codes, `name.scales` and
// `name.biases` float16); other ggml types (the K-quants, ...) are refused naming the type. Metadata:
// numbers and bools as 0-d arrays, strings as std::string, arrays of numbers as 1-D arrays, arrays of
// strings as std::vector<std::string>. Every count and length is checked against the bytes left, so
// a hostile file cannot make kiln allocate more than about its own size; errors are std::runtime_error
// starting "[load_gguf]" and say what was expected and what was found. save_gguf writes version 3:
// float32, float16, int8, int16 and int32 tensors (as MLX) and metadata values of at most one
// dimension, atomically; ".gguf" is appended to `file` when missing.
//
// Every save evaluates its arrays and writes them row-major whatever their strides. Saving to a path
// writes a temporary file beside it and renames it into place: the file is complete or untouched.
#pragma once

#include <cstddef>
#include <istream>
#include <ostream>
#include <string>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

#include "kiln/array.h"

namespace kiln {

using SafetensorsLoad =
    std::pair<std::unordered_map<std::string, array>, std::unordered_map<std::string, std::string>>;

using GGUFMetaData = std::variant<std::monostate, array, std::string, std::vector<std::string>>;
using GGUFLoad = std::pair<std::unordered_map<std::string, array>, std::unordered_map<std::string, GGUFMetaData>>;

// Write `a` (evaluated first) as a version 1.0 .npy file (2.0 when the header needs it), in logical
// row-major order whatever its strides. As MLX does, ".npy" is appended to `file` when missing.
void save(std::string file, array a);
void save(std::ostream& out, array a);

// Read a .npy file: versions 1.0, 2.0 and 3.0, little- or big-endian descriptors, C or Fortran order.
// The result is evaluated and row-contiguous.
array load(std::string file, StreamOrDevice s = {});
array load(std::istream& in, StreamOrDevice s = {});
// From .npy bytes held in memory.
array load_npy(const void* data, size_t nbytes);

// Write `arrays` and `metadata` as a .safetensors file; as MLX does, ".safetensors" is appended to
// `file` when missing. The header is padded with spaces to a multiple of 8 bytes and the tensors are
// laid out by decreasing item size, then name, so that each starts aligned to its item size. Unlike
// MLX, empty arrays and float64 are written (the format allows both; MLX 0.30.1 refuses them). The
// name "__metadata__" and names or metadata that are not valid UTF-8 are refused (std::invalid_argument).
void save_safetensors(std::string file, std::unordered_map<std::string, array> arrays,
                      std::unordered_map<std::string, std::string> metadata = {});
void save_safetensors(std::ostream& out, std::unordered_map<std::string, array> arrays,
                      std::unordered_map<std::string, std::string> metadata = {});

// Read a .safetensors file (see above); the arrays are evaluated and row-contiguous.
SafetensorsLoad load_safetensors(const std::string& file, StreamOrDevice s = {});
SafetensorsLoad load_safetensors(std::istream& in, StreamOrDevice s = {});
// From .safetensors bytes held in memory.
SafetensorsLoad load_safetensors_bytes(const void* data, size_t nbytes);

// Read / write a .gguf file (see above).
GGUFLoad load_gguf(const std::string& file, StreamOrDevice s = {});
void save_gguf(std::string file, std::unordered_map<std::string, array> arrays,
               std::unordered_map<std::string, GGUFMetaData> metadata = {});

}  // namespace kiln
