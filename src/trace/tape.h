// The trace pipeline: trace a function on placeholder inputs, linearize its graph into a tape
// (spec 2.7), simplify the tape (spec 4.1), and replay an imported tape on new inputs (spec 4.5).
#pragma once

#include <map>
#include <tuple>

#include "format/record.h"
#include "kiln/export.h"

namespace kiln::detail {

// Running id counter of one file (or one callback exporter): ids are unique across the whole file
// and never zero.
struct IdAllocator {
  uint64_t next = 1;
  uint64_t operator()() { return next++; }
};

// Constants of one exporter, deduplicated by the identity of their data (buffer, offset, shape,
// strides, dtype). Holding the arrays keeps their buffers alive, so an identity is never reused.
class ConstantTable {
 public:
  uint64_t id_for(const array& a, IdAllocator& ids);

 private:
  using Key = std::tuple<const void*, int64_t, Shape, Strides, int>;
  std::map<Key, std::pair<uint64_t, array>> map_;
};

// An input placeholder: shape and dtype only, no data and no graph node.
array placeholder(const Shape& shape, Dtype dtype);

// Trace `fun` on placeholders shaped like `args` and `kwargs` and build its tape (DFS post-order from
// each output, inputs in argument order, no descent below function inputs, multi-output nodes once).
// Evaluated captured arrays become constants; unevaluated captured graphs are taken whole.
format::Record trace_function(const ArgsKwargsFn& fun, const Args& args, const Kwargs& kwargs, bool shapeless,
                              IdAllocator& ids, ConstantTable& constants);

// Scalar-constant merge, no-op removal (kNoOp rows), then `cse_passes` rounds of common-
// subexpression elimination (rows without kNoCSE; same row, same input ids, equal state). Entries
// are only deleted, never reordered.
void simplify(format::Record& rec, int cse_passes = 3);

// Build a fresh graph for `rec` on `inputs` (already matched and ordered: args, then keyword values
// in key order). Nodes run on the CPU stream whatever the file says. In shapeless mode the output
// shapes are re-inferred with each row's rule; dtypes are always the recorded ones.
// With `limits`, a shapeless call whose re-inferred shapes exceed them throws before anything runs.
// `quirks_of`: the writer's version (major, minor, patch) when ImportOptions::writer_cpu_quirks is on.
std::vector<array> replay(const format::Record& rec, const std::vector<array>& inputs, bool shapeless,
                          const ImportOptions* limits = nullptr, const int* quirks_of = nullptr);

// import_function over any byte source (files, memory: the fuzz targets), with the given limits.
ImportedFunction import_source(std::shared_ptr<const format::Source> src, const ImportOptions& options);

}  // namespace kiln::detail
