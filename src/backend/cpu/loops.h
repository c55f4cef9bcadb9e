// Strided loops shared by the element-wise kernels. One loop walks N arrays of one logical shape with
// their own strides: dimensions that are contiguous for every array are merged, the innermost
// dimension becomes a plain loop the compiler can vectorize, and large arrays are split across threads.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "core/dispatch.h"
#include "backend/cpu/threading.h"
#include "kiln/array.h"

namespace kiln::cpu {

template <size_t N>
struct Collapsed {
  std::vector<int64_t> shape;                   // merged dims, outermost first
  std::array<std::vector<int64_t>, N> strides;  // per array
};

// Merge dimensions that are contiguous in every array; drop size-1 dimensions.
template <size_t N>
Collapsed<N> collapse(const Shape& shape, const std::array<const Strides*, N>& strides) {
  Collapsed<N> c;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1) continue;
    if (!c.shape.empty()) {
      bool merge = true;
      for (size_t k = 0; k < N; ++k) {
        if (c.strides[k].back() != (*strides[k])[d] * shape[d]) {
          merge = false;
          break;
        }
      }
      if (merge) {
        c.shape.back() *= shape[d];
        for (size_t k = 0; k < N; ++k) c.strides[k].back() = (*strides[k])[d];
        continue;
      }
    }
    c.shape.push_back(shape[d]);
    for (size_t k = 0; k < N; ++k) c.strides[k].push_back((*strides[k])[d]);
  }
  if (c.shape.empty()) {
    c.shape.push_back(1);
    for (size_t k = 0; k < N; ++k) c.strides[k].push_back(0);
  }
  return c;
}

// Calls row(offsets, n, inner_strides) for every innermost row, where offsets[k] is the element offset
// of array k at the start of the row (relative to `base[k]`).
template <size_t N, typename Row>
void for_each_row(const Shape& shape, const std::array<const Strides*, N>& strides,
                  const std::array<int64_t, N>& base, size_t grain, Row&& row) {
  Collapsed<N> c = collapse<N>(shape, strides);
  const int nd = static_cast<int>(c.shape.size());
  const int64_t inner = c.shape.back();
  std::array<int64_t, N> inner_st;
  for (size_t k = 0; k < N; ++k) inner_st[k] = c.strides[k].back();
  int64_t rows = 1;
  for (int d = 0; d < nd - 1; ++d) rows *= c.shape[d];
  if (rows == 0 || inner == 0) return;
  size_t row_grain = std::max<size_t>(1, grain / static_cast<size_t>(inner));
  parallel_for(static_cast<size_t>(rows), row_grain, [&](size_t b, size_t e) {
    // Decompose the first row index into a multi-index over the outer dims.
    std::vector<int64_t> idx(std::max(nd - 1, 0));
    std::array<int64_t, N> off = base;
    int64_t r = static_cast<int64_t>(b);
    for (int d = nd - 2; d >= 0; --d) {
      idx[d] = r % c.shape[d];
      r /= c.shape[d];
      for (size_t k = 0; k < N; ++k) off[k] += idx[d] * c.strides[k][d];
    }
    for (size_t i = b; i < e; ++i) {
      row(off, inner, inner_st);
      for (int d = nd - 2; d >= 0; --d) {
        for (size_t k = 0; k < N; ++k) off[k] += c.strides[k][d];
        if (++idx[d] < c.shape[d]) break;
        for (size_t k = 0; k < N; ++k) off[k] -= c.strides[k][d] * c.shape[d];
        idx[d] = 0;
      }
    }
  });
}

// out[i] = op(in[i]); `out` gets a fresh row-contiguous buffer.
template <typename In, typename Out, typename Op>
void unary_loop(const array& in, array& out, Op op) {
  out.alloc();
  const In* src = static_cast<const In*>(in.buffer()->ptr);
  Out* dst = out.data<Out>();
  const size_t n = out.size();
  if (in.row_contiguous()) {
    src += in.offset();
    parallel_for(n, kGrainCheap, [&](size_t b, size_t e) {
      for (size_t i = b; i < e; ++i) dst[i] = op(src[i]);
    });
    return;
  }
  for_each_row<2>(out.shape(), {&out.strides(), &in.strides()}, {0, in.offset()}, kGrainCheap,
                  [&](const std::array<int64_t, 2>& o, int64_t m, const std::array<int64_t, 2>& st) {
                    Out* d = dst + o[0];
                    const In* s = src + o[1];
                    const int64_t ss = st[1];
                    if (ss == 1) {
                      for (int64_t i = 0; i < m; ++i) d[i] = op(s[i]);
                    } else {
                      for (int64_t i = 0; i < m; ++i) d[i] = op(s[i * ss]);
                    }
                  });
}

// out[i] = op(a[i], b[i]) for a and b of out's shape (already broadcast, any strides).
template <typename A, typename B, typename Out, typename Op>
void binary_loop(const array& a, const array& b, array& out, Op op) {
  out.alloc();
  const A* pa = static_cast<const A*>(a.buffer()->ptr);
  const B* pb = static_cast<const B*>(b.buffer()->ptr);
  Out* dst = out.data<Out>();
  const size_t n = out.size();
  const bool a_scalar = a.size() == 1 || a.ndim() == 0;
  const bool b_scalar = b.size() == 1 || b.ndim() == 0;
  if ((a.row_contiguous() || a_scalar) && (b.row_contiguous() || b_scalar) && a.size() == n && b.size() == n) {
    pa += a.offset();
    pb += b.offset();
    parallel_for(n, kGrainCheap, [&](size_t s, size_t e) {
      for (size_t i = s; i < e; ++i) dst[i] = op(pa[i], pb[i]);
    });
    return;
  }
  for_each_row<3>(out.shape(), {&out.strides(), &a.strides(), &b.strides()}, {0, a.offset(), b.offset()},
                  kGrainCheap, [&](const std::array<int64_t, 3>& o, int64_t m, const std::array<int64_t, 3>& st) {
                    Out* d = dst + o[0];
                    const A* x = pa + o[1];
                    const B* y = pb + o[2];
                    const int64_t sa = st[1], sb = st[2];
                    if (sa == 1 && sb == 1) {
                      for (int64_t i = 0; i < m; ++i) d[i] = op(x[i], y[i]);
                    } else if (sa == 1 && sb == 0) {
                      const B yv = *y;
                      for (int64_t i = 0; i < m; ++i) d[i] = op(x[i], yv);
                    } else if (sa == 0 && sb == 1) {
                      const A xv = *x;
                      for (int64_t i = 0; i < m; ++i) d[i] = op(xv, y[i]);
                    } else {
                      for (int64_t i = 0; i < m; ++i) d[i] = op(x[i * sa], y[i * sb]);
                    }
                  });
}

// Copy any strided array into a fresh row-contiguous buffer of the same dtype.
void copy_to_contiguous(const array& in, array& out);
// A row-contiguous version of `a` (itself when it already is).
array contiguous_copy(const array& a);

}  // namespace kiln::cpu
