// The Load primitive: an imported file's constant, read from the file on first evaluation (once,
// thread-safely) and then an ordinary evaluated array shared by every call and record. kiln-internal:
// not in MLX's serialization table (kNotSerializable).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <utility>

#include "kiln/primitive.h"

namespace kiln::detail {

const PrimitiveDef& load_def();
// Reads exactly n bytes at `offset` of a constant's file into dst (format::Source::read_at: throws
// std::runtime_error when that is not possible).
using LoadRead = std::function<void(uint64_t offset, void* dst, size_t n)>;
// A lazy constant of `spec` whose little-endian payload is `nbytes` at `offset`, read through `read`.
array load_constant(LoadRead read, const ArraySpec& spec, uint64_t offset, uint64_t nbytes);
// A lazy constant of `spec` whose little-endian payload is `nbytes` at `offset` of `src` (a shared
// pointer to a format::Source, which the constant keeps alive). A template so that this header, a stage
// below src/format/, does not include format/bytes.h: the caller has the Source's definition.
template <typename SourcePtr>
array load_constant(SourcePtr src, const ArraySpec& spec, uint64_t offset, uint64_t nbytes) {
  LoadRead read = [src = std::move(src)](uint64_t at, void* dst, size_t n) { src->read_at(at, dst, n); };
  return load_constant(std::move(read), spec, offset, nbytes);
}
// The payload of a Load node, read from its file on the first call (once, thread-safely; the CPU
// kernel's output buffer).
std::shared_ptr<Data> load_payload(const Node& node);
// The constant as one call should use it: the shared loaded data once it has been read, otherwise
// a fresh Load node on the same slot, so that concurrent calls never evaluate one shared node (the
// read itself still happens once).
array constant_for_call(const array& constant);
// How many payloads have been read from files so far (for tests: constants are read lazily, once).
uint64_t load_reads();

}  // namespace kiln::detail
