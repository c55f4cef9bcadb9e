// CPU kernels of AsStrided (a view of the row-contiguous input) and Contiguous (a row-contiguous copy
// unless the input already is one), the rows of primitives/shape/strided.cpp.
#include "backend/cpu/kernels/shape/shape_kernels.h"
#include "backend/cpu/loops.h"

namespace kiln::cpu {

namespace {

void as_strided_cpu(const Node& n, const std::vector<array>& in, std::vector<array>& out) {
  // The strides count elements of the row-major input; make it so when a view was passed.
  array src = cpu::contiguous_copy(in[0]);
  out[0].set_view(src, n.state.get<std::vector<int64_t>>(1),
                  src.offset() + static_cast<int64_t>(n.state.get<uint64_t>(2)));
}

bool col_contiguous(const array& a) {
  int64_t acc = 1;
  for (size_t i = 0; i < a.ndim(); ++i) {
    if (a.shape()[i] == 1) continue;
    if (a.strides()[i] != acc) return false;
    acc *= a.shape()[i];
  }
  return true;
}

void contiguous_cpu(const Node& n, const std::vector<array>& in, std::vector<array>& out) {
  const array& a = in[0];
  if (a.row_contiguous() || (n.state.b(0) && col_contiguous(a))) {
    out[0].set_view(a, a.strides(), a.offset());
  } else {
    cpu::copy_to_contiguous(a, out[0]);
  }
}

}  // namespace

void register_cpu_strided(detail::KernelTable& table) {
  table.add({{"AsStrided", as_strided_cpu}, {"Contiguous", contiguous_cpu}});
}

}  // namespace kiln::cpu
