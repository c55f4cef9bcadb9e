// CPU kernels of Gather and GatherAxis, and the index helpers shared with the scatters.
#include <algorithm>
#include <cstring>

#include "backend/cpu/kernels/index/index_kernels.h"

namespace kiln::index_detail {

std::vector<int64_t> index_offsets(const std::vector<array>& idx, const std::vector<int32_t>& axes, const Shape& dims,
                                   const Strides& strides, const Shape& window, bool clamp) {
  if (idx.empty()) return std::vector<int64_t>(1, 0);
  const Shape& ishape = idx[0].shape();
  std::vector<int64_t> off(idx[0].size(), 0);
  if (off.empty()) return off;
  const Strides rm = row_major_strides(ishape);
  for (size_t j = 0; j < idx.size(); ++j) {
    const array& ix = idx[j];
    const int ax = axes[j];
    const int64_t dim = dims[ax];
    const int64_t hi = dim - window[ax];  // largest start that keeps the window inside
    const int64_t st = strides[ax];
    dispatch_index(ix.dtype(), [&](auto tag) {
      using I = decltype(tag);
      const I* src = static_cast<const I*>(ix.buffer()->ptr);
      int64_t* dst = off.data();
      cpu::for_each_row<2>(ishape, {&rm, &ix.strides()}, {0, ix.offset()}, cpu::kGrainCheap,
                           [&](const std::array<int64_t, 2>& o, int64_t m, const std::array<int64_t, 2>& s) {
                             int64_t* d = dst + o[0];
                             const I* p = src + o[1];
                             for (int64_t t = 0; t < m; ++t) {
                               int64_t v = wrap_index(p[t * s[1]], dim);
                               if (v < 0 || v > hi) {
                                 if (clamp) {
                                   v = v < 0 ? 0 : hi;
                                 } else {
                                   d[t * s[0]] = kDropped;
                                   continue;
                                 }
                               }
                               d[t * s[0]] += v * st;
                             }
                           });
    });
  }
  return off;
}

Window make_window(const Shape& shape, const Strides& strides) {
  Window w;
  auto c = cpu::collapse<1>(shape, {&strides});
  for (auto n : c.shape) w.size *= n;
  w.inner = c.shape.back();
  w.inner_stride = c.strides[0].back();
  // Offsets of the outer runs, in row-major order of the outer dims.
  const int nd = static_cast<int>(c.shape.size()) - 1;
  int64_t count = w.inner == 0 ? 0 : w.size / w.inner;
  w.outer.assign(static_cast<size_t>(count), 0);
  std::vector<int64_t> ix(std::max(nd, 0), 0);
  int64_t cur = 0;
  for (int64_t r = 0; r < count; ++r) {
    w.outer[r] = cur;
    for (int d = nd - 1; d >= 0; --d) {
      cur += c.strides[0][d];
      if (++ix[d] < c.shape[d]) break;
      cur -= c.strides[0][d] * c.shape[d];
      ix[d] = 0;
    }
  }
  return w;
}

namespace {

template <typename T>
void gather_impl(const array& a, const std::vector<int64_t>& offsets, const Window& w, array& out) {
  const T* src = static_cast<const T*>(a.buffer()->ptr) + a.offset();
  T* dst = out.data<T>();
  const size_t n = offsets.size();
  const int64_t S = w.size;
  if (S == 1) {
    cpu::parallel_for(n, cpu::kGrainCheap, [&](size_t b, size_t e) {
      for (size_t i = b; i < e; ++i) dst[i] = src[offsets[i]];
    });
    return;
  }
  if (w.inner_stride != 1 && w.inner >= 32 && n >= 8) {
    // Strided runs (e.g. take along a later axis): walking one index's window touches a new cache line
    // and page per element. Instead take a block of each run for every index in turn, so the block's
    // source lines stay cached while all indices read them; writes stay sequential per index.
    constexpr int64_t TB = 64;
    const int64_t tblocks = (w.inner + TB - 1) / TB;
    const size_t units = w.outer.size() * static_cast<size_t>(tblocks);
    const size_t ugrain = std::max<size_t>(1, cpu::kGrainCheap / (n * TB));
    cpu::parallel_for(units, ugrain, [&](size_t b, size_t e) {
      for (size_t u = b; u < e; ++u) {
        const int64_t r = static_cast<int64_t>(u) / tblocks;
        const int64_t t0 = (static_cast<int64_t>(u) % tblocks) * TB;
        const int64_t t1 = std::min(w.inner, t0 + TB);
        for (size_t i = 0; i < n; ++i) {
          T* d = dst + static_cast<int64_t>(i) * S + r * w.inner;
          const T* p = src + offsets[i] + w.outer[r];
          for (int64_t t = t0; t < t1; ++t) d[t] = p[t * w.inner_stride];
        }
      }
    });
    return;
  }
  const size_t grain = std::max<size_t>(1, cpu::kGrainCheap / static_cast<size_t>(S));
  cpu::parallel_for(n, grain, [&](size_t b, size_t e) {
    for (size_t i = b; i < e; ++i) {
      const T* base = src + offsets[i];
      T* d = dst + static_cast<int64_t>(i) * S;
      for (int64_t o : w.outer) {
        const T* p = base + o;
        if (w.inner_stride == 1) {
          std::memcpy(d, p, sizeof(T) * static_cast<size_t>(w.inner));
        } else {
          for (int64_t t = 0; t < w.inner; ++t) d[t] = p[t * w.inner_stride];
        }
        d += w.inner;
      }
    }
  });
}

}  // namespace

void gather_cpu(const Node& node, const std::vector<array>& in, std::vector<array>& out) {
  const array& a = in[0];
  array& o = out[0];
  o.alloc();
  if (o.size() == 0) return;
  const auto& axes = node.state.ints(0);
  const Shape& slice = node.state.get<std::vector<int32_t>>(1);
  std::vector<array> idx(in.begin() + 1, in.end());
  auto offsets = index_offsets(idx, axes, a.shape(), a.strides(), slice, /*clamp=*/true);
  Window w = make_window(slice, a.strides());
  dispatch_width(a.dtype(), [&](auto tag) { gather_impl<decltype(tag)>(a, offsets, w, o); });
}

namespace {

template <typename T, typename I>
void gather_axis_impl(const array& a, const array& idx, int axis, array& out) {
  const T* src = static_cast<const T*>(a.buffer()->ptr);
  const I* ip = static_cast<const I*>(idx.buffer()->ptr);
  T* dst = out.data<T>();
  // Walk the index array; a's axis stride is zeroed so its walk stays at the start of the axis, and
  // the index value supplies the position along it.
  Strides ast = a.strides();
  const int64_t ax_stride = ast[axis];
  ast[axis] = 0;
  const int64_t dim = a.shape()[axis];
  cpu::for_each_row<3>(idx.shape(), {&out.strides(), &idx.strides(), &ast}, {0, idx.offset(), a.offset()},
                       cpu::kGrainCheap,
                       [&](const std::array<int64_t, 3>& o, int64_t m, const std::array<int64_t, 3>& s) {
                         T* d = dst + o[0];
                         const I* p = ip + o[1];
                         const T* q = src + o[2];
                         for (int64_t t = 0; t < m; ++t) {
                           int64_t v = wrap_index(p[t * s[1]], dim);
                           v = v < 0 ? 0 : (v >= dim ? dim - 1 : v);
                           d[t * s[0]] = q[t * s[2] + v * ax_stride];
                         }
                       });
}

}  // namespace

void gather_axis_cpu(const Node& node, const std::vector<array>& in, std::vector<array>& out) {
  const array& a = in[0];
  const array& idx = in[1];
  array& o = out[0];
  o.alloc();
  if (o.size() == 0) return;
  const int axis = node.state.i(0);
  dispatch_width(a.dtype(), [&](auto vt) {
    dispatch_index(idx.dtype(), [&](auto it) {
      gather_axis_impl<decltype(vt), decltype(it)>(a, idx, axis, o);
    });
  });
}

}  // namespace kiln::index_detail
