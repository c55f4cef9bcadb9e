// CPU kernels of Scatter, ScatterAxis and MaskedScatter. Each starts from a contiguous copy of the
// input and applies the updates in MLX's order (index position major, window minor), so repeated
// indices give the same result as MLX.
#include <algorithm>
#include <numeric>

#include "backend/cpu/ordering.h"
#include "backend/cpu/kernels/index/index_kernels.h"

namespace kiln::index_detail {

namespace {

// Scatter reduce codes (format spec 3.2).
enum ScatterType { kMax = 0, kMin = 1, kSum = 2, kProd = 3, kNone = 4 };

using cpu::ordered_greater;

// y op= x for one reduce type; 16-bit floats compute in float and round each step (as MLX's CPU).
template <int Type, typename T>
inline void combine(T& y, T x) {
  using A = detail::acc_t<T>;
  if constexpr (Type == kNone) {
    y = x;
  } else if constexpr (Type == kSum) {
    if constexpr (std::is_same_v<T, bool>) y = y || x;
    else y = static_cast<T>(static_cast<A>(y) + static_cast<A>(x));
  } else if constexpr (Type == kProd) {
    if constexpr (std::is_same_v<T, bool>) y = y && x;
    else y = static_cast<T>(static_cast<A>(y) * static_cast<A>(x));
  } else if constexpr (Type == kMax) {
    y = ordered_greater(y, x) ? y : x;
  } else {
    y = ordered_greater(x, y) ? y : x;
  }
}

template <typename F>
void dispatch_type(int type, F&& f) {
  switch (type) {
    case kMax: return f(std::integral_constant<int, kMax>{});
    case kMin: return f(std::integral_constant<int, kMin>{});
    case kSum: return f(std::integral_constant<int, kSum>{});
    case kProd: return f(std::integral_constant<int, kProd>{});
    default: return f(std::integral_constant<int, kNone>{});
  }
}

template <int Type, typename T>
void scatter_impl(const std::vector<int64_t>& offsets, const Window& w, bool disjoint, const array& upd, array& out) {
  T* dst = out.data<T>();
  const T* src = upd.data<T>();
  const int64_t S = w.size;
  const int64_t n = static_cast<int64_t>(offsets.size());
  const int64_t runs = static_cast<int64_t>(w.outer.size());
  auto run = [&](int64_t i, int64_t r) {
    T* d = dst + offsets[i] + w.outer[r];
    const T* u = src + i * S + r * w.inner;
    for (int64_t t = 0; t < w.inner; ++t) combine<Type>(d[t * w.inner_stride], u[t]);
  };
  if (disjoint && runs > 1 && static_cast<size_t>(n * S) >= cpu::kGrainCheap) {
    // Distinct window runs never touch the same element, so threads take runs and each keeps the
    // index order within its runs.
    size_t grain = std::max<size_t>(1, cpu::kGrainCheap / static_cast<size_t>(std::max<int64_t>(1, n * w.inner)));
    cpu::parallel_for(static_cast<size_t>(runs), grain, [&](size_t b, size_t e) {
      for (int64_t i = 0; i < n; ++i) {
        if (offsets[i] < 0) continue;
        for (size_t r = b; r < e; ++r) run(i, static_cast<int64_t>(r));
      }
    });
    return;
  }
  for (int64_t i = 0; i < n; ++i) {
    if (offsets[i] < 0) continue;
    for (int64_t r = 0; r < runs; ++r) run(i, r);
  }
}

}  // namespace

void scatter_cpu(const Node& node, const std::vector<array>& in, std::vector<array>& out) {
  const array& a = in[0];
  array& o = out[0];
  cpu::copy_to_contiguous(a, o);
  const array upd = cpu::contiguous_copy(in.back());
  if (o.size() == 0 || upd.size() == 0) return;
  const int type = node.state.i(0);
  const auto& axes = node.state.ints(1);
  std::vector<array> idx(in.begin() + 1, in.end() - 1);
  const size_t idx_ndim = upd.ndim() - a.ndim();
  Shape window(upd.shape().begin() + static_cast<std::ptrdiff_t>(idx_ndim), upd.shape().end());
  auto offsets = index_offsets(idx, axes, o.shape(), o.strides(), window, /*clamp=*/false);
  Window w = make_window(window, o.strides());
  // Window elements hit distinct outputs for distinct window positions when the window spans one
  // element along every indexed axis.
  bool disjoint = true;
  for (int ax : axes) disjoint = disjoint && window[ax] == 1;
  detail::dispatch_all(o.dtype(), [&](auto tag) {
    using T = decltype(tag);
    dispatch_type(type, [&](auto ty) { scatter_impl<decltype(ty)::value, T>(offsets, w, disjoint, upd, o); });
  });
}

namespace {

template <int Type, typename T, typename I>
void scatter_axis_impl(const array& idx, const array& upd, int axis, array& out) {
  T* dst = out.data<T>();
  const I* ip = static_cast<const I*>(idx.buffer()->ptr);
  const T* up = static_cast<const T*>(upd.buffer()->ptr);
  const int64_t dim = out.shape()[axis];
  const int64_t ax_stride = out.strides()[axis];
  // Move `axis` innermost so that all updates aimed at one output column run in order on one thread.
  Shape shape;
  Strides si, su, so;
  for (int d = 0; d < static_cast<int>(idx.ndim()); ++d) {
    if (d == axis) continue;
    shape.push_back(idx.shape()[d]);
    si.push_back(idx.strides()[d]);
    su.push_back(upd.strides()[d]);
    so.push_back(out.strides()[d]);
  }
  shape.push_back(idx.shape()[axis]);
  si.push_back(idx.strides()[axis]);
  su.push_back(upd.strides()[axis]);
  so.push_back(0);
  cpu::for_each_row<3>(shape, {&si, &su, &so}, {idx.offset(), upd.offset(), 0}, cpu::kGrainCheap,
                       [&](const std::array<int64_t, 3>& o, int64_t m, const std::array<int64_t, 3>& s) {
                         const I* p = ip + o[0];
                         const T* u = up + o[1];
                         T* d = dst + o[2];
                         for (int64_t t = 0; t < m; ++t) {
                           int64_t v = wrap_index(p[t * s[0]], dim);
                           if (v < 0 || v >= dim) continue;  // out of range: dropped
                           combine<Type>(d[t * s[2] + v * ax_stride], u[t * s[1]]);
                         }
                       });
}

}  // namespace

void scatter_axis_cpu(const Node& node, const std::vector<array>& in, std::vector<array>& out) {
  array& o = out[0];
  cpu::copy_to_contiguous(in[0], o);
  const array& idx = in[1];
  const array& upd = in[2];
  if (o.size() == 0 || idx.size() == 0) return;
  const int type = node.state.i(0) == 0 ? kSum : kNone;  // ScatterAxis codes: Sum 0, None 1
  const int axis = node.state.i(1);
  detail::dispatch_all(o.dtype(), [&](auto vt) {
    using T = decltype(vt);
    dispatch_index(idx.dtype(), [&](auto it) {
      using I = decltype(it);
      if (type == kSum) scatter_axis_impl<kSum, T, I>(idx, upd, axis, o);
      else scatter_axis_impl<kNone, T, I>(idx, upd, axis, o);
    });
  });
}

namespace {

template <typename T>
void masked_scatter_impl(const bool* mask, const T* src, T* dst, size_t batches, size_t mask_n, size_t src_n) {
  constexpr size_t kChunk = cpu::kGrainCheap;
  for (size_t b = 0; b < batches; ++b) {
    const bool* m = mask + b * mask_n;
    const T* s = src + b * src_n;
    T* d = dst + b * mask_n;
    // Count the true entries per chunk, then fill the chunks in parallel from their prefix sums.
    const size_t chunks = (mask_n + kChunk - 1) / kChunk;
    std::vector<size_t> start(chunks + 1, 0);
    cpu::parallel_for(chunks, 1, [&](size_t cb, size_t ce) {
      for (size_t c = cb; c < ce; ++c) {
        size_t e = std::min(mask_n, (c + 1) * kChunk), k = 0;
        for (size_t i = c * kChunk; i < e; ++i) k += m[i];
        start[c + 1] = k;
      }
    });
    std::partial_sum(start.begin(), start.end(), start.begin());
    if (start[chunks] > src_n) {
      throw std::runtime_error("[MaskedScatter::eval_cpu] Source does not have enough elements for mask.");
    }
    cpu::parallel_for(chunks, 1, [&](size_t cb, size_t ce) {
      for (size_t c = cb; c < ce; ++c) {
        size_t e = std::min(mask_n, (c + 1) * kChunk), k = start[c];
        for (size_t i = c * kChunk; i < e; ++i) {
          if (m[i]) d[i] = s[k++];
        }
      }
    });
  }
}

}  // namespace

void masked_scatter_cpu(const Node&, const std::vector<array>& in, std::vector<array>& out) {
  array& o = out[0];
  cpu::copy_to_contiguous(in[0], o);
  if (in[1].size() == 0) return;
  const array mask = cpu::contiguous_copy(in[1]);
  const array src = cpu::contiguous_copy(in[2]);
  const size_t batches = static_cast<size_t>(mask.shape()[0]);
  const size_t mask_n = mask.size() / batches;
  const size_t src_n = src.size() / batches;
  dispatch_width(o.dtype(), [&](auto tag) {
    using T = decltype(tag);
    masked_scatter_impl<T>(mask.data<bool>(), src.data<T>(), o.data<T>(), batches, mask_n, src_n);
  });
}

}  // namespace kiln::index_detail
