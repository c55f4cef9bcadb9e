// Helpers for the shape-family tests: read an evaluated array through its own strides (independent of
// the kernels under test) and walk a lazy graph to list the primitives it holds.
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <unordered_set>
#include <vector>

#include <kiln/kiln.h>

#include "kiln/primitive.h"

namespace shape_test {

namespace mx = kiln;

// Element values of `a` in row-major order, converted to T.
template <typename T>
std::vector<T> values(mx::array a) {
  a.eval();
  std::vector<T> out;
  out.reserve(a.size());
  const char* base = static_cast<const char*>(a.buffer()->ptr);
  const size_t isz = a.itemsize();
  std::vector<int64_t> idx(a.ndim(), 0);
  for (size_t n = 0; n < a.size(); ++n) {
    int64_t off = a.offset();
    for (size_t d = 0; d < a.ndim(); ++d) off += idx[d] * a.strides()[d];
    T v;
    mx::convert_values(base + off * static_cast<int64_t>(isz), a.dtype(), &v, mx::storage_dtype_of<T>, 1);
    out.push_back(v);
    for (int d = static_cast<int>(a.ndim()) - 1; d >= 0; --d) {
      if (++idx[d] < a.shape()[d]) break;
      idx[d] = 0;
    }
  }
  return out;
}

// Raw bytes of every element in row-major order (for exact comparisons of any dtype).
inline std::vector<uint8_t> bytes(mx::array a) {
  a.eval();
  std::vector<uint8_t> out;
  const char* base = static_cast<const char*>(a.buffer()->ptr);
  const size_t isz = a.itemsize();
  std::vector<int64_t> idx(a.ndim(), 0);
  for (size_t n = 0; n < a.size(); ++n) {
    int64_t off = a.offset();
    for (size_t d = 0; d < a.ndim(); ++d) off += idx[d] * a.strides()[d];
    const uint8_t* p = reinterpret_cast<const uint8_t*>(base + off * static_cast<int64_t>(isz));
    out.insert(out.end(), p, p + isz);
    for (int d = static_cast<int>(a.ndim()) - 1; d >= 0; --d) {
      if (++idx[d] < a.shape()[d]) break;
      idx[d] = 0;
    }
  }
  return out;
}

// 0, 1, 2, ... as float32 of the given shape.
inline mx::array iota(const mx::Shape& shape, mx::Dtype dtype = mx::float32) {
  size_t n = mx::shape_size(shape);
  std::vector<double> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<double>(i);
  mx::array a(shape, dtype);
  mx::convert_values(v.data(), mx::float64, a.raw_data(), dtype, n);
  return a;
}

// Names of the primitives in the unevaluated graph of `outs`, inputs before consumers.
inline std::vector<std::string> primitives(const std::vector<mx::array>& outs) {
  std::vector<std::string> names;
  std::unordered_set<const mx::Node*> seen;
  std::vector<std::pair<mx::array, size_t>> stack;
  for (auto& o : outs) {
    if (!o.has_primitive() || !seen.insert(o.node().get()).second) continue;
    stack.push_back({o, 0});
    while (!stack.empty()) {
      auto& [a, next] = stack.back();
      if (next < a.inputs().size()) {
        const mx::array& in = a.inputs()[next++];
        if (in.has_primitive() && seen.insert(in.node().get()).second) stack.push_back({in, 0});
        continue;
      }
      names.push_back(a.node()->def->name);
      stack.pop_back();
    }
  }
  return names;
}
inline std::vector<std::string> primitives(const mx::array& a) { return primitives(std::vector<mx::array>{a}); }

inline const mx::State& state(const mx::array& a) { return a.node()->state; }

// The message of the std::out_of_range `f` throws ("" when it throws nothing): MLX's swapaxes,
// moveaxis and diagonal throw it for an axis outside the array.
template <typename F>
std::string range_error_of(F&& f) {
  try {
    f();
  } catch (const std::out_of_range& e) {
    return e.what();
  }
  return "";
}

// The message of the std::invalid_argument `f` throws ("" when it throws nothing).
template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

inline const std::vector<mx::Dtype>& all_dtypes() {
  static const std::vector<mx::Dtype> t{mx::bool_,   mx::uint8,   mx::uint16,  mx::uint32, mx::uint64,
                                        mx::int8,    mx::int16,   mx::int32,   mx::int64,  mx::float16,
                                        mx::float32, mx::float64, mx::bfloat16, mx::complex64};
  return t;
}

}  // namespace shape_test
