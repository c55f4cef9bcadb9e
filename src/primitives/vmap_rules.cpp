// The batching-rule table (vmap_rules.h): built once from every family's register_vmap_<family>, and
// the helpers the family rules share.
#include "primitives/vmap_rules.h"

#include <stdexcept>

#include "kiln/ops/elementwise.h"
#include "kiln/ops/shape.h"

namespace kiln::vmap_rules {

array Args::front(size_t i) const {
  const array& x = inputs.at(i);
  if (axes.at(i) > 0) return moveaxis(x, axes[i], 0);
  if (axes[i] == 0) return x;
  Shape s = x.shape();
  s.insert(s.begin(), size);
  return broadcast_to(expand_dims(x, 0), s);
}

array Args::front_or_same(size_t i) const {
  return axes.at(i) > 0 ? moveaxis(inputs.at(i), axes[i], 0) : inputs.at(i);
}

void RuleTable::slot(const PrimitiveDef& def) {
  if (rules_.size() <= def.index) {
    rules_.resize(def.index + 1, nullptr);
    reasons_.resize(def.index + 1);
    taken_.resize(def.index + 1, false);
  }
  if (taken_[def.index]) throw std::logic_error("[vmap] Primitive " + def.name + " has two batching entries.");
  taken_[def.index] = true;
}

void RuleTable::add(const char* primitive, Rule rule) {
  const PrimitiveDef* def = registry::find(primitive);
  if (!def) {
    throw std::logic_error(std::string("[vmap] The batching rules name a primitive the registry does not have: ") +
                           primitive + ".");
  }
  if (!rule) throw std::logic_error(std::string("[vmap] Null batching rule given for ") + primitive + ".");
  slot(*def);
  rules_[def->index] = rule;
}

void RuleTable::none(const char* primitive, const char* reason) {
  const PrimitiveDef* def = registry::find(primitive);
  if (!def) {
    throw std::logic_error(std::string("[vmap] The batching rules name a primitive the registry does not have: ") +
                           primitive + ".");
  }
  slot(*def);
  reasons_[def->index] = reason;
}

Rule RuleTable::find(const PrimitiveDef& def) const {
  return def.index < rules_.size() ? rules_[def.index] : nullptr;
}

const std::string* RuleTable::reason(const PrimitiveDef& def) const {
  if (def.index >= rules_.size() || !taken_[def.index] || rules_[def.index]) return nullptr;
  return &reasons_[def.index];
}

namespace {
RuleTable build() {
  RuleTable t;
#define KILN_CALL_VMAP_FAMILY(f) register_vmap_##f(t);
  KILN_FAMILIES(KILN_CALL_VMAP_FAMILY)
#undef KILN_CALL_VMAP_FAMILY
  return t;
}
}  // namespace

const RuleTable& rules() {
  static const RuleTable table = build();
  return table;
}

Shape with_batch(const Shape& s, int size) {
  Shape out = s;
  out.insert(out.begin(), size);
  return out;
}

std::vector<int32_t> plus_one(const std::vector<int32_t>& axes) {
  std::vector<int32_t> out;
  for (int a : axes) out.push_back(a + 1);
  return out;
}

array align_front(const array& x, int rank) {
  const int r = static_cast<int>(x.ndim()) - 1;
  if (r >= rank) return x;
  Shape s = x.shape();
  s.insert(s.begin() + 1, rank - r, 1);
  return reshape(x, s);
}

std::vector<array> rebuild(const Args& a, State state, std::vector<array> inputs) {
  const PrimitiveDef& def = *a.node.def;
  if (!def.infer) throw std::logic_error("[vmap] rebuild needs a shape rule; " + def.name + " has none.");
  std::vector<ArraySpec> specs = def.infer(state, specs_of(inputs));
  if (specs.size() != a.node.specs.size()) {
    throw std::logic_error("[vmap] " + def.name + ": the batched node has " + std::to_string(specs.size()) +
                           " outputs, the original " + std::to_string(a.node.specs.size()) + ".");
  }
  return make_arrays(def, std::move(state), std::move(inputs), std::move(specs), a.node.stream);
}

Result leading_batch(const Args& a, const std::vector<size_t>& batch_inputs) {
  std::vector<array> ins = a.inputs;
  for (size_t i : batch_inputs) ins[i] = a.front(i);
  for (size_t i = 0; i < ins.size(); ++i) {
    bool listed = false;
    for (size_t j : batch_inputs) listed = listed || j == i;
    if (!listed && a.mapped(i)) unsupported(a, "a mapped input " + std::to_string(i) + " is not supported");
  }
  std::vector<ArraySpec> specs = a.node.specs;
  for (auto& s : specs) s.shape.insert(s.shape.begin(), a.size);
  Result r;
  r.outputs = make_arrays(*a.node.def, a.node.state, std::move(ins), std::move(specs), a.node.stream);
  r.axes.assign(r.outputs.size(), 0);
  return r;
}

Result leading_batch(const Args& a) {
  std::vector<size_t> all(a.inputs.size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = i;
  return leading_batch(a, all);
}

array fold_gathered(const array& x, bool mapped, int size) {
  const Shape& s = x.shape();
  const int r = static_cast<int>(s.size());
  int count = 1;
  for (int d = mapped ? 1 : 0; d < r - 2; ++d) count *= s[d];
  return reshape(x, {mapped ? size * count : count, s[r - 2], s[r - 1]});
}

array offset_indices(const array& indices, bool mapped, int size, int count) {
  if (!mapped) return indices;
  Shape bs(indices.ndim(), 1);
  bs[0] = size;
  return add(indices, reshape(astype(multiply(arange(size), array(count)), indices.dtype()), bs));
}

void unsupported(const Args& a, const std::string& what) {
  throw std::invalid_argument("[vmap] " + a.node.def->display_name(a.node.state) + ": " + what + ".");
}

}  // namespace kiln::vmap_rules
