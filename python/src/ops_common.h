// kiln Python bindings: shared pieces of the op bindings (ops_*.cpp, array_methods.cpp, random.cpp,
// linalg.cpp, fft.cpp, fast.cpp): argument conversions and the op forms that both `kiln.sum(a, ...)`
// and `a.sum(...)` use, so that the function and the method behave the same.
#pragma once

#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <optional>
#include <string>
#include <vector>

#include "bindings.h"
#include "convert.h"

namespace kiln::py {

// The `stream=None` argument every op ends with.
#define KILN_STREAM "stream"_a.none() = nb::none()

inline array arr(nb::handle h, const char* api) { return to_array(h, std::nullopt, api); }

inline std::optional<array> opt_arr(nb::handle h, const char* api) {
  if (h.is_none()) return std::nullopt;
  return to_array(h, std::nullopt, api);
}

inline StreamOrDevice S(nb::handle h) { return stream_arg(h); }

inline bool is_int(nb::handle h) { return PyLong_Check(h.ptr()) && !PyBool_Check(h.ptr()); }

// An optional int argument (None or an int).
inline std::optional<int> opt_int(nb::handle h, const char* api, const char* what) {
  if (h.is_none()) return std::nullopt;
  if (!is_int(h)) {
    throw std::invalid_argument(std::string("[") + api + "] Expected " + what + " to be None or an int, found " +
                                py_type_name(h) + ".");
  }
  return nb::cast<int>(h);
}

// A tuple of arrays as Python returns it (e.g. divmod, broadcast_arrays).
inline nb::tuple arrays_tuple(const std::vector<array>& v) {
  nb::list l;
  for (const auto& a : v) l.append(nb::cast(a));
  return nb::tuple(l);
}
inline nb::list arrays_list(const std::vector<array>& v) {
  nb::list l;
  for (const auto& a : v) l.append(nb::cast(a));
  return l;
}

// ---- op forms shared by functions and methods ----

// reduce(a, axis: None | int | list, keepdims)
using ReduceFn = array (*)(const array&, const std::optional<std::vector<int>>&, bool, StreamOrDevice);
// var / std: reduce with ddof
using ReduceDdofFn = array (*)(const array&, const std::optional<std::vector<int>>&, bool, int, StreamOrDevice);
// argmin / argmax: axis None | int
using ArgReduceFn = array (*)(const array&, std::optional<int>, bool, StreamOrDevice);
// cumsum and friends: axis None | int, reverse, inclusive
using ScanFn = array (*)(const array&, std::optional<int>, bool, bool, StreamOrDevice);
using UnaryFn = array (*)(const array&, StreamOrDevice);

struct NamedReduce {
  const char* name;
  ReduceFn fn;
  const char* doc;
};
struct NamedScan {
  const char* name;
  ScanFn fn;
  const char* doc;
};
struct NamedUnary {
  const char* name;
  UnaryFn fn;
  const char* doc;
};

// The reductions of kiln.sum, ..., in MLX's order (defined in ops_reduce.cpp).
extern const std::vector<NamedReduce>& reductions();
extern const std::vector<NamedScan>& scans();
array var_op(const array& a, const std::optional<std::vector<int>>& axes, bool keepdims, int ddof, StreamOrDevice s);
array std_op(const array& a, const std::optional<std::vector<int>>& axes, bool keepdims, int ddof, StreamOrDevice s);
array argmin_op(const array& a, std::optional<int> axis, bool keepdims, StreamOrDevice s);
array argmax_op(const array& a, std::optional<int> axis, bool keepdims, StreamOrDevice s);

// Shape forms (ops_shape.cpp).
array squeeze_op(const array& a, nb::handle axis, StreamOrDevice s);
nb::list split_op(const array& a, nb::handle indices_or_sections, int axis, StreamOrDevice s);
array transpose_op(const array& a, const std::optional<std::vector<int>>& axes, StreamOrDevice s);
array round_op(const array& a, int decimals, StreamOrDevice s);

// The integers of `*args` or of one sequence argument: a.reshape(2, 3) and a.reshape((2, 3)).
std::vector<int> varargs_ints(const nb::args& args, const char* api, const char* what);

// Initializers of the op families (each in its ops_*.cpp).
void init_ops_elementwise(nb::module_& m);
void init_ops_reduce(nb::module_& m);
void init_ops_shape(nb::module_& m);
void init_ops_index(nb::module_& m);
void init_ops_linalg(nb::module_& m);
void init_ops_conv(nb::module_& m);
void init_ops_quantized(nb::module_& m);

}  // namespace kiln::py
