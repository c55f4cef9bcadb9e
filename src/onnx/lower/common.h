// Helpers the family lowerings share.
#pragma once

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

// Normalizes an axis against `ndim` (MLX's negative axes count from the end).
inline int64_t axis(int64_t a, int ndim) { return a < 0 ? a + ndim : a; }

}  // namespace kiln::onnx_export
