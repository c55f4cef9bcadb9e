// kiln::fast: fused operations with MLX's C++ signatures (mlx/fast.h). Each op builds one fused
// primitive (RMSNorm, LayerNorm, RoPE, ScaledDotProductAttention) that kiln runs with a CPU kernel.
// Unlike MLX, which emits these primitives only on GPU streams, kiln emits them on every stream; an
// exported file therefore imports in MLX (every name is in its table) but MLX's CPU build cannot
// evaluate the fused nodes (it has no CPU kernels for them), while MLX on a GPU and kiln can.
#pragma once

#include <optional>
#include <string>
#include <tuple>
#include <variant>
#include <vector>

#include "kiln/array.h"
#include "kiln/primitive.h"

namespace kiln::fast {

array rms_norm(const array& x, const std::optional<array>& weight, float eps, StreamOrDevice s = {});

array layer_norm(const array& x, const std::optional<array>& weight, const std::optional<array>& bias, float eps,
                 StreamOrDevice s = {});

// Rotary position embedding of the first `dims` features of the last axis; x has at least 3 dims and
// positions run along axis -2. Exactly one of `base` and `freqs` (dims / 2 frequencies) is given.
array rope(const array& x, int dims, bool traditional, std::optional<float> base, float scale, int offset,
           const std::optional<array>& freqs = std::nullopt, StreamOrDevice s = {});
// `offset`: an integer scalar, or one offset per entry of x's first axis.
array rope(const array& x, int dims, bool traditional, std::optional<float> base, float scale, const array& offset,
           const std::optional<array>& freqs = std::nullopt, StreamOrDevice s = {});

// softmax(scale · Q Kᵀ + mask) V for Q (B, H_q, L_q, D), K (B, H_kv, L_k, D), V (B, H_kv, L_k, D_v), with
// H_q a multiple of H_kv (grouped-query attention). mask_mode: "" (none or `mask_arr`), "array" or
// "causal" (aligned to the bottom-right). A bool mask keeps the true entries; another mask is added.
// `sinks` (H_q) are per-head logits that join the softmax denominator.
array scaled_dot_product_attention(const array& queries, const array& keys, const array& values, const float scale,
                                   const std::string& mask_mode = "", std::optional<array> mask_arr = {},
                                   const std::optional<array>& sinks = {}, StreamOrDevice s = {});

using ScalarArg = kiln::ScalarArg;

// A precompiled CUDA kernel as a CustomKernel node. kiln records it exactly (so it exports and
// imports), but cannot evaluate it: evaluation on the CPU throws naming the kernel.
std::vector<array> precompiled_cuda_kernel(const std::string& name, const std::string& compiled_source,
                                           const std::vector<array>& inputs, const std::vector<Shape>& output_shapes,
                                           const std::vector<Dtype>& output_dtypes,
                                           const std::vector<ScalarArg>& scalars, std::tuple<int, int, int> grid,
                                           std::tuple<int, int, int> threadgroup, int shared_memory = 0,
                                           std::optional<float> init_value = std::nullopt,
                                           bool ensure_row_contiguous = false, StreamOrDevice s = {});

namespace detail {

// The gradient primitives. MLX creates them only inside its autodiff; kiln exposes the builders.
// Returns {dx, dw}; dw has w's shape (zeros when w is a scalar).
std::vector<array> rms_norm_vjp(const array& x, const array& w, const array& cotangent, float eps,
                                StreamOrDevice s = {});
// Returns {dx, dw, db}; dw and db have the shapes of w and b (zeros when those are scalars).
std::vector<array> layer_norm_vjp(const array& x, const array& w, const array& b, const array& cotangent, float eps,
                                  StreamOrDevice s = {});
// RoPE with the direction flag: forward = false applies the inverse rotation (the VJP of RoPE).
array rope(const array& x, int dims, bool traditional, float base, float scale, const array& offset,
           const std::optional<array>& freqs, bool forward, StreamOrDevice s = {});
// SDPA that also returns the row-wise logsumexp (B, H_q, L_q, 1) float32 of the masked, scaled scores
// (sinks included), as MLX records it under gradient tracing. Returns {out, logsumexp}.
std::vector<array> scaled_dot_product_attention_with_lse(const array& queries, const array& keys,
                                                         const array& values, float scale,
                                                         const std::string& mask_mode = "",
                                                         std::optional<array> mask_arr = {},
                                                         const std::optional<array>& sinks = {},
                                                         StreamOrDevice s = {});

// Every field of a CustomKernel node, in MLX's state order (format spec 3.4, #115).
struct CustomKernelSpec {
  std::string name;
  std::string source;
  std::tuple<int, int, int> grid{1, 1, 1};
  std::tuple<int, int, int> threadgroup{1, 1, 1};
  std::vector<std::tuple<bool, bool, bool>> shape_infos;  // per input: uses _shape, _strides, _ndim
  bool ensure_row_contiguous = true;
  std::optional<float> init_value;
  std::vector<ScalarArg> scalar_arguments;
  bool is_precompiled = false;
  int shared_memory = 0;
};
// A CustomKernel node with the given outputs (shapes and dtypes come from here, as from a record).
std::vector<array> custom_kernel(const CustomKernelSpec& spec, const std::vector<array>& inputs,
                                 const std::vector<Shape>& output_shapes, const std::vector<Dtype>& output_dtypes,
                                 StreamOrDevice s = {});

}  // namespace detail

}  // namespace kiln::fast
