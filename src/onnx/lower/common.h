// Helpers the family lowerings share.
#pragma once

#include <algorithm>
#include <climits>
#include <cstdint>
#include <string>
#include <vector>

#include "onnx/lowering.h"

namespace kiln::onnx_export {

inline bool is_half(Dtype t) { return t == float16 || t == bfloat16; }
inline bool is_float(Dtype t) { return t == float16 || t == bfloat16 || t == float32 || t == float64; }
inline bool is_signed_int(Dtype t) { return t == int8 || t == int16 || t == int32 || t == int64; }
inline bool is_unsigned_int(Dtype t) { return t == uint8 || t == uint16 || t == uint32 || t == uint64; }

// The dtype ONNX Runtime computes `t` in where it has kernels for fewer types: float16 and bfloat16 in
// float32 (MLX computes them in float32 too, rounding once at the end), others as they are.
inline Dtype compute_type(Dtype t) { return is_half(t) ? float32 : t; }

// The inputs cast to `t` where they differ from it.
std::vector<std::string> cast_all(Context& c, const std::vector<Tensor>& in, Dtype t);

// Writes output k from `value` computed in dtype `from`, casting to the output's dtype if needed.
void store(Context& c, size_t k, const std::string& value, Dtype from);

// Refuses complex operands: ONNX Runtime has no element-wise kernels for complex64.
void no_complex(Context& c);

// Sizes (or any int32 vector: strides, pads) as ONNX's int64 values.
inline std::vector<int64_t> dims(const std::vector<int32_t>& s) { return std::vector<int64_t>(s.begin(), s.end()); }

// Normalizes an axis against `ndim` (MLX's negative axes count from the end).
inline int64_t axis(int64_t a, int ndim) { return a < 0 ? a + ndim : a; }

// ---- Sizes that serve fixed-shape and shapeless functions alike ----
// A lowering that needs sizes (a Reshape's target, a TopK's k, a Range's limit) takes them as Dims: in a
// function with fixed shapes they are the recorded sizes, known here, and become constants (the graph is
// what it would be with literal sizes); in a shapeless one they are read from the values at run time
// (Shape) and combined by ONNX ops, so the graph serves every size of the symbolic dimensions.
struct Dims {
  std::vector<int64_t> known;  // the sizes, when `value` is empty
  std::string value;           // a 1-D int64 ONNX value holding them at run time
  bool is_known() const { return value.empty(); }
};

inline Dims fixed_dims(std::vector<int64_t> v) { return {std::move(v), ""}; }

// Dims [begin, end) of `t` (negative positions count from the end, as Shape's start / end do).
inline Dims dims_of(Context& c, const Tensor& t, int begin = 0, int end = INT_MAX) {
  const int nd = t.ndim();
  auto clamp = [nd](int p) { return std::clamp(p < 0 ? p + nd : p, 0, nd); };
  const int b = clamp(begin), e = end == INT_MAX ? nd : clamp(end);
  if (!c.shapeless()) return fixed_dims(std::vector<int64_t>(t.shape.begin() + b, t.shape.begin() + std::max(b, e)));
  if (b == 0 && e == nd) return {{}, c.op("Shape", {t.name})};
  return {{}, c.op("Shape", {t.name}, {{"start", static_cast<int64_t>(b)}, {"end", static_cast<int64_t>(e)}})};
}

// Dim `axis` of `t` (one size).
inline Dims dim_of(Context& c, const Tensor& t, int axis) {
  const int a = axis < 0 ? axis + t.ndim() : axis;
  return dims_of(c, t, a, a + 1);
}

// The 1-D int64 value of `d`.
inline std::string value_of(Context& c, const Dims& d) { return d.is_known() ? c.ints(d.known) : d.value; }

// The single size of a one-element `d` as a 0-d int64 value.
inline std::string scalar_of(Context& c, const Dims& d) {
  if (d.is_known()) return c.ints({d.known.at(0)}, true);
  return c.op("Squeeze", {d.value, c.ints({0})});
}

// The concatenation of sizes.
inline Dims cat_dims(Context& c, const std::vector<Dims>& parts) {
  bool known = true;
  for (auto& p : parts) known = known && p.is_known();
  if (known) {
    Dims r;
    for (auto& p : parts) r.known.insert(r.known.end(), p.known.begin(), p.known.end());
    return r;
  }
  std::vector<std::string> vs;
  for (auto& p : parts) {
    if (!p.is_known() || !p.known.empty()) vs.push_back(value_of(c, p));
  }
  return {{}, vs.size() == 1 ? vs[0] : c.op("Concat", vs, {{"axis", int64_t(0)}})};
}

// Element-wise arithmetic on sizes of one length (or a one-element `b`): "Add", "Sub", "Mul", "Div"
// (of non-negative sizes, so truncation is the floor), "Min", "Max".
inline Dims dims_op(Context& c, const std::string& op, const Dims& a, const Dims& b) {
  if (a.is_known() && b.is_known()) {
    Dims r;
    for (size_t i = 0; i < a.known.size(); ++i) {
      const int64_t x = a.known[i], y = b.known.size() == 1 ? b.known[0] : b.known.at(i);
      r.known.push_back(op == "Add" ? x + y : op == "Sub" ? x - y : op == "Mul" ? x * y : op == "Div" ? x / y
                        : op == "Min" ? std::min(x, y) : std::max(x, y));
    }
    return r;
  }
  return {{}, c.op(op, {value_of(c, a), value_of(c, b)})};
}

// The product of the sizes, as one size.
inline Dims prod_dims(Context& c, const Dims& d) {
  if (d.is_known()) {
    int64_t n = 1;
    for (auto v : d.known) n *= v;
    return fixed_dims({n});
  }
  return {{}, c.op("ReduceProd", {d.value}, {{"keepdims", int64_t(1)}})};
}

// x reshaped to `shape` (literal sizes: a 0 is a size, not ONNX's "copy this dimension").
inline std::string reshape_to(Context& c, const std::string& x, const Dims& shape) {
  return c.op("Reshape", {x, value_of(c, shape)}, {{"allowzero", int64_t(1)}});
}

}  // namespace kiln::onnx_export
