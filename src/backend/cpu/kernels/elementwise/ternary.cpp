// CPU kernel of Select (the primitive behind `where`): out = condition ? x : y, element-wise. The row
// and `where` are in src/primitives/elementwise/ternary.cpp.
#include "backend/cpu/kernels/elementwise/elementwise_common.h"  // first: it sets the kernels' float options

namespace kiln {

namespace {

using namespace ew;

void select_cpu(const Node&, const std::vector<array>& in, std::vector<array>& out) {
  const Shape& shape = out[0].shape();
  array cond = in[0];
  if (cond.dtype() != bool_) {
    // A loaded graph may hand a non-bool condition: test it for nonzero once, up front.
    array c(cond.shape(), bool_, nullptr, 0);
    detail::dispatch_all(cond.dtype(), [&](auto tag) {
      using T = decltype(tag);
      if constexpr (detail::is_half_v<T>) {
        unary_run<T, bool>(cond, c, [](T v) { return static_cast<float>(v) != 0.0f; });
      } else {
        unary_run<T, bool>(cond, c, [](T v) { return v != T(0); });
      }
    });
    cond = c;
  }
  array c = broadcast_view(cond, shape);
  array x = broadcast_view(in[1], shape);
  array y = broadcast_view(in[2], shape);
  // Dispatch by width: selecting copies bits, so one instantiation serves each element size.
  Tiled2D<4> plan;
  const bool tiled = !(c.row_contiguous() && x.row_contiguous() && y.row_contiguous()) &&
                     plan_tiled_2d<4>({&out[0], &c, &x, &y}, plan);
  auto run = [&](auto tag) {
    using T = decltype(tag);
    if (tiled) {
      out[0].alloc();
      T* d = out[0].data<T>();
      const bool* pc = static_cast<const bool*>(c.buffer()->ptr);
      const T* px = static_cast<const T*>(x.buffer()->ptr);
      const T* py = static_cast<const T*>(y.buffer()->ptr);
      run_tiled_2d<4>(plan, {0, c.offset(), x.offset(), y.offset()},
                      [&](const std::array<int64_t, 4>& o) { d[o[0]] = pc[o[1]] ? px[o[2]] : py[o[3]]; });
      return;
    }
    cpu::ternary_loop<bool, T, T, T>(c, x, y, out[0], [](bool p, T a, T b) { return p ? a : b; });
  };
  switch (x.itemsize()) {
    case 1: run(uint8_t{}); break;
    case 2: run(uint16_t{}); break;
    case 4: run(uint32_t{}); break;
    default: run(uint64_t{}); break;
  }
}

}  // namespace

namespace ew {
void register_cpu_ternary(detail::KernelTable& table) { table.add("Select", select_cpu); }
}  // namespace ew

}  // namespace kiln
