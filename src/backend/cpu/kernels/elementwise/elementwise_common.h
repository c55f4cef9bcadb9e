// Shared pieces of the element-wise CPU kernels (this folder: unary*.cpp, binary*.cpp, ternary.cpp):
// kernel helpers (layouts, 16-bit blocks) and through elementwise_math.h the scalar functions that
// reproduce MLX's CPU values. The rows' infer rules are in src/primitives/elementwise/rows.h.
//
// Include this header FIRST in every element-wise kernel .cpp: the pragma below must precede all other
// code of the translation unit. Neither errno nor floating-point exception flags are results of these
// kernels; without them GCC vectorizes sqrt and the branch-free selects of the loops. The pragma does not
// reach every template instantiation, so CMakeLists.txt also builds this folder's files with
// -fno-math-errno -fno-trapping-math; it stays for the other files that include this header
// (row_scalar.cpp, vmath.cpp).
#pragma once

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("no-math-errno", "no-trapping-math")
#endif

#include <algorithm>
#include <bit>
#include <cmath>
#include <complex>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>

#include "backend/cpu/fusion.h"
#include "backend/cpu/kernels/elementwise/elementwise_math.h"
#include "backend/cpu/loops.h"
#include "backend/cpu/vmath.h"
#include "core/kernels.h"
#include "kiln/primitive.h"

