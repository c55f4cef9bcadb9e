// The Load primitive: an imported file's constant, read from the file on first evaluation (once,
// thread-safely) and then an ordinary evaluated array shared by every call and record. kiln-internal:
// not in MLX's serialization table (kNotSerializable).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <utility>

#include "io/random_access.h"
#include "kiln/primitive.h"

namespace kiln::detail {

const PrimitiveDef& load_def();
// A lazy constant of `spec` whose little-endian payload is `nbytes` at `offset` of `src`, which the
// constant keeps alive.
array load_constant(std::shared_ptr<const io_detail::RandomSource> src, const ArraySpec& spec, uint64_t offset,
                    uint64_t nbytes);
// The payload of a Load node, read from its file on the first call (once, thread-safely; the CPU
// kernel's output buffer). Large payloads are read in pieces through `parallel` (the backend's
// parallel_for: fn(begin, end) over [0, n) in chunks of at least `grain`) when it is given.
using ParallelFor = void (*)(size_t n, size_t grain, const std::function<void(size_t, size_t)>& fn);
std::shared_ptr<Data> load_payload(const Node& node, ParallelFor parallel = nullptr);
// The constant as one call should use it: the shared loaded data once it has been read, otherwise
// a fresh Load node on the same slot, so that concurrent calls never evaluate one shared node (the
// read itself still happens once).
array constant_for_call(const array& constant);
// How many payloads have been read from files so far (for tests: constants are read lazily, once).
uint64_t load_reads();
// How many of those were lent in place by their source (memory-mapped files), not copied.
uint64_t load_mapped();

}  // namespace kiln::detail
