// Batching rule of RandomBits (vmap_rules.h): the output is split evenly between the keys in row-major
// order, so the batch of keys in front, with the batch size prepended to the shape, gives each
// example's bits from its own keys.
#include "kiln/ops/shape.h"
#include "primitives/vmap_rules.h"

namespace kiln::vmap_rules {

namespace {

Result random_bits(const Args& a) {
  State st = a.state();
  Shape s = st.ints(0);
  s.insert(s.begin(), a.size);
  st.values[0] = std::vector<int32_t>(s);
  return {rebuild(a, st, {contiguous(a.front(0))}), {0}};
}

}  // namespace

void register_vmap_random(RuleTable& t) { t.add("RandomBits", random_bits); }

}  // namespace kiln::vmap_rules
