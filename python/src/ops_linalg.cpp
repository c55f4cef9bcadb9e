// kiln ops, matrix family: addmm, block_masked_mm, gather_mm, hadamard_transform, tensordot, diagonal,
// diag, trace, einsum, einsum_path and depends.
#include "ops_common.h"

namespace kiln::py {

namespace {
// An array or a sequence of arrays, with whether it was a sequence.
std::pair<std::vector<array>, bool> one_or_many(nb::handle h, const char* api) {
  if (PyList_Check(h.ptr()) || PyTuple_Check(h.ptr())) return {to_array_list(h, api), true};
  return {{arr(h, api)}, false};
}
}  // namespace

void init_ops_linalg(nb::module_& m) {
  m.def(
      "addmm",
      [](nb::handle c, nb::handle a, nb::handle b, float alpha, float beta, nb::handle stream) {
        auto v = to_arrays(std::vector<nb::handle>{c, a, b}, "addmm");
        return addmm(v[0], v[1], v[2], alpha, beta, S(stream));
      },
      "c"_a, "a"_a, "b"_a, "alpha"_a = 1.0f, "beta"_a = 1.0f, nb::kw_only(), KILN_STREAM,
      "alpha * (a @ b) + beta * c.");
  m.def(
      "block_masked_mm",
      [](nb::handle a, nb::handle b, int block_size, nb::handle mask_out, nb::handle mask_lhs, nb::handle mask_rhs,
         nb::handle stream) {
        const char* api = "block_masked_mm";
        return block_masked_mm(arr(a, api), arr(b, api), block_size, opt_arr(mask_out, api), opt_arr(mask_lhs, api),
                               opt_arr(mask_rhs, api), S(stream));
      },
      "a"_a, "b"_a, "block_size"_a = 64, "mask_out"_a.none() = nb::none(), "mask_lhs"_a.none() = nb::none(),
      "mask_rhs"_a.none() = nb::none(), nb::kw_only(), KILN_STREAM,
      "Matrix product with block masks on the output and operand tiles (block_size 32 or 64).");
  m.def(
      "gather_mm",
      [](nb::handle a, nb::handle b, nb::handle lhs, nb::handle rhs, bool sorted_indices, nb::handle stream) {
        const char* api = "gather_mm";
        return gather_mm(arr(a, api), arr(b, api), opt_arr(lhs, api), opt_arr(rhs, api), sorted_indices, S(stream));
      },
      "a"_a, "b"_a, "lhs_indices"_a.none() = nb::none(), "rhs_indices"_a.none() = nb::none(), nb::kw_only(),
      "sorted_indices"_a = false, KILN_STREAM,
      "Matrix products of the batch matrices of a and b picked by lhs_indices and rhs_indices.");
  m.def(
      "hadamard_transform",
      [](nb::handle a, std::optional<float> scale, nb::handle stream) {
        return hadamard_transform(arr(a, "hadamard_transform"), scale, S(stream));
      },
      "a"_a, "scale"_a.none() = nb::none(), KILN_STREAM,
      "Walsh-Hadamard transform along the last axis, scaled by scale (default 1/sqrt(n)).");
  m.def(
      "tensordot",
      [](nb::handle a0, nb::handle b0, nb::handle axes, nb::handle stream) {
        array a = arr(a0, "tensordot"), b = arr(b0, "tensordot");
        if (is_int(axes)) return tensordot(a, b, nb::cast<int>(axes), S(stream));
        auto v = nb::cast<std::vector<std::vector<int>>>(axes);
        if (v.size() != 2) {
          throw std::invalid_argument("[tensordot] Expected axes to be an int or a list of two lists of axes, found " +
                                      std::to_string(v.size()) + " lists.");
        }
        return tensordot(a, b, v[0], v[1], S(stream));
      },
      "a"_a, "b"_a, "axes"_a = 2, nb::kw_only(), KILN_STREAM,
      "Sum of products over the last `axes` axes of a and the first of b, or over two given lists of axes.");
  m.def(
      "diagonal",
      [](nb::handle a, int offset, int axis1, int axis2, nb::handle stream) {
        return diagonal(arr(a, "diagonal"), offset, axis1, axis2, S(stream));
      },
      "a"_a, "offset"_a = 0, "axis1"_a = 0, "axis2"_a = 1, KILN_STREAM,
      "The diagonal of the (axis1, axis2) matrices at an offset, as a new last axis.");
  m.def(
      "diag", [](nb::handle a, int k, nb::handle stream) { return diag(arr(a, "diag"), k, S(stream)); }, "a"_a,
      "k"_a = 0, nb::kw_only(), KILN_STREAM,
      "The k-th diagonal of a matrix, or a matrix with a 1-D array on its k-th diagonal.");
  m.def(
      "trace",
      [](nb::handle a0, int offset, int axis1, int axis2, nb::handle dtype, nb::handle stream) {
        array a = arr(a0, "trace");
        auto dt = dtype_arg(dtype, "trace");
        return dt ? trace(a, offset, axis1, axis2, *dt, S(stream)) : trace(a, offset, axis1, axis2, S(stream));
      },
      "a"_a, "offset"_a = 0, "axis1"_a = 0, "axis2"_a = 1, "dtype"_a.none() = nb::none(), nb::kw_only(), KILN_STREAM,
      "Sum of the diagonal of the (axis1, axis2) matrices at an offset.");
  m.def(
      "einsum",
      [](const std::string& subscripts, const nb::args& operands, nb::handle stream) {
        std::vector<array> ops;
        for (nb::handle h : operands) ops.push_back(arr(h, "einsum"));
        return einsum(subscripts, ops, S(stream));
      },
      "subscripts"_a, "operands"_a, nb::kw_only(), KILN_STREAM,
      "Einstein summation over the operands, e.g. einsum('ij,jk->ik', a, b).");
  m.def(
      "einsum_path",
      [](const std::string& subscripts, const nb::args& operands) {
        std::vector<array> ops;
        for (nb::handle h : operands) ops.push_back(arr(h, "einsum_path"));
        auto [path, info] = einsum_path(subscripts, ops);
        nb::list steps;
        for (auto& p : path) {
          nb::list step;
          for (int i : p) step.append(i);
          steps.append(nb::tuple(step));
        }
        return nb::make_tuple(steps, info);
      },
      "subscripts"_a, "operands"_a,
      "The contraction order einsum's subscripts get under MLX's greedy planner, as (a list of tuples of "
      "operand positions, a summary string).");
  m.def(
      "depends",
      [](nb::handle inputs, nb::handle dependencies) -> nb::object {
        auto [in, many] = one_or_many(inputs, "depends");
        auto deps = one_or_many(dependencies, "depends").first;
        auto out = depends(in, deps);
        if (many) return arrays_list(out);
        return nb::cast(out[0]);
      },
      "inputs"_a, "dependencies"_a, "The inputs, evaluated only after the dependencies.");
}

}  // namespace kiln::py
