// The fused ScaledDotProductAttention primitive: the row and its input checks (the kernel is in
// backend/cpu/kernels/fast/fast_sdpa.cpp).
#include "primitives/common.h"
#include "primitives/fast/fast_internal.h"

namespace kiln::fastk {

namespace {

// State: placeholder, scale, do_causal, has_sinks, output_logsumexp.
std::vector<ArraySpec> sdpa_infer(const State& st, const std::vector<ArraySpec>& in) {
  const char* api = "scaled_dot_product_attention";
  check_arity(api, in, 3, 5);
  const bool has_sinks = st.b(3);
  const int n_mask = static_cast<int>(in.size()) - 3 - (has_sinks ? 1 : 0);
  if (n_mask != 0 && n_mask != 1) {
    throw std::invalid_argument("[scaled_dot_product_attention] Expected 3 to 5 inputs (q, k, v, [mask], [sinks]) "
                                "consistent with has_sinks but got " +
                                std::to_string(in.size()) + ".");
  }
  const ArraySpec &q = in[0], &k = in[1], &v = in[2];
  for (const ArraySpec* t : {&q, &k, &v}) {
    if (t->shape.size() != 4) {
      throw std::invalid_argument("[scaled_dot_product_attention] input with shape " + detail::shape_str(t->shape) +
                                  " expected to be rank 4");
    }
  }
  if (k.shape[0] != q.shape[0] || v.shape[0] != q.shape[0]) {
    throw std::invalid_argument(
        "[scaled_dot_product_attention] mismatching batch dimension for input with shape " +
        detail::shape_str(k.shape[0] != q.shape[0] ? k.shape : v.shape) + ".");
  }
  if (q.shape[3] != k.shape[3]) {
    throw std::invalid_argument(
        "[scaled_dot_product_attention] query, keys expected to have matching last dimension; found query shape " +
        detail::shape_str(q.shape) + " for keys shape " + detail::shape_str(k.shape) + ".");
  }
  if (k.shape[1] != v.shape[1] || k.shape[2] != v.shape[2]) {
    throw std::invalid_argument("[scaled_dot_product_attention] keys, values expected to have matching n_kv_heads "
                                "and sequence length; found keys with shape " +
                                detail::shape_str(k.shape) + " and values with shape " + detail::shape_str(v.shape) +
                                ".");
  }
  if (k.shape[1] <= 0 || q.shape[1] % k.shape[1] != 0) {
    throw std::invalid_argument(
        "[scaled_dot_product_attention] n_heads must be a multiple of n_kv_heads, found n_heads " +
        std::to_string(q.shape[1]) + " for n_kv_heads " + std::to_string(k.shape[1]) + ".");
  }
  if (!is_floating_point(q.dtype) || k.dtype != q.dtype || v.dtype != q.dtype) {
    throw std::invalid_argument("[scaled_dot_product_attention] q, k and v must share one floating dtype but got " +
                                dtype_name(q.dtype) + ", " + dtype_name(k.dtype) + " and " + dtype_name(v.dtype) +
                                ".");
  }
  const Shape scores{q.shape[0], q.shape[1], q.shape[2], k.shape[2]};
  if (n_mask == 1) {
    const ArraySpec& m = in[3];
    if (m.shape.size() > 4 || detail::broadcast_shapes(m.shape, scores) != scores) {
      throw std::invalid_argument("[scaled_dot_product_attention] the mask with shape " +
                                  detail::shape_str(m.shape) + " does not broadcast to the scores' shape " +
                                  detail::shape_str(scores) + ".");
    }
    if (m.dtype != bool_ && m.dtype != q.dtype) {
      throw std::invalid_argument("[scaled_dot_product_attention] Mask type must be bool or the output type " +
                                  dtype_name(q.dtype) + " but is " + dtype_name(m.dtype) + ".");
    }
  }
  if (has_sinks) {
    const ArraySpec& s = in.back();
    if (s.shape.size() != 1 || s.shape[0] != q.shape[1] || s.dtype != q.dtype) {
      throw std::invalid_argument("[scaled_dot_product_attention] Received invalid shape for sinks " +
                                  detail::shape_str(s.shape) + ".");
    }
  }
  std::vector<ArraySpec> out{{{q.shape[0], q.shape[1], q.shape[2], v.shape[3]}, q.dtype}};
  if (st.b(4)) out.push_back({{q.shape[0], q.shape[1], q.shape[2], 1}, float32});
  return out;
}

}  // namespace

void define_sdpa() {
  registry::define(detail::row("ScaledDotProductAttention", {3, 5},
                               {{"fallback", FieldType::Placeholder},
                                {"scale", FieldType::Float},
                                {"do_causal", FieldType::Bool},
                                {"has_sinks", FieldType::Bool},
                                {"output_logsumexp", FieldType::Bool}},
                               sdpa_infer, {.num_outputs = -1}));
}

}  // namespace kiln::fastk
