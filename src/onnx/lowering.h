// What a primitive's ONNX lowering gets (the Context: the event's inputs, outputs and state arguments,
// and the graph being built) and the table of lowerings keyed by the row's canonical name. Each family
// file src/onnx/lower/<family>.cpp fills the table with register_<family>_onnx (README.md).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "kiln/export.h"
#include "kiln/onnx.h"

namespace onnx {
class NodeProto;
}

namespace kiln::onnx_export {

// One array of an event, by its ONNX value name.
struct Tensor {
  std::string name;
  Shape shape;
  Dtype dtype = float32;
  size_t size() const {
    size_t n = 1;
    for (auto d : shape) n *= static_cast<size_t>(d);
    return n;
  }
  int ndim() const { return static_cast<int>(shape.size()); }
};

// The TensorProto.DataType number of a kiln dtype (every kiln dtype has one).
int onnx_type(Dtype t);

// One node attribute. Constructors instead of a variant's converting one, so that `{"axis", 1}` is an
// integer attribute without a cast.
struct Attr {
  enum class Kind { Int, Float, String, Ints, Floats };
  std::string name;
  Kind kind = Kind::Int;
  int64_t i = 0;
  float f = 0;
  std::string s;
  std::vector<int64_t> ints;
  std::vector<float> floats;
  Attr(std::string n, int v) : name(std::move(n)), kind(Kind::Int), i(v) {}
  Attr(std::string n, int64_t v) : name(std::move(n)), kind(Kind::Int), i(v) {}
  Attr(std::string n, float v) : name(std::move(n)), kind(Kind::Float), f(v) {}
  Attr(std::string n, const char* v) : name(std::move(n)), kind(Kind::String), s(v) {}
  Attr(std::string n, std::string v) : name(std::move(n)), kind(Kind::String), s(std::move(v)) {}
  Attr(std::string n, std::vector<int64_t> v) : name(std::move(n)), kind(Kind::Ints), ints(std::move(v)) {}
  Attr(std::string n, std::vector<float> v) : name(std::move(n)), kind(Kind::Floats), floats(std::move(v)) {}
};
using Attrs = std::vector<Attr>;

class GraphBuilder;

// The lowering of one primitive event: read `in`, `out` and the arguments, add nodes that compute
// every output into its name (out[k].name). Helpers return the names of the values they add.
class Context {
  GraphBuilder& g_;
  std::string primitive_;
  std::vector<Tensor> in_, out_;
  std::vector<StateT> args_;

 public:
  Context(GraphBuilder& g, std::string primitive, std::vector<Tensor> in, std::vector<Tensor> out,
          std::vector<StateT> args);

  const std::string& primitive() const { return primitive_; }
  const std::vector<Tensor>& in;
  const std::vector<Tensor>& out;
  const std::vector<StateT>& args() const { return args_; }

  // State argument k (schema order) as a given type; a missing or differently typed argument throws
  // naming the primitive and what was expected.
  template <typename T>
  const T& arg(size_t k) const {
    if (k >= args_.size() || !std::holds_alternative<T>(args_[k])) bad_arg(k);
    return std::get<T>(args_[k]);
  }
  int32_t int_arg(size_t k) const { return arg<int32_t>(k); }
  bool bool_arg(size_t k) const { return arg<bool>(k); }
  float float_arg(size_t k) const { return arg<float>(k); }
  const std::vector<int32_t>& ints_arg(size_t k) const { return arg<std::vector<int32_t>>(k); }

  // A node of the default domain (or `domain`) with the given inputs ("" for an omitted optional
  // input) writing `outputs`.
  onnx::NodeProto& node(const std::string& op, const std::vector<std::string>& inputs,
                        const std::vector<std::string>& outputs, const Attrs& attrs = {},
                        const std::string& domain = "");
  // A node with one fresh output; returns its name.
  std::string op(const std::string& op, const std::vector<std::string>& inputs, const Attrs& attrs = {});
  // The same, writing output k of the event.
  void op_to(size_t k, const std::string& op, const std::vector<std::string>& inputs, const Attrs& attrs = {});
  // Output k of the event is `value` (an Identity node).
  void set_output(size_t k, const std::string& value);

