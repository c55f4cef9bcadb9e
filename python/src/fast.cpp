// kiln.fast: the fused operations of mlx.core.fast (rms_norm, layer_norm, rope, attention) and the
// precompiled CUDA kernel node (recorded and exported, not evaluated on the CPU).
#include <nanobind/stl/tuple.h>

#include "ops_common.h"

namespace kiln::py {

void init_fast(nb::module_& m) {
  m.def(
      "rms_norm",
      [](nb::handle x, nb::handle weight, float eps, nb::handle stream) {
        return fast::rms_norm(arr(x, "rms_norm"), opt_arr(weight, "rms_norm"), eps, S(stream));
      },
      "x"_a, "weight"_a.none(), "eps"_a, nb::kw_only(), KILN_STREAM,
      "RMS normalisation over the last axis, times weight (when given).");
  m.def(
      "layer_norm",
      [](nb::handle x, nb::handle weight, nb::handle bias, float eps, nb::handle stream) {
        const char* api = "layer_norm";
        return fast::layer_norm(arr(x, api), opt_arr(weight, api), opt_arr(bias, api), eps, S(stream));
      },
      "x"_a, "weight"_a.none(), "bias"_a.none(), "eps"_a, nb::kw_only(), KILN_STREAM,
      "Layer normalisation over the last axis, times weight and plus bias (when given).");
  m.def(
      "rope",
      [](nb::handle a, int dims, bool traditional, std::optional<float> base, float scale, nb::handle offset,
         nb::handle freqs, nb::handle stream) {
        const char* api = "rope";
        array x = arr(a, api);
        if (is_int(offset)) {
          return fast::rope(x, dims, traditional, base, scale, nb::cast<int>(offset), opt_arr(freqs, api), S(stream));
        }
        return fast::rope(x, dims, traditional, base, scale, arr(offset, api), opt_arr(freqs, api), S(stream));
      },
      "a"_a, "dims"_a, nb::kw_only(), "traditional"_a, "base"_a.none(), "scale"_a, "offset"_a,
      "freqs"_a.none() = nb::none(), KILN_STREAM,
      "Rotary position embedding of the first dims features; positions run along axis -2 from offset.");
  m.def(
      "scaled_dot_product_attention",
      [](nb::handle q, nb::handle k, nb::handle v, float scale, nb::handle mask, nb::handle sinks, nb::handle stream) {
        const char* api = "scaled_dot_product_attention";
        array Q = arr(q, api), K = arr(k, api), V = arr(v, api);
        auto sk = opt_arr(sinks, api);
        if (mask.is_none()) return fast::scaled_dot_product_attention(Q, K, V, scale, "", std::nullopt, sk, S(stream));
        if (PyUnicode_Check(mask.ptr())) {
          std::string mode = nb::cast<std::string>(mask);
          if (mode != "causal") {
            throw std::invalid_argument("[scaled_dot_product_attention] Expected mask to be 'causal', an array or None, "
                                        "found the string '" + mode + "'.");
          }
          return fast::scaled_dot_product_attention(Q, K, V, scale, mode, std::nullopt, sk, S(stream));
        }
        return fast::scaled_dot_product_attention(Q, K, V, scale, "", arr(mask, api), sk, S(stream));
      },
      "q"_a, "k"_a, "v"_a, nb::kw_only(), "scale"_a, "mask"_a.none() = nb::none(), "sinks"_a.none() = nb::none(),
      KILN_STREAM,
      "softmax(scale * q @ k^T + mask) @ v, with grouped-query heads, a 'causal' or array mask and optional sinks.");
  m.def(
      "precompiled_cuda_kernel",
      [](const std::string& name, nb::bytes compiled_source, nb::handle inputs, nb::handle output_shapes,
         nb::handle output_dtypes, nb::handle scalars, std::tuple<int, int, int> grid,
         std::tuple<int, int, int> threadgroup, int shared_memory, std::optional<float> init_value,
         bool ensure_row_contiguous, nb::handle stream) {
        const char* api = "precompiled_cuda_kernel";
        std::vector<Shape> shapes;
        for (nb::handle h : nb::borrow<nb::sequence>(output_shapes)) shapes.push_back(shape_arg(h, api));
        std::vector<Dtype> dtypes;
        for (nb::handle h : nb::borrow<nb::sequence>(output_dtypes)) dtypes.push_back(*dtype_arg(h, api));
        std::vector<fast::ScalarArg> sc;
        for (nb::handle h : nb::borrow<nb::sequence>(scalars)) {
          if (PyBool_Check(h.ptr())) {
            sc.emplace_back(h.ptr() == Py_True);
          } else if (PyLong_Check(h.ptr())) {
            sc.emplace_back(nb::cast<int32_t>(h));
          } else if (PyFloat_Check(h.ptr())) {
            sc.emplace_back(nb::cast<float>(h));
          } else {
            throw std::invalid_argument(std::string("[") + api + "] Expected scalars to be bool, int or float, found " +
                                        py_type_name(h) + ".");
          }
        }
        std::string src(compiled_source.c_str(), compiled_source.size());
        return arrays_list(fast::precompiled_cuda_kernel(name, src, to_array_list(inputs, api), shapes, dtypes, sc,
                                                         grid, threadgroup, shared_memory, init_value,
                                                         ensure_row_contiguous, S(stream)));
      },
      nb::kw_only(), "name"_a, "compiled_source"_a, "inputs"_a, "output_shapes"_a, "output_dtypes"_a, "scalars"_a,
      "grid"_a, "threadgroup"_a, "shared_memory"_a = 0, "init_value"_a.none() = nb::none(),
      "ensure_row_contiguous"_a = false, KILN_STREAM,
      "A CustomKernel node for a precompiled CUDA kernel: it exports, but kiln cannot evaluate it on the CPU.");
}

}  // namespace kiln::py
