// The CPU's runner of fused element-wise groups (core/fusion.h says what a group is).
//
// The group's output is cut into tiles (16384 elements, 8192 for 8-byte types), spread over the
// pool's threads.
// For each tile, every member's own kernel (from the CPU kernel table) runs on tile-sized row-major
// arrays: external inputs that are row-contiguous with the output's element count are viewed in
// place at the tile's offset, inputs broadcast to a constant are filled once per thread, and other
// broadcast or strided inputs are gathered for the tile; intermediates live in per-thread scratch
// blocks (core/allocator.h, ScratchScope) that the next member reuses. A member whose output is
// needed outside the group copies its tile to its buffer; a donated output (one that took over an
// input's buffer) is written last in each tile, after every member has read that tile of the input.
// Kernels called on a tile run serially (parallel_for nested in a worker, or below the grain).
#pragma once

#include <cstddef>

#include "core/kernels.h"

namespace kiln::cpu {

// Sets the CPU table's group runner (src/backend/backends.cpp, core/fusion.h set_group_runner).
void install_fusion(const detail::KernelTable& table);

// Elements per tile: set_tile_elements (tests, benchmarks) forces a size from the next group on; 0
// restores the default (16384 elements, 8192 when the group has 8-byte values). tile_elements()
// returns the forced size, or 16384.
size_t tile_elements();
void set_tile_elements(size_t n);

}  // namespace kiln::cpu
