// The CPU's runner of fused element-wise groups (backend/cpu/fusion.h).
#include "backend/cpu/fusion.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <exception>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "backend/cpu/threading.h"
#include "core/allocator.h"
#include "core/env_switch.h"
#include "core/fusion.h"

namespace kiln::cpu {

namespace {

using detail::fusion::Group;

// The default tile: 16384 elements, 8192 when the group has 8-byte values, so a tile buffer is at most
// 64 KiB and the few live at a time stay in the core's L2. Smaller tiles pay the ~0.2 us of a kernel
// call (array set-up, allocation) too often: a chain of 30 cheap float32 ops on 4M elements took, per
// call on one thread, 49 / 31 / 24 / 24 / 28 ms of CPU with tiles of 1024 / 4096 / 8192 / 16384 /
// 32768 (bench/bench_fusion.cpp BM_FusionCheapChainTile measures the same).
constexpr size_t kDefaultTile = 16384;
constexpr size_t kTileBytes = 64 << 10;
std::atomic<size_t> g_tile{0};

size_t tile_for(const Group& g) {
  if (size_t t = g_tile.load(std::memory_order_relaxed)) return t;
  size_t widest = 1;
  for (const array* e : g.externals) widest = std::max(widest, e->itemsize());
  for (auto& m : g.members) widest = std::max<size_t>(widest, m.node->specs[0].dtype.size);
  return std::min(kDefaultTile, kTileBytes / widest);
}

// How a tile of an external input is presented to the kernels.
enum class Feed {
  InPlace,  // row-contiguous with the output's element count: a view at the tile's offset
  Const,    // every element the same (a broadcast scalar): filled once per thread
  Gather,   // broadcast or strided: copied for each tile
};

struct External {
  const array* a = nullptr;
  Feed feed = Feed::InPlace;
  size_t esize = 0;
  const char* base = nullptr;  // the element at the array's offset
  // Gather: the dimensions of the output, size-1 ones dropped and contiguous runs merged, with this
  // input's element strides (0 along broadcast dimensions), outermost first.
  std::vector<int64_t> shape, strides;
};

External plan_external(const array& e, const Shape& shape, size_t n) {
  External x;
  x.a = &e;
  x.esize = e.itemsize();
  x.base = static_cast<const char*>(e.buffer()->ptr) + e.offset() * static_cast<int64_t>(x.esize);
  if (e.row_contiguous() && e.size() == n) return x;
  const int nd = static_cast<int>(shape.size());
  const int off = nd - static_cast<int>(e.ndim());
  bool all_zero = true;
  for (int d = 0; d < nd; ++d) {
    if (shape[d] == 1) continue;
    const int k = d - off;
    const int64_t st = (k < 0 || e.shape()[k] == 1) ? 0 : e.strides()[k];
    all_zero &= st == 0;
    if (!x.shape.empty() && x.strides.back() == st * shape[d]) {
      x.shape.back() *= shape[d];
      x.strides.back() = st;
      continue;
    }
    x.shape.push_back(shape[d]);
    x.strides.push_back(st);
  }
  x.feed = all_zero ? Feed::Const : Feed::Gather;
  if (x.shape.empty()) {
    x.shape.push_back(1);
    x.strides.push_back(0);
  }
  return x;
}

template <typename T>
void gather_tile(const External& x, size_t lo, size_t len, void* out, std::vector<int64_t>& idx) {
  const T* base = reinterpret_cast<const T*>(x.base);
  T* dst = static_cast<T*>(out);
  const int nd = static_cast<int>(x.shape.size());
  idx.assign(nd, 0);
  int64_t off = 0;
  size_t r = lo;
  for (int d = nd - 1; d >= 0; --d) {
    idx[d] = static_cast<int64_t>(r % static_cast<size_t>(x.shape[d]));
    r /= static_cast<size_t>(x.shape[d]);
    off += idx[d] * x.strides[d];
  }
  const int64_t inner = x.shape[nd - 1], s = x.strides[nd - 1];
  size_t done = 0;
  while (done < len) {
    const size_t m = std::min(static_cast<size_t>(inner - idx[nd - 1]), len - done);
    const T* src = base + off;
    T* d = dst + done;
    if (s == 1) {
      std::memcpy(d, src, m * sizeof(T));
    } else if (s == 0) {
      std::fill(d, d + m, *src);
    } else {
      for (size_t k = 0; k < m; ++k) d[k] = src[static_cast<int64_t>(k) * s];
    }
    done += m;
    idx[nd - 1] += static_cast<int64_t>(m);
    off += static_cast<int64_t>(m) * s;
    for (int dim = nd - 1; dim > 0 && idx[dim] == x.shape[dim]; --dim) {
      off -= idx[dim] * x.strides[dim];
      idx[dim] = 0;
      ++idx[dim - 1];
      off += x.strides[dim - 1];
    }
  }
}

void gather(const External& x, size_t lo, size_t len, void* out, std::vector<int64_t>& idx) {
  switch (x.esize) {
    case 1: return gather_tile<uint8_t>(x, lo, len, out, idx);
    case 2: return gather_tile<uint16_t>(x, lo, len, out, idx);
    case 4: return gather_tile<uint32_t>(x, lo, len, out, idx);
    case 8: return gather_tile<uint64_t>(x, lo, len, out, idx);
    default: throw std::logic_error("[fusion] Unexpected item size " + std::to_string(x.esize) + ".");
  }
}

template <typename T>
void fill_typed(const External& x, size_t len, void* out) {
  T v;
  std::memcpy(&v, x.base, sizeof(T));
  std::fill_n(static_cast<T*>(out), len, v);
}

// A typed fill: a memcpy of the run-time item size per element was a C-library call each (16384 calls
// per constant input per thread and call: ~25 us, more than a small group's arithmetic).
void fill_const(const External& x, size_t len, void* out) {
  switch (x.esize) {
    case 1: return fill_typed<uint8_t>(x, len, out);
    case 2: return fill_typed<uint16_t>(x, len, out);
    case 4: return fill_typed<uint32_t>(x, len, out);
    case 8: return fill_typed<uint64_t>(x, len, out);
    default: throw std::logic_error("[fusion] Unexpected item size " + std::to_string(x.esize) + ".");
  }
}

// The group's state on one thread: the tile arrays the members' kernels see.
class TileRunner {
 public:
  TileRunner(const Group& g, const std::vector<External>& ext, const std::vector<int>& last_use, size_t tile)
      : g_(g), ext_(ext), last_use_(last_use), tile_(tile) {}

