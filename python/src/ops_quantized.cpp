// kiln ops, quantization family: quantize, dequantize, quantized_matmul and gather_qmm.
#include "ops_common.h"

namespace kiln::py {

void init_ops_quantized(nb::module_& m) {
  m.def(
      "quantize",
      [](nb::handle w, std::optional<int> group_size, std::optional<int> bits, const std::string& mode,
         nb::handle stream) {
        return arrays_tuple(quantize(arr(w, "quantize"), group_size, bits, mode, S(stream)));
      },
      "w"_a, "group_size"_a.none() = nb::none(), "bits"_a.none() = nb::none(), "mode"_a = "affine", nb::kw_only(),
      KILN_STREAM,
      "Quantizes w along its last axis: (w_q, scales, biases) for 'affine', (w_q, scales) for the fp modes.");
  m.def(
      "dequantize",
      [](nb::handle w, nb::handle scales, nb::handle biases, std::optional<int> group_size, std::optional<int> bits,
         const std::string& mode, nb::handle dtype, nb::handle stream) {
        const char* api = "dequantize";
        return dequantize(arr(w, api), arr(scales, api), opt_arr(biases, api), group_size, bits, mode,
                          dtype_arg(dtype, api), S(stream));
      },
      "w"_a, "scales"_a, "biases"_a.none() = nb::none(), "group_size"_a.none() = nb::none(),
      "bits"_a.none() = nb::none(), "mode"_a = "affine", "dtype"_a.none() = nb::none(), nb::kw_only(), KILN_STREAM,
      "The matrix that quantize() packed into w, scales (and biases).");
  m.def(
      "quantized_matmul",
      [](nb::handle x, nb::handle w, nb::handle scales, nb::handle biases, bool transpose,
         std::optional<int> group_size, std::optional<int> bits, const std::string& mode, nb::handle stream) {
        const char* api = "quantized_matmul";
        return quantized_matmul(arr(x, api), arr(w, api), arr(scales, api), opt_arr(biases, api), transpose,
                                group_size, bits, mode, S(stream));
      },
      "x"_a, "w"_a, "scales"_a, "biases"_a.none() = nb::none(), "transpose"_a = true,
      "group_size"_a.none() = nb::none(), "bits"_a.none() = nb::none(), "mode"_a = "affine", nb::kw_only(),
      KILN_STREAM, "x @ w.T (or x @ w when transpose is False) with w quantized.");
  m.def(
      "gather_qmm",
      [](nb::handle x, nb::handle w, nb::handle scales, nb::handle biases, nb::handle lhs, nb::handle rhs,
         bool transpose, std::optional<int> group_size, std::optional<int> bits, const std::string& mode,
         bool sorted_indices, nb::handle stream) {
        const char* api = "gather_qmm";
        return gather_qmm(arr(x, api), arr(w, api), arr(scales, api), opt_arr(biases, api), opt_arr(lhs, api),
                          opt_arr(rhs, api), transpose, group_size, bits, mode, sorted_indices, S(stream));
      },
      "x"_a, "w"_a, "scales"_a, "biases"_a.none() = nb::none(), "lhs_indices"_a.none() = nb::none(),
      "rhs_indices"_a.none() = nb::none(), "transpose"_a = true, "group_size"_a.none() = nb::none(),
      "bits"_a.none() = nb::none(), "mode"_a = "affine", nb::kw_only(), "sorted_indices"_a = false, KILN_STREAM,
      "Quantized matmul of the batch matrices of x and w picked by lhs_indices and rhs_indices.");
}

}  // namespace kiln::py
