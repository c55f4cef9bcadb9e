// Copy and fill loops shared by the shape family's kernels (concatenate, pad, slice updates, full).
#include <cstring>

#include "backend/cpu/kernels/shape/shape_kernels.h"
#include "backend/cpu/loops.h"

namespace kiln::cpu {

namespace {

template <typename T>
void copy_typed(const T* src, const Strides& sst, int64_t soff, T* dst, const Strides& dst_st, int64_t doff,
                const Shape& shape) {
  for_each_row<2>(shape, {&dst_st, &sst}, {doff, soff}, kGrainCheap,
                  [&](const std::array<int64_t, 2>& o, int64_t m, const std::array<int64_t, 2>& st) {
                    T* d = dst + o[0];
                    const T* s = src + o[1];
                    if (st[0] == 1 && st[1] == 1) {
                      std::memcpy(d, s, static_cast<size_t>(m) * sizeof(T));
                    } else if (st[1] == 0) {
                      const T v = *s;
                      for (int64_t i = 0; i < m; ++i) d[i * st[0]] = v;
                    } else {
                      for (int64_t i = 0; i < m; ++i) d[i * st[0]] = s[i * st[1]];
                    }
                  });
}

template <typename F>
void by_size(size_t isz, F&& f) {
  switch (isz) {
    case 1: f(uint8_t{}); break;
    case 2: f(uint16_t{}); break;
    case 4: f(uint32_t{}); break;
    case 8: f(uint64_t{}); break;
    default: throw std::logic_error("[copy] bad item size");
  }
}

}  // namespace

void strided_copy(const void* src, const Strides& sst, int64_t soff, void* dst, const Strides& dst_st, int64_t doff,
                  const Shape& shape, size_t isz) {
  for (auto d : shape) {
    if (d == 0) return;
  }
  by_size(isz, [&](auto tag) {
    using T = decltype(tag);
    copy_typed<T>(static_cast<const T*>(src), sst, soff, static_cast<T*>(dst), dst_st, doff, shape);
  });
}

void copy_into(const array& src, array& dst, const Strides& dst_st, int64_t doff) {
  if (src.size() == 0) return;
  strided_copy(src.buffer()->ptr, src.strides(), src.offset(), dst.buffer()->ptr, dst_st, doff, src.shape(),
               src.itemsize());
}

void fill_items(void* dst, size_t n, const void* value, size_t isz) {
  by_size(isz, [&](auto tag) {
    using T = decltype(tag);
    T v;
    std::memcpy(&v, value, sizeof(T));
    T* d = static_cast<T*>(dst);
    parallel_for(n, kGrainCheap, [&](size_t b, size_t e) {
      for (size_t i = b; i < e; ++i) d[i] = v;
    });
  });
}

}  // namespace kiln::cpu