  void run(size_t lo, size_t len) {
    if (len != len_) setup(len);
    for (size_t x = 0; x < ext_.size(); ++x) {
      const External& e = ext_[x];
      if (e.feed == Feed::InPlace) {
        ext_descs_[x]->offset = e.a->offset() + static_cast<int64_t>(lo);
      } else if (e.feed == Feed::Gather) {
        gather(e, lo, len, ext_bufs_[x]->ptr, idx_);
      }
    }
    const size_t nm = g_.members.size();
    for (size_t k = 0; k < nm; ++k) {
      const Group::Member& m = g_.members[k];
      detail::ArrayDesc& d = *val_descs_[k];
      d.data.reset();
      d.offset = 0;
      d.row_contiguous = true;
      m.kernel(*m.node, ins_[k], outs_[k]);
      if (!outs_[k][0].is_same(vals_[k])) {
        throw std::logic_error("[fusion] The " + m.node->def->name + " kernel replaced its output array.");
      }
      if (!d.data || !d.row_contiguous) {
        throw std::logic_error("[fusion] The " + m.node->def->name +
                               " kernel did not produce a row-contiguous output for a tile.");
      }
      if (m.out.valid() && m.donor < 0) write(k, lo, len);
      for (int a : m.args) {
        if (a >= 0 && last_use_[a] == static_cast<int>(k) && !g_.members[a].out.valid()) val_descs_[a]->data.reset();
      }
    }
    // The donated output last: its buffer is an input's, which the members above read for this tile.
    for (size_t k = 0; k < nm; ++k) {
      if (g_.members[k].donor >= 0) write(k, lo, len);
    }
  }

 private:
  void write(size_t k, size_t lo, size_t len) {
    const array& out = g_.members[k].out;
    const size_t isz = out.itemsize();
    char* dst = static_cast<char*>(out.buffer()->ptr) + lo * isz;
    const void* src = vals_[k].raw_data();
    if (src != dst) std::memmove(dst, src, len * isz);
  }

