#include "core/kernels.h"

#include <stdexcept>

namespace kiln::detail {

const char* backend_name(Backend b) {
  switch (b) {
    case Backend::cpu: return "cpu";
    case Backend::cuda: return "cuda";
  }
  return "unknown";
}

void KernelTable::add(const char* primitive, KernelFn fn) {
  const PrimitiveDef* def = registry::find(primitive);
  if (!def) {
    throw std::logic_error(std::string("[kernels] The ") + backend_name(backend_) +
                           " kernel table names a primitive the registry does not have: " + primitive + ".");
  }
  add(*def, fn);
}

void KernelTable::add(const PrimitiveDef& def, KernelFn fn) {
  if (!fn) throw std::logic_error("[kernels] Null kernel given for " + def.name + ".");
  if (by_row_.size() <= def.index) by_row_.resize(def.index + 1, nullptr);
  if (by_row_[def.index]) {
    throw std::logic_error(std::string("[kernels] Primitive ") + def.name + " has two kernels on the " +
                           backend_name(backend_) + " backend.");
  }
  by_row_[def.index] = fn;
}

KernelFn KernelTable::get(const PrimitiveDef& def, const State& state) const {
  KernelFn fn = find(def);
  if (!fn) {
    throw std::invalid_argument("[eval] Primitive " + def.display_name(state) + " has no kernel on the " +
                                backend_name(backend_) + " backend in kiln yet.");
  }
  return fn;
}

void KernelTable::add_batch(const char* primitive, BatchRule rule) {
  const PrimitiveDef* def = registry::find(primitive);
  if (!def || !find(*def) || !rule.joins || !rule.run) {
    throw std::logic_error(std::string("[kernels] A batch rule on the ") + backend_name(backend_) +
                           " backend needs a primitive with a kernel there and both functions: " + primitive + ".");
  }
  if (batch_by_row_.size() <= def->index) batch_by_row_.resize(def->index + 1);
  if (batch_by_row_[def->index].run) {
    throw std::logic_error(std::string("[kernels] Primitive ") + primitive + " has two batch rules on the " +
                           backend_name(backend_) + " backend.");
  }
  batch_by_row_[def->index] = rule;
}

std::vector<const PrimitiveDef*> KernelTable::covered() const {
  std::vector<const PrimitiveDef*> out;
  for (const PrimitiveDef* def : registry::all()) {
    if (find(*def)) out.push_back(def);
  }
  return out;
}

}  // namespace kiln::detail
