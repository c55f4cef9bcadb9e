// CPU kernel of Select (the primitive behind `where`): out = condition ? x : y, element-wise. The row
// and `where` are in src/primitives/elementwise/ternary.cpp.
#include "backend/cpu/kernels/elementwise/elementwise_common.h"  // first: it sets the kernels' float options

namespace kiln {

namespace {

using namespace ew;

// One row of the select with each operand's stride along it fixed at compile time (0: the operand is
// broadcast along the row, 1: contiguous), so the loop vectorizes: a causal mask broadcast over the
// heads and a scalar fill value select rows of attention scores (the stride-generic loop took about
// 1 ns an element there).
// T is the unsigned integer of the element's width and both operands are read, so the choice is a mask
// and not a branch (a branch mispredicted on half of a random mask: 3.5 ns an element).
template <typename T>
inline T pick(bool c, T a, T b) {
  const T m = static_cast<T>(T(0) - static_cast<T>(c));
  return static_cast<T>((a & m) | (b & static_cast<T>(~m)));
}

template <typename T, int SC, int SX, int SY>
inline void select_row(T* __restrict d, const bool* __restrict c, const T* __restrict x, const T* __restrict y,
                       int64_t m) {
  for (int64_t i = 0; i < m; ++i) d[i] = pick(c[i * SC], x[i * SX], y[i * SY]);
}

template <typename T>
void select_rows(const array& c, const array& x, const array& y, array& out) {
  out.alloc();
  const bool* pc = static_cast<const bool*>(c.buffer()->ptr);
  const T* px = static_cast<const T*>(x.buffer()->ptr);
  const T* py = static_cast<const T*>(y.buffer()->ptr);
  T* dst = out.data<T>();
  cpu::for_each_row<4>(out.shape(), {&out.strides(), &c.strides(), &x.strides(), &y.strides()},
                       {0, c.offset(), x.offset(), y.offset()}, cpu::kGrainCheap,
                       [&](const std::array<int64_t, 4>& o, int64_t m, const std::array<int64_t, 4>& st) {
                         T* d = dst + o[0];
                         const bool* a = pc + o[1];
                         const T* b = px + o[2];
                         const T* e = py + o[3];
                         auto unit = [](int64_t v) { return v == 0 || v == 1; };
                         if (!(unit(st[1]) && unit(st[2]) && unit(st[3]))) {
                           for (int64_t i = 0; i < m; ++i) d[i] = pick(a[i * st[1]], b[i * st[2]], e[i * st[3]]);
                           return;
                         }
                         switch ((st[1] << 2) | (st[2] << 1) | st[3]) {
                           case 0: select_row<T, 0, 0, 0>(d, a, b, e, m); break;
                           case 1: select_row<T, 0, 0, 1>(d, a, b, e, m); break;
                           case 2: select_row<T, 0, 1, 0>(d, a, b, e, m); break;
                           case 3: select_row<T, 0, 1, 1>(d, a, b, e, m); break;
                           case 4: select_row<T, 1, 0, 0>(d, a, b, e, m); break;
                           case 5: select_row<T, 1, 0, 1>(d, a, b, e, m); break;
                           case 6: select_row<T, 1, 1, 0>(d, a, b, e, m); break;
                           default: select_row<T, 1, 1, 1>(d, a, b, e, m); break;
                         }
                       });
}

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
                      [&](const std::array<int64_t, 4>& o) { d[o[0]] = pick(pc[o[1]], px[o[2]], py[o[3]]); });
      return;
    }
    select_rows<T>(c, x, y, out[0]);
  };
  switch (x.itemsize()) {
    case 1: run(uint8_t{}); break;
    case 2: run(uint16_t{}); break;
    case 4: run(uint32_t{}); break;
    default: run(uint64_t{}); break;
  }
}

// 4-byte values through the vector select (cpu/vmath.h: bit copies).
void select_tile4(const void* const* in, void* out, size_t n) {
  cpu::vselect(static_cast<const bool*>(in[0]), static_cast<const float*>(in[1]), static_cast<const float*>(in[2]),
               static_cast<float*>(out), n);
}

template <typename T>
void select_tile(const void* const* in, void* out, size_t n) {
  select_row<T, 1, 1, 1>(static_cast<T*>(out), static_cast<const bool*>(in[0]), static_cast<const T*>(in[1]),
                         static_cast<const T*>(in[2]), static_cast<int64_t>(n));
}

// The tile function, for a bool condition (a loaded graph's other conditions go through the kernel).
cpu::TileFn select_tile_for(const Node& node, const std::vector<Dtype>& in) {
  const Dtype t = node.specs[0].dtype;
  if (in[0] != bool_ || in[1] != t || in[2] != t) return nullptr;
  switch (t.size) {
    case 1: return &select_tile<uint8_t>;
    case 2: return &select_tile<uint16_t>;
    case 4: return &select_tile4;
    case 8: return &select_tile<uint64_t>;
    default: return nullptr;
  }
}

}  // namespace

namespace ew {
void register_cpu_ternary(detail::KernelTable& table) { table.add("Select", select_cpu); }
void register_cpu_ternary_tiles(cpu::TileTable& table) { table.add("Select", select_tile_for); }
}  // namespace ew

}  // namespace kiln