namespace kiln::ew {

using detail::acc_t;
using detail::is_complex_v;
using detail::is_float_v;
using detail::is_half_v;

// ---------------------------------------------------------------------------------------------
// Kernel helpers

// The output shares the input's buffer (MLX's no-op kernels: Copy, Abs of unsigned, Floor of ints, ...).
inline void share_input(const array& in, array& out) { out.set_view(in, in.strides(), in.offset()); }

// `a` seen with shape `shape` (stride 0 on broadcast dims). Kernels use it when a loaded graph hands
// them operands of different shapes; op builders always broadcast first.
array broadcast_view(const array& a, const Shape& shape);

// Tiled traversal for element-wise loops whose arrays collapse to two dimensions and where some input
// walks the inner dimension with a large stride but the outer one contiguously (a transposed view):
// row by row, that input would touch a new cache line per element. Square tiles keep every array's
// lines in cache. body(offsets) is called per element with each array's offset (out first).
template <size_t N>
struct Tiled2D {
  int64_t rows = 0, cols = 0;
  std::array<int64_t, N> row_st{}, col_st{};
};
template <size_t N>
bool plan_tiled_2d(const std::array<const array*, N>& arrays, Tiled2D<N>& p) {
  const array& out = *arrays[0];
  if (out.size() < (1u << 14)) return false;
  std::array<const Strides*, N> st;
  for (size_t k = 0; k < N; ++k) st[k] = &arrays[k]->strides();
  auto c = cpu::collapse<N>(out.shape(), st);
  if (c.shape.size() != 2) return false;
  bool transposed = false;
  for (size_t k = 1; k < N; ++k) {
    int64_t inner = c.strides[k][1], outer = c.strides[k][0];
    transposed |= (inner > 1 || inner < -1) && (outer == 1 || outer == -1);
  }
  if (!transposed) return false;
  p.rows = c.shape[0];
  p.cols = c.shape[1];
  for (size_t k = 0; k < N; ++k) {
    p.row_st[k] = c.strides[k][0];
    p.col_st[k] = c.strides[k][1];
  }
  return true;
}
template <size_t N, typename Body>
void run_tiled_2d(const Tiled2D<N>& p, const std::array<int64_t, N>& base, Body body) {
  constexpr int64_t kTile = 64;
  const int64_t row_tiles = (p.rows + kTile - 1) / kTile;
  cpu::parallel_for(static_cast<size_t>(row_tiles), 1, [&](size_t tb, size_t te) {
    for (int64_t t = static_cast<int64_t>(tb); t < static_cast<int64_t>(te); ++t) {
      const int64_t i0 = t * kTile, i1 = std::min(p.rows, i0 + kTile);
      for (int64_t j0 = 0; j0 < p.cols; j0 += kTile) {
        const int64_t j1 = std::min(p.cols, j0 + kTile);
        for (int64_t i = i0; i < i1; ++i) {
          std::array<int64_t, N> off;
          for (size_t k = 0; k < N; ++k) off[k] = base[k] + i * p.row_st[k] + j0 * p.col_st[k];
          for (int64_t j = j0; j < j1; ++j) {
            body(off);
            for (size_t k = 0; k < N; ++k) off[k] += p.col_st[k];
          }
        }
      }
    }
  });
}

// out[i] = f(a[i]) over any layout: tiles for transposed inputs, else the shared strided loop.
template <typename In, typename Out, typename F>
void unary_run(const array& in, array& out, F f) {
  Tiled2D<2> p;
  if (!in.row_contiguous() && plan_tiled_2d<2>({&out, &in}, p)) {
    out.alloc();
    Out* d = out.data<Out>();
    const In* s = static_cast<const In*>(in.buffer()->ptr);
    run_tiled_2d<2>(p, {0, in.offset()}, [&](const std::array<int64_t, 2>& o) { d[o[0]] = f(s[o[1]]); });
    return;
  }
  cpu::unary_loop<In, Out>(in, out, f);
}

// out[i] = f(a[i], b[i]) with inputs of type T; operands of another shape are broadcast views.
template <typename T, typename Out, typename F>
void binary_run(const array& a0, const array& b0, array& out, F f) {
  const array& a = a0.shape() == out.shape() ? a0 : broadcast_view(a0, out.shape());
  const array& b = b0.shape() == out.shape() ? b0 : broadcast_view(b0, out.shape());
  Tiled2D<3> p;
  if (!(a.row_contiguous() && b.row_contiguous()) && plan_tiled_2d<3>({&out, &a, &b}, p)) {
    out.alloc();
    Out* d = out.data<Out>();
    const T* x = static_cast<const T*>(a.buffer()->ptr);
    const T* y = static_cast<const T*>(b.buffer()->ptr);
    run_tiled_2d<3>(p, {0, a.offset(), b.offset()},
                    [&](const std::array<int64_t, 3>& o) { d[o[0]] = f(x[o[1]], y[o[2]]); });
    return;
  }
  cpu::binary_loop<T, T, Out>(a, b, out, f);
}

// float32 exp/sin/cos/sigmoid/erf over a contiguous range with AVX2+FMA or wider (unary_avx2.cpp,
// forwarding to cpu::vunary); returns false, doing nothing, when cpu::isa_level() is below AVX2.
enum class Avx2Op { Exp, Sin, Cos, Sigmoid, Erf };
bool avx2_unary_f32(Avx2Op op, const float* src, float* dst, size_t n);

// 16-bit floats to float and back, in blocks (unary_half.cpp; F16C when available). Same bits as the
// float16_t / bfloat16_t conversions.
void to_float(const float16_t* src, float* dst, size_t n);
void to_float(const bfloat16_t* src, float* dst, size_t n);
void from_float(const float* src, float16_t* dst, size_t n);
void from_float(const float* src, bfloat16_t* dst, size_t n);

// Row-major 16-bit arrays of one shape go through float blocks: body(ins..., out, n) computes n floats.
// This is "compute in float, round once" with vectorizable conversions and a float inner loop.
inline constexpr size_t kHalfBlock = 1024;
template <typename H, typename Body>
void half_blocks(const array& in, array& out, Body body) {
  out.alloc();
  const H* s = in.data<H>();
  H* d = out.data<H>();
  cpu::parallel_for(out.size(), cpu::kGrainMedium, [&](size_t b, size_t e) {
    alignas(32) float x[kHalfBlock], y[kHalfBlock];
    for (size_t i = b; i < e; i += kHalfBlock) {
      size_t m = std::min(kHalfBlock, e - i);
      to_float(s + i, x, m);
      body(x, y, m);
      from_float(y, d + i, m);
    }
  });
}
template <typename H, typename Body>
void half_blocks(const array& a, const array& b, array& out, Body body) {
  out.alloc();
  const H* s = a.data<H>();
  const H* t = b.data<H>();
  H* d = out.data<H>();
  cpu::parallel_for(out.size(), cpu::kGrainMedium, [&](size_t lo, size_t hi) {
    alignas(32) float x[kHalfBlock], y[kHalfBlock], z[kHalfBlock];
    for (size_t i = lo; i < hi; i += kHalfBlock) {
      size_t m = std::min(kHalfBlock, hi - i);
      to_float(s + i, x, m);
      to_float(t + i, y, m);
      body(x, y, z, m);
      from_float(z, d + i, m);
    }
  });
}

// Any layout of a float or 16-bit array through float blocks: each innermost row is gathered into a
// block (converted to float), body(x, y, n) computes n floats, and the results are stored (rounded
// once). Used by the vectorized ops so that strided inputs give the same values as contiguous ones.
template <typename T, typename Body>
void strided_blocks(const array& in, array& out, Body body) {
  out.alloc();
  const T* src = static_cast<const T*>(in.buffer()->ptr);
  T* dst = out.data<T>();
  cpu::for_each_row<2>(out.shape(), {&out.strides(), &in.strides()}, {0, in.offset()}, cpu::kGrainMedium,
                       [&](const std::array<int64_t, 2>& o, int64_t m, const std::array<int64_t, 2>& st) {
                         alignas(64) float x[kHalfBlock], y[kHalfBlock];
                         T* d = dst + o[0];
                         const T* s = src + o[1];
                         const int64_t ss = st[1], ds = st[0];
                         for (int64_t i = 0; i < m; i += static_cast<int64_t>(kHalfBlock)) {
                           const int64_t k = std::min<int64_t>(static_cast<int64_t>(kHalfBlock), m - i);
                           for (int64_t j = 0; j < k; ++j) x[j] = static_cast<float>(s[(i + j) * ss]);
                           body(x, y, static_cast<size_t>(k));
                           for (int64_t j = 0; j < k; ++j) d[(i + j) * ds] = T(y[j]);
                         }
                       });
}

// Unary kernel for ops that MLX evaluates on inexact types only: Op::apply(x) for x of type float,
// double and (when Complex) complex64_t; float16/bfloat16 compute in float and round once.
// Ops with kVec (a cpu::VUnary) run their float32 and 16-bit values through the vector math
// (cpu::vunary: MLX's polynomials bit for bit, SLEEF's 1-ULP functions for the C library's), in any
// layout; float64 and complex values take Op::apply, element by element.
template <typename Op, bool Complex = true>
void unary_fp(const array& in, array& out) {
  constexpr bool kVec = requires { Op::kVec; };
  auto float_block = [](const float* x, float* y, size_t n) {
    if constexpr (kVec) cpu::vunary(Op::kVec, x, y, n);
    else
      for (size_t i = 0; i < n; ++i) y[i] = Op::apply(x[i]);
  };
  detail::dispatch_all(in.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, float>) {
      if (in.row_contiguous()) {
        out.alloc();
        const float* s = in.data<float>();
        float* d = out.data<float>();
        cpu::parallel_for(out.size(), cpu::kGrainMedium, [&](size_t b, size_t e) { float_block(s + b, d + b, e - b); });
      } else if constexpr (kVec) {
        strided_blocks<T>(in, out, float_block);
      } else {
        unary_run<T, T>(in, out, [](T v) { return Op::apply(v); });
      }
    } else if constexpr (detail::is_half_v<T>) {
      if (in.row_contiguous()) half_blocks<T>(in, out, float_block);
      else if constexpr (kVec) strided_blocks<T>(in, out, float_block);
      else unary_run<T, T>(in, out, [](T v) { return T(Op::apply(static_cast<float>(v))); });
    } else if constexpr (detail::is_float_v<T>) {
      unary_run<T, T>(in, out, [](T v) { return Op::apply(v); });
    } else if constexpr (detail::is_complex_v<T> && Complex) {
      unary_run<T, T>(in, out, [](T v) { return Op::apply(v); });
    }
    // Other dtypes never get here: the infer rule rejects them.
  });
}

