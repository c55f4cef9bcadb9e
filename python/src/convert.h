// kiln Python bindings: turning Python values into kiln arrays and back, and the argument forms that
// MLX's Python API accepts everywhere (axes, shapes, streams). Every binding file uses these, so that
// `kiln.add(a, 1.5)`, `a + 1.5` and `kiln.where(m, 0, a)` convert their operands the same way.
#pragma once

#include <nanobind/nanobind.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <kiln/kiln.h>

namespace kiln::py {
namespace nb = nanobind;
using namespace nb::literals;

// ---- Python -> array ----

// True for the Python scalars MLX treats as weakly typed: bool, int, float, complex (not NumPy scalars).
bool is_python_scalar(nb::handle obj);

// Whether `obj` can become an array: an array, a Python scalar, a (nested) list or tuple, or an object
// with the buffer protocol or DLPack (NumPy arrays and scalars, memoryviews, torch tensors, ...).
bool is_array_like(nb::handle obj);

// Convert as `kiln.array(obj, dtype)` does (MLX's rules): Python int -> int32 (int64 when it does not
// fit), float -> float32, complex -> complex64, bool -> bool; lists take the widest kind of their
// leaves; NumPy float64 becomes float32 unless `dtype` says otherwise; data is copied. An array is
// returned as is (cast when `dtype` is given). Throws ValueError (std::invalid_argument) naming the
// Python type it cannot convert, prefixed by `api` when given.
array to_array(nb::handle obj, std::optional<Dtype> dtype = std::nullopt, const char* api = nullptr);

// A Python scalar as an array of `dtype`, with MLX's overflow check for integers ("Converting 300 to
// uint8 would result in overflow.").
array scalar_to_array(nb::handle scalar, Dtype dtype);

// The operands of a binary op, with MLX's weak scalars: a Python scalar takes the other operand's
// dtype when it is of the same or a lower kind (an int with a float16 array gives float16, a float
// with an int32 array gives float32). `api` names the op in errors ("Cannot perform addition on an
// kiln.array and str").
std::pair<array, array> to_arrays(nb::handle a, nb::handle b, const char* api = nullptr);

// The same for any number of operands (e.g. where(cond, x, y)): scalars follow the arrays' common
// dtype.
std::vector<array> to_arrays(const std::vector<nb::handle>& objs, const char* api = nullptr);

// A list of arrays from a Python sequence of array-likes.
std::vector<array> to_array_list(nb::handle seq, const char* api);

// ---- array -> Python ----

// `a.item()`: a Python bool, int, float or complex.
nb::object item_to_python(array a);
// `a.tolist()`: nested lists of Python scalars (a scalar for a 0-d array).
nb::object to_list(array a);

// ---- argument forms ----

// `axis` / `axes`: None -> nullopt, an int -> {int}, a sequence of ints -> the list.
std::optional<std::vector<int>> axes_arg(nb::handle obj, const char* api);
// A shape: an int or a sequence of ints.
Shape shape_arg(nb::handle obj, const char* api);
// `stream=`: None, a Stream or a Device (or a DeviceType such as kiln.cpu).
StreamOrDevice stream_arg(nb::handle obj);
// A dtype argument: a kiln.Dtype (None -> nullopt).
std::optional<Dtype> dtype_arg(nb::handle obj, const char* api);

// The Python type name of `obj`, for error messages.
std::string py_type_name(nb::handle obj);

}  // namespace kiln::py
