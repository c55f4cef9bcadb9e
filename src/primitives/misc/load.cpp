// The Load row and its builders (primitives/misc/load.h); its CPU kernel is in
// src/backend/cpu/kernels/misc/load.cpp.
#include "primitives/misc/load.h"

#include <algorithm>
#include <atomic>
#include <bit>
#include <mutex>

#include "primitives/common.h"

namespace kiln {

namespace {

std::atomic<uint64_t> g_reads{0};
std::atomic<uint64_t> g_mapped{0};

// One constant's source; the read happens once, whichever thread evaluates it first.
struct LoadSlot {
  std::shared_ptr<const io_detail::RandomSource> src;
  uint64_t offset = 0;
  uint64_t nbytes = 0;
  Dtype dtype = float32;
  mutable std::once_flag once;
  mutable std::shared_ptr<detail::Data> data;
  mutable std::atomic<bool> loaded{false};

  const std::shared_ptr<detail::Data>& get(detail::ParallelFor parallel) const {
    std::call_once(once, [&] {
      // In place when the source can lend the bytes at the element alignment (bool bytes other than 0
      // and 1 and big-endian hosts need the rewrite below, so they are always copied).
      const bool in_place = dtype != bool_ && std::endian::native == std::endian::little;
      if (auto v = in_place ? src->view(offset, nbytes, std::min<size_t>(dtype.size, 8)) : nullptr) {
        auto d = std::make_shared<detail::Data>();
        d->ptr = const_cast<void*>(v.get());  // read-only pages: no kernel writes into its inputs
        d->nbytes = nbytes;
        d->owner = std::const_pointer_cast<void>(std::move(v));
        g_reads.fetch_add(1, std::memory_order_relaxed);
        g_mapped.fetch_add(1, std::memory_order_relaxed);
        data = std::move(d);
        loaded.store(true, std::memory_order_release);
        return;
      }
      auto d = detail::allocate(nbytes);
      // Large payloads are read in pieces on several threads (pread is positional, so they do not share a
      // file position): copying from the page cache is CPU work, and a cold start pays it once per weight.
      constexpr uint64_t kPiece = uint64_t(4) << 20;
      auto* dst = static_cast<uint8_t*>(d->ptr);
      if (parallel && nbytes >= 2 * kPiece) {
        parallel(static_cast<size_t>((nbytes + kPiece - 1) / kPiece), 1, [&](size_t b, size_t e) {
          for (size_t i = b; i < e; ++i) {
            const uint64_t at = i * kPiece, n = std::min<uint64_t>(kPiece, nbytes - at);
            src->read_at(offset + at, dst + at, static_cast<size_t>(n));
          }
        });
      } else {
        src->read_at(offset, dst, nbytes);
      }
      if (dtype == bool_) {
        // A bool byte other than 0 or 1 is undefined behaviour in C++: read any non-zero byte as true.
        auto* b = static_cast<uint8_t*>(d->ptr);
        for (uint64_t i = 0; i < nbytes; ++i) b[i] = b[i] != 0;
      }
      if constexpr (std::endian::native == std::endian::big) {
        auto* b = static_cast<uint8_t*>(d->ptr);
        size_t w = dtype == complex64 ? 4 : dtype.size;
        for (size_t i = 0; i + w <= nbytes; i += w) std::reverse(b + i, b + i + w);
      }
      g_reads.fetch_add(1, std::memory_order_relaxed);
      data = std::move(d);
      loaded.store(true, std::memory_order_release);
    });
    return data;
  }
};

}  // namespace

namespace primitives {
// Called from register_misc (misc.cpp).
void register_load() {
  registry::define(detail::row("Load", 0, {{"offset", FieldType::Size}}, nullptr,
                               {.flags = kNotSerializable | kNoCSE}));
}
}  // namespace primitives

namespace detail {

const PrimitiveDef& load_def() {
  static const PrimitiveDef& d = def("Load");
  return d;
}

array load_constant(std::shared_ptr<const io_detail::RandomSource> src, const ArraySpec& spec, uint64_t offset,
                    uint64_t nbytes) {
  auto slot = std::make_shared<LoadSlot>();
  slot->src = std::move(src);
  slot->offset = offset;
  slot->nbytes = nbytes;
  slot->dtype = spec.dtype;
  array a = make_array(load_def(), State{uint64_t(offset)}, {}, {spec}, default_stream(Device{Device::cpu, 0}));
  a.node()->extra = std::move(slot);
  return a;
}

array constant_for_call(const array& constant) {
  if (constant.is_available() || !constant.has_primitive() || constant.node()->def != &load_def()) return constant;
  const auto& node = constant.node();
  auto slot = std::static_pointer_cast<const LoadSlot>(node->extra);
  const ArraySpec& spec = node->specs[0];
  if (slot->loaded.load(std::memory_order_acquire)) return array(slot->data, spec.shape, spec.dtype);
  array a = make_array(load_def(), node->state, {}, {spec}, node->stream);
  a.node()->extra = slot;
  return a;
}

std::shared_ptr<Data> load_payload(const Node& node, ParallelFor parallel) {
  auto slot = std::static_pointer_cast<const LoadSlot>(node.extra);
  return slot->get(parallel);
}

uint64_t load_reads() { return g_reads.load(); }
uint64_t load_mapped() { return g_mapped.load(); }

}  // namespace detail
}  // namespace kiln
