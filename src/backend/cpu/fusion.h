// The CPU's runner of fused element-wise groups (core/fusion.h says what a group is).
//
// Two ways to run a group, both one loop over the output cut into tiles spread over the pool's threads:
//  - Tile functions (the fast way), when every member has one (TileTable below: pointer-level loops over
//    row-contiguous tiles, registered per primitive by the kernel family beside its kernels and computing
//    the kernel's own arithmetic). Tiles are small (1024 elements), so the group's live values stay in the
//    core's L1 data cache, and each member is one call on raw pointers. Values live in a few per-thread
//    slots, reused once their last reader is done; a member whose output is needed outside the group
//    writes straight into its buffer at the tile's offset (a donated output goes through a slot and is
//    copied last, after every member has read that tile of the input whose buffer it takes over).
//  - Otherwise every member's own kernel (from the CPU kernel table) runs on tile-sized row-major arrays
//    (16384 elements, 8192 for 8-byte types): intermediates live in per-thread scratch blocks
//    (core/allocator.h, ScratchScope) that the next member reuses; a member whose output is needed outside
//    the group copies its tile to its buffer; a donated output is written last in each tile. Kernels
//    called on a tile run serially (parallel_for nested in a worker, or below the grain).
// Either way, external inputs that are row-contiguous with the output's element count are read in place
// at the tile's offset, inputs broadcast to a constant are filled once per thread, and other broadcast or
// strided inputs are gathered for each tile.
#pragma once

#include <cstddef>
#include <vector>

#include "core/kernels.h"

namespace kiln::cpu {

// Sets the CPU table's group runner (src/backend/backends.cpp, core/fusion.h set_group_runner).
void install_fusion(const detail::KernelTable& table);

// Elements per tile: set_tile_elements (tests, benchmarks) forces a size from the next group on, for both
// ways of running it; 0 restores the defaults (1024 elements with tile functions; through the kernels
// 16384, 8192 when the group has 8-byte values). tile_elements() returns the forced size, or 16384.
size_t tile_elements();
void set_tile_elements(size_t n);

// A member's tile function: out[i] = f(in[0][i], in[1][i], ...) for i < n, every pointer at the first
// element of a row-contiguous tile of the node's input (in input order) or output dtype. It computes the
// same values, bit for bit, as the node's kernel on row-contiguous arrays. in and out never alias.
using TileFn = void (*)(const void* const* in, void* out, size_t n);
// A row's resolver: the node's tile function for its state and these input dtypes, or null where there is
// none (the group then runs through the kernels). The dtypes come from the group: a planned program's
// nodes do not hold their inputs.
using TileResolver = TileFn (*)(const Node& node, const std::vector<Dtype>& in);

class TileTable {
 public:
  // Throws std::logic_error when no row has that name or it already has a resolver.
  void add(const char* primitive, TileResolver r);
  struct Entry {
    const char* primitive;
    TileResolver r;
  };
  void add(std::initializer_list<Entry> entries) {
    for (const Entry& e : entries) add(e.primitive, e.r);
  }
  TileResolver find(const PrimitiveDef& def) const { return def.index < by_row_.size() ? by_row_[def.index] : nullptr; }
  TileFn resolve(const Node& node, const std::vector<Dtype>& in) const {
    TileResolver r = find(*node.def);
    return r ? r(node, in) : nullptr;
  }

 private:
  std::vector<TileResolver> by_row_;
};

// The CPU's tile functions, built on first use from the element-wise family
// (kernels/elementwise/unary.cpp: register_cpu_elementwise_tiles).
const TileTable& tile_table();
void register_cpu_elementwise_tiles(TileTable& table);

// Whether groups whose members all have tile functions run through them (default on; the environment
// variable KILN_FUSION_TILES=0 turns it off; set_tile_functions overrides it, for tests and benchmarks).
bool tile_functions_enabled();
void set_tile_functions(bool on);
// Groups run through tile functions since the process started (tests).
size_t tile_function_groups();

}  // namespace kiln::cpu