  void setup(size_t len) {
    len_ = len;
    const Shape shape{static_cast<int32_t>(len)};
    const size_t ne = ext_.size(), nm = g_.members.size();
    ext_views_.resize(ne);
    ext_descs_.resize(ne);
    ext_bufs_.resize(ne);
    for (size_t x = 0; x < ne; ++x) {
      const External& e = ext_[x];
      const array& a = *e.a;
      if (e.feed == Feed::InPlace) {
        ext_views_[x] = array(a.buffer(), shape, a.dtype(), a.offset());
      } else {
        if (!ext_bufs_[x]) {
          const size_t cap = std::min(tile_, g_.size);
          ext_bufs_[x] = detail::allocate(cap * e.esize);
          if (e.feed == Feed::Const) fill_const(e, cap, ext_bufs_[x]->ptr);
        }
        ext_views_[x] = array(ext_bufs_[x], shape, a.dtype(), 0);
      }
      ext_descs_[x] = ext_views_[x].desc_ptr().get();
    }
    vals_.resize(nm);
    val_descs_.resize(nm);
    ins_.resize(nm);
    outs_.resize(nm);
    for (size_t k = 0; k < nm; ++k) {
      vals_[k] = array(shape, g_.members[k].node->specs[0].dtype, nullptr, 0);
      val_descs_[k] = vals_[k].desc_ptr().get();
    }
    for (size_t k = 0; k < nm; ++k) {
      const Group::Member& m = g_.members[k];
      ins_[k].clear();
      for (int a : m.args) ins_[k].push_back(a >= 0 ? vals_[a] : ext_views_[~a]);
      outs_[k].assign(1, vals_[k]);
    }
  }

  const Group& g_;
  const std::vector<External>& ext_;
  const std::vector<int>& last_use_;
  const size_t tile_;
  size_t len_ = 0;
  std::vector<array> ext_views_;
  std::vector<detail::ArrayDesc*> ext_descs_;
  std::vector<std::shared_ptr<detail::Data>> ext_bufs_;
  std::vector<array> vals_;
  std::vector<detail::ArrayDesc*> val_descs_;
  std::vector<std::vector<array>> ins_, outs_;
  std::vector<int64_t> idx_;
};

// ------------------------------------------------------------------------------------------------
// Groups whose members all have tile functions.

// Elements per tile: the group's few live values (slots) of 1024 float32 elements take 4 KiB each, so
// they and the tiles of its inputs stay in the core's L1 data cache. 30 adds and multiplies on 4M floats
// (bench/bench_fusion.cpp BM_FusionCheapChainTile) took 10.1 / 6.7 / 9.5 / 11.2 ms with tiles of 256 / 1024
// / 4096 / 16384 elements on 2 threads, against 9.1 ms at the kernels' best (16384).
constexpr size_t kFnTile = 1024;
// A thread's share of the tiles starts at this many elements, as the cheap kernels' grain does.
constexpr size_t kFnGrainElements = size_t(1) << 15;

std::atomic<size_t> g_fn_groups{0};

detail::EnvSwitch& fn_switch() {
  static detail::EnvSwitch s("KILN_FUSION_TILES");
  return s;
}

// Where each member writes its output within a tile.
struct FnPlan {
  size_t tile = 0;
  size_t slot_bytes = 0;  // the distance between slots: a tile of the widest member type and a gap
  int nslots = 0;
  std::vector<int> slot;  // per member: its slot, or -1 when it writes straight into its output buffer
};

FnPlan plan_slots(const Group& g, const std::vector<int>& last_use) {
  FnPlan p;
  p.tile = g_tile.load(std::memory_order_relaxed);
  if (!p.tile) p.tile = kFnTile;
  p.tile = std::min(p.tile, g.size);
  size_t widest = 1;
  for (auto& m : g.members) widest = std::max<size_t>(widest, m.node->specs[0].dtype.size);
  // Slots 4 KiB apart would make a member's loads and stores alias in the core's store forwarding (same
  // address bits 0-11), so the stride is three cache lines past whole lines.
  p.slot_bytes = (p.tile * widest + 63) / 64 * 64 + 192;
  const size_t nm = g.members.size();
  p.slot.assign(nm, -1);
  std::vector<int> free_slots;
  for (size_t k = 0; k < nm; ++k) {
    const Group::Member& m = g.members[k];
    if (!(m.out.valid() && m.donor < 0)) {
      if (free_slots.empty()) {
        p.slot[k] = p.nslots++;
      } else {
        p.slot[k] = free_slots.back();
        free_slots.pop_back();
      }
    }
    // The slots of values this member reads for the last time serve the next members (not this one's
    // output: a tile function's input never aliases its output).
    for (size_t j = 0; j < m.args.size(); ++j) {
      const int a = m.args[j];
      if (a < 0 || last_use[a] != static_cast<int>(k) || p.slot[a] < 0) continue;
      bool again = false;  // the same value twice among this member's inputs
      for (size_t i = 0; i < j; ++i) again |= m.args[i] == a;
      if (!again) free_slots.push_back(p.slot[a]);
    }
  }
  return p;
}

// One thread's run over its tiles.
class FnRunner {
 public:
  FnRunner(const Group& g, const std::vector<External>& ext, const std::vector<TileFn>& fns, const FnPlan& plan)
      : g_(g), ext_(ext), fns_(fns), plan_(plan) {
    const size_t ne = ext.size(), nm = g.members.size();
    ext_bufs_.resize(ne);
    for (size_t x = 0; x < ne; ++x) {
      if (ext[x].feed == Feed::InPlace) continue;
      ext_bufs_[x] = detail::allocate(plan.tile * ext[x].esize);
      if (ext[x].feed == Feed::Const) fill_const(ext[x], plan.tile, ext_bufs_[x]->ptr);
    }
    if (plan.nslots > 0) slots_ = detail::allocate(static_cast<size_t>(plan.nslots) * plan.slot_bytes);
    ext_ptr_.resize(ne);
    val_ptr_.resize(nm);
    size_t most = 0;
    for (auto& m : g.members) most = std::max(most, m.args.size());
    in_.resize(most);
  }

