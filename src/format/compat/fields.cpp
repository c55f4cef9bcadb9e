// src/format/compat/: the per-release facts about primitive state (see fields.h). This file resolves
// the field names those facts use against the registry rows.
#include "format/compat/fields.h"

#include <mutex>
#include <stdexcept>

namespace kiln::format::compat {

namespace {

std::mutex& refs_mutex() {
  static std::mutex m;
  return m;
}

std::vector<const FieldRef*>& refs() {
  static std::vector<const FieldRef*> r;
  return r;
}

}  // namespace

int find_field(const PrimitiveDef& def, std::string_view field) {
  for (size_t k = 0; k < def.fields.size(); ++k) {
    if (field == def.fields[k].name) return static_cast<int>(k);
  }
  return -1;
}

int resolve_field(const PrimitiveDef& def, std::string_view field, const std::string& release) {
  int k = find_field(def, field);
  if (k >= 0) return k;
  std::string have;
  for (auto& f : def.fields) have += std::string(have.empty() ? "" : ", ") + f.name;
  throw std::logic_error("[format] State field '" + std::string(field) + "' of " + def.name + ", named by " + release +
                         ", is not in the registry row of " + def.name + " (its fields: " +
                         (have.empty() ? std::string("none") : have) + ").");
}

FieldRef::FieldRef(const char* p, const char* f, const char* r) : prim(p), field(f), release(r) {
  std::lock_guard<std::mutex> lock(refs_mutex());
  refs().push_back(this);
}

size_t FieldRef::index() const {
  int k = index_.load(std::memory_order_acquire);
  if (k >= 0) return static_cast<size_t>(k);
  const PrimitiveDef* def = registry::find(prim);
  if (!def) {
    throw std::logic_error(std::string("[format] Primitive ") + prim + " (state field '" + field + "'), named by " +
                           release + ", is not in the registry.");
  }
  k = resolve_field(*def, field, release);
  index_.store(k, std::memory_order_release);
  return static_cast<size_t>(k);
}

namespace detail {
const std::vector<const FieldRef*>& field_refs() {
  // Filled during static initialization, read afterwards.
  return refs();
}
}  // namespace detail

}  // namespace kiln::format::compat
