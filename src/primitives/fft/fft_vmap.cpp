// Batching rule of FFT (vmap_rules.h): the batch axis goes first and the transformed axes move by one.
#include <cstdint>

#include "primitives/vmap_rules.h"

namespace kiln::vmap_rules {

namespace {

Result fft(const Args& a) {
  State st = a.state();
  std::vector<uint64_t> axes = st.get<std::vector<uint64_t>>(0);
  for (auto& ax : axes) ax += 1;
  st.values[0] = axes;
  std::vector<ArraySpec> specs = a.node.specs;
  specs[0].shape.insert(specs[0].shape.begin(), a.size);
  return {make_arrays(*a.node.def, st, {a.front(0)}, specs, a.node.stream), {0}};
}

}  // namespace

void register_vmap_fft(RuleTable& t) { t.add("FFT", fft); }

}  // namespace kiln::vmap_rules
