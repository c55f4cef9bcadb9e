// CPU kernels of the slicing rows (primitives/shape/slicing.cpp): Slice, SliceUpdate, DynamicSlice,
// DynamicSliceUpdate and Split. Slices and split pieces are views of the input; updates copy the source
// once and write the update region.
#include <algorithm>
#include <type_traits>

#include "backend/cpu/kernels/shape/shape_kernels.h"
#include "backend/cpu/loops.h"
#include "core/dispatch.h"
#include "primitives/shape/shape_state.h"

namespace kiln::cpu {

namespace {

using shape_detail::check_region;
using shape_detail::shp;

void slice_cpu(const Node& n, const std::vector<array>& in, std::vector<array>& out) {
  const array& a = in[0];
  array& o = out[0];
  const Shape &start = shp(n.state, 0), &k = shp(n.state, 2);
  check_region(a.shape(), start, k, o.shape(), "slice");
  Strides st(a.ndim());
  int64_t off = a.offset();
  for (size_t i = 0; i < a.ndim(); ++i) {
    st[i] = a.strides()[i] * k[i];
    if (o.size() > 0) off += a.strides()[i] * start[i];
  }
  o.set_view(a, std::move(st), off);
}

// The output starts as a copy of the source (or shares it when nothing is written).
void copy_source(const array& src, array& o) {
  if (src.size() == 0) {
    o.set_view(src, src.strides(), src.offset());
  } else {
    cpu::copy_to_contiguous(src, o);
  }
}

void slice_update_cpu(const Node& n, const std::vector<array>& in, std::vector<array>& out) {
  const array &src = in[0], &upd = in[1];
  array& o = out[0];
  if (upd.size() == 0) {
    o.set_view(src, src.strides(), src.offset());
    return;
  }
  const Shape &start = shp(n.state, 0), &k = shp(n.state, 2);
  check_region(src.shape(), start, k, upd.shape(), "slice_update");
  copy_source(src, o);
  Strides st(o.ndim());
  int64_t off = 0;
  for (size_t i = 0; i < o.ndim(); ++i) {
    st[i] = o.strides()[i] * k[i];
    off += o.strides()[i] * start[i];
  }
  cpu::copy_into(upd, o, st, off);
}

// The element offset of the window: start values read as signed integers and clamped so the window of
// `window` fits inside `a` (MLX reads them unchecked; a bad start must not reach outside the buffer).
int64_t dynamic_offset(const array& start, const std::vector<int32_t>& axes, const Shape& shape,
                       const Shape& window, const Strides& strides) {
  int64_t off = 0;
  const char* base = static_cast<const char*>(start.buffer()->ptr);
  const int64_t sst = start.ndim() == 1 ? start.strides()[0] : 0;
  detail::dispatch_all(start.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_integral_v<T>) {
      const T* p = reinterpret_cast<const T*>(base) + start.offset();
      for (size_t i = 0; i < axes.size(); ++i) {
        int64_t v = static_cast<int64_t>(p[static_cast<int64_t>(i) * sst]);
        if constexpr (std::is_same_v<T, uint64_t>) {
          if (p[static_cast<int64_t>(i) * sst] > static_cast<uint64_t>(INT64_MAX)) v = INT64_MAX;
        }
        const int ax = axes[i];
        v = std::clamp<int64_t>(v, 0, std::max<int64_t>(shape[ax] - window[ax], 0));
        off += v * strides[ax];
      }
    }
  });
  return off;
}

void dynamic_slice_cpu(const Node& n, const std::vector<array>& in, std::vector<array>& out) {
  const array& a = in[0];
  array& o = out[0];
  int64_t off = a.offset();
  if (o.size() > 0) off += dynamic_offset(in[1], n.state.ints(0), a.shape(), o.shape(), a.strides());
  o.set_view(a, a.strides(), off);
}

void dynamic_slice_update_cpu(const Node& n, const std::vector<array>& in, std::vector<array>& out) {
  const array &src = in[0], &upd = in[1];
  array& o = out[0];
  if (upd.size() == 0) {
    o.set_view(src, src.strides(), src.offset());
    return;
  }
  copy_source(src, o);
  int64_t off = dynamic_offset(in[2], n.state.ints(0), o.shape(), upd.shape(), o.strides());
  cpu::copy_into(upd, o, o.strides(), off);
}

void split_cpu(const Node& n, const std::vector<array>& in, std::vector<array>& out) {
  const array& a = in[0];
  const Shape& idx = shp(n.state, 0);
  const int ax = n.state.i(1);
  for (size_t i = 0; i < out.size(); ++i) {
    int64_t begin = i == 0 ? 0 : idx[i - 1];
    int64_t off = a.offset() + (out[i].size() > 0 ? begin * a.strides()[ax] : 0);
    out[i].set_view(a, a.strides(), off);
  }
}

}  // namespace

void register_cpu_slicing(detail::KernelTable& table) {
  table.add({{"Slice", slice_cpu}, {"SliceUpdate", slice_update_cpu}, {"DynamicSlice", dynamic_slice_cpu},
             {"DynamicSliceUpdate", dynamic_slice_update_cpu}, {"Split", split_cpu}});
}

}  // namespace kiln::cpu
