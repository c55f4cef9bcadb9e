// The ONNX driver: a function's export events turned into a ModelProto (graph inputs, initializers,
// one lowering per primitive event, graph outputs), then written atomically.
#pragma once

#include <onnx/onnx_pb.h>

#include <string>
#include <unordered_map>

#include "onnx/lowering.h"

namespace kiln::onnx_export {

// Oldest and newest opsets the lowerings are written for: from 18 on, the Reduce* ops, Split, Pad and
// Resize take their axes and sizes as inputs, which the lowerings rely on.
constexpr int kMinOpset = 18;
constexpr int kMaxOpset = 23;

// The graph being built: fresh names, initializers, nodes.
class GraphBuilder {
 public:
  GraphBuilder(onnx::GraphProto& graph, int opset, bool shapeless)
      : graph_(graph), opset_(opset), shapeless_(shapeless) {}
  bool shapeless() const { return shapeless_; }
  onnx::GraphProto& graph() { return graph_; }
  int opset() const { return opset_; }
  bool matmul_nbits = false;  // OnnxOptions::matmul_nbits
  std::string fresh(const std::string& hint = "t") { return hint + "_" + std::to_string(next_++); }
  // The file's constants by ONNX value name, so a lowering can choose another encoding of one (the
  // packed weights of QuantizedMatmul as a UINT4 / UINT8 initializer for DequantizeLinear).
  void add_constant(const std::string& name, const array& a) { constants_.emplace(name, a); }
  const array* constant(const std::string& name) const {
    auto it = constants_.find(name);
    return it == constants_.end() ? nullptr : &it->second;
  }

 private:
  std::unordered_map<std::string, array> constants_;
  onnx::GraphProto& graph_;
  int opset_;
  bool shapeless_;
  size_t next_ = 0;
};

// Fills `t` (name, dims, type, raw bytes) from a kiln array.
void fill_tensor(onnx::TensorProto& t, const std::string& name, const array& value);

// The model for function `options.function` of `fn` (nothing written).
onnx::ModelProto build_model(const ImportedFunction& fn, const OnnxOptions& options);

// Protobuf's limit on one serialized message (2 GB): an ONNX file holds one ModelProto.
constexpr uint64_t kProtobufLimit = (uint64_t(1) << 31) - 1;

// Refuses (OnnxRefusal) a model of `bytes` serialized bytes over `limit`: without external data naming
// --external-data, with it saying what stays in the file.
void check_protobuf_size(uint64_t bytes, const OnnxOptions& options, uint64_t limit = kProtobufLimit);

// Writes `model` to `out_path` (atomically; with options.external_data its initializers of at least
// options.external_threshold bytes first moved to OUT.data, written before the model). The size is
// checked (check_protobuf_size against `limit`) before anything is serialized or written.
void write_model(onnx::ModelProto& model, const std::string& out_path, const OnnxOptions& options,
                 uint64_t limit = kProtobufLimit);

}  // namespace kiln::onnx_export
