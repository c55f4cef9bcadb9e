// Resource limits for files kiln did not write (README "Hostile files"). The reader (reader.cpp,
// codec.cpp) already proves a file well-formed: counts against the bytes left, ids defined before
// use, arity, dtype codes, recorded outputs against each row's rule. What a well-formed file can
// still do is ask for huge arrays; these checks bound that by ImportOptions before anything runs.
#pragma once

#include <cstdint>
#include <vector>

#include "format/record.h"
#include "kiln/export.h"

namespace kiln::format {

// Most dimensions a shape read from a file may have. It keeps the per-node work of validation
// (copying input shapes, running a row's rule) linear in the file size; real graphs use far fewer.
inline constexpr uint64_t kMaxNdim = 64;

// Logical bytes of an array of `s` (elements x item size), saturating at UINT64_MAX.
uint64_t spec_bytes(const ArraySpec& s);

// Working-memory estimate of one call of `rec`: walking the tape in file order, every node output
// and constant is a new allocation that is freed after its last use (function outputs and constants
// stay alive to the end; call inputs are not counted); the result is the peak of the live bytes.
// `specs`, when given, replaces the recorded outputs of each tape entry (shapeless calls).
uint64_t peak_bytes(const Record& rec, const std::vector<std::vector<ArraySpec>>* specs = nullptr);

// Throws std::invalid_argument "[import_function] ..." when an array of record `index` exceeds
// options.max_array_bytes or its peak_bytes exceeds options.max_call_bytes.
void check_limits(const Record& rec, size_t index, const ImportOptions& options);

// The same checks on the shapes a shapeless call re-inferred (one vector per tape entry); throws
// "[import_function::call] ...".
void check_call_limits(const Record& rec, const std::vector<std::vector<ArraySpec>>& specs,
                       const ImportOptions& options);

}  // namespace kiln::format
