// Python values <-> kiln arrays (convert.h).
#include "convert.h"

#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>

#include <complex>
#include <cstring>
#include <limits>

namespace kiln::py {

std::string py_type_name(nb::handle obj) { return nb::type_name(obj.type()).c_str(); }

bool is_python_scalar(nb::handle obj) {
  PyObject* p = obj.ptr();
  return PyBool_Check(p) || PyLong_Check(p) || PyFloat_Check(p) || PyComplex_Check(p);
}

namespace {

std::string prefix(const char* api) { return api ? std::string("[") + api + "] " : std::string(); }

using ROArray = nb::ndarray<nb::ro, nb::device::cpu>;

bool as_ndarray(nb::handle obj, ROArray& out) {
  if (nb::isinstance<array>(obj)) return false;
  if (PyList_Check(obj.ptr()) || PyTuple_Check(obj.ptr()) || is_python_scalar(obj)) return false;
  return nb::try_cast(obj, out, /*convert=*/false);
}

// The kiln dtype of a DLPack element type, or nullopt.
std::optional<Dtype> dtype_of_dl(nb::dlpack::dtype t) {
  using C = nb::dlpack::dtype_code;
  if (t.lanes != 1) return std::nullopt;
  switch (static_cast<C>(t.code)) {
    case C::Bool: return t.bits == 8 ? std::optional<Dtype>(bool_) : std::nullopt;
    case C::Int:
      switch (t.bits) {
        case 8: return int8;
        case 16: return int16;
        case 32: return int32;
        case 64: return int64;
      }
      break;
    case C::UInt:
      switch (t.bits) {
        case 8: return uint8;
        case 16: return uint16;
        case 32: return uint32;
        case 64: return uint64;
      }
      break;
    case C::Float:
      switch (t.bits) {
        case 16: return float16;
        case 32: return float32;
        case 64: return float64;
      }
      break;
    case C::Bfloat:
      if (t.bits == 16) return bfloat16;
      break;
    case C::Complex:
      if (t.bits == 64) return complex64;
      break;
    default:
      break;
  }
  return std::nullopt;
}

// Copy an n-d strided buffer (strides in elements) into a new row-contiguous array.
array copy_strided(const void* src, const Shape& shape, const std::vector<int64_t>& strides, Dtype dtype) {
  array out(shape, dtype);
  const size_t n = out.size(), isz = dtype.size;
  if (n == 0) return out;
  auto* dst = static_cast<char*>(out.raw_data());
  const auto* s = static_cast<const char*>(src);
  const size_t nd = shape.size();
  bool contiguous = true;
  int64_t expect = 1;
  for (size_t i = nd; i-- > 0;) {
    if (shape[i] != 1 && strides[i] != expect) contiguous = false;
    expect *= shape[i];
  }
  if (contiguous) {
    std::memcpy(dst, s, n * isz);
    return out;
  }
  std::vector<int32_t> idx(nd, 0);
  int64_t off = 0;  // element offset of idx in the source
  for (size_t k = 0; k < n; ++k) {
    std::memcpy(dst + k * isz, s + off * static_cast<int64_t>(isz), isz);
    for (size_t d = nd; d-- > 0;) {
      if (++idx[d] < shape[d]) {
        off += strides[d];
        break;
      }
      off -= static_cast<int64_t>(idx[d] - 1) * strides[d];
      idx[d] = 0;
    }
  }
  return out;
}

array from_ndarray(const ROArray& nd, std::optional<Dtype> dtype, const char* api) {
  auto dt = dtype_of_dl(nd.dtype());
  std::optional<Dtype> complex128;
  if (!dt) {
    auto t = nd.dtype();
    if (t.code == static_cast<uint8_t>(nb::dlpack::dtype_code::Complex) && t.bits == 128 && t.lanes == 1) {
      // complex128 has no kiln dtype: read as pairs of float64 and narrow to complex64.
      complex128 = complex64;
    } else {
      throw std::invalid_argument(prefix(api) + "Cannot convert a buffer of element type (code " +
                                  std::to_string(t.code) + ", " + std::to_string(t.bits) + " bits, " +
                                  std::to_string(t.lanes) + " lanes) to an array: expected bool, (u)int8-64, "
                                  "float16/32/64, bfloat16 or complex64/128.");
    }
  }
  Shape shape(nd.ndim());
  std::vector<int64_t> strides(nd.ndim());
  for (size_t i = 0; i < nd.ndim(); ++i) {
    if (nd.shape(i) > static_cast<size_t>(std::numeric_limits<int32_t>::max())) {
      throw std::invalid_argument(prefix(api) + "Dimension " + std::to_string(i) + " of size " +
                                  std::to_string(nd.shape(i)) + " exceeds the largest kiln dimension (2^31 - 1).");
    }
    shape[i] = static_cast<int32_t>(nd.shape(i));
    strides[i] = nd.stride(i);
  }
  array a;
  if (complex128) {
    // complex128 elements are 16 bytes: copy them as float64 pairs (a trailing axis of 2), narrow to
    // float32 and read the pairs as complex64.
    Shape s2 = shape;
    s2.push_back(2);
    std::vector<int64_t> st2 = strides;
    for (auto& v : st2) v *= 2;
    st2.push_back(1);
    array f64 = copy_strided(nd.data(), s2, st2, float64);
    array f32 = astype(f64, float32);
    f32.eval();
    a = array(f32.buffer(), shape, complex64, 0);
  } else {
    a = copy_strided(nd.data(), shape, strides, *dt);
  }
  Dtype target = dtype ? *dtype : (a.dtype() == float64 ? float32 : a.dtype());
  if (target != a.dtype()) {
    a = astype(a, target);
    a.eval();
  }
  return a;
}

// A Python complex as complex64.
complex64_t complex_of(PyObject* p) {
  return {static_cast<float>(PyComplex_RealAsDouble(p)), static_cast<float>(PyComplex_ImagAsDouble(p))};
}

// A Python int above int64's range as uint64 when it fits (nullopt otherwise).
std::optional<uint64_t> big_uint64(PyObject* p) {
  unsigned long long u = PyLong_AsUnsignedLongLong(p);
  if (!PyErr_Occurred()) return static_cast<uint64_t>(u);
  PyErr_Clear();
  return std::nullopt;
}

enum class Kind { Bool = 0, Int = 1, Float = 2, Complex = 3 };

struct ListScan {
  Shape shape;
  bool shape_known = false;
  Kind kind = Kind::Bool;
  bool any_scalar = false;
  bool int64_needed = false;
  std::optional<Dtype> array_dtype;  // promoted dtype of array leaves
};

// Walks a nested list: finds its shape, checks that it is uniform and finds the widest element kind.
void scan_list(nb::handle obj, size_t depth, Shape& prefix_shape, ListScan& scan, const char* api) {
  if (depth > 64) throw std::invalid_argument(prefix(api) + "Nested lists deeper than 64 levels.");
  PyObject* p = obj.ptr();
  auto leaf_shape = [&](const Shape& s) {
    if (!scan.shape_known) {
      scan.shape = s;
      scan.shape_known = true;
    } else if (scan.shape != s) {
      throw std::invalid_argument(prefix(api) + "Initialization encountered non-uniform length.");
    }
  };
  if (PyList_Check(p) || PyTuple_Check(p)) {
    nb::sequence seq = nb::borrow<nb::sequence>(obj);
    size_t n = nb::len(seq);
    prefix_shape.push_back(static_cast<int32_t>(n));
    if (n == 0) {
      leaf_shape(prefix_shape);
    } else {
      for (nb::handle item : seq) scan_list(item, depth + 1, prefix_shape, scan, api);
    }
    prefix_shape.pop_back();
    return;
  }
  if (PyBool_Check(p)) {
    scan.any_scalar = true;
  } else if (PyLong_Check(p)) {
    scan.any_scalar = true;
    scan.kind = std::max(scan.kind, Kind::Int);
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(p, &overflow);
    if (overflow) {
      throw std::invalid_argument(prefix(api) + "Converting " + nb::str(obj).c_str() +
                                  " to int64 would result in overflow.");
    }
    if (v > std::numeric_limits<int32_t>::max() || v < std::numeric_limits<int32_t>::min()) scan.int64_needed = true;
  } else if (PyFloat_Check(p)) {
    scan.any_scalar = true;
    scan.kind = std::max(scan.kind, Kind::Float);
  } else if (PyComplex_Check(p)) {
    scan.any_scalar = true;
    scan.kind = Kind::Complex;
  } else {
    array a;
    if (nb::isinstance<array>(obj)) {
      a = nb::cast<array>(obj);
    } else if (ROArray nd; as_ndarray(obj, nd)) {
      a = from_ndarray(nd, std::nullopt, api);
    } else {
      throw std::invalid_argument(prefix(api) + "Invalid type " + py_type_name(obj) +
                                  " received in array initialization.");
    }
    Shape s = prefix_shape;
    s.insert(s.end(), a.shape().begin(), a.shape().end());
    leaf_shape(s);
    scan.array_dtype = scan.array_dtype ? promote_types(*scan.array_dtype, a.dtype()) : a.dtype();
    return;
  }
  leaf_shape(prefix_shape);
}

Dtype kind_dtype(const ListScan& scan) {
  switch (scan.kind) {
    case Kind::Bool: return bool_;
    case Kind::Int: return scan.int64_needed ? int64 : int32;
    case Kind::Float: return float32;
    case Kind::Complex: return complex64;
  }
  return float32;
}

// Writes the leaves of a scanned list, converted to `dtype`, into `dst` in row-major order.
void fill_list(nb::handle obj, Dtype dtype, char*& dst, const char* api) {
  PyObject* p = obj.ptr();
  if (PyList_Check(p) || PyTuple_Check(p)) {
    for (nb::handle item : nb::borrow<nb::sequence>(obj)) fill_list(item, dtype, dst, api);
    return;
  }
  array a;
  if (is_python_scalar(obj)) {
    if (PyBool_Check(p)) {
      bool v = p == Py_True;
      convert_values(&v, bool_, dst, dtype, 1);
    } else if (PyLong_Check(p)) {
      long long v = PyLong_AsLongLong(p);
      convert_values(&v, int64, dst, dtype, 1);
    } else if (PyFloat_Check(p)) {
      double v = PyFloat_AsDouble(p);
      convert_values(&v, float64, dst, dtype, 1);
    } else {
      complex64_t v = complex_of(p);
      convert_values(&v, complex64, dst, dtype, 1);
    }
    dst += dtype.size;
    return;
  }
  if (nb::isinstance<array>(obj)) {
    a = nb::cast<array>(obj);
  } else {
    ROArray nd;
    as_ndarray(obj, nd);
    a = from_ndarray(nd, std::nullopt, api);
  }
  array c = contiguous(astype(a, dtype));
  c.eval();
  const size_t bytes = c.nbytes();
  if (bytes) std::memcpy(dst, static_cast<const char*>(c.raw_data()), bytes);
  dst += bytes;
}

array from_list(nb::handle obj, std::optional<Dtype> dtype, const char* api) {
  ListScan scan;
  Shape prefix_shape;
  scan_list(obj, 0, prefix_shape, scan, api);
  Dtype natural = scan.array_dtype
                      ? (scan.any_scalar ? promote_types(*scan.array_dtype, kind_dtype(scan)) : *scan.array_dtype)
                      : (scan.any_scalar ? kind_dtype(scan) : float32);
  Dtype target = dtype ? *dtype : natural;
  array out(scan.shape, target);
  char* dst = static_cast<char*>(out.raw_data());
  if (out.size()) fill_list(obj, target, dst, api);
  return out;
}

array python_scalar(nb::handle obj, std::optional<Dtype> dtype) {
  PyObject* p = obj.ptr();
  if (PyBool_Check(p)) return array(p == Py_True, dtype.value_or(bool_));
  if (PyLong_Check(p)) {
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(p, &overflow);
    if (overflow > 0 && dtype == uint64) {
      if (auto u = big_uint64(p)) return array(*u, uint64);
      throw std::invalid_argument("Converting " + std::string(nb::str(obj).c_str()) +
                                  " to uint64 would result in overflow.");
    }
    if (overflow) {
      throw std::invalid_argument("Converting " + std::string(nb::str(obj).c_str()) +
                                  " to int64 would result in overflow.");
    }
    // An explicit dtype converts as C does (kiln.array(200, kiln.int8) is -56), as MLX's constructor.
    if (dtype) return array(static_cast<int64_t>(v), *dtype);
    bool fits32 = v <= std::numeric_limits<int32_t>::max() && v >= std::numeric_limits<int32_t>::min();
    return fits32 ? array(static_cast<int32_t>(v)) : array(static_cast<int64_t>(v));
  }
  if (PyFloat_Check(p)) return array(PyFloat_AsDouble(p), dtype.value_or(float32));
  return array(complex_of(p), dtype.value_or(complex64));
}

}  // namespace

bool is_array_like(nb::handle obj) {
  if (nb::isinstance<array>(obj) || is_python_scalar(obj)) return true;
  if (PyList_Check(obj.ptr()) || PyTuple_Check(obj.ptr())) return true;
  ROArray nd;
  return as_ndarray(obj, nd);
}

array to_array(nb::handle obj, std::optional<Dtype> dtype, const char* api) {
  if (nb::isinstance<array>(obj)) {
    array a = nb::cast<array>(obj);
    return dtype && *dtype != a.dtype() ? astype(a, *dtype) : a;
  }
  if (is_python_scalar(obj)) return python_scalar(obj, dtype);
  if (PyList_Check(obj.ptr()) || PyTuple_Check(obj.ptr())) return from_list(obj, dtype, api);
  if (ROArray nd; as_ndarray(obj, nd)) return from_ndarray(nd, dtype, api);
  throw std::invalid_argument(prefix(api) + "Invalid type " + py_type_name(obj) + " received in array initialization.");
}

array scalar_to_array(nb::handle scalar, Dtype dtype) {
  PyObject* p = scalar.ptr();
  if (PyLong_Check(p) && !PyBool_Check(p) && is_integral(dtype)) {
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(p, &overflow);
    bool ok = !overflow;
    if (ok) {
      if (dtype == uint64) {
        ok = v >= 0;
      } else {
        long double lo = 0, hi = 0;
        switch (dtype.val) {
          case Dtype::Val::uint8: hi = 255; break;
          case Dtype::Val::uint16: hi = 65535; break;
          case Dtype::Val::uint32: hi = 4294967295.0L; break;
          case Dtype::Val::int8: lo = -128; hi = 127; break;
          case Dtype::Val::int16: lo = -32768; hi = 32767; break;
          case Dtype::Val::int32: lo = -2147483648.0L; hi = 2147483647.0L; break;
          default: lo = -9223372036854775808.0L; hi = 9223372036854775807.0L; break;
        }
        ok = v >= lo && v <= hi;
      }
    } else if (dtype == uint64 && overflow > 0) {  // too large for int64: it may still fit uint64
      if (auto u = big_uint64(p)) return array(*u, uint64);
    }
    if (!ok) {
      throw std::invalid_argument("Converting " + std::string(nb::str(scalar).c_str()) + " to " +
                                  dtype_name(dtype) + " would result in overflow.");
    }
    return array(static_cast<int64_t>(v), dtype);
  }
  return python_scalar(scalar, dtype);
}

namespace {
// The dtype a weak Python scalar takes next to arrays of (promoted) dtype `d`.
array weak_scalar(nb::handle s, Dtype d) {
  PyObject* p = s.ptr();
  if (PyBool_Check(p)) return array(p == Py_True);
  if (PyLong_Check(p)) return d == bool_ ? python_scalar(s, std::nullopt) : scalar_to_array(s, d);
  if (PyFloat_Check(p)) return is_inexact(d) ? scalar_to_array(s, d) : python_scalar(s, std::nullopt);
  return is_complex(d) ? scalar_to_array(s, d) : python_scalar(s, std::nullopt);
}

[[noreturn]] void cannot_convert(nb::handle obj, const char* api) {
  throw std::invalid_argument(prefix(api) + "Cannot convert an object of type " + py_type_name(obj) +
                              " to an array: expected an array, a Python scalar, a list or a NumPy array.");
}
}  // namespace

std::vector<array> to_arrays(const std::vector<nb::handle>& objs, const char* api) {
  std::vector<array> out(objs.size());
  std::optional<Dtype> common;
  for (size_t i = 0; i < objs.size(); ++i) {
    if (is_python_scalar(objs[i])) continue;
    if (!is_array_like(objs[i])) cannot_convert(objs[i], api);
    out[i] = to_array(objs[i], std::nullopt, api);
    common = common ? promote_types(*common, out[i].dtype()) : out[i].dtype();
  }
  for (size_t i = 0; i < objs.size(); ++i) {
    if (out[i].valid()) continue;
    out[i] = common ? weak_scalar(objs[i], *common) : python_scalar(objs[i], std::nullopt);
  }
  return out;
}

std::pair<array, array> to_arrays(nb::handle a, nb::handle b, const char* api) {
  auto v = to_arrays(std::vector<nb::handle>{a, b}, api);
  return {v[0], v[1]};
}

std::vector<array> to_array_list(nb::handle seq, const char* api) {
  if (!PyList_Check(seq.ptr()) && !PyTuple_Check(seq.ptr())) {
    throw nb::type_error((prefix(api) + "Expected a list or tuple of arrays, got " + py_type_name(seq) + ".").c_str());
  }
  std::vector<array> out;
  for (nb::handle h : nb::borrow<nb::sequence>(seq)) out.push_back(to_array(h, std::nullopt, api));
  return out;
}

// ---- array -> Python ----

namespace {
nb::object element_to_python(const char* p, Dtype t) {
  switch (t.val) {
    case Dtype::Val::bool_: return nb::bool_(*reinterpret_cast<const bool*>(p) != 0);
    case Dtype::Val::uint8: return nb::int_(*reinterpret_cast<const uint8_t*>(p));
    case Dtype::Val::uint16: return nb::int_(*reinterpret_cast<const uint16_t*>(p));
    case Dtype::Val::uint32: return nb::int_(*reinterpret_cast<const uint32_t*>(p));
    case Dtype::Val::uint64: return nb::steal(PyLong_FromUnsignedLongLong(*reinterpret_cast<const uint64_t*>(p)));
    case Dtype::Val::int8: return nb::int_(*reinterpret_cast<const int8_t*>(p));
    case Dtype::Val::int16: return nb::int_(*reinterpret_cast<const int16_t*>(p));
    case Dtype::Val::int32: return nb::int_(*reinterpret_cast<const int32_t*>(p));
    case Dtype::Val::int64: return nb::steal(PyLong_FromLongLong(*reinterpret_cast<const int64_t*>(p)));
    case Dtype::Val::float16: return nb::float_(static_cast<float>(*reinterpret_cast<const float16_t*>(p)));
    case Dtype::Val::bfloat16: return nb::float_(static_cast<float>(*reinterpret_cast<const bfloat16_t*>(p)));
    case Dtype::Val::float32: return nb::float_(*reinterpret_cast<const float*>(p));
    case Dtype::Val::float64: return nb::float_(*reinterpret_cast<const double*>(p));
    case Dtype::Val::complex64: {
      auto c = *reinterpret_cast<const complex64_t*>(p);
      return nb::steal(PyComplex_FromDoubles(c.real(), c.imag()));
    }
  }
  throw std::invalid_argument("[item] Unknown dtype.");
}

array evaluated_contiguous(array a) {
  {
    nb::gil_scoped_release release;
    a.eval();
    if (!a.row_contiguous()) {
      a = contiguous(a);
      a.eval();
    }
  }
  return a;
}

nb::object list_rec(const char* p, const Shape& shape, const Strides& strides, size_t dim, Dtype t) {
  if (dim == shape.size()) return element_to_python(p, t);
  nb::list out;
  for (int32_t i = 0; i < shape[dim]; ++i) {
    out.append(list_rec(p + static_cast<int64_t>(i) * strides[dim] * t.size, shape, strides, dim + 1, t));
  }
  return out;
}
}  // namespace

nb::object item_to_python(array a) {
  if (a.size() != 1) {
    throw std::invalid_argument("[item] item can only be called on arrays of size 1, found size " +
                                std::to_string(a.size()) + ".");
  }
  a = evaluated_contiguous(a);
  return element_to_python(static_cast<const char*>(a.raw_data()), a.dtype());
}

nb::object to_list(array a) {
  a = evaluated_contiguous(a);
  const char* p = static_cast<const char*>(a.raw_data());
  if (a.ndim() == 0) return element_to_python(p, a.dtype());
  return list_rec(p, a.shape(), row_major_strides(a.shape()), 0, a.dtype());
}

// ---- argument forms ----

std::optional<std::vector<int>> axes_arg(nb::handle obj, const char* api) {
  if (obj.is_none()) return std::nullopt;
  if (PyLong_Check(obj.ptr()) && !PyBool_Check(obj.ptr())) return std::vector<int>{nb::cast<int>(obj)};
  if (PyList_Check(obj.ptr()) || PyTuple_Check(obj.ptr())) {
    std::vector<int> out;
    for (nb::handle h : nb::borrow<nb::sequence>(obj)) {
      if (!PyLong_Check(h.ptr()) || PyBool_Check(h.ptr())) {
        throw nb::type_error((prefix(api) + "Expected axes to be integers, found " + py_type_name(h) + ".").c_str());
      }
      out.push_back(nb::cast<int>(h));
    }
    return out;
  }
  throw nb::type_error((prefix(api) + "Expected axis to be None, an int or a sequence of ints, found " +
                              py_type_name(obj) + ".").c_str());
}

Shape shape_arg(nb::handle obj, const char* api) {
  if (PyLong_Check(obj.ptr()) && !PyBool_Check(obj.ptr())) return Shape{nb::cast<int32_t>(obj)};
  if (PyList_Check(obj.ptr()) || PyTuple_Check(obj.ptr())) {
    Shape out;
    for (nb::handle h : nb::borrow<nb::sequence>(obj)) {
      if (!PyLong_Check(h.ptr()) || PyBool_Check(h.ptr())) {
        throw nb::type_error((prefix(api) + "Expected a shape of integers, found an element of type " +
                                    py_type_name(h) + ".").c_str());
      }
      out.push_back(nb::cast<int32_t>(h));
    }
    return out;
  }
  throw nb::type_error((prefix(api) + "Expected a shape (an int or a sequence of ints), found " +
                              py_type_name(obj) + ".").c_str());
}

StreamOrDevice stream_arg(nb::handle obj) {
  if (obj.is_none()) return std::monostate{};
  if (nb::isinstance<Stream>(obj)) return nb::cast<Stream>(obj);
  if (nb::isinstance<Device>(obj)) return nb::cast<Device>(obj);
  if (nb::isinstance<Device::DeviceType>(obj)) return Device(nb::cast<Device::DeviceType>(obj));
  throw nb::type_error(("Expected stream to be None, a Stream or a Device, found " + py_type_name(obj) + ".").c_str());
}

std::optional<Dtype> dtype_arg(nb::handle obj, const char* api) {
  if (obj.is_none()) return std::nullopt;
  if (nb::isinstance<Dtype>(obj)) return nb::cast<Dtype>(obj);
  throw nb::type_error((prefix(api) + "Expected a dtype such as kiln.float32, found " + py_type_name(obj) + ".").c_str());
}

}  // namespace kiln::py
