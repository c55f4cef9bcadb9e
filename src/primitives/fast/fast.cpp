// The fused ("fast") family: registration and the op builders of kiln/fast.h. The builders validate
// and cast like MLX's, then always emit the fused primitive (kiln runs it on the CPU).
#include "kiln/fast.h"

#include "kiln/ops/elementwise.h"
#include "kiln/ops/shape.h"
#include "primitives/common.h"
#include "primitives/fast/fast_internal.h"

namespace kiln {

namespace fastk {

void check_arity(const char* api, const std::vector<ArraySpec>& in, size_t lo, size_t hi) {
  if (in.size() < lo || in.size() > hi) {
    throw std::invalid_argument(std::string("[") + api + "] Expected " + std::to_string(lo) +
                                (lo == hi ? "" : " to " + std::to_string(hi)) + " inputs but got " +
                                std::to_string(in.size()) + ".");
  }
}

}  // namespace fastk

namespace primitives {
void register_fast() {
  fastk::define_norms();
  fastk::define_rope();
  fastk::define_sdpa();
}
}  // namespace primitives

namespace fast {

namespace {

Dtype checked_param_dtype(const char* api, const array& x, const std::optional<array>& p, const char* name,
                          Dtype out) {
  if (!p) return out;
  if (p->ndim() != 1) {
    std::ostringstream msg;
    msg << "[" << api << "] " << name << " must have 1 dimension but has " << p->ndim() << " dimensions.";
    throw std::invalid_argument(msg.str());
  }
  if (p->size() != static_cast<size_t>(x.shape(-1))) {
    std::ostringstream msg;
    msg << "[" << api << "] " << name << " must have the same size as the last dimension of x but has " << p->size()
        << " elements.";
    throw std::invalid_argument(msg.str());
  }
  return promote_types(out, p->dtype());
}

void check_rank(const char* api, const array& x) {
  if (x.ndim() == 0) {
    throw std::invalid_argument(std::string("[") + api +
                                "] Input must have at least 1 dimension but got input with 0 dimensions.");
  }
}

void check_float(const char* api, Dtype t) {
  if (!is_floating_point(t)) {
    throw std::invalid_argument(std::string("[") + api + "] Received unsupported type " + dtype_name(t) + ".");
  }
}

}  // namespace

array rms_norm(const array& x, const std::optional<array>& weight, float eps, StreamOrDevice s) {
  check_rank("rms_norm", x);
  // MLX's message names the parameter "(*weight)"; kept for identical error text.
  Dtype out = checked_param_dtype("rms_norm", x, weight, "(*weight)", x.dtype());
  check_float("rms_norm", out);
  array w = weight ? astype(*weight, out, s) : array(1, out);
  static const PrimitiveDef& d = kiln::detail::def("RMSNorm");
  return make_array(d, State{std::monostate{}, eps}, {astype(x, out, s), w}, {{x.shape(), out}}, to_stream(s));
}

array layer_norm(const array& x, const std::optional<array>& weight, const std::optional<array>& bias, float eps,
                 StreamOrDevice s) {
  check_rank("layer_norm", x);
  Dtype out = checked_param_dtype("layer_norm", x, weight, "weight", x.dtype());
  out = checked_param_dtype("layer_norm", x, bias, "bias", out);
  check_float("layer_norm", out);
  array w = weight ? astype(*weight, out, s) : array(1, out);
  array b = bias ? astype(*bias, out, s) : array(0, out);
  static const PrimitiveDef& d = kiln::detail::def("LayerNorm");
  return make_array(d, State{std::monostate{}, eps}, {astype(x, out, s), w, b}, {{x.shape(), out}}, to_stream(s));
}

namespace detail {

std::vector<array> rms_norm_vjp(const array& x, const array& w, const array& cotangent, float eps,
                                StreamOrDevice s) {
  static const PrimitiveDef& d = kiln::detail::def("RMSNormVJP");
  return make_arrays(d, State{std::monostate{}, eps}, {x, w, cotangent}, {}, to_stream(s));
}

std::vector<array> layer_norm_vjp(const array& x, const array& w, const array& b, const array& cotangent, float eps,
                                  StreamOrDevice s) {
  static const PrimitiveDef& d = kiln::detail::def("LayerNormVJP");
  return make_arrays(d, State{std::monostate{}, eps}, {x, w, b, cotangent}, {}, to_stream(s));
}

array rope(const array& x, int dims, bool traditional, float base, float scale, const array& offset,
           const std::optional<array>& freqs, bool forward, StreamOrDevice s) {
  if (x.ndim() < 3) {
    throw std::invalid_argument("[rope] Input must have at least 3 dimensions but got input with " +
                                std::to_string(x.ndim()) + " dimensions.");
  }
  if (!is_floating_point(x.dtype())) {
    throw std::invalid_argument("[rope] Input must be a floating type but got " + dtype_name(x.dtype()) + ".");
  }
  if (offset.ndim() > 1) {
    throw std::invalid_argument("[rope] offset must have at most one dimension but has shape " +
                                kiln::detail::shape_str(offset.shape()) + ".");
  }
  if (offset.size() != 1 && offset.size() != static_cast<size_t>(x.shape(0))) {
    throw std::invalid_argument("[rope] offset must be a scalar or vector with " + std::to_string(x.shape(0)) +
                                " elements but has shape " + kiln::detail::shape_str(offset.shape()) + ".");
  }
  if (!is_integral(offset.dtype())) {
    throw std::invalid_argument("[rope] offset must be an integer but got type " + dtype_name(offset.dtype()) +
                                ".");
  }
  std::vector<array> inputs{x, offset.dtype().size == 4 ? offset : astype(offset, int32, s)};
  if (freqs) {
    if (freqs->ndim() != 1 || freqs->shape(0) != dims / 2) {
      throw std::invalid_argument("[rope] freqs must be one dimensional with size " + std::to_string(dims / 2) +
                                  " but got shape " + kiln::detail::shape_str(freqs->shape()) + ".");
    }
    inputs.push_back(astype(*freqs, float32, s));
  }
  State st{std::monostate{}, dims, traditional, base, scale, forward};
  static const PrimitiveDef& d = kiln::detail::def("RoPE");
  // infer validates dims against the last axis (even, positive, at most its size).
  return make_array(d, std::move(st), std::move(inputs), {}, to_stream(s));
}

}  // namespace detail

array rope(const array& x, int dims, bool traditional, std::optional<float> base, float scale, const array& offset,
           const std::optional<array>& freqs, StreamOrDevice s) {
  if (freqs && base) throw std::invalid_argument("[rope] Only one of base or freqs can have a value.");
  if (!freqs && !base) throw std::invalid_argument("[rope] Neither base nor freqs has a value.");
  return detail::rope(x, dims, traditional, base ? *base : 1.0f, scale, offset, freqs, true, s);
}

array rope(const array& x, int dims, bool traditional, std::optional<float> base, float scale, int offset,
           const std::optional<array>& freqs, StreamOrDevice s) {
  return rope(x, dims, traditional, base, scale, array(offset, int32), freqs, s);
}

namespace {

std::vector<array> sdpa(const array& queries, const array& keys, const array& values, float scale,
                        const std::string& mask_mode, std::optional<array> mask_arr,
                        const std::optional<array>& sinks, bool output_lse, StreamOrDevice s) {
  const char* api = "[scaled_dot_product_attention] ";
  for (const array* t : {&queries, &keys, &values}) {
    if (t->ndim() != 4) {
      throw std::invalid_argument(std::string(api) + "input with shape " + kiln::detail::shape_str(t->shape()) +
                                  " expected to be rank 4");
    }
  }
  if (mask_mode != "" && mask_mode != "causal" && mask_mode != "array") {
    throw std::invalid_argument(std::string(api) + "Invalid mask_mode " + mask_mode +
                                ". mask_mode must be 'causal', 'array' or ''.");
  }
  const bool do_causal = mask_mode == "causal";
  if (do_causal && mask_arr) {
    // MLX's text, typo included.
    throw std::invalid_argument(std::string(api) +
                                "Invalid mask_arr for mask_mode 'casusal'. No array mask should be passed.");
  }
  if (mask_arr && mask_arr->ndim() > 4) {
    throw std::invalid_argument(std::string(api) + "the mask with shape " +
                                kiln::detail::shape_str(mask_arr->shape()) + " expected to have at most rank 4.");
  }
  for (const array* t : {&keys, &values}) {
    if (t->shape(0) != queries.shape(0)) {
      throw std::invalid_argument(std::string(api) + "mismatching batch dimension for input with shape " +
                                  kiln::detail::shape_str(t->shape()) + ".");
    }
  }
  if (queries.shape(-1) != keys.shape(-1)) {
    throw std::invalid_argument(std::string(api) +
                                "query, keys expected to have matching last dimension; found query shape " +
                                kiln::detail::shape_str(queries.shape()) + " for keys shape " +
                                kiln::detail::shape_str(keys.shape()) + ".");
  }
  if (keys.shape(-3) != values.shape(-3)) {
    throw std::invalid_argument(std::string(api) +
                                "keys, values expected to have matching n_kv_heads; found keys with n_heads " +
                                std::to_string(keys.shape(-3)) + " for values with n_heads " +
                                std::to_string(values.shape(-3)) + ".");
  }
  if (keys.shape(-2) != values.shape(-2)) {
    throw std::invalid_argument(std::string(api) + "keys, values expected to have the same sequence length; found " +
                                kiln::detail::shape_str(keys.shape()) + " and " +
                                kiln::detail::shape_str(values.shape()) + ".");
  }
  const int n_q_heads = queries.shape(-3), n_kv_heads = keys.shape(-3);
  if (n_kv_heads == 0 || n_q_heads % n_kv_heads != 0) {
    throw std::invalid_argument(std::string(api) + "n_heads must be a multiple of n_kv_heads, found n_heads " +
                                std::to_string(n_q_heads) + " for n_kv_heads " + std::to_string(n_kv_heads) + ".");
  }
  const Dtype final_type = promote_types(promote_types(queries.dtype(), keys.dtype()), values.dtype());
  if (!is_floating_point(final_type)) {
    throw std::invalid_argument(std::string(api) + "Received unsupported type " + dtype_name(final_type) + ".");
  }
  std::vector<array> inputs{astype(queries, final_type, s), astype(keys, final_type, s),
                            astype(values, final_type, s)};
  if (mask_arr) {
    if (promote_types(mask_arr->dtype(), final_type) != final_type) {
      throw std::invalid_argument(std::string(api) + "Mask type must promote to output type " +
                                  dtype_name(final_type) + ".");
    }
    array m = mask_arr->dtype() == bool_ ? *mask_arr : astype(*mask_arr, final_type, s);
    Shape mshape = queries.shape();
    mshape.back() = keys.shape(-2);
    inputs.push_back(broadcast_to(m, mshape, s));
  }
  if (sinks) {
    if (promote_types(sinks->dtype(), final_type) != final_type) {
      throw std::invalid_argument(std::string(api) + "Type of sinks must promote to output type " +
                                  dtype_name(final_type) + ".");
    }
    if (sinks->ndim() != 1 || sinks->shape(0) != n_q_heads) {
      throw std::invalid_argument(std::string(api) + "Received invalid shape for sinks " +
                                  kiln::detail::shape_str(sinks->shape()) + ".");
    }
    inputs.push_back(astype(*sinks, final_type, s));
  }
  State st{std::monostate{}, scale, do_causal, sinks.has_value(), output_lse};
  static const PrimitiveDef& d = kiln::detail::def("ScaledDotProductAttention");
  return make_arrays(d, std::move(st), std::move(inputs), {}, to_stream(s));
}

}  // namespace

array scaled_dot_product_attention(const array& queries, const array& keys, const array& values, const float scale,
                                   const std::string& mask_mode, std::optional<array> mask_arr,
                                   const std::optional<array>& sinks, StreamOrDevice s) {
  return sdpa(queries, keys, values, scale, mask_mode, std::move(mask_arr), sinks, false, s)[0];
}

namespace detail {
std::vector<array> scaled_dot_product_attention_with_lse(const array& queries, const array& keys,
                                                         const array& values, float scale,
                                                         const std::string& mask_mode,
                                                         std::optional<array> mask_arr,
                                                         const std::optional<array>& sinks, StreamOrDevice s) {
  return sdpa(queries, keys, values, scale, mask_mode, std::move(mask_arr), sinks, true, s);
}
}  // namespace detail

}  // namespace fast

}  // namespace kiln
