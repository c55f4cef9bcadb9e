// Fused normalization primitives: RMSNorm, LayerNorm and their VJPs (rows and input checks; the
// kernels are in backend/cpu/kernels/fast/fast_norm.cpp).
#include "primitives/common.h"
#include "primitives/fast/fast_internal.h"

namespace kiln::fastk {

namespace {

// x: at least 1-D floating; each affine parameter is a scalar or a vector of x's last-axis size, of x's dtype.
void check_norm_inputs(const char* api, const std::vector<ArraySpec>& in, size_t nparams) {
  const ArraySpec& x = in[0];
  if (x.shape.empty()) {
    throw std::invalid_argument(std::string("[") + api +
                                "] Input must have at least 1 dimension but got input with 0 dimensions.");
  }
  if (!is_floating_point(x.dtype)) {
    throw std::invalid_argument(std::string("[") + api + "] Received unsupported type " + dtype_name(x.dtype) + ".");
  }
  static const char* names[] = {"weight", "bias"};
  for (size_t k = 1; k <= nparams; ++k) {
    const ArraySpec& p = in[k];
    if (p.shape.size() > 1 || (p.shape.size() == 1 && p.shape[0] != x.shape.back())) {
      throw std::invalid_argument(std::string("[") + api + "] " + names[k - 1] +
                                  " must be a scalar or have the size of the last dimension of x (" +
                                  std::to_string(x.shape.back()) + ") but has shape " +
                                  detail::shape_str(p.shape) + ".");
    }
    if (p.dtype != x.dtype) {
      throw std::invalid_argument(std::string("[") + api + "] " + names[k - 1] + " must have the dtype of x (" +
                                  dtype_name(x.dtype) + ") but has " + dtype_name(p.dtype) + ".");
    }
  }
}

std::vector<ArraySpec> rms_infer(const State&, const std::vector<ArraySpec>& in) {
  check_arity("rms_norm", in, 2, 2);
  check_norm_inputs("rms_norm", in, 1);
  return {in[0]};
}

std::vector<ArraySpec> layer_infer(const State&, const std::vector<ArraySpec>& in) {
  check_arity("layer_norm", in, 3, 3);
  check_norm_inputs("layer_norm", in, 2);
  return {in[0]};
}

void check_cotangent(const char* api, const std::vector<ArraySpec>& in) {
  const ArraySpec& g = in.back();
  if (g.shape != in[0].shape || g.dtype != in[0].dtype) {
    throw std::invalid_argument(std::string("[") + api + "] The cotangent must match x (" +
                                detail::shape_str(in[0].shape) + ", " + dtype_name(in[0].dtype) + ") but has " +
                                detail::shape_str(g.shape) + ", " + dtype_name(g.dtype) + ".");
  }
}

std::vector<ArraySpec> rms_vjp_infer(const State&, const std::vector<ArraySpec>& in) {
  check_arity("rms_norm_vjp", in, 3, 3);
  check_norm_inputs("rms_norm_vjp", in, 1);
  check_cotangent("rms_norm_vjp", in);
  return {in[0], in[1]};
}

std::vector<ArraySpec> layer_vjp_infer(const State&, const std::vector<ArraySpec>& in) {
  check_arity("layer_norm_vjp", in, 4, 4);
  check_norm_inputs("layer_norm_vjp", in, 2);
  check_cotangent("layer_norm_vjp", in);
  return {in[0], in[1], in[2]};
}

}  // namespace

void define_norms() {
  const std::vector<Field> eps_fields = {{"fallback", FieldType::Placeholder}, {"eps", FieldType::Float}};
  registry::define(detail::row("RMSNorm", 2, eps_fields, rms_infer));
  registry::define(detail::row("RMSNormVJP", 3, eps_fields, rms_vjp_infer, {.num_outputs = 2, .shapeless = false}));
  registry::define(detail::row("LayerNorm", 3, eps_fields, layer_infer));
  registry::define(detail::row("LayerNormVJP", 4, eps_fields, layer_vjp_infer, {.num_outputs = 3, .shapeless = false}));
}

}  // namespace kiln::fastk