  void run(size_t lo, size_t len) {
    for (size_t x = 0; x < ext_.size(); ++x) {
      const External& e = ext_[x];
      if (e.feed == Feed::InPlace) {
        ext_ptr_[x] = e.base + lo * e.esize;
      } else {
        if (e.feed == Feed::Gather) gather(e, lo, len, ext_bufs_[x]->ptr, idx_);
        ext_ptr_[x] = ext_bufs_[x]->ptr;
      }
    }
    char* slots = slots_ ? static_cast<char*>(slots_->ptr) : nullptr;
    const size_t nm = g_.members.size();
    for (size_t k = 0; k < nm; ++k) {
      const Group::Member& m = g_.members[k];
      for (size_t j = 0; j < m.args.size(); ++j) {
        const int a = m.args[j];
        in_[j] = a >= 0 ? val_ptr_[a] : ext_ptr_[~a];
      }
      void* out = plan_.slot[k] >= 0
                      ? static_cast<void*>(slots + static_cast<size_t>(plan_.slot[k]) * plan_.slot_bytes)
                      : static_cast<void*>(static_cast<char*>(m.out.buffer()->ptr) + lo * m.out.itemsize());
      fns_[k](in_.data(), out, len);
      val_ptr_[k] = out;
    }
    // The donated output last: its buffer is an input's, which the members above read for this tile.
    for (size_t k = 0; k < nm; ++k) {
      const Group::Member& m = g_.members[k];
      if (m.donor < 0) continue;
      const size_t isz = m.out.itemsize();
      std::memcpy(static_cast<char*>(m.out.buffer()->ptr) + lo * isz, val_ptr_[k], len * isz);
    }
  }

