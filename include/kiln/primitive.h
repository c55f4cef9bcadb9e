// kiln: the primitive registry. Each primitive is declared once, as a PrimitiveDef row: what is true of
// it on every device (its canonical serialized name, its state schema in on-disk field order, arity,
// flags, output rule, check). The codec, printing, CSE equality, callback events, validation and
// shapeless replay are all derived from that row. Kernels are not part of the row: each backend keeps
// its own table keyed by the row (src/core/kernels.h).
#pragma once

#include <array>
#include <functional>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "kiln/array.h"

namespace kiln {

// The encodings a state field can have (format spec 1.2-1.3).
enum class FieldType {
  Placeholder,  // 0 bytes (the fallback slot of fast primitives)
  Bool,         // 1 byte
  Int,          // int32
  Size,         // u64
  Float,        // binary32
  Double,       // binary64
  DtypeF,       // int32 code + u8 itemsize
  String,       // u64 length + bytes
  IntVec,       // u64 count + int32 each (vector<int>)
  ShapeF,       // u64 count + int32 each (Shape; a tuple in callbacks)
  StridesF,     // u64 count + int64 each
  SizeVec,      // u64 count + u64 each
  OptFloat,     // bool + float when present
  BoolTripleVec,  // u64 count + 3 bools each
  ScalarVec,    // u64 count + (int32 tag, value) each
};

using ScalarArg = std::variant<bool, int32_t, float>;
using Value = std::variant<std::monostate, bool, int32_t, uint64_t, float, double, Dtype, std::string,
                           std::vector<int32_t>, std::vector<int64_t>, std::vector<uint64_t>,
                           std::optional<float>, std::vector<std::array<bool, 3>>, std::vector<ScalarArg>>;

struct Field {
  const char* name;
  FieldType type;
};

// A primitive's parameters, in schema order.
struct State {
  std::vector<Value> values;
  State() = default;
  State(std::initializer_list<Value> v) : values(v) {}
  template <typename T>
  const T& get(size_t i) const {
    return std::get<T>(values.at(i));
  }
  int32_t i(size_t k) const { return get<int32_t>(k); }
  bool b(size_t k) const { return get<bool>(k); }
  float f(size_t k) const { return get<float>(k); }
  const std::vector<int32_t>& ints(size_t k) const { return get<std::vector<int32_t>>(k); }
  bool operator==(const State& o) const { return values == o.values; }
};

struct ArraySpec {
  Shape shape;
  Dtype dtype = float32;
  bool operator==(const ArraySpec&) const = default;
};

struct PrimitiveDef;

// One application of a primitive: shared by all of its outputs.
struct Node {
  const PrimitiveDef* def = nullptr;
  State state;
  Stream stream;
  std::vector<array> inputs;
  std::vector<ArraySpec> specs;                         // every output's shape and dtype
  std::vector<std::weak_ptr<detail::ArrayDesc>> outputs;  // live output descriptors
  // Opaque per-node data outside the state: never serialized or compared (e.g. the file a Load node reads).
  std::shared_ptr<const void> extra;
  // The MLX-class object array::primitive() gives (kiln/primitives.h); null until first asked for.
  std::shared_ptr<Primitive> primitive;
};

using InferFn = std::vector<ArraySpec> (*)(const State&, const std::vector<ArraySpec>& inputs);
// A backend's implementation of one primitive: writes every output of `node` from its evaluated inputs.
using KernelFn = void (*)(const Node& node, const std::vector<array>& inputs, std::vector<array>& outputs);
using NameFn = std::string (*)(const State&);
// Validates recorded output specs (throws std::invalid_argument when they are impossible).
using CheckFn = void (*)(const State&, const std::vector<ArraySpec>& inputs, const std::vector<ArraySpec>& outputs);

enum PrimitiveFlags : unsigned {
  kUnary = 1u << 0,
  kBinary = 1u << 1,
  kElementwise = 1u << 2,
  kReduction = 1u << 3,
  kNoCSE = 1u << 4,          // equivalence is false (Expm1, Log1p, Depends, QRF, SVD, ...)
  kNotSerializable = 1u << 5,  // exists in kiln but MLX's table has no entry (Load, Contiguous, ...)
  kNoOp = 1u << 6,           // Copy, StopGradient: removed by simplify
};

struct PrimitiveDef {
  std::string name;                // canonical serialized name
  std::vector<Field> fields;       // state schema, on-disk order
  int min_inputs = 0;
  int max_inputs = 0;              // -1: any number
  int num_outputs = 1;             // -1: decided per node (Split, Depends, SVD, ...)
  unsigned flags = 0;
  InferFn infer = nullptr;         // output shapes and dtypes from the inputs and state; null: from the record
  NameFn display = nullptr;        // MLX's display name (e.g. "Sum" for Reduce type 2); null: `name`
  bool shapeless = true;           // whether MLX 0.30.1 can re-infer shapes (column SL of the spec)
  // Set where `infer` cannot always reproduce what MLX recorded (Slice: MLX forces a stride to 1 where
  // the output has one element, so the state alone is ambiguous). A reader validating a record should
  // call this instead of comparing the record with `infer`.
  CheckFn check = nullptr;
  size_t index = 0;                // position in the registry (set by registry::define); kernel tables key on it

  std::string display_name(const State& s) const { return display ? display(s) : name; }
};

namespace registry {
// Register a row; the returned reference stays valid for the program's lifetime.
const PrimitiveDef& define(PrimitiveDef def);
// Null when the name is not a canonical name of the table.
const PrimitiveDef* find(const std::string& name);
// Throws std::invalid_argument("[<api>] Unknown primitive <name>") when absent.
const PrimitiveDef& get(const std::string& name);
std::vector<const PrimitiveDef*> all();
}  // namespace registry

// Build the outputs of one primitive application. `specs` gives the outputs' shapes and dtypes; when
// empty, the definition's infer rule computes them.
std::vector<array> make_arrays(const PrimitiveDef& def, State state, std::vector<array> inputs,
                               std::vector<ArraySpec> specs = {}, Stream stream = Stream{});
array make_array(const PrimitiveDef& def, State state, std::vector<array> inputs, std::vector<ArraySpec> specs = {},
                 Stream stream = Stream{});
std::vector<ArraySpec> specs_of(const std::vector<array>& arrays);

}  // namespace kiln
