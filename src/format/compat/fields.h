// src/format/compat/: what each MLX release (0.22.0 - 0.32.4) does differently with a primitive's
// state: the release list, the per-release layouts, defaults, value limits and renames (version.h/.cpp),
// and the resolution of the state field names these facts use (this file). The facts name registry
// fields (PrimitiveDef::fields in include/kiln/primitive.h) by name, never by position; the names are
// resolved against the registry on first use, so a row whose schema changes makes a stale fact fail
// loudly, naming the primitive, the field and the release, instead of silently reading another field.
#pragma once

#include <atomic>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/primitive.h"

namespace kiln::format::compat {

// The position of the state field `field` in `def`'s schema, or -1 when the row has none.
int find_field(const PrimitiveDef& def, std::string_view field);

// The position of `field` in `def`'s schema. Throws std::logic_error "[format] ..." naming the
// primitive, the field, `release` (where the name is used, a noun phrase: "the MLX 0.25.2 layout")
// and the row's fields when the row has no such field.
int resolve_field(const PrimitiveDef& def, std::string_view field, const std::string& release);

// A registry field named by a compatibility fact outside the layout tables (the Convolution fields
// that old releases reorder, FFT's fields behind odd_out, ...). Define instances at namespace scope:
// each registers itself so that check_names() resolves every one of them. The position is resolved
// on first use (thread-safe: resolution is idempotent and the result is published atomically).
class FieldRef {
 public:
  FieldRef(const char* prim, const char* field, const char* release);
  FieldRef(const FieldRef&) = delete;
  FieldRef& operator=(const FieldRef&) = delete;

  // The field's position in the row's schema; throws as resolve_field does.
  size_t index() const;
  size_t operator()() const { return index(); }

  const char* const prim;
  const char* const field;
  const char* const release;

 private:
  mutable std::atomic<int> index_{-1};
};

// One use of a field name by the compatibility facts, for the checks (tests/unit/test_compat_names.cpp).
struct FieldUse {
  std::string prim;
  std::string field;
  std::string release;     // where it is used ("the MLX 0.25.2 layout")
  bool disk_only = false;  // a field that only the file has (never in the registry row)
};

// Every field name the layout tables, value limits and FieldRefs use (defined in version.cpp, with the
// tables).
std::vector<FieldUse> field_uses();

// Resolves every name against the registry now (the layout tables and every FieldRef); throws like
// resolve_field at the first one that does not exist. The codec does this on first use anyway.
void check_names();

namespace detail {
const std::vector<const FieldRef*>& field_refs();
}  // namespace detail

}  // namespace kiln::format::compat
