#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <unordered_map>

#include "kiln/primitive.h"
#include "primitives/families.h"

namespace kiln {

namespace {

struct Table {
  std::unordered_map<std::string, std::unique_ptr<PrimitiveDef>> rows;
  std::vector<const PrimitiveDef*> order;
};

Table& table() {
  static Table t;
  return t;
}

void ensure_registered() {
  static std::once_flag once;
  std::call_once(once, [] { primitives::register_all_families(); });
}

}  // namespace

namespace registry {

const PrimitiveDef& define(PrimitiveDef def) {
  auto& t = table();
  auto it = t.rows.find(def.name);
  if (it != t.rows.end()) {
    throw std::logic_error("[registry] Primitive " + def.name + " is defined twice.");
  }
  def.index = t.order.size();
  auto row = std::make_unique<PrimitiveDef>(std::move(def));
  const PrimitiveDef* p = row.get();
  t.rows.emplace(p->name, std::move(row));
  t.order.push_back(p);
  return *p;
}

const PrimitiveDef* find(const std::string& name) {
  ensure_registered();
  auto& t = table();
  auto it = t.rows.find(name);
  return it == t.rows.end() ? nullptr : it->second.get();
}

const PrimitiveDef& get(const std::string& name) {
  auto* p = find(name);
  if (!p) throw std::invalid_argument("[registry] Unknown primitive " + name + ".");
  return *p;
}

std::vector<const PrimitiveDef*> all() {
  ensure_registered();
  return table().order;
}

}  // namespace registry

std::vector<ArraySpec> specs_of(const std::vector<array>& arrays) {
  std::vector<ArraySpec> out;
  out.reserve(arrays.size());
  for (auto& a : arrays) out.push_back({a.shape(), a.dtype()});
  return out;
}

std::vector<array> make_arrays(const PrimitiveDef& def, State state, std::vector<array> inputs,
                               std::vector<ArraySpec> specs, Stream stream) {
  if (specs.empty()) {
    if (!def.infer) {
      throw std::logic_error("[" + def.name + "] Output shapes must be given: the primitive has no shape rule.");
    }
    specs = def.infer(state, specs_of(inputs));
  }
  auto node = std::make_shared<Node>();
  node->def = &def;
  node->state = std::move(state);
  node->stream = stream;
  node->inputs = std::move(inputs);
  node->specs = std::move(specs);
  std::vector<array> outs;
  outs.reserve(node->specs.size());
  for (size_t i = 0; i < node->specs.size(); ++i) {
    outs.emplace_back(node->specs[i].shape, node->specs[i].dtype, node, static_cast<uint32_t>(i));
  }
  node->outputs.reserve(outs.size());
  for (auto& o : outs) node->outputs.push_back(o.desc_ptr());
  return outs;
}

array make_array(const PrimitiveDef& def, State state, std::vector<array> inputs, std::vector<ArraySpec> specs,
                 Stream stream) {
  auto outs = make_arrays(def, std::move(state), std::move(inputs), std::move(specs), stream);
  if (outs.size() != 1) throw std::logic_error("[" + def.name + "] make_array used for a multi-output primitive.");
  return outs[0];
}

}  // namespace kiln
