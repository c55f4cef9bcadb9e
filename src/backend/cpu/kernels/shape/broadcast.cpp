// CPU kernel of the broadcast rows (primitives/shape/broadcast.cpp): Broadcast and BroadcastAxes are
// views with stride 0 along broadcast axes.
#include "backend/cpu/kernels/shape/shape_kernels.h"

namespace kiln::cpu {

namespace {

// Input 0 viewed at the output shape: stride 0 along every axis where the input has size 1 (as MLX:
// broadcast_to(full({1, 1}, x), {5, 1}) has strides {0, 0}) and along the new leading axes. Serves
// both primitives (the ignored axes of BroadcastAxes have equal sizes, so they keep their strides).
void broadcast_cpu(const Node&, const std::vector<array>& in, std::vector<array>& out) {
  const array& a = in[0];
  array& o = out[0];
  const int nd = static_cast<int>(o.ndim());
  const int off = nd - static_cast<int>(a.ndim());
  Strides st(nd, 0);
  for (int i = 0; i < static_cast<int>(a.ndim()); ++i) {
    st[off + i] = a.shape()[i] == 1 ? 0 : a.strides()[i];
  }
  o.set_view(a, std::move(st), a.offset());
}

}  // namespace

void register_cpu_broadcast(detail::KernelTable& table) {
  table.add({{"Broadcast", broadcast_cpu}, {"BroadcastAxes", broadcast_cpu}});
}

}  // namespace kiln::cpu
