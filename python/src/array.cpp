// kiln.array: construction from Python values, conversion to Python and NumPy (zero-copy through the
// buffer protocol, __array__ and DLPack), properties, operators, printing and pickling.
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cmath>
#include <sstream>

#include "bindings.h"
#include "convert.h"
#include "trees.h"

namespace kiln::py {

namespace {

// Evaluates with the GIL released (so other Python threads run meanwhile).
void eval_nogil(std::vector<array> outputs) {
  nb::gil_scoped_release release;
  kiln::eval(std::move(outputs));
}

array& self_of(nb::handle h) { return nb::cast<array&>(h); }

nb::tuple shape_tuple(const Shape& s) {
  nb::list l;
  for (auto d : s) l.append(d);
  return nb::tuple(l);
}

// ---- zero-copy export ----

// The DLPack element type of a kiln dtype.
nb::dlpack::dtype dl_dtype(Dtype t) {
  using C = nb::dlpack::dtype_code;
  auto mk = [](C c, int bits) { return nb::dlpack::dtype{static_cast<uint8_t>(c), static_cast<uint8_t>(bits), 1}; };
  switch (t.val) {
    case Dtype::Val::bool_: return mk(C::Bool, 8);
    case Dtype::Val::uint8: return mk(C::UInt, 8);
    case Dtype::Val::uint16: return mk(C::UInt, 16);
    case Dtype::Val::uint32: return mk(C::UInt, 32);
    case Dtype::Val::uint64: return mk(C::UInt, 64);
    case Dtype::Val::int8: return mk(C::Int, 8);
    case Dtype::Val::int16: return mk(C::Int, 16);
    case Dtype::Val::int32: return mk(C::Int, 32);
    case Dtype::Val::int64: return mk(C::Int, 64);
    case Dtype::Val::float16: return mk(C::Float, 16);
    case Dtype::Val::float32: return mk(C::Float, 32);
    case Dtype::Val::float64: return mk(C::Float, 64);
    case Dtype::Val::bfloat16: return mk(C::Bfloat, 16);
    case Dtype::Val::complex64: return mk(C::Complex, 64);
  }
  throw std::invalid_argument("[array] Unknown dtype.");
}

// An evaluated handle on `a` whose memory others may view (an evaluated array never changes).
array evaluated(const array& a) {
  array e = a;
  eval_nogil({e});
  return e;
}

// A view of `a`'s memory as an nb::ndarray of framework T, which keeps `a`'s buffer alive.
template <typename... Ts>
nb::ndarray<Ts...> ndarray_view(const array& a0) {
  array a = evaluated(a0);
  std::vector<size_t> shape(a.shape().begin(), a.shape().end());
  std::vector<int64_t> strides(a.strides().begin(), a.strides().end());
  auto* keep = new array(a);
  nb::capsule owner(keep, [](void* p) noexcept { delete static_cast<array*>(p); });
  void* data = a.size() ? a.raw_data() : nullptr;
  return nb::ndarray<Ts...>(data, shape.size(), shape.data(), owner, strides.data(), dl_dtype(a.dtype()),
                            nb::device::cpu::value, 0);
}

const char* buffer_format(Dtype t) {
  switch (t.val) {
    case Dtype::Val::bool_: return "?";
    case Dtype::Val::uint8: return "B";
    case Dtype::Val::uint16: return "H";
    case Dtype::Val::uint32: return "I";
    case Dtype::Val::uint64: return "Q";
    case Dtype::Val::int8: return "b";
    case Dtype::Val::int16: return "h";
    case Dtype::Val::int32: return "i";
    case Dtype::Val::int64: return "q";
    case Dtype::Val::float16: return "e";
    case Dtype::Val::float32: return "f";
    case Dtype::Val::float64: return "d";
    case Dtype::Val::complex64: return "Zf";
    case Dtype::Val::bfloat16: return nullptr;
  }
  return nullptr;
}

// The buffer protocol (memoryview(a), np.asarray(a), bytes(a)): the array's own memory, no copy.
struct BufferInfo {
  array keep;
  std::vector<Py_ssize_t> shape, strides;
};

int array_getbuffer(PyObject* obj, Py_buffer* view, int flags) {
  try {
    array a = evaluated(nb::cast<array>(nb::handle(obj)));
    const char* fmt = buffer_format(a.dtype());
    if (!fmt) {
      PyErr_SetString(PyExc_BufferError,
                      "[array] bfloat16 has no buffer-protocol format (and no NumPy dtype): convert with "
                      "a.astype(kiln.float32), or pass the array through DLPack (__dlpack__).");
      return -1;
    }
    auto* info = new BufferInfo{a, {}, {}};
    for (size_t i = 0; i < a.ndim(); ++i) {
      info->shape.push_back(a.shape()[i]);
      info->strides.push_back(static_cast<Py_ssize_t>(a.strides()[i] * static_cast<int64_t>(a.itemsize())));
    }
    view->obj = obj;
    Py_INCREF(obj);
    view->buf = a.size() ? a.raw_data() : nullptr;
    view->len = static_cast<Py_ssize_t>(a.nbytes());
    view->itemsize = static_cast<Py_ssize_t>(a.itemsize());
    view->readonly = 0;
    view->ndim = static_cast<int>(a.ndim());
    view->format = (flags & PyBUF_FORMAT) ? const_cast<char*>(fmt) : nullptr;
    view->shape = info->shape.data();
    view->strides = info->strides.data();
    view->suboffsets = nullptr;
    view->internal = info;
    return 0;
  } catch (const std::exception& e) {
    PyErr_SetString(PyExc_BufferError, e.what());
    return -1;
  }
}

void array_releasebuffer(PyObject*, Py_buffer* view) { delete static_cast<BufferInfo*>(view->internal); }

PyType_Slot array_slots[] = {{Py_bf_getbuffer, reinterpret_cast<void*>(array_getbuffer)},
                             {Py_bf_releasebuffer, reinterpret_cast<void*>(array_releasebuffer)},
                             {0, nullptr}};

// ---- operators ----

using BinaryFn = array (*)(const array&, const array&, StreamOrDevice);

// a OP b with MLX's operand conversion; NotImplemented for operands that are not array-like, so that
// Python raises its usual TypeError (or tries the other operand's method).
template <BinaryFn F>
nb::object binary(nb::handle a, nb::handle b, bool reflected, const char* api) {
  if (!is_array_like(b)) return nb::borrow(Py_NotImplemented);
  auto [x, y] = reflected ? to_arrays(b, a, api) : to_arrays(a, b, api);
  return nb::cast(F(x, y, {}));
}

array and_op(const array& a, const array& b, StreamOrDevice s) {
  return a.dtype() == bool_ && b.dtype() == bool_ ? logical_and(a, b, s) : bitwise_and(a, b, s);
}
array or_op(const array& a, const array& b, StreamOrDevice s) {
  return a.dtype() == bool_ && b.dtype() == bool_ ? logical_or(a, b, s) : bitwise_or(a, b, s);
}
array xor_op(const array& a, const array& b, StreamOrDevice s) {
  return a.dtype() == bool_ && b.dtype() == bool_ ? not_equal(a, b, s) : bitwise_xor(a, b, s);
}
array matmul_op(const array& a, const array& b, StreamOrDevice s) { return matmul(a, b, s); }

template <BinaryFn F>
void def_binary(nb::class_<array>& cls, const char* name, const char* rname, const char* iname, const char* api) {
  cls.def(name, [api](nb::handle a, nb::handle b) { return binary<F>(a, b, false, api); }, "other"_a.none());
  if (rname) cls.def(rname, [api](nb::handle a, nb::handle b) { return binary<F>(a, b, true, api); }, "other"_a.none());
  if (iname) {
    // In place, as in MLX: the Python object now holds the result (other references to it see it too).
    cls.def(iname, [api](nb::handle a, nb::handle b) -> nb::object {
      if (!is_array_like(b)) return nb::borrow(Py_NotImplemented);
      auto [x, y] = to_arrays(a, b, api);
      self_of(a) = F(x, y, {});
      return nb::borrow(a);
    }, "other"_a.none());
  }
}

// ---- printing, as MLX's Python API prints (True/False, and arrays over 1000 elements summarised with
// their first and last three entries per axis) ----

void print_element(std::ostream& os, const char* p, Dtype t) {
  switch (t.val) {
    case Dtype::Val::bool_: os << (*p ? "True" : "False"); break;
    case Dtype::Val::uint8: os << static_cast<int>(*reinterpret_cast<const uint8_t*>(p)); break;
    case Dtype::Val::uint16: os << *reinterpret_cast<const uint16_t*>(p); break;
    case Dtype::Val::uint32: os << *reinterpret_cast<const uint32_t*>(p); break;
    case Dtype::Val::uint64: os << *reinterpret_cast<const uint64_t*>(p); break;
    case Dtype::Val::int8: os << static_cast<int>(*reinterpret_cast<const int8_t*>(p)); break;
    case Dtype::Val::int16: os << *reinterpret_cast<const int16_t*>(p); break;
    case Dtype::Val::int32: os << *reinterpret_cast<const int32_t*>(p); break;
    case Dtype::Val::int64: os << *reinterpret_cast<const int64_t*>(p); break;
    case Dtype::Val::float16: os << static_cast<float>(*reinterpret_cast<const float16_t*>(p)); break;
    case Dtype::Val::bfloat16: os << static_cast<float>(*reinterpret_cast<const bfloat16_t*>(p)); break;
    case Dtype::Val::float32: os << *reinterpret_cast<const float*>(p); break;
    case Dtype::Val::float64: os << *reinterpret_cast<const double*>(p); break;
    case Dtype::Val::complex64: {
      auto c = *reinterpret_cast<const complex64_t*>(p);
      os << c.real() << (c.imag() >= 0 || std::isnan(c.imag()) ? "+" : "-") << std::abs(c.imag()) << "j";
      break;
    }
  }
}

void print_rows(std::ostream& os, const array& a, size_t dim, const char* p, bool summarise) {
  const int64_t n = a.shape()[dim];
  const int64_t step = a.strides()[dim] * static_cast<int64_t>(a.itemsize());
  const bool cut = summarise && n > 6;
  const bool last = dim + 1 == a.ndim();
  const std::string sep = last ? ", " : ",\n" + std::string(7 + dim, ' ');
  os << "[";
  for (int64_t i = 0; i < n; ++i) {
    if (cut && i == 3) {
      os << "..." << sep;
      i = n - 3;
    }
    if (last) {
      print_element(os, p + i * step, a.dtype());
    } else {
      print_rows(os, a, dim + 1, p + i * step, summarise);
    }
    if (i + 1 < n) os << sep;
  }
  os << "]";
}

std::string repr_of(const array& a0) {
  array a = evaluated(a0);
  std::ostringstream os;
  os << "array(";
  if (a.ndim() == 0) {
    print_element(os, static_cast<const char*>(a.raw_data()), a.dtype());
  } else {
    const char* p = a.size() ? static_cast<const char*>(a.raw_data()) : nullptr;
    print_rows(os, a, 0, p, a.size() > 1000);
  }
  os << ", dtype=" << dtype_name(a.dtype()) << ")";
  return os.str();
}

nb::object scalar_of(const array& a, const char* what) {
  if (a.size() != 1) {
    throw std::invalid_argument(std::string("[") + what +
                                "] Only length-1 arrays can be converted to Python scalars, found size " +
                                std::to_string(a.size()) + ".");
  }
  return item_to_python(a);
}

}  // namespace

void init_array(nb::module_& m) {
  nb::class_<array> cls(m, "array", nb::type_slots(array_slots),
                        "An N-dimensional array, evaluated lazily (as mlx.core.array).");
  cls.def(
      "__init__",
      [](array* self, nb::handle val, nb::handle dtype) {
        new (self) array(to_array(val, dtype_arg(dtype, "array"), "array"));
      },
      "val"_a, "dtype"_a.none() = nb::none(),
      nb::sig("def __init__(self, val: scalar | list | tuple | numpy.ndarray | array, dtype: Dtype | None = None) "
              "-> None"),
      "An array from a Python scalar, a nested list or tuple, a NumPy array or any object with the buffer "
      "protocol or DLPack (data is copied). Python ints become int32 (int64 when too large), floats float32, "
      "complex numbers complex64; NumPy float64 becomes float32 unless dtype says otherwise.");

  cls.def_prop_ro("shape", [](const array& a) { return shape_tuple(a.shape()); }, "The array's shape, a tuple of ints.")
      .def_prop_ro("dtype", &array::dtype, "The array's element type.")
      .def_prop_ro("ndim", [](const array& a) { return a.ndim(); }, "Number of dimensions.")
      .def_prop_ro("size", [](const array& a) { return a.size(); }, "Number of elements.")
      .def_prop_ro("nbytes", [](const array& a) { return a.nbytes(); }, "Bytes of its elements.")
      .def_prop_ro("itemsize", [](const array& a) { return a.itemsize(); }, "Bytes of one element.")
      .def_prop_ro("T", [](const array& a) { return transpose(a); }, "The array with its axes reversed.")
      .def("item", [](const array& a) { return item_to_python(a); },
           "The value of a one-element array as a Python scalar.")
      .def("tolist", [](const array& a) { return to_list(a); },
           "The array as nested lists of Python scalars (a scalar for a 0-d array).")
      .def(
          "astype",
          [](const array& a, const Dtype& dtype, nb::handle stream) { return astype(a, dtype, stream_arg(stream)); },
          "dtype"_a, "stream"_a.none() = nb::none(), "The array converted to `dtype`.")
      .def("__repr__", &repr_of)
      .def("__str__", &repr_of)
      .def("__len__",
           [](const array& a) {
             if (a.ndim() == 0) throw nb::type_error("len() 0-dimensional array.");
             return static_cast<size_t>(a.shape()[0]);
           })
      .def("__iter__",
           [](const array& a) {
             if (a.ndim() == 0) throw nb::type_error("iteration over a 0-d array");
             nb::list rows;
             for (int32_t i = 0; i < a.shape()[0]; ++i) rows.append(nb::cast(take(a, i, 0)));
             return nb::iter(rows);
           })
      .def("__bool__", [](const array& a) { return nb::bool_(nb::borrow<nb::object>(scalar_of(a, "bool"))); })
      .def("__int__", [](const array& a) { return nb::int_(scalar_of(a, "int")); })
      .def("__float__", [](const array& a) { return nb::float_(scalar_of(a, "float")); })
      .def("__complex__",
           [](const array& a) {
             nb::object v = scalar_of(a, "complex");
             // (limited-API calls only: the extension is an abi3 module on Python >= 3.12)
             double re = PyComplex_RealAsDouble(v.ptr()), im = PyComplex_ImagAsDouble(v.ptr());
             if (PyFloat_Check(v.ptr()) || PyLong_Check(v.ptr())) re = PyFloat_AsDouble(v.ptr()), im = 0;
             return nb::steal(PyComplex_FromDoubles(re, im));
           })
      .def("__index__",
           [](const array& a) {
             if (!is_integral(a.dtype())) {
               throw nb::type_error(("only integer arrays can be used as an index, found " + dtype_name(a.dtype())).c_str());
             }
             return nb::int_(scalar_of(a, "index"));
           })
      .def("__hash__", [](const array& a) { return static_cast<int64_t>(a.id()); })
      .def("__copy__", [](const array& a) { return copy(a); })
      .def("__deepcopy__", [](const array& a, nb::handle) { return copy(a); }, "memo"_a)
      .def("__getstate__",
           [](const array& a0) {
             array a = evaluated(contiguous(a0));
             nb::bytes data(static_cast<const char*>(a.size() ? a.raw_data() : nullptr), a.nbytes());
             return nb::make_tuple(data, shape_tuple(a.shape()), a.dtype().code());
           })
      .def("__setstate__",
           [](array* self, nb::tuple state) {
             if (state.size() != 3) throw std::invalid_argument("[array] Bad pickled state: expected 3 fields.");
             nb::bytes data = nb::cast<nb::bytes>(state[0]);
             Shape shape = shape_arg(state[1], "array");
             Dtype t = dtype_from_code(nb::cast<int>(state[2]));
             new (self) array(array::from_bytes(data.c_str(), data.size(), shape, t));
           })
      .def(
          "__array__",
          [](const array& a, nb::handle dtype, nb::handle copy) -> nb::object {
            if (a.dtype() == bfloat16) {
              throw nb::type_error("[array] bfloat16 has no NumPy dtype: convert with a.astype(kiln.float32) first.");
            }
            nb::object out = nb::cast(ndarray_view<nb::numpy>(a), nb::rv_policy::reference);
            bool want_copy = !copy.is_none() && nb::cast<bool>(copy);
            if (!dtype.is_none()) return out.attr("astype")(dtype, "copy"_a = want_copy);
            if (want_copy) return out.attr("copy")();
            return out;
          },
          "dtype"_a.none() = nb::none(), "copy"_a.none() = nb::none(),
          "A NumPy array sharing this array's memory (after evaluating it).")
      .def(
          "__dlpack__",
          [](const array& a, nb::kwargs kwargs) {
            // A framework-less nb::ndarray converts to a DLPack capsule that owns a reference to `a`.
            return nb::cast(ndarray_view<>(a), nb::rv_policy::reference);
          },
          "kwargs"_a, "A DLPack capsule of this array's memory (no copy).")
      .def("__dlpack_device__", [](const array&) { return nb::make_tuple(1, 0); });

  def_binary<add>(cls, "__add__", "__radd__", "__iadd__", "addition");
  def_binary<subtract>(cls, "__sub__", "__rsub__", "__isub__", "subtraction");
  def_binary<multiply>(cls, "__mul__", "__rmul__", "__imul__", "multiplication");
  def_binary<divide>(cls, "__truediv__", "__rtruediv__", "__itruediv__", "division");
  def_binary<floor_divide>(cls, "__floordiv__", "__rfloordiv__", "__ifloordiv__", "floor division");
  def_binary<remainder>(cls, "__mod__", "__rmod__", "__imod__", "modulus");
  def_binary<power>(cls, "__pow__", "__rpow__", "__ipow__", "power");
  def_binary<matmul_op>(cls, "__matmul__", "__rmatmul__", "__imatmul__", "matmul");
  def_binary<and_op>(cls, "__and__", "__rand__", "__iand__", "bitwise and");
  def_binary<or_op>(cls, "__or__", "__ror__", "__ior__", "bitwise or");
  def_binary<xor_op>(cls, "__xor__", "__rxor__", "__ixor__", "bitwise xor");
  def_binary<left_shift>(cls, "__lshift__", "__rlshift__", "__ilshift__", "left shift");
  def_binary<right_shift>(cls, "__rshift__", "__rrshift__", "__irshift__", "right shift");
  def_binary<equal>(cls, "__eq__", nullptr, nullptr, "equal");
  def_binary<not_equal>(cls, "__ne__", nullptr, nullptr, "not equal");
  def_binary<less>(cls, "__lt__", nullptr, nullptr, "less");
  def_binary<less_equal>(cls, "__le__", nullptr, nullptr, "less equal");
  def_binary<greater>(cls, "__gt__", nullptr, nullptr, "greater");
  def_binary<greater_equal>(cls, "__ge__", nullptr, nullptr, "greater equal");
  cls.def("__divmod__",
          [](nb::handle a, nb::handle b) -> nb::object {
            if (!is_array_like(b)) return nb::borrow(Py_NotImplemented);
            auto [x, y] = to_arrays(a, b, "divmod");
            auto r = divmod(x, y);
            return nb::make_tuple(r[0], r[1]);
          })
      .def("__neg__", [](const array& a) { return negative(a); })
      .def("__pos__", [](const array& a) { return a; })
      .def("__abs__", [](const array& a) { return abs(a); })
      .def("__invert__", [](const array& a) {
        if (is_inexact(a.dtype())) {
          throw std::invalid_argument("[bitwise_invert] Floating point types not allowed with bitwise invert, found " +
                                      dtype_name(a.dtype()) + ".");
        }
        return a.dtype() == bool_ ? logical_not(a) : bitwise_invert(a);
      });

  init_indexing(cls);
  init_array_methods(cls);

  // (the arguments are themselves a tuple: one tree)
  m.def(
      "eval", [](nb::args args) { eval_nogil(tree_flatten(args, false, "eval")); }, "args"_a,
      "Evaluate arrays, or trees (lists, tuples, dicts) of arrays; other leaves are ignored.");
  m.def(
      "async_eval", [](nb::args args) { eval_nogil(tree_flatten(args, false, "async_eval")); }, "args"_a,
      "Evaluate arrays or trees of arrays (kiln finishes before returning).");
}

}  // namespace kiln::py