// ---------------------------------------------------------------------------------------------
// Tile functions (backend/cpu/fusion.h: what a fused group runs when every member has one). Each computes
// what its kernel computes on row-contiguous arrays of the same dtypes, through the same Op, so fused and
// unfused results stay bit-identical (tests/unit/test_fusion.cpp checks every row both ways).

// The function make(tag) returns for dtype t (a cpu::TileFn, or null where the kernel has no such dtype).
template <typename Make>
cpu::TileFn tile_by_dtype(Dtype t, Make make) {
  cpu::TileFn f = nullptr;
  detail::dispatch_all(t, [&](auto tag) { f = make(tag); });
  return f;
}

// out[i] = Op::apply(a[i]) / Op::apply(a[i], b[i]).
template <typename Op, typename T, typename Out = T>
void tile_apply1(const void* const* in, void* out, size_t n) {
  const T* a = static_cast<const T*>(in[0]);
  Out* o = static_cast<Out*>(out);
  for (size_t i = 0; i < n; ++i) o[i] = Op::apply(a[i]);
}
template <typename Op, typename T, typename Out = T>
void tile_apply2(const void* const* in, void* out, size_t n) {
  const T* a = static_cast<const T*>(in[0]);
  const T* b = static_cast<const T*>(in[1]);
  Out* o = static_cast<Out*>(out);
  for (size_t i = 0; i < n; ++i) o[i] = Op::apply(a[i], b[i]);
}

