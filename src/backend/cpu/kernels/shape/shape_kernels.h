// Private to the shape family's CPU kernels: the registration of their files (called by
// register_cpu_shape() in shape.cpp) and the copy helpers they share (copy.cpp: strided region copies
// and fills, dispatched on the item size so one loop serves every dtype).
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/kernels.h"
#include "kiln/array.h"
#include "kiln/primitive.h"

namespace kiln::cpu {

void register_cpu_views(detail::KernelTable& table);
void register_cpu_broadcast(detail::KernelTable& table);
void register_cpu_strided(detail::KernelTable& table);
void register_cpu_slicing(detail::KernelTable& table);
void register_cpu_joining(detail::KernelTable& table);
void register_cpu_creation(detail::KernelTable& table);

// Copy the elements of a `shape`-shaped region: from `src` (element strides `sst`, element offset
// `soff`) to `dst` (strides `dst_st`, offset `doff`); both are raw buffers of items of `isz` bytes.
void strided_copy(const void* src, const Strides& sst, int64_t soff, void* dst, const Strides& dst_st, int64_t doff,
                  const Shape& shape, size_t isz);
// Copy the whole of `src` (any strides) into the `src.shape()`-shaped region of `dst`'s buffer that starts
// at element `doff` and has strides `dst_st`.
void copy_into(const array& src, array& dst, const Strides& dst_st, int64_t doff);
// Fill `n` items of `isz` bytes at `dst` with the item at `value`.
void fill_items(void* dst, size_t n, const void* value, size_t isz);

}  // namespace kiln::cpu
