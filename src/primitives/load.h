// The Load primitive: an imported file's constant, read from the file on first evaluation (once,
// thread-safely) and then an ordinary evaluated array shared by every call and record. kiln-internal:
// not in MLX's serialization table (kNotSerializable).
#pragma once

#include <memory>

#include "format/bytes.h"
#include "kiln/primitive.h"

namespace kiln::detail {

const PrimitiveDef& load_def();
// A lazy constant of `spec` whose little-endian payload is `nbytes` at `offset` of `src`.
array load_constant(std::shared_ptr<const format::Source> src, const ArraySpec& spec, uint64_t offset,
                    uint64_t nbytes);
// How many payloads have been read from files so far (for tests: constants are read lazily, once).
uint64_t load_reads();

}  // namespace kiln::detail
