// kiln ops, indexing family: take, take_along_axis, put_along_axis and the dynamic slice / slice_update.
#include "ops_common.h"

namespace kiln::py {

void init_ops_index(nb::module_& m) {
  m.def(
      "take",
      [](nb::handle a0, nb::handle indices, std::optional<int> axis, nb::handle stream) {
        array a = arr(a0, "take");
        if (is_int(indices)) {
          int i = nb::cast<int>(indices);
          return axis ? take(a, i, *axis, S(stream)) : take(a, i, S(stream));
        }
        array idx = arr(indices, "take");
        return axis ? take(a, idx, *axis, S(stream)) : take(a, idx, S(stream));
      },
      "a"_a, "indices"_a, "axis"_a.none() = nb::none(), nb::kw_only(), KILN_STREAM,
      "Slices of a at the indices along an axis (entries of the flattened a when axis is None).");
  m.def(
      "take_along_axis",
      [](nb::handle a0, nb::handle indices, std::optional<int> axis, nb::handle stream) {
        array a = arr(a0, "take_along_axis");
        array idx = arr(indices, "take_along_axis");
        if (axis) return take_along_axis(a, idx, *axis, S(stream));
        return take_along_axis(reshape(a, {-1}, S(stream)), idx, 0, S(stream));
      },
      "a"_a, "indices"_a, "axis"_a.none(), nb::kw_only(), KILN_STREAM,
      "Values of a at indices (broadcast against a) along an axis (of the flattened a when axis is None).");
  m.def(
      "put_along_axis",
      [](nb::handle a0, nb::handle indices, nb::handle values, std::optional<int> axis, nb::handle stream) {
        array a = arr(a0, "put_along_axis");
        array idx = arr(indices, "put_along_axis");
        array v = to_arrays(a0, values, "put_along_axis").second;
        if (axis) return put_along_axis(a, idx, v, *axis, S(stream));
        return reshape(put_along_axis(reshape(a, {-1}, S(stream)), idx, v, 0, S(stream)), a.shape(), S(stream));
      },
      "a"_a, "indices"_a, "values"_a, "axis"_a.none(), nb::kw_only(), KILN_STREAM,
      "A copy of a with values written at indices along an axis (of the flattened a when axis is None).");
  m.def(
      "slice",
      [](nb::handle a, nb::handle start_indices, std::vector<int> axes, nb::handle slice_size, nb::handle stream) {
        return slice(arr(a, "slice"), arr(start_indices, "slice"), std::move(axes), shape_arg(slice_size, "slice"),
                     S(stream));
      },
      "a"_a, "start_indices"_a, "axes"_a, "slice_size"_a, nb::kw_only(), KILN_STREAM,
      "A slice of a of the given size, starting at an array of start indices along the axes.");
  m.def(
      "slice_update",
      [](nb::handle a, nb::handle update, nb::handle start_indices, std::vector<int> axes, nb::handle stream) {
        auto [x, u] = to_arrays(a, update, "slice_update");
        return slice_update(x, u, arr(start_indices, "slice_update"), std::move(axes), S(stream));
      },
      "a"_a, "update"_a, "start_indices"_a, "axes"_a, nb::kw_only(), KILN_STREAM,
      "A copy of a with update written at an array of start indices along the axes.");
}

}  // namespace kiln::py