  std::string fresh();
  // Initializers: an int64 1-D tensor (or a scalar), a scalar of dtype `t` holding `v` (exactly
  // representable values only where exactness matters: the caller's concern).
  std::string ints(const std::vector<int64_t>& v, bool scalar = false);
  std::string scalar(double v, Dtype t);
  // An initializer holding `a` (evaluated now).
  std::string constant(const array& a);
  // An initializer of ONNX element type `data_type` (TensorProto.DataType number, e.g. 21 = UINT4) with
  // the given dims, holding the bytes of `a` in row-major order (evaluated now) read as that type
  // (ONNX's packing for sub-byte types: two 4-bit elements per byte, the first in the low nibble).
  std::string raw_initializer(int data_type, const std::vector<int64_t>& dims, const array& a);
  // The value of `name` when it is one of the file's constants (an initializer), else null.
  const array* constant_value(const std::string& name) const;
  std::string cast(const std::string& x, Dtype to);

  // The model's opset (default domain).
  int opset() const;
  // OnnxOptions::matmul_nbits: affine 4-bit QuantizedMatmul as com.microsoft.MatMulNBits where it fits.
  bool matmul_nbits() const;
  // Whether the function is shapeless: its graph has symbolic dimensions, so a lowering must take
  // sizes from the values at run time (Shape), not from the recorded shapes.
  bool shapeless() const;
  // Refuses unless the requested opset is at least `v`; `why` names the op that needs it.
  void need_opset(int v, const std::string& why) const;
  // Refuses the conversion: "[to_onnx] <primitive> cannot be lowered to ONNX: <why>".
  [[noreturn]] void refuse(const std::string& why) const;

 private:
  [[noreturn]] void bad_arg(size_t k) const;
};

using Lowering = std::function<void(Context&)>;

struct LoweringEntry {
  Lowering lower;       // null for a refusal
  std::string refusal;  // why ONNX cannot express the row (a refusal only)
  // The lowering reads no recorded shape unless c.shapeless() is false (it may then serve shapeless
  // functions); others are refused in shapeless functions.
  bool polymorphic = false;
  // Why a lowering that is not polymorphic cannot serve a shapeless function (rows MLX can replay
  // shapeless need one: OnnxCoverage.ShapelessRowsArePolymorphicOrSayWhy).
  std::string shapeless_refusal;
};

// Keyed by the row's canonical name. Adding a name the registry does not have, or one already in the
// table, throws when the table is built.
class LoweringTable {
 public:
  void add(const std::string& name, Lowering lower);
  void add(std::initializer_list<std::pair<const char*, Lowering>> entries);
  void refuse(const std::string& name, const std::string& reason);
  // Marks rows whose lowerings serve shapeless functions (LoweringEntry::polymorphic).
  void polymorphic(std::initializer_list<const char*> names);
  // A row MLX can replay shapeless whose lowering needs the recorded shapes, and why.
  void refuse_shapeless(const std::string& name, const std::string& reason);
  const LoweringEntry* find(const std::string& name) const;
  const std::map<std::string, LoweringEntry>& entries() const { return entries_; }

 private:
  void insert(const std::string& name, LoweringEntry e);
  std::map<std::string, LoweringEntry> entries_;
};

// Every family's lowerings, built once.
const LoweringTable& lowerings();

// The families (src/onnx/lower/<family>.cpp).
void register_elementwise_onnx(LoweringTable& table);
void register_shape_onnx(LoweringTable& table);
void register_linalg_onnx(LoweringTable& table);
void register_reduce_onnx(LoweringTable& table);
void register_index_onnx(LoweringTable& table);
void register_fast_onnx(LoweringTable& table);
void register_misc_onnx(LoweringTable& table);
void register_conv_onnx(LoweringTable& table);
void register_sort_onnx(LoweringTable& table);
void register_quantized_onnx(LoweringTable& table);
void register_random_onnx(LoweringTable& table);
void register_fft_onnx(LoweringTable& table);

// Complex64 operands (lower/fft.cpp): the driver calls this before a row's lowering; true when it
// lowered the event (an op on complex values in their (..., 2) float32 form).
bool lower_complex(Context& c);

}  // namespace kiln::onnx_export
