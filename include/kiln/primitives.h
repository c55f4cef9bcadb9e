// kiln: MLX's primitive classes (mlx/primitives.h, mlx/fast_primitives.h) over kiln's registry rows.
//
// A graph node in kiln is a registry row (kiln/primitive.h: PrimitiveDef) with a State; it holds no
// object of a class per primitive. For code written against MLX's C++ API, each row also has a class
// of MLX's name deriving from Primitive (Exp, Add, Reduce, ArgReduce, ...; the fast ones in
// kiln::fast), so that
//   - array::primitive() / primitive_ptr() give an object whose dynamic type is the row's class
//     (`typeid(y.primitive()) == typeid(Exp)`, `std::dynamic_pointer_cast<Reduce>(...)`), made on
//     first use and kept by the node;
//   - `array(shape, dtype, std::make_shared<ArgReduce>(stream, ArgReduce::ArgMax, 1), {x})` builds
//     a node, as MLX's array constructor does (array::make_arrays for several outputs).
// The classes are declared from one list (KILN_PRIMITIVE_CLASSES below), one entry per registry row
// (tests/unit/test_primitive_classes.cpp checks that the list and the registry agree). Every class
// takes (Stream, State): the row's state in its schema order (checked against the schema). Classes
// whose row has no state also take a Stream alone, and ArgReduce and Reduce take MLX's arguments.
//
// Primitive's methods are MLX's where kiln has the facts: stream(), device(), name() (MLX's display
// name: "Sum" for a sum Reduce), is_equivalent (same row and equal state, false for the rows MLX
// never merges), output_shapes (the row's shape rule). state() is kiln's State, not MLX's per-class
// tuple, and def() is the row. Evaluation and the transforms stay the rows' (kernels and rule
// tables), reached through arrays as usual.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "kiln/array.h"
#include "kiln/primitive.h"

namespace kiln {

class Primitive {
 public:
  // Throws std::invalid_argument when `state` does not fit the row's schema (count and types).
  Primitive(const PrimitiveDef& def, State state, Stream stream);
  virtual ~Primitive() = default;
  Primitive(const Primitive&) = delete;
  Primitive(Primitive&&) = delete;
  Primitive& operator=(const Primitive&) = delete;
  Primitive& operator=(Primitive&&) = delete;

  const Stream& stream() const { return stream_; }
  const Device& device() const { return stream_.device; }
  const char* name() const { return name_.c_str(); }
  // Same row and equal state; false for rows flagged kNoCSE (MLX's primitives without an equivalence).
  virtual bool is_equivalent(const Primitive& other) const;
  // The outputs' shapes for these inputs, by the row's shape rule. Throws std::invalid_argument
  // ("[Primitive::output_shapes] X cannot infer output shapes.") for a row without one.
  std::vector<Shape> output_shapes(const std::vector<array>& inputs) const;

  const PrimitiveDef& def() const { return *def_; }
  const State& state() const { return state_; }

  // The object of the row's class (throws std::logic_error for a row without one).
  static std::shared_ptr<Primitive> make(const PrimitiveDef& def, State state, Stream stream);

