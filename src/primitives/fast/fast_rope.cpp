// The fused RoPE primitive: rotary position embeddings over the last axis, positions along axis -2
// (the row and its input checks; the kernel is in backend/cpu/kernels/fast/fast_rope.cpp).
#include "primitives/common.h"
#include "primitives/fast/fast_internal.h"

namespace kiln::fastk {

namespace {

// State: placeholder, dims, traditional, base, scale, forward.
std::vector<ArraySpec> rope_infer(const State& st, const std::vector<ArraySpec>& in) {
  check_arity("rope", in, 2, 3);
  const ArraySpec& x = in[0];
  const ArraySpec& off = in[1];
  const int dims = st.i(1);
  if (x.shape.size() < 3) {
    throw std::invalid_argument("[rope] Input must have at least 3 dimensions but got input with " +
                                std::to_string(x.shape.size()) + " dimensions.");
  }
  if (!is_floating_point(x.dtype)) {
    throw std::invalid_argument("[rope] Input must be a floating type but got " + dtype_name(x.dtype) + ".");
  }
  if (dims <= 0 || dims % 2 != 0 || dims > x.shape.back()) {
    throw std::invalid_argument("[rope] The number of rotated dimensions must be even, positive and at most the "
                                "last dimension of the input (" +
                                std::to_string(x.shape.back()) + ") but got " + std::to_string(dims) + ".");
  }
  if (off.shape.size() > 1) {
    throw std::invalid_argument("[rope] offset must have at most one dimension but has shape " +
                                detail::shape_str(off.shape) + ".");
  }
  size_t osize = off.shape.empty() ? 1 : static_cast<size_t>(off.shape[0]);
  if (osize != 1 && osize != static_cast<size_t>(x.shape[0])) {
    throw std::invalid_argument("[rope] offset must be a scalar or vector with " + std::to_string(x.shape[0]) +
                                " elements but has shape " + detail::shape_str(off.shape) + ".");
  }
  if (off.dtype != int32 && off.dtype != uint32) {
    throw std::invalid_argument("[rope] offset must be a 4-byte integer but got type " + dtype_name(off.dtype) +
                                ".");
  }
  if (in.size() == 3) {
    const ArraySpec& f = in[2];
    if (f.shape.size() != 1 || f.shape[0] != dims / 2 || f.dtype != float32) {
      throw std::invalid_argument("[rope] freqs must be one dimensional float32 with size " +
                                  std::to_string(dims / 2) + " but got shape " + detail::shape_str(f.shape) + " and " +
                                  dtype_name(f.dtype) + ".");
    }
  }
  return {x};
}

}  // namespace

void define_rope() {
  registry::define(detail::row("RoPE", {2, 3},
                               {{"fallback", FieldType::Placeholder},
                                {"dims", FieldType::Int},
                                {"traditional", FieldType::Bool},
                                {"base", FieldType::Float},
                                {"scale", FieldType::Float},
                                {"forward", FieldType::Bool}},
                               rope_infer));
}

}  // namespace kiln::fastk