 private:
  const Group& g_;
  const std::vector<External>& ext_;
  const std::vector<TileFn>& fns_;
  const FnPlan& plan_;
  std::vector<std::shared_ptr<detail::Data>> ext_bufs_;
  std::shared_ptr<detail::Data> slots_;
  std::vector<const void*> ext_ptr_;
  std::vector<const void*> val_ptr_;
  std::vector<const void*> in_;
  std::vector<int64_t> idx_;
};

// runner.run(lo, len) over the tiles of n elements, spread over the pool's threads (at least `grain` tiles a
// chunk), each chunk with its own runner (make()) made inside a ScratchScope, so its buffers cycle there. The
// first exception is rethrown once every thread is done; the others stop at their next tile.
template <typename Make>
void for_each_tile(size_t n, size_t tile, size_t grain, Make make) {
  const size_t ntiles = (n + tile - 1) / tile;
  std::mutex err_mu;
  std::exception_ptr err;
  std::atomic<bool> failed{false};
  parallel_for(ntiles, grain, [&](size_t tb, size_t te) {
    if (failed.load(std::memory_order_relaxed)) return;
    try {
      detail::ScratchScope scope;  // declared first: the runner's buffers go back to it
      auto runner = make();
      for (size_t t = tb; t < te && !failed.load(std::memory_order_relaxed); ++t) {
        const size_t lo = t * tile;
        runner.run(lo, std::min(tile, n - lo));
      }
    } catch (...) {
      std::lock_guard lk(err_mu);
      if (!err) err = std::current_exception();
      failed.store(true);
    }
  });
  if (err) std::rethrow_exception(err);
}

void run_with_tile_fns(Group& g, const std::vector<External>& ext, const std::vector<int>& last_use,
                       const std::vector<TileFn>& fns) {
  const FnPlan plan = plan_slots(g, last_use);
  for_each_tile(g.size, plan.tile, std::max<size_t>(1, kFnGrainElements / plan.tile),
                [&] { return FnRunner(g, ext, fns, plan); });
  g_fn_groups.fetch_add(1, std::memory_order_relaxed);
}

// The members' tile functions, or empty when one has none (or they are switched off).
std::vector<TileFn> tile_fns(const Group& g) {
  std::vector<TileFn> fns;
  if (!fn_switch().on()) return fns;
  const TileTable& tiles = tile_table();
  std::vector<Dtype> in;
  for (auto& m : g.members) {
    in.clear();
    for (int a : m.args) in.push_back(a >= 0 ? g.members[a].node->specs[0].dtype : g.externals[~a]->dtype());
    TileFn f = tiles.resolve(*m.node, in);
    if (!f) return {};
    fns.push_back(f);
  }
  return fns;
}

void run_group(Group& g) {
  const size_t n = g.size;
  std::vector<External> ext;
  ext.reserve(g.externals.size());
  for (const array* e : g.externals) ext.push_back(plan_external(*e, g.shape, n));
  std::vector<int> last_use(g.members.size(), -1);
  for (size_t k = 0; k < g.members.size(); ++k) {
    for (int a : g.members[k].args) {
      if (a >= 0) last_use[a] = static_cast<int>(k);
    }
  }
  if (std::vector<TileFn> fns = tile_fns(g); !fns.empty()) return run_with_tile_fns(g, ext, last_use, fns);
  const size_t tile = tile_for(g);
  for_each_tile(n, tile, 1, [&] { return TileRunner(g, ext, last_use, tile); });
}

}  // namespace

size_t tile_elements() {
  size_t t = g_tile.load(std::memory_order_relaxed);
  return t ? t : kDefaultTile;
}
void set_tile_elements(size_t n) { g_tile.store(n, std::memory_order_relaxed); }

void install_fusion(const detail::KernelTable& table) { detail::fusion::set_group_runner(table, run_group); }

void TileTable::add(const char* primitive, TileResolver r) {
  const PrimitiveDef* def = registry::find(primitive);
  if (!def) {
    throw std::logic_error(std::string("[fusion] The CPU tile table names a primitive the registry does not have: ") +
                           primitive + ".");
  }
  if (!r) throw std::logic_error(std::string("[fusion] Null tile resolver given for ") + primitive + ".");
  if (by_row_.size() <= def->index) by_row_.resize(def->index + 1, nullptr);
  if (by_row_[def->index]) {
    throw std::logic_error(std::string("[fusion] Primitive ") + primitive + " has two tile resolvers on the CPU.");
  }
  by_row_[def->index] = r;
}

const TileTable& tile_table() {
  static const TileTable table = [] {
    TileTable t;
    register_cpu_elementwise_tiles(t);
    return t;
  }();
  return table;
}

bool tile_functions_enabled() { return fn_switch().on(); }
void set_tile_functions(bool on) { fn_switch().set(on); }
size_t tile_function_groups() { return g_fn_groups.load(std::memory_order_relaxed); }

}  // namespace kiln::cpu