 private:
  const PrimitiveDef* def_;
  State state_;
  Stream stream_;
  std::string name_;
};

// MLX's base of the single-output primitives.
class UnaryPrimitive : public Primitive {
 public:
  using Primitive::Primitive;
};

namespace detail {
const PrimitiveDef& primitive_row(const char* name);
// The state of a row that has none; throws std::invalid_argument naming the row otherwise.
State empty_state(const char* name);
}  // namespace detail

// X(Class, Base): every registry row except ArgReduce and Reduce (declared below with MLX's
// constructors) and Compiled (below, with lib_name()). FAST_X: the rows MLX declares in mlx::core::fast.
#define KILN_PRIMITIVE_CLASSES(X)                                                                              \
  X(Abs, UnaryPrimitive) X(Add, UnaryPrimitive) X(AddMM, UnaryPrimitive) X(Arange, UnaryPrimitive)           \
  X(ArcCos, UnaryPrimitive) X(ArcCosh, UnaryPrimitive) X(ArcSin, UnaryPrimitive) X(ArcSinh, UnaryPrimitive)  \
  X(ArcTan, UnaryPrimitive) X(ArcTan2, UnaryPrimitive) X(ArcTanh, UnaryPrimitive)                            \
  X(ArgPartition, UnaryPrimitive) X(ArgSort, UnaryPrimitive) X(AsType, UnaryPrimitive)                      \
  X(AsStrided, UnaryPrimitive) X(BitwiseBinary, UnaryPrimitive) X(BitwiseInvert, UnaryPrimitive)            \
  X(BlockMaskedMM, UnaryPrimitive) X(GatherMM, UnaryPrimitive) X(BroadcastAxes, UnaryPrimitive)             \
  X(Broadcast, UnaryPrimitive) X(Ceil, UnaryPrimitive) X(Concatenate, UnaryPrimitive)                       \
  X(Conjugate, UnaryPrimitive) X(Contiguous, UnaryPrimitive) X(Convolution, UnaryPrimitive)                 \
  X(Copy, UnaryPrimitive) X(Cos, UnaryPrimitive) X(Cosh, UnaryPrimitive) X(CustomTransforms, Primitive)     \
  X(Depends, Primitive) X(Divide, UnaryPrimitive) X(DivMod, Primitive) X(Select, UnaryPrimitive)            \
  X(Remainder, UnaryPrimitive) X(Equal, UnaryPrimitive) X(Erf, UnaryPrimitive) X(ErfInv, UnaryPrimitive)    \
  X(Exp, UnaryPrimitive) X(Expm1, UnaryPrimitive) X(ExpandDims, UnaryPrimitive) X(FFT, UnaryPrimitive)      \
  X(Flatten, UnaryPrimitive) X(Floor, UnaryPrimitive) X(FloorDivide, UnaryPrimitive)                        \
  X(Full, UnaryPrimitive) X(Gather, UnaryPrimitive) X(GatherAxis, UnaryPrimitive)                           \
  X(Greater, UnaryPrimitive) X(GreaterEqual, UnaryPrimitive) X(Hadamard, UnaryPrimitive)                    \
  X(Imag, UnaryPrimitive) X(ImportedCall, Primitive) X(Less, UnaryPrimitive) X(LessEqual, UnaryPrimitive)     \
  X(Load, UnaryPrimitive)                                                                                   \
  X(Log, UnaryPrimitive) X(Log1p, UnaryPrimitive) X(LogicalNot, UnaryPrimitive)                             \
  X(LogicalAnd, UnaryPrimitive) X(LogicalOr, UnaryPrimitive) X(LogAddExp, UnaryPrimitive)                   \
  X(LogSumExp, UnaryPrimitive) X(Matmul, UnaryPrimitive) X(Maximum, UnaryPrimitive)                         \
  X(Minimum, UnaryPrimitive) X(Multiply, UnaryPrimitive) X(Negative, UnaryPrimitive)                        \
  X(NotEqual, UnaryPrimitive) X(NumberOfElements, UnaryPrimitive) X(Pad, UnaryPrimitive)                    \
  X(Partition, UnaryPrimitive) X(Power, UnaryPrimitive) X(QuantizedMatmul, UnaryPrimitive)                  \
  X(GatherQMM, UnaryPrimitive) X(RandomBits, UnaryPrimitive) X(Real, UnaryPrimitive)                        \
  X(Reshape, UnaryPrimitive) X(Round, UnaryPrimitive) X(Scan, UnaryPrimitive) X(Scatter, UnaryPrimitive)    \
  X(ScatterAxis, UnaryPrimitive) X(MaskedScatter, UnaryPrimitive) X(SearchSorted, UnaryPrimitive)           \
  X(Sigmoid, UnaryPrimitive) X(Sign, UnaryPrimitive) X(Sin, UnaryPrimitive) X(Sinh, UnaryPrimitive)         \
  X(Slice, UnaryPrimitive) X(SliceUpdate, UnaryPrimitive) X(DynamicSlice, UnaryPrimitive)                   \
  X(DynamicSliceUpdate, UnaryPrimitive) X(Softmax, UnaryPrimitive) X(Sort, UnaryPrimitive)                  \
  X(Split, Primitive) X(Square, UnaryPrimitive) X(Sqrt, UnaryPrimitive) X(StopGradient, UnaryPrimitive)     \
  X(Subtract, UnaryPrimitive) X(Squeeze, UnaryPrimitive) X(Tan, UnaryPrimitive) X(Tanh, UnaryPrimitive)     \
  X(Unflatten, UnaryPrimitive) X(View, UnaryPrimitive) X(Transpose, UnaryPrimitive) X(QRF, Primitive)       \
  X(SVD, Primitive) X(Inverse, UnaryPrimitive) X(Cholesky, UnaryPrimitive) X(Eig, Primitive)                \
  X(Eigh, Primitive) X(LUF, Primitive)

#define KILN_FAST_PRIMITIVE_CLASSES(X)                                                                   \
  X(RMSNorm, Primitive) X(RMSNormVJP, Primitive) X(LayerNorm, Primitive) X(LayerNormVJP, Primitive)   \
  X(RoPE, Primitive) X(ScaledDotProductAttention, Primitive) X(Quantize, Primitive)                   \
  X(CustomKernel, Primitive)

#define KILN_DECLARE_PRIMITIVE_CLASS(NAME, BASE)                                              \
  class NAME : public BASE {                                                                  \
   public:                                                                                    \
    static constexpr const char* row_name = #NAME;                                            \
    NAME(Stream stream, State state) : BASE(::kiln::detail::primitive_row(#NAME), std::move(state), stream) {} \
    explicit NAME(Stream stream) : NAME(stream, ::kiln::detail::empty_state(#NAME)) {}                \
  };

KILN_PRIMITIVE_CLASSES(KILN_DECLARE_PRIMITIVE_CLASS)

namespace fast {
KILN_FAST_PRIMITIVE_CLASSES(KILN_DECLARE_PRIMITIVE_CLASS)
}  // namespace fast

class ArgReduce : public UnaryPrimitive {
 public:
  static constexpr const char* row_name = "ArgReduce";
  enum ReduceType { ArgMin = 0, ArgMax = 1 };
  ArgReduce(Stream stream, State state) : UnaryPrimitive(detail::primitive_row(row_name), std::move(state), stream) {}
  ArgReduce(Stream stream, ReduceType type, int axis)
      : ArgReduce(stream, State{static_cast<int32_t>(type), static_cast<int32_t>(axis)}) {}
  ReduceType reduce_type() const { return static_cast<ReduceType>(state().i(0)); }
};

class Reduce : public UnaryPrimitive {
 public:
  static constexpr const char* row_name = "Reduce";
  enum ReduceType { And = 0, Or = 1, Sum = 2, Prod = 3, Min = 4, Max = 5 };
  Reduce(Stream stream, State state) : UnaryPrimitive(detail::primitive_row(row_name), std::move(state), stream) {}
  Reduce(Stream stream, ReduceType type, const std::vector<int>& axes)
      : Reduce(stream, State{static_cast<int32_t>(type), std::vector<int32_t>(axes.begin(), axes.end())}) {}
  ReduceType reduce_type() const { return static_cast<ReduceType>(state().i(0)); }
};

// compile's fused group of element-wise operations (kiln/compile.h): made only by compile, which keeps
// the group with the node. lib_name() is MLX's name of the fused kernel: equal for the same operations,
// wiring and dtypes at any shapes (is_equivalent also compares the broadcasts' shapes).
class Compiled : public Primitive {
 public:
  static constexpr const char* row_name = "Compiled";
  Compiled(Stream stream, State state) : Primitive(detail::primitive_row(row_name), std::move(state), stream) {}
  const std::string& lib_name() const { return state().get<std::string>(0); }
};

}  // namespace kiln
