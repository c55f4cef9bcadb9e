// Dtypes as MLX's Python API shows them: kiln.float32, kiln.Dtype, kiln.DtypeCategory, finfo, iinfo.
#include <nanobind/stl/string.h>
#include <nanobind/stl/variant.h>

#include <cmath>
#include <limits>

#include "bindings.h"
#include "convert.h"

namespace kiln::py {

namespace {
const Dtype kAll[] = {bool_, uint8, uint16, uint32, uint64, int8, int16, int32, int64,
                      float16, float32, float64, bfloat16, complex64};

struct FInfo {
  Dtype dtype;
  double min, max, eps;
};
struct IInfo {
  Dtype dtype;
  nb::object min, max;
};

FInfo finfo_of(Dtype t) {
  switch (t.val) {
    case Dtype::Val::float16: return {t, -65504.0, 65504.0, std::ldexp(1.0, -10)};
    case Dtype::Val::bfloat16: return {t, -3.3895313892515355e38, 3.3895313892515355e38, std::ldexp(1.0, -7)};
    case Dtype::Val::float32:
    case Dtype::Val::complex64:
      return {t, -static_cast<double>(std::numeric_limits<float>::max()),
              static_cast<double>(std::numeric_limits<float>::max()),
              static_cast<double>(std::numeric_limits<float>::epsilon())};
    case Dtype::Val::float64:
      return {t, -std::numeric_limits<double>::max(), std::numeric_limits<double>::max(),
              std::numeric_limits<double>::epsilon()};
    default:
      throw std::invalid_argument("[finfo] dtype " + dtype_name(t) + " is not inexact.");
  }
}

template <typename T>
IInfo iinfo_as(Dtype t) {
  return {t, nb::cast(std::numeric_limits<T>::min()), nb::cast(std::numeric_limits<T>::max())};
}

IInfo iinfo_of(Dtype t) {
  switch (t.val) {
    case Dtype::Val::uint8: return iinfo_as<uint8_t>(t);
    case Dtype::Val::uint16: return iinfo_as<uint16_t>(t);
    case Dtype::Val::uint32: return iinfo_as<uint32_t>(t);
    case Dtype::Val::uint64: return iinfo_as<uint64_t>(t);
    case Dtype::Val::int8: return iinfo_as<int8_t>(t);
    case Dtype::Val::int16: return iinfo_as<int16_t>(t);
    case Dtype::Val::int32: return iinfo_as<int32_t>(t);
    case Dtype::Val::int64: return iinfo_as<int64_t>(t);
    default: throw std::invalid_argument("[iinfo] dtype " + dtype_name(t) + " is not an integer type.");
  }
}
}  // namespace

void init_dtypes(nb::module_& m) {
  nb::class_<Dtype>(m, "Dtype", "An array's element type (kiln.float32, kiln.int32, ...).")
      .def_prop_ro("size", [](const Dtype& t) { return static_cast<int>(t.size); }, "Size of one element in bytes.")
      .def("__repr__", [](const Dtype& t) { return "kiln." + dtype_name(t); })
      .def("__eq__", [](const Dtype& a, nb::handle b) {
        return nb::isinstance<Dtype>(b) && nb::cast<Dtype>(b) == a;
      })
      .def("__hash__", [](const Dtype& t) { return static_cast<int64_t>(t.code()); });
  for (Dtype t : kAll) m.attr(dtype_name(t) == "bool" ? "bool_" : dtype_name(t).c_str()) = t;

  nb::enum_<Dtype::Category>(m, "DtypeCategory", "A kind of dtypes, for issubdtype (kiln.floating, ...).")
      .value("complexfloating", Dtype::Category::complexfloating)
      .value("floating", Dtype::Category::floating)
      .value("inexact", Dtype::Category::inexact)
      .value("signedinteger", Dtype::Category::signedinteger)
      .value("unsignedinteger", Dtype::Category::unsignedinteger)
      .value("integer", Dtype::Category::integer)
      .value("number", Dtype::Category::number)
      .value("generic", Dtype::Category::generic)
      .export_values();

  using DtypeOrCategory = std::variant<Dtype, Dtype::Category>;
  m.def(
      "issubdtype",
      [](const DtypeOrCategory& a, const DtypeOrCategory& b) {
        return std::visit([](auto x, auto y) { return kiln::issubdtype(x, y); }, a, b);
      },
      "arg1"_a, "arg2"_a,
      "Whether dtype or category arg1 is below arg2 in the dtype hierarchy (kiln.issubdtype(kiln.float16, "
      "kiln.floating) is True).");

  nb::class_<FInfo>(m, "finfo", "Limits of an inexact dtype (as mlx.core.finfo).")
      .def(nb::new_([](Dtype t) { return finfo_of(t); }), "dtype"_a)
      .def_ro("dtype", &FInfo::dtype)
      .def_ro("min", &FInfo::min)
      .def_ro("max", &FInfo::max)
      .def_ro("eps", &FInfo::eps)
      .def("__repr__", [](const FInfo& f) {
        return "finfo(min=" + std::string(nb::repr(nb::float_(f.min)).c_str()) +
               ", max=" + nb::repr(nb::float_(f.max)).c_str() + ", dtype=" + dtype_name(f.dtype) + ")";
      });
  nb::class_<IInfo>(m, "iinfo", "Limits of an integer dtype (as mlx.core.iinfo).")
      .def(nb::new_([](Dtype t) { return iinfo_of(t); }), "dtype"_a)
      .def_ro("dtype", &IInfo::dtype)
      .def_prop_ro("min", [](const IInfo& i) { return i.min; })
      .def_prop_ro("max", [](const IInfo& i) { return i.max; })
      .def("__repr__", [](const IInfo& i) {
        return "iinfo(min=" + std::string(nb::repr(i.min).c_str()) + ", max=" + nb::repr(i.max).c_str() +
               ", dtype=" + dtype_name(i.dtype) + ")";
      });
}

}  // namespace kiln::py
