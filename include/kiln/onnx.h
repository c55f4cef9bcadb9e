// kiln extension: converting a function of an .mlxfn file to an ONNX model (`kiln to-onnx`).
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace kiln {

struct OnnxOptions {
  // The ONNX opset the model imports (the default domain). A primitive whose lowering needs a newer
  // opset is refused with the reason.
  int opset = 21;
  // The function (0-based, in file order) to convert.
  size_t function = 0;
  // Initializers of at least `external_threshold` bytes go to a side file OUT.data next to the model
  // (ONNX's external data), as models over 2 GB need.
  bool external_data = false;
  uint64_t external_threshold = uint64_t(1) << 10;
  // Affine 4-bit QuantizedMatmul with constant weights (x @ w.T) as ONNX Runtime's contrib op
  // com.microsoft.MatMulNBits (zero points -bias / scale in float), instead of DequantizeLinear + MatMul.
  bool matmul_nbits = false;
};

// A function ONNX cannot express (a primitive without a lowering, a dtype ONNX lacks, an opset too
// old): the message names the primitive and the reason. Nothing is written.
struct OnnxRefusal : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Converts function `options.function` of `in_path` to an ONNX model at `out_path` (written
// atomically: complete or absent). Graph inputs are named arg0, arg1, ... (positional) and by keyword;
// outputs out0, out1, ... in order; constants become initializers. Throws OnnxRefusal when the
// function cannot be expressed, std::out_of_range for a function the file does not have, and the
// import's errors for a file that cannot be read.
void to_onnx(const std::string& in_path, const std::string& out_path, const OnnxOptions& options = {});

}  // namespace kiln
