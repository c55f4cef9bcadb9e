// NumPy-style indexing of kiln arrays with MLX's semantics: a[i], a[1:5:2], a[None], a[...], integer
// arrays (advanced indexing, with NumPy's placement of the broadcast index dimensions), index
// assignment (a[idx] = v, boolean masks included) and a.at[idx].add(v) and friends.
//
// Reading with only integers and slices is one Slice (a view when evaluated); with index arrays, one
// Gather over the sliced array. Writing with integers and slices is one SliceUpdate; with index arrays,
// one Scatter over the flattened array, at the positions that reading the same index from
// arange(size) gives (so every index form writes exactly where it reads). Integer indices are checked
// against the axis (IndexError); index arrays cannot be checked before evaluation and wrap and clamp as
// the Gather and Scatter kernels do.
#include <nanobind/stl/string.h>

#include <algorithm>
#include <limits>
#include <sstream>

#include "bindings.h"
#include "convert.h"

namespace kiln::py {

namespace {

struct Entry {
  enum Kind { Int, Slice, NewAxis, Ellipsis, Array } kind;
  int64_t i = 0;      // Int
  nb::object slice;   // Slice (a Python slice object)
  array arr;          // Array
};

[[noreturn]] void bad_index(nb::handle h) {
  throw std::invalid_argument("Cannot index an array with an object of type " + py_type_name(h) +
                              ": expected an int, a slice, None, Ellipsis, an integer array (or list), or a "
                              "tuple of these.");
}

Entry entry_of(nb::handle h) {
  PyObject* p = h.ptr();
  if (PyLong_Check(p)) {
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(p, &overflow);
    if (overflow) throw nb::index_error("Index out of range for a 64-bit integer.");
    return {Entry::Int, v, {}, {}};
  }
  if (PySlice_Check(p)) return {Entry::Slice, 0, nb::borrow(h), {}};
  if (h.is_none()) return {Entry::NewAxis, 0, {}, {}};
  if (p == Py_Ellipsis) return {Entry::Ellipsis, 0, {}, {}};
  if (nb::isinstance<array>(h) || PyList_Check(p) || (!PyTuple_Check(p) && !is_python_scalar(h) && is_array_like(h))) {
    array a = to_array(h, std::nullopt, "index");
    if (a.dtype() == bool_) {
      throw std::invalid_argument(
          "Boolean mask indices are not supported for reading: the result's shape would depend on the mask's "
          "values (as in MLX). Use kiln.where, or a[mask] = value to write.");
    }
    if (!is_integral(a.dtype())) {
      throw std::invalid_argument("Index arrays must have an integer dtype, found " + dtype_name(a.dtype()) + ".");
    }
    return {Entry::Array, 0, {}, a};
  }
  bad_index(h);
}

// The index expression with Ellipsis expanded: one entry per axis of the array after the NewAxis
// entries are inserted as size-1 axes.
struct Parsed {
  std::vector<Entry> entries;
  std::vector<int> new_axes;  // positions (in the expanded array) of NewAxis entries
  bool has_array = false;
};

Parsed parse(const array& a, nb::handle key) {
  std::vector<Entry> raw;
  if (PyTuple_Check(key.ptr())) {
    for (nb::handle h : nb::borrow<nb::tuple>(key)) raw.push_back(entry_of(h));
  } else {
    raw.push_back(entry_of(key));
  }
  size_t consumed = 0, ellipses = 0;
  for (auto& e : raw) {
    if (e.kind == Entry::Ellipsis) ++ellipses;
    else if (e.kind != Entry::NewAxis) ++consumed;
  }
  if (ellipses > 1) throw std::invalid_argument("An index can only have a single ellipsis (...).");
  if (consumed > a.ndim()) {
    throw nb::index_error(("Too many indices for array with " + std::to_string(a.ndim()) + " dimensions: found " +
                           std::to_string(consumed) + ".").c_str());
  }
  Parsed p;
  auto full = [] { return Entry{Entry::Slice, 0, nb::steal(PySlice_New(nullptr, nullptr, nullptr)), {}}; };
  for (auto& e : raw) {
    if (e.kind == Entry::Ellipsis) {
      for (size_t k = consumed; k < a.ndim(); ++k) p.entries.push_back(full());
    } else {
      p.entries.push_back(e);
    }
  }
  if (!ellipses) {
    for (size_t k = consumed; k < a.ndim(); ++k) p.entries.push_back(full());
  }
  for (size_t j = 0; j < p.entries.size(); ++j) {
    if (p.entries[j].kind == Entry::NewAxis) p.new_axes.push_back(static_cast<int>(j));
    if (p.entries[j].kind == Entry::Array) p.has_array = true;
  }
  return p;
}

// A Python slice on an axis of size n as kiln::slice's (start, stop, stride) and its length.
struct SliceParams {
  int32_t start, stop, stride, length;
};
SliceParams slice_params(nb::handle s, int32_t n) {
  Py_ssize_t start, stop, step;
  if (PySlice_Unpack(s.ptr(), &start, &stop, &step) < 0) throw nb::python_error();
  Py_ssize_t len = PySlice_AdjustIndices(n, &start, &stop, step);
  if (len == 0) return {0, 0, 1, 0};
  // kiln::slice reads a negative stop as counting from the end, as MLX does; "before the first
  // element" for a negative stride is written -n - 1.
  if (step < 0 && stop < 0) stop = -static_cast<Py_ssize_t>(n) - 1;
  auto clamp32 = [](Py_ssize_t v) {
    return static_cast<int32_t>(std::clamp<Py_ssize_t>(v, std::numeric_limits<int32_t>::min(),
                                                       std::numeric_limits<int32_t>::max()));
  };
  return {clamp32(start), clamp32(stop), clamp32(step), static_cast<int32_t>(len)};
}

int64_t checked_int(int64_t i, int32_t n, size_t axis) {
  int64_t k = i < 0 ? i + n : i;
  if (k < 0 || k >= n) {
    throw nb::index_error(("Index " + std::to_string(i) + " is out of bounds for axis " + std::to_string(axis) +
                           " with size " + std::to_string(n) + ".").c_str());
  }
  return k;
}

array get_item(const array& a0, nb::handle key) {
  Parsed p = parse(a0, key);
  array a = p.new_axes.empty() ? a0 : expand_dims(a0, p.new_axes);
  const size_t nd = a.ndim();
  Shape start(nd), stop(nd), strides(nd, 1);
  bool trivial = true;
  std::vector<int> int_axes, adv_axes;
  std::vector<array> adv;
  for (size_t j = 0; j < nd; ++j) {
    const int32_t n = a.shape()[j];
    Entry& e = p.entries[j];
    switch (e.kind) {
      case Entry::NewAxis:
        start[j] = 0, stop[j] = 1;
        break;
      case Entry::Slice: {
        auto sp = slice_params(e.slice, n);
        start[j] = sp.start, stop[j] = sp.stop, strides[j] = sp.stride;
        if (!(sp.start == 0 && sp.stride == 1 && sp.length == n)) trivial = false;
        break;
      }
      case Entry::Int: {
        int64_t k = checked_int(e.i, n, j);
        if (p.has_array) {
          start[j] = 0, stop[j] = n;
          adv_axes.push_back(static_cast<int>(j));
          adv.push_back(array(static_cast<int32_t>(k)));
        } else {
          start[j] = static_cast<int32_t>(k), stop[j] = static_cast<int32_t>(k + 1);
          int_axes.push_back(static_cast<int>(j));
          trivial = false;
        }
        break;
      }
      case Entry::Array:
        start[j] = 0, stop[j] = n;
        adv_axes.push_back(static_cast<int>(j));
        adv.push_back(e.arr);
        break;
      case Entry::Ellipsis:
        break;
    }
  }
  array b = trivial ? a : slice(a, start, stop, strides);
  if (!p.has_array) {
    if (int_axes.empty()) return b;
    Shape out;
    for (size_t j = 0, k = 0; j < nd; ++j) {
      if (k < int_axes.size() && int_axes[k] == static_cast<int>(j)) {
        ++k;
        continue;
      }
      out.push_back(b.shape()[j]);
    }
    return reshape(b, out);
  }
  // Advanced indexing: gather the broadcast index arrays, drop the gathered axes, and put the index
  // dimensions where NumPy puts them (in place when the index arrays are adjacent, else first).
  adv = broadcast_arrays(adv);
  const Shape idx_shape = adv[0].shape();
  Shape sizes = b.shape();
  for (int ax : adv_axes) sizes[ax] = 1;
  array g = gather(b, adv, adv_axes, sizes);
  Shape out = idx_shape, rest;
  for (size_t j = 0; j < nd; ++j) {
    if (std::find(adv_axes.begin(), adv_axes.end(), static_cast<int>(j)) == adv_axes.end()) rest.push_back(b.shape()[j]);
  }
  out.insert(out.end(), rest.begin(), rest.end());
  g = reshape(g, out);
  bool adjacent = adv_axes.back() - adv_axes.front() + 1 == static_cast<int>(adv_axes.size());
  const int first = adv_axes.front();
  if (adjacent && first > 0) {
    const int ni = static_cast<int>(idx_shape.size());
    std::vector<int> perm;
    for (int k = 0; k < first; ++k) perm.push_back(ni + k);
    for (int k = 0; k < ni; ++k) perm.push_back(k);
    for (int k = ni + first; k < static_cast<int>(out.size()); ++k) perm.push_back(k);
    g = transpose(g, perm);
  }
  return g;
}

// The update for a target of shape `target`: leading size-1 axes beyond the target's rank dropped,
// then broadcast (MLX's rule: a[0] = ones((1, 1, 4)) is fine, a[0] = ones((2, 4)) is not).
array fit_update(array v, const Shape& target) {
  while (v.ndim() > target.size() && v.shape()[0] == 1) v = squeeze(v, 0);
  try {
    return broadcast_to(v, target);
  } catch (const std::invalid_argument&) {
    std::ostringstream os;
    os << "Cannot broadcast array of shape " << v.shape() << " into shape " << target << ".";
    throw std::invalid_argument(os.str());
  }
}

array update_of(nb::handle value, Dtype dtype) {
  array v = to_array(value, std::nullopt, "setitem");
  return v.dtype() == dtype ? v : astype(v, dtype);
}

bool is_bool_mask(nb::handle key) {
  if (nb::isinstance<array>(key)) return nb::cast<array>(key).dtype() == bool_;
  if (PyTuple_Check(key.ptr()) || PyList_Check(key.ptr()) || is_python_scalar(key) || key.is_none()) return false;
  if (PySlice_Check(key.ptr()) || key.ptr() == Py_Ellipsis || !is_array_like(key)) return false;
  return to_array(key).dtype() == bool_;
}

// The positions (into the flattened array) that reading a[key] visits, shaped as a[key].
array flat_positions(const array& a, nb::handle key) {
  Dtype it = a.size() > static_cast<size_t>(std::numeric_limits<int32_t>::max()) ? int64 : int32;
  array pos = reshape(arange(0.0, static_cast<double>(a.size()), 1.0, it), a.shape());
  return get_item(pos, key);
}

enum class Combine { Set, Add, Prod, Max, Min };

array scatter_at(const array& a, nb::handle key, const array& v0, Combine how) {
  array pos = flat_positions(a, key);
  array v = fit_update(v0, pos.shape());
  if (pos.size() == 0) return a;
  array flat = reshape(a, {static_cast<int32_t>(a.size())});
  array idx = reshape(pos, {static_cast<int32_t>(pos.size())});
  array upd = reshape(v, {static_cast<int32_t>(pos.size()), 1});
  array r;
  switch (how) {
    case Combine::Set: r = scatter(flat, idx, upd, 0); break;
    case Combine::Add: r = scatter_add(flat, idx, upd, 0); break;
    case Combine::Prod: r = scatter_prod(flat, idx, upd, 0); break;
    case Combine::Max: r = scatter_max(flat, idx, upd, 0); break;
    case Combine::Min: r = scatter_min(flat, idx, upd, 0); break;
  }
  return reshape(r, a.shape());
}

array set_item(const array& a, nb::handle key, nb::handle value) {
  array v = update_of(value, a.dtype());
  if (is_bool_mask(key)) {
    array mask = to_array(key);
    if (v.size() == 1) {
      if (mask.ndim() > a.ndim() || !std::equal(mask.shape().begin(), mask.shape().end(), a.shape().begin())) {
        std::ostringstream os;
        os << "A boolean mask must have the shape of the array's leading axes: the mask has shape " << mask.shape()
           << " and the array " << a.shape() << ".";
        throw std::invalid_argument(os.str());
      }
      Shape ms = mask.shape();
      ms.resize(a.ndim(), 1);
      return where(broadcast_to(reshape(mask, ms), a.shape()), reshape(v, {}), a);
    }
    return masked_scatter(a, mask, v);
  }
  Parsed p = parse(a, key);
  if (p.has_array) return scatter_at(a, key, v, Combine::Set);
  // Integers and slices: one SliceUpdate over the region they select.
  Shape start, stop, strides, region, view;
  size_t axis = 0;
  for (auto& e : p.entries) {
    if (e.kind == Entry::NewAxis) {
      view.push_back(1);
      continue;
    }
    const int32_t n = a.shape()[axis];
    if (e.kind == Entry::Int) {
      int64_t k = checked_int(e.i, n, axis);
      start.push_back(static_cast<int32_t>(k)), stop.push_back(static_cast<int32_t>(k + 1)), strides.push_back(1);
      region.push_back(1);
    } else {
      auto sp = slice_params(e.slice, n);
      start.push_back(sp.start), stop.push_back(sp.stop), strides.push_back(sp.stride);
      region.push_back(sp.length);
      view.push_back(sp.length);
    }
    ++axis;
  }
  array upd = reshape(fit_update(v, view), region);
  if (upd.size() == 0) return a;
  return slice_update(a, upd, start, stop, strides);
}

// a.at[key]: the target of an indexed update that returns a new array (duplicates accumulate).
struct ArrayAt {
  array a;
  nb::object key;
  array apply(nb::handle value, Combine how) const { return scatter_at(a, key, update_of(value, a.dtype()), how); }
};

}  // namespace

void init_indexing(nb::class_<array>& cls) {
  cls.def("__getitem__", [](const array& a, nb::handle key) { return get_item(a, key); }, "key"_a.none());
  cls.def(
      "__setitem__",
      [](nb::handle self, nb::handle key, nb::handle value) {
        array& a = nb::cast<array&>(self);
        a = set_item(a, key, value);
      },
      "key"_a.none(), "value"_a.none());

  nb::class_<ArrayAt>(cls, "ArrayAt", "a.at[idx]: indexed updates that return a new array (as MLX's array.at).")
      .def("__getitem__", [](const ArrayAt& at, nb::handle key) { return ArrayAt{at.a, nb::borrow(key)}; })
      .def("add", [](const ArrayAt& at, nb::handle v) { return at.apply(v, Combine::Add); }, "value"_a,
           "a with value added at the indices (repeated indices accumulate).")
      .def("subtract", [](const ArrayAt& at, nb::handle v) {
             return scatter_at(at.a, at.key, negative(update_of(v, at.a.dtype())), Combine::Add);
           }, "value"_a, "a with value subtracted at the indices.")
      .def("multiply", [](const ArrayAt& at, nb::handle v) { return at.apply(v, Combine::Prod); }, "value"_a,
           "a multiplied by value at the indices.")
      .def("divide", [](const ArrayAt& at, nb::handle v) {
             array d = to_array(v, std::nullopt, "at.divide");
             Dtype t = is_inexact(at.a.dtype()) ? at.a.dtype() : float32;
             array base = at.a.dtype() == t ? at.a : astype(at.a, t);
             return scatter_at(base, at.key, reciprocal(astype(d, t)), Combine::Prod);
           }, "value"_a, "a divided by value at the indices.")
      .def("maximum", [](const ArrayAt& at, nb::handle v) { return at.apply(v, Combine::Max); }, "value"_a,
           "The elementwise maximum of a and value at the indices.")
      .def("minimum", [](const ArrayAt& at, nb::handle v) { return at.apply(v, Combine::Min); }, "value"_a,
           "The elementwise minimum of a and value at the indices.");
  cls.def_prop_ro("at", [](const array& a) { return ArrayAt{a, nb::none()}; },
                  "Indexed updates: a.at[idx].add(v), .subtract, .multiply, .divide, .maximum, .minimum.");
}

}  // namespace kiln::py
