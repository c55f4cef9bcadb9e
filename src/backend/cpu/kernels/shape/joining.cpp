// CPU kernels of Concatenate and Pad (the rows of primitives/shape/joining.cpp): copies into a fresh
// output, Pad's after filling it with the pad value.
#include "backend/cpu/kernels/shape/shape_kernels.h"
#include "primitives/shape/shape_state.h"

namespace kiln::cpu {

namespace {

using shape_detail::pad_amounts;

void concatenate_cpu(const Node& n, const std::vector<array>& in, std::vector<array>& out) {
  array& o = out[0];
  o.alloc();
  const int ax = n.state.i(0);
  int64_t pos = 0;
  for (auto& a : in) {
    cpu::copy_into(a, o, o.strides(), pos * o.strides()[ax]);
    pos += a.shape()[ax];
  }
}

void pad_cpu(const Node& n, const std::vector<array>& in, std::vector<array>& out) {
  const array &a = in[0], &v = in[1];
  array& o = out[0];
  o.alloc();
  cpu::fill_items(o.raw_data(), o.size(), v.raw_data(), o.itemsize());
  Shape low, high;
  pad_amounts(n.state, static_cast<int>(o.ndim()), low, high);
  int64_t off = 0;
  for (size_t i = 0; i < o.ndim(); ++i) off += low[i] * o.strides()[i];
  cpu::copy_into(a, o, o.strides(), off);
}

}  // namespace

void register_cpu_joining(detail::KernelTable& table) {
  table.add({{"Concatenate", concatenate_cpu}, {"Pad", pad_cpu}});
}

}  // namespace kiln::cpu
