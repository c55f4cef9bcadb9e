// kiln ops, shape family: creation (arange, full, eye, ...), reshaping, transposition, broadcasting,
// splitting, joining, tiling and padding.
#include "ops_common.h"

namespace kiln::py {

namespace {

// The dtype MLX gives an arange / linspace bound: int32 for a Python int, float32 for a float.
Dtype bound_dtype(nb::handle h, const char* api) {
  if (is_int(h)) return int32;
  if (PyFloat_Check(h.ptr())) return float32;
  throw std::invalid_argument(std::string("[") + api + "] Expected an int or a float, found " + py_type_name(h) + ".");
}
double bound_value(nb::handle h) { return PyFloat_AsDouble(h.ptr()); }

array arange_impl(double start, nb::handle stop, nb::handle step, nb::handle dtype, nb::handle stream,
                  std::optional<Dtype> start_dtype) {
  std::optional<Dtype> dt = dtype_arg(dtype, "arange");
  Dtype inferred = bound_dtype(stop, "arange");
  if (start_dtype) inferred = promote_types(*start_dtype, inferred);
  if (!step.is_none()) inferred = promote_types(inferred, bound_dtype(step, "arange"));
  double st = step.is_none() ? 1.0 : bound_value(step);
  return arange(start, bound_value(stop), st, dt.value_or(inferred), S(stream));
}

std::vector<int> int_list(nb::handle h, const char* api, const char* what) {
  if (is_int(h)) return {nb::cast<int>(h)};
  if (PyList_Check(h.ptr()) || PyTuple_Check(h.ptr())) {
    std::vector<int> out;
    for (nb::handle x : nb::borrow<nb::sequence>(h)) {
      if (!is_int(x)) {
        throw std::invalid_argument(std::string("[") + api + "] Expected " + what + " to hold ints, found " +
                                    py_type_name(x) + ".");
      }
      out.push_back(nb::cast<int>(x));
    }
    return out;
  }
  throw std::invalid_argument(std::string("[") + api + "] Expected " + what + " to be an int or a sequence of ints, found " +
                              py_type_name(h) + ".");
}

// The arrays of a `*arrays` argument.
std::vector<array> args_arrays(const nb::args& args, const char* api) {
  std::vector<array> out;
  for (nb::handle h : args) out.push_back(arr(h, api));
  return out;
}

// atleast_Nd: one array for one argument, a list for several.
template <int N>
nb::object atleast(const nb::args& arys, nb::handle stream) {
  const char* api = N == 1 ? "atleast_1d" : N == 2 ? "atleast_2d" : "atleast_3d";
  auto v = args_arrays(arys, api);
  auto one = [&](const array& a) { return N == 1 ? atleast_1d(a, S(stream)) : N == 2 ? atleast_2d(a, S(stream)) : atleast_3d(a, S(stream)); };
  if (v.size() == 1) return nb::cast(one(v[0]));
  nb::list l;
  for (auto& a : v) l.append(nb::cast(one(a)));
  return l;
}

array concat_impl(nb::handle arrays, std::optional<int> axis, nb::handle stream, const char* api) {
  auto v = to_array_list(arrays, api);
  return axis ? concatenate(v, *axis, S(stream)) : concatenate(v, S(stream));
}

}  // namespace

std::vector<int> varargs_ints(const nb::args& args, const char* api, const char* what) {
  if (args.size() == 1 && (PyList_Check(args[0].ptr()) || PyTuple_Check(args[0].ptr()))) {
    return int_list(args[0], api, what);
  }
  std::vector<int> out;
  for (nb::handle h : args) {
    if (!is_int(h)) {
      throw std::invalid_argument(std::string("[") + api + "] Expected " + what +
                                  " as ints or one sequence of ints, found " + py_type_name(h) + ".");
    }
    out.push_back(nb::cast<int>(h));
  }
  return out;
}

array squeeze_op(const array& a, nb::handle axis, StreamOrDevice s) {
  auto axes = axes_arg(axis, "squeeze");
  return axes ? squeeze(a, *axes, s) : squeeze(a, s);
}

nb::list split_op(const array& a, nb::handle ios, int axis, StreamOrDevice s) {
  if (is_int(ios)) return arrays_list(split(a, nb::cast<int>(ios), axis, s));
  auto idx = int_list(ios, "split", "indices_or_sections");
  return arrays_list(split(a, Shape(idx.begin(), idx.end()), axis, s));
}

array transpose_op(const array& a, const std::optional<std::vector<int>>& axes, StreamOrDevice s) {
  return axes ? transpose(a, *axes, s) : transpose(a, s);
}

void init_ops_shape(nb::module_& m) {
  // ---- creation ----
  m.def(
      "arange",
      [](nb::handle start, nb::handle stop, nb::handle step, nb::handle dtype, nb::handle stream) {
        Dtype sd = bound_dtype(start, "arange");
        return arange_impl(bound_value(start), stop, step, dtype, stream, sd);
      },
      "start"_a, "stop"_a, "step"_a.none() = nb::none(), "dtype"_a.none() = nb::none(), nb::kw_only(), KILN_STREAM,
      "Evenly spaced values in [start, stop) with the given step (int32 unless a bound is a float).");
  m.def(
      "arange",
      [](nb::handle stop, nb::handle step, nb::handle dtype, nb::handle stream) {
        return arange_impl(0.0, stop, step, dtype, stream, std::nullopt);
      },
      "stop"_a, "step"_a.none() = nb::none(), "dtype"_a.none() = nb::none(), nb::kw_only(), KILN_STREAM);
  m.def(
      "linspace",
      [](double start, double stop, int num, nb::handle dtype, nb::handle stream) {
        return linspace(start, stop, num, dtype_arg(dtype, "linspace").value_or(float32), S(stream));
      },
      "start"_a, "stop"_a, "num"_a = 50, "dtype"_a.none() = float32, KILN_STREAM,
      "num evenly spaced values from start to stop, both included.");
  m.def(
      "full",
      [](nb::handle shape, nb::handle vals, nb::handle dtype, nb::handle stream) {
        auto dt = dtype_arg(dtype, "full");
        array v = to_array(vals, dt, "full");
        return full(shape_arg(shape, "full"), v, S(stream));
      },
      "shape"_a, "vals"_a, "dtype"_a.none() = nb::none(), nb::kw_only(), KILN_STREAM,
      "An array of the given shape filled with vals (broadcast).");
  m.def(
      "zeros",
      [](nb::handle shape, nb::handle dtype, nb::handle stream) {
        return zeros(shape_arg(shape, "zeros"), dtype_arg(dtype, "zeros").value_or(float32), S(stream));
      },
      "shape"_a, "dtype"_a.none() = float32, nb::kw_only(), KILN_STREAM, "An array of zeros.");
  m.def(
      "ones",
      [](nb::handle shape, nb::handle dtype, nb::handle stream) {
        return ones(shape_arg(shape, "ones"), dtype_arg(dtype, "ones").value_or(float32), S(stream));
      },
      "shape"_a, "dtype"_a.none() = float32, nb::kw_only(), KILN_STREAM, "An array of ones.");
  m.def(
      "eye",
      [](int n, std::optional<int> mm, int k, nb::handle dtype, nb::handle stream) {
        return eye(n, mm.value_or(n), k, dtype_arg(dtype, "eye").value_or(float32), S(stream));
      },
      "n"_a, "m"_a.none() = nb::none(), "k"_a = 0, "dtype"_a.none() = float32, nb::kw_only(), KILN_STREAM,
      "An n x m matrix with ones on the k-th diagonal and zeros elsewhere.");
  m.def(
      "identity",
      [](int n, nb::handle dtype, nb::handle stream) {
        return identity(n, dtype_arg(dtype, "identity").value_or(float32), S(stream));
      },
      "n"_a, "dtype"_a.none() = float32, nb::kw_only(), KILN_STREAM, "The n x n identity matrix.");
  m.def(
      "tri",
      [](int n, std::optional<int> mm, int k, nb::handle dtype, nb::handle stream) {
        return tri(n, mm.value_or(n), k, dtype_arg(dtype, "tri").value_or(float32), S(stream));
      },
      "n"_a, "m"_a.none() = nb::none(), "k"_a = 0, "dtype"_a.none() = float32, nb::kw_only(), KILN_STREAM,
      "An n x m matrix with ones at and below the k-th diagonal.");
  m.def(
      "tril", [](nb::handle x, int k, nb::handle stream) { return tril(arr(x, "tril"), k, S(stream)); }, "x"_a,
      "k"_a = 0, nb::kw_only(), KILN_STREAM, "The lower triangle (at and below the k-th diagonal), zeros elsewhere.");
  m.def(
      "triu", [](nb::handle x, int k, nb::handle stream) { return triu(arr(x, "triu"), k, S(stream)); }, "x"_a,
      "k"_a = 0, nb::kw_only(), KILN_STREAM, "The upper triangle (at and above the k-th diagonal), zeros elsewhere.");

  // ---- shapes ----
  m.def(
      "reshape",
      [](nb::handle a, nb::handle shape, nb::handle stream) {
        return reshape(arr(a, "reshape"), shape_arg(shape, "reshape"), S(stream));
      },
      "a"_a, "shape"_a, nb::kw_only(), KILN_STREAM, "The elements of a in a new shape (one entry may be -1).");
  m.def(
      "flatten",
      [](nb::handle a, int start_axis, int end_axis, nb::handle stream) {
        return flatten(arr(a, "flatten"), start_axis, end_axis, S(stream));
      },
      "a"_a, "start_axis"_a = 0, "end_axis"_a = -1, nb::kw_only(), KILN_STREAM,
      "Merges the axes start_axis..end_axis (inclusive) into one.");
  m.def(
      "unflatten",
      [](nb::handle a, int axis, nb::handle shape, nb::handle stream) {
        return unflatten(arr(a, "unflatten"), axis, shape_arg(shape, "unflatten"), S(stream));
      },
      "a"_a, "axis"_a, "shape"_a, nb::kw_only(), KILN_STREAM, "Splits one axis into the given shape.");
  m.def(
      "squeeze",
      [](nb::handle a, nb::handle axis, nb::handle stream) { return squeeze_op(arr(a, "squeeze"), axis, S(stream)); },
      "a"_a, "axis"_a.none() = nb::none(), nb::kw_only(), KILN_STREAM,
      "Removes size-1 axes (all of them when axis is None).");
  m.def(
      "expand_dims",
      [](nb::handle a, nb::handle axis, nb::handle stream) {
        return expand_dims(arr(a, "expand_dims"), int_list(axis, "expand_dims", "axis"), S(stream));
      },
      "a"_a, "axis"_a, nb::kw_only(), KILN_STREAM, "Inserts size-1 axes at the given positions.");
  for (const char* name : {"transpose", "permute_dims"}) {
    m.def(
        name,
        [name](nb::handle a, nb::handle axes, nb::handle stream) {
          return transpose_op(arr(a, name), axes_arg(axes, name), S(stream));
        },
        "a"_a, "axes"_a.none() = nb::none(), nb::kw_only(), KILN_STREAM,
        "Permutes the axes (reverses them when axes is None).");
  }
  m.def(
      "swapaxes",
      [](nb::handle a, int axis1, int axis2, nb::handle stream) {
        return swapaxes(arr(a, "swapaxes"), axis1, axis2, S(stream));
      },
      "a"_a, "axis1"_a, "axis2"_a, nb::kw_only(), KILN_STREAM, "Swaps two axes.");
  m.def(
      "moveaxis",
      [](nb::handle a, int source, int destination, nb::handle stream) {
        return moveaxis(arr(a, "moveaxis"), source, destination, S(stream));
      },
      "a"_a, "source"_a, "destination"_a, nb::kw_only(), KILN_STREAM, "Moves one axis to a new position.");
  m.def(
      "broadcast_to",
      [](nb::handle a, nb::handle shape, nb::handle stream) {
        return broadcast_to(arr(a, "broadcast_to"), shape_arg(shape, "broadcast_to"), S(stream));
      },
      "a"_a, "shape"_a, nb::kw_only(), KILN_STREAM, "a broadcast to the given shape.");
  m.def(
      "broadcast_arrays",
      [](const nb::args& arrays, nb::handle stream) {
        return arrays_tuple(broadcast_arrays(args_arrays(arrays, "broadcast_arrays"), S(stream)));
      },
      "arrays"_a, KILN_STREAM, "The arrays broadcast against each other (a tuple).");
  m.def(
      "broadcast_shapes",
      [](const nb::args& shapes) {
        if (shapes.size() == 0) throw std::invalid_argument("[broadcast_shapes] No shapes given: expected at least one.");
        Shape out = shape_arg(shapes[0], "broadcast_shapes");
        for (size_t i = 1; i < shapes.size(); ++i) out = broadcast_shapes(out, shape_arg(shapes[i], "broadcast_shapes"));
        nb::list l;
        for (auto d : out) l.append(d);
        return nb::tuple(l);
      },
      "shapes"_a, "The shape (a tuple) that the given shapes broadcast to.");
  m.def(
      "meshgrid",
      [](const nb::args& arrays, bool sparse, const std::string& indexing, nb::handle stream) {
        return arrays_list(meshgrid(args_arrays(arrays, "meshgrid"), sparse, indexing, S(stream)));
      },
      "arrays"_a, "sparse"_a = false, "indexing"_a = "xy", KILN_STREAM,
      "Coordinate arrays from 1-D coordinate vectors, with Cartesian ('xy') or matrix ('ij') indexing.");
  m.def(
      "as_strided",
      [](nb::handle a0, nb::handle shape, nb::handle strides, size_t offset, nb::handle stream) {
        array a = arr(a0, "as_strided");
        Shape sh = shape.is_none() ? a.shape() : shape_arg(shape, "as_strided");
        Strides st;
        if (strides.is_none()) {
          st = row_major_strides(sh);
        } else {
          for (nb::handle h : nb::borrow<nb::sequence>(strides)) st.push_back(nb::cast<int64_t>(h));
        }
        return as_strided(a, sh, st, offset, S(stream));
      },
      "a"_a, "shape"_a.none() = nb::none(), "strides"_a.none() = nb::none(), "offset"_a = 0, nb::kw_only(),
      KILN_STREAM, "A view of a's (row-contiguous) elements with the given shape, strides and offset (in elements).");
  m.def(
      "contiguous",
      [](nb::handle a, bool allow_col_major, nb::handle stream) {
        return contiguous(arr(a, "contiguous"), allow_col_major, S(stream));
      },
      "a"_a, "allow_col_major"_a = false, nb::kw_only(), KILN_STREAM, "a with row-contiguous storage.");
  m.def("atleast_1d", &atleast<1>, "arys"_a, KILN_STREAM, "Each array with at least one dimension.");
  m.def("atleast_2d", &atleast<2>, "arys"_a, KILN_STREAM, "Each array with at least two dimensions.");
  m.def("atleast_3d", &atleast<3>, "arys"_a, KILN_STREAM, "Each array with at least three dimensions.");

  // ---- splitting, joining ----
  m.def(
      "split",
      [](nb::handle a, nb::handle ios, int axis, nb::handle stream) {
        return split_op(arr(a, "split"), ios, axis, S(stream));
      },
      "a"_a, "indices_or_sections"_a, "axis"_a = 0, nb::kw_only(), KILN_STREAM,
      "Splits into equal sections (an int) or at the given indices (a list).");
  for (const char* name : {"concatenate", "concat"}) {
    m.def(
        name,
        [name](nb::handle arrays, std::optional<int> axis, nb::handle stream) {
          return concat_impl(arrays, axis, stream, name);
        },
        "arrays"_a, "axis"_a.none() = 0, nb::kw_only(), KILN_STREAM,
        "Joins arrays along an axis (the flattened arrays when axis is None).");
  }
  m.def(
      "stack",
      [](nb::handle arrays, std::optional<int> axis, nb::handle stream) {
        auto v = to_array_list(arrays, "stack");
        return axis ? stack(v, *axis, S(stream)) : stack(v, S(stream));
      },
      "arrays"_a, "axis"_a.none() = 0, nb::kw_only(), KILN_STREAM, "Joins arrays along a new axis.");
  m.def(
      "tile",
      [](nb::handle a, nb::handle reps, nb::handle stream) {
        return tile(arr(a, "tile"), int_list(reps, "tile", "reps"), S(stream));
      },
      "a"_a, "reps"_a, nb::kw_only(), KILN_STREAM, "a repeated reps times along each axis.");
  m.def(
      "repeat",
      [](nb::handle a0, int repeats, std::optional<int> axis, nb::handle stream) {
        array a = arr(a0, "repeat");
        return axis ? repeat(a, repeats, *axis, S(stream)) : repeat(a, repeats, S(stream));
      },
      "array"_a, "repeats"_a, "axis"_a.none() = nb::none(), nb::kw_only(), KILN_STREAM,
      "Each element repeated along an axis (of the flattened array when axis is None).");
  m.def(
      "roll",
      [](nb::handle a0, nb::handle shift, nb::handle axis, nb::handle stream) {
        array a = arr(a0, "roll");
        auto sh = int_list(shift, "roll", "shift");
        Shape shs(sh.begin(), sh.end());
        const bool one = is_int(shift);
        if (axis.is_none()) return one ? roll(a, shs[0], S(stream)) : roll(a, shs, S(stream));
        if (is_int(axis)) {
          int ax = nb::cast<int>(axis);
          return one ? roll(a, shs[0], ax, S(stream)) : roll(a, shs, ax, S(stream));
        }
        auto axes = int_list(axis, "roll", "axis");
        return one ? roll(a, shs[0], axes, S(stream)) : roll(a, shs, axes, S(stream));
      },
      "a"_a, "shift"_a, "axis"_a.none() = nb::none(), nb::kw_only(), KILN_STREAM,
      "Shifts elements along the axes, wrapping around (of the flattened array when axis is None).");
  m.def(
      "pad",
      [](nb::handle a0, nb::handle pad_width, const std::string& mode, nb::handle constant_values, nb::handle stream) {
        array a = arr(a0, "pad");
        array cv = to_array(constant_values, std::nullopt, "pad");
        if (is_python_scalar(constant_values)) cv = to_arrays(a0, constant_values, "pad").second;
        if (is_int(pad_width)) return pad(a, nb::cast<int>(pad_width), cv, mode, S(stream));
        if (!PyList_Check(pad_width.ptr()) && !PyTuple_Check(pad_width.ptr())) {
          throw std::invalid_argument("[pad] Expected pad_width to be an int, a (low, high) pair or a list of pairs, found " +
                                      py_type_name(pad_width) + ".");
        }
        nb::sequence seq = nb::borrow<nb::sequence>(pad_width);
        size_t n = nb::len(seq);
        bool all_ints = true;
        for (nb::handle h : seq) all_ints &= is_int(h);
        if (all_ints && n == 1) return pad(a, nb::cast<int>(seq[0]), cv, mode, S(stream));
        if (all_ints && n == 2) {
          return pad(a, std::pair<int, int>(nb::cast<int>(seq[0]), nb::cast<int>(seq[1])), cv, mode, S(stream));
        }
        std::vector<std::pair<int, int>> widths;
        for (nb::handle h : seq) {
          auto p = int_list(h, "pad", "each pad_width entry");
          if (p.size() != 2) throw std::invalid_argument("[pad] Expected each pad_width entry to be a (low, high) pair.");
          widths.emplace_back(p[0], p[1]);
        }
        if (widths.size() == 1) return pad(a, widths[0], cv, mode, S(stream));
        return pad(a, widths, cv, mode, S(stream));
      },
      "a"_a, "pad_width"_a, "mode"_a = "constant", "constant_values"_a = 0, nb::kw_only(), KILN_STREAM,
      "Pads with constant_values ('constant') or the edge values ('edge'); pad_width is an int, a pair or one pair per axis.");
}

}  // namespace kiln::py
