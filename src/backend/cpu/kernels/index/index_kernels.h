// Shared pieces of the gather/scatter CPU kernels (gather.cpp, scatter.cpp), and the kernels that
// register_cpu_index() (index.cpp) adds to the CPU table.
#pragma once

#include <cstdint>
#include <limits>
#include <stdexcept>
#include <vector>

#include "core/dispatch.h"
#include "backend/cpu/loops.h"
#include "kiln/primitive.h"

namespace kiln::index_detail {

void gather_cpu(const Node& node, const std::vector<array>& in, std::vector<array>& out);
void gather_axis_cpu(const Node& node, const std::vector<array>& in, std::vector<array>& out);
void scatter_cpu(const Node& node, const std::vector<array>& in, std::vector<array>& out);
void scatter_axis_cpu(const Node& node, const std::vector<array>& in, std::vector<array>& out);
void masked_scatter_cpu(const Node& node, const std::vector<array>& in, std::vector<array>& out);

// Calls f with a value of the index array's C++ type (the integer dtypes only; validated by `infer`).
template <typename F>
decltype(auto) dispatch_index(Dtype t, F&& f) {
  if (!is_integral(t)) throw std::logic_error("[index] Index arrays must have an integer dtype.");
  return detail::dispatch_all(t, [&](auto tag) -> decltype(auto) {
    if constexpr (std::is_integral_v<decltype(tag)> && !std::is_same_v<decltype(tag), bool>) return f(tag);
    else return f(int32_t{});  // unreachable
  });
}

// Calls f with an unsigned integer type of the dtype's width: kernels that only move elements need
// one instantiation per width, not per dtype.
template <typename F>
decltype(auto) dispatch_width(Dtype t, F&& f) {
  switch (t.size) {
    case 1: return f(uint8_t{});
    case 2: return f(uint16_t{});
    case 4: return f(uint32_t{});
    default: return f(uint64_t{});
  }
}

// An index value as a position along an axis of `dim` elements: negative values count from the end
// (once, as in MLX). Values that stay outside [0, dim) come back unchanged (possibly negative, or
// >= dim); callers clamp or drop them.
template <typename I>
inline int64_t wrap_index(I v, int64_t dim) {
  if constexpr (std::is_signed_v<I>) {
    int64_t x = static_cast<int64_t>(v);
    return x < 0 ? x + dim : x;
  } else {
    if constexpr (sizeof(I) == 8) {
      if (v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return std::numeric_limits<int64_t>::max();
    }
    return static_cast<int64_t>(v);
  }
}

// Marks an index position whose window falls outside the array (scatter drops those updates). Any
// later additions of non-negative offsets keep it negative.
inline constexpr int64_t kDropped = std::numeric_limits<int64_t>::min() / 2;

// For every position of the common index shape (row-major), the element offset selected by the
// index arrays: sum_j pos_j * strides[axes[j]]. pos_j is the wrapped index; where the window
// [pos, pos + window[ax]) does not fit in dims[ax], `clamp` moves pos into range (gather) and otherwise
// the offset becomes negative (kDropped: scatter skips it).
std::vector<int64_t> index_offsets(const std::vector<array>& idx, const std::vector<int32_t>& axes, const Shape& dims,
                                   const Strides& strides, const Shape& window, bool clamp);

// A box of `shape` inside an array with `strides`, with mergeable dims merged: the box is `outer`
// runs (offsets in `outer`) of `inner` elements `inner_stride` apart.
struct Window {
  std::vector<int64_t> outer;
  int64_t inner = 1;
  int64_t inner_stride = 1;
  int64_t size = 1;
};
Window make_window(const Shape& shape, const Strides& strides);

}  // namespace kiln::index_detail