// The input copied: for the kernels that share their input's buffer (Copy, Abs of unsigned, ...).
template <size_t Bytes>
void tile_copy(const void* const* in, void* out, size_t n) {
  std::memcpy(out, in[0], n * Bytes);
}
inline cpu::TileFn copy_tile(size_t itemsize) {
  switch (itemsize) {
    case 1: return &tile_copy<1>;
    case 2: return &tile_copy<2>;
    case 4: return &tile_copy<4>;
    case 8: return &tile_copy<8>;
    default: return nullptr;
  }
}

// float32 through the vector math: Op::kTileF32 of the exact ops (abs, negative, square, maximum, minimum,
// the comparisons), whose vector forms give the scalar code's bits.
template <cpu::VUnary F>
void vunary_tile(const void* const* in, void* out, size_t n) {
  cpu::vunary(F, static_cast<const float*>(in[0]), static_cast<float*>(out), n);
}
template <cpu::VBinary F>
void vbinary_tile(const void* const* in, void* out, size_t n) {
  cpu::vbinary(F, static_cast<const float*>(in[0]), static_cast<const float*>(in[1]), static_cast<float*>(out), n);
}
template <cpu::VCompare F>
void vcompare_tile(const void* const* in, void* out, size_t n) {
  cpu::vcompare(F, static_cast<const float*>(in[0]), static_cast<const float*>(in[1]), static_cast<bool*>(out), n);
}

// 16-bit values through float blocks, as half_blocks does: body(x, y, n) or body(x, y, z, n) on floats.
template <typename H, typename Body>
void tile_half1(const void* in, void* out, size_t n, Body body) {
  const H* s = static_cast<const H*>(in);
  H* d = static_cast<H*>(out);
  alignas(64) float x[kHalfBlock], y[kHalfBlock];
  for (size_t i = 0; i < n; i += kHalfBlock) {
    const size_t m = std::min(kHalfBlock, n - i);
    to_float(s + i, x, m);
    body(x, y, m);
    from_float(y, d + i, m);
  }
}
template <typename H, typename Body>
void tile_half2(const void* a, const void* b, void* out, size_t n, Body body) {
  const H* s = static_cast<const H*>(a);
  const H* t = static_cast<const H*>(b);
  H* d = static_cast<H*>(out);
  alignas(64) float x[kHalfBlock], y[kHalfBlock], z[kHalfBlock];
  for (size_t i = 0; i < n; i += kHalfBlock) {
    const size_t m = std::min(kHalfBlock, n - i);
    to_float(s + i, x, m);
    to_float(t + i, y, m);
    body(x, y, z, m);
    from_float(z, d + i, m);
  }
}

// unary_fp's tile function: float32 and 16-bit values through the same float blocks, the others through
// Op::apply.
template <typename Op, typename T>
void fp_tile(const void* const* in, void* out, size_t n) {
  auto float_block = [](const float* x, float* y, size_t m) {
    if constexpr (requires { Op::kVec; }) cpu::vunary(Op::kVec, x, y, m);
    else
      for (size_t i = 0; i < m; ++i) y[i] = Op::apply(x[i]);
  };
  if constexpr (std::is_same_v<T, float>) float_block(static_cast<const float*>(in[0]), static_cast<float*>(out), n);
  else if constexpr (detail::is_half_v<T>) tile_half1<T>(in[0], out, n, float_block);
  else tile_apply1<Op, T>(in, out, n);
}
template <typename Op, bool Complex = true>
cpu::TileFn unary_fp_tile(const Node& node, const std::vector<Dtype>& in) {
  if (node.specs[0].dtype != in[0]) return nullptr;
  return tile_by_dtype(in[0], [](auto tag) -> cpu::TileFn {
    using T = decltype(tag);
    if constexpr (detail::is_float_v<T> || (detail::is_complex_v<T> && Complex)) return &fp_tile<Op, T>;
    else return nullptr;
  });
}

// ---------------------------------------------------------------------------------------------
// Registration of the sub-families' kernels (called from register_cpu_elementwise in unary.cpp, and
// register_cpu_binary).
void register_cpu_unary_math(detail::KernelTable& table);
void register_cpu_binary(detail::KernelTable& table);
void register_cpu_binary_compare(detail::KernelTable& table);
void register_cpu_ternary(detail::KernelTable& table);
// Their tile functions (called from cpu::register_cpu_elementwise_tiles in unary.cpp).
void register_cpu_unary_math_tiles(cpu::TileTable& table);
void register_cpu_binary_tiles(cpu::TileTable& table);
void register_cpu_binary_compare_tiles(cpu::TileTable& table);
void register_cpu_ternary_tiles(cpu::TileTable& table);

}  // namespace kiln::ew
