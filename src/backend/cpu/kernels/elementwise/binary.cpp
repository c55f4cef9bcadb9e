// CPU kernels of the element-wise arithmetic binary primitives (Add, Subtract, Multiply, Divide,
// Remainder, DivMod, Power, Maximum, Minimum, ArcTan2, LogAddExp, FloorDivide); the rows and op builders
// are in src/primitives/elementwise/binary.cpp, comparisons, logical and bitwise kernels in
// binary_compare.cpp.
//
// Integer corner cases where MLX's CPU kernels crash or hang get defined results here: x / 0 and
// x % 0 give 0, INT_MIN / -1 wraps, and a negative integer exponent gives the truncated real result
// (1 for base 1, ±1 for base -1, else 0).
#include "backend/cpu/kernels/elementwise/elementwise_common.h"  // first: it sets the kernels' float options

#include <cmath>

namespace kiln {

namespace {

using namespace ew;

template <typename T>
inline constexpr bool is_int_v = std::is_integral_v<T> && !std::is_same_v<T, bool>;

// Each Op: apply(x, y) for every dtype's C++ type (half types compute in float).
struct AddOp {
  static constexpr bool kHalfViaFloat = true;
  static constexpr cpu::VBinary kVec = cpu::VBinary::Add;
  template <typename T>
  static T apply(T x, T y) {
    if constexpr (std::is_same_v<T, bool>) return x || y;
    else if constexpr (is_int_v<T>) return wrap_add(x, y);
    else if constexpr (detail::is_half_v<T>) return T(static_cast<float>(x) + static_cast<float>(y));
    else return x + y;
  }
};

struct SubtractOp {
  static constexpr bool kHalfViaFloat = true;
  static constexpr cpu::VBinary kVec = cpu::VBinary::Subtract;
  template <typename T>
  static T apply(T x, T y) {
    if constexpr (std::is_same_v<T, bool>) return x != y;
    else if constexpr (is_int_v<T>) return wrap_sub(x, y);
    else if constexpr (detail::is_half_v<T>) return T(static_cast<float>(x) - static_cast<float>(y));
    else return x - y;
  }
};

struct MultiplyOp {
  static constexpr bool kHalfViaFloat = true;
  static constexpr cpu::VBinary kVec = cpu::VBinary::Multiply;
  template <typename T>
  static T apply(T x, T y) {
    if constexpr (std::is_same_v<T, bool>) return x && y;
    else if constexpr (is_int_v<T>) return wrap_mul(x, y);
    else if constexpr (detail::is_half_v<T>) return T(static_cast<float>(x) * static_cast<float>(y));
    else return x * y;
  }
};

// Integer division truncates toward zero (MLX's floor_divide on integers does too).
template <typename T>
inline T int_div(T x, T y) {
  if (y == 0) return T(0);
  if constexpr (std::is_signed_v<T>) {
    if (y == T(-1)) return wrap_sub(T(0), x);
  }
  return static_cast<T>(x / y);
}

template <typename T>
inline T int_mod(T x, T y) {
  if (y == 0) return T(0);
  if constexpr (std::is_signed_v<T>) {
    if (y == T(-1)) return T(0);
  }
  return static_cast<T>(x % y);
}

struct DivideOp {
  static constexpr bool kHalfViaFloat = true;
  static constexpr cpu::VBinary kVec = cpu::VBinary::Divide;
  template <typename T>
  static T apply(T x, T y) {
    if constexpr (std::is_same_v<T, bool>) return x && y;
    else if constexpr (is_int_v<T>) return int_div(x, y);
    else if constexpr (detail::is_half_v<T>) return T(static_cast<float>(x) / static_cast<float>(y));
    else return x / y;
  }
};

// FloorDivide (MLX 0.32.4+, what `//` records there; kiln's own floor_divide keeps the older graph):
// integers round the quotient toward minus infinity (x // 0 gives 0), floats take floor(x / y),
// complex values are divided without rounding, booleans give x && y, as MLX 0.32.4 computes them.
struct FloorDivideOp {
  template <typename T>
  static T apply(T x, T y) {
    if constexpr (std::is_same_v<T, bool>) {
      return x && y;
    } else if constexpr (is_int_v<T>) {
      T q = int_div(x, y);
      if constexpr (std::is_signed_v<T>) {
        if (y != 0 && y != T(-1) && int_mod(x, y) != 0 && ((x < 0) != (y < 0))) q = static_cast<T>(q - 1);
      }
      return q;
    } else if constexpr (detail::is_half_v<T>) {
      return T(std::floor(static_cast<float>(x) / static_cast<float>(y)));
    } else if constexpr (detail::is_complex_v<T>) {
      return x / y;
    } else {
      return std::floor(x / y);
    }
  }
};

// Python-style remainder: the result takes the divisor's sign. MLX skips that fix for float16 and
// bfloat16 (its half types do not count as signed) and uses the real parts for complex inputs.
struct RemainderOp {
  template <typename T>
  static T apply(T x, T y) {
    if constexpr (std::is_same_v<T, bool>) {
      return false;
    } else if constexpr (is_int_v<T>) {
      T r = int_mod(x, y);
      if constexpr (std::is_signed_v<T>) {
        if (r != 0 && ((r < 0) != (y < 0))) r = static_cast<T>(r + y);
      }
      return r;
    } else if constexpr (detail::is_half_v<T>) {
      return T(std::remainder(static_cast<float>(x), static_cast<float>(y)));
    } else if constexpr (detail::is_complex_v<T>) {
      return T(std::remainder(x.real(), y.real()), 0.0f);
    } else {
      T r = std::remainder(x, y);
      if (r != 0 && ((r < 0) != (y < 0))) r += y;
      return r;
    }
  }
};

// kVec: the cpu::VBinary that computes the op's float32 values in vector form (cpu/vmath.h).
struct PowerOp {
  static constexpr bool kHalfViaFloat = true;
  static constexpr cpu::VBinary kVec = cpu::VBinary::Power;
  template <typename T>
  static T apply(T base, T e) {
    if constexpr (std::is_same_v<T, bool>) {
      return e ? base : true;
    } else if constexpr (is_int_v<T>) {
      if constexpr (std::is_signed_v<T>) {
        if (e < 0) return base == 1 ? T(1) : (base == T(-1) ? ((e & 1) ? T(-1) : T(1)) : T(0));
      }
      T r = 1;
      auto n = static_cast<std::make_unsigned_t<T>>(e);
      while (n) {
        if (n & 1u) r = wrap_mul(r, base);
        n >>= 1;
        base = wrap_mul(base, base);
      }
      return r;
    } else if constexpr (detail::is_half_v<T>) {
      return T(std::pow(static_cast<float>(base), static_cast<float>(e)));
    } else {
      return std::pow(base, e);
    }
  }
};

// NaN in the first operand wins; otherwise the comparison picks, so a NaN second operand also
// propagates. Complex numbers compare lexicographically and only the real part is tested for NaN.
template <bool Max>
struct ExtremumOp {
  static constexpr bool kHalfViaFloat = true;  // picks one operand, exactly representable
  // The tile function's float32 loop: the exact vector op with this NaN rule (cpu/vmath.h).
  static constexpr cpu::VBinary kTileF32 = Max ? cpu::VBinary::Maximum : cpu::VBinary::Minimum;
  template <typename T>
  static T apply(T x, T y) {
    if constexpr (std::is_same_v<T, bool>) {
      return Max ? (x || y) : (x && y);
    } else if constexpr (is_int_v<T>) {
      return Max ? (x > y ? x : y) : (x < y ? x : y);
    } else if constexpr (detail::is_complex_v<T>) {
      if (std::isnan(x.real())) return x;
      return Max ? (cgt(x, y) ? x : y) : (cgt(y, x) ? x : y);
    } else {
      using A = detail::acc_t<T>;
      A a = static_cast<A>(x), b = static_cast<A>(y);
      if (a != a) return x;
      return Max ? (a > b ? x : y) : (a < b ? x : y);
    }
  }
};

struct ArcTan2Op {
  static constexpr bool kHalfViaFloat = true;
  static constexpr cpu::VBinary kVec = cpu::VBinary::ArcTan2;
  template <typename T>
  static T apply(T x, T y) {
    if constexpr (detail::is_complex_v<T>) return T(std::atan2(x.real(), y.real()), 0.0f);  // MLX uses real parts
    else if constexpr (detail::is_half_v<T>) return T(std::atan2(static_cast<float>(x), static_cast<float>(y)));
    else return std::atan2(x, y);
  }
};

// max + log1p(exp(min - max)); infinite operands short-circuit to the maximum.
struct LogAddExpOp {
  static constexpr bool kHalfViaFloat = true;
  static constexpr cpu::VBinary kVec = cpu::VBinary::LogAddExp;
  template <typename T>
  static T apply(T x, T y) {
    if constexpr (detail::is_half_v<T>) {
      return T(apply(static_cast<float>(x), static_cast<float>(y)));
    } else {
      T hi = ExtremumOp<true>::apply(x, y);
      T lo = ExtremumOp<false>::apply(x, y);
      if constexpr (detail::is_complex_v<T>) {
        const float inf = std::numeric_limits<float>::infinity();
        if (lo == T(-inf) || hi == T(inf)) return hi;
        return hi + log1p_c(std::exp(lo - hi));
      } else {
        const T inf = std::numeric_limits<T>::infinity();
        if (lo == -inf || hi == inf) return hi;
        return hi + std::log1p(static_cast<T>(exp_f(static_cast<float>(lo - hi))));
      }
    }
  }
};

// Ops with kVec on float32 / 16-bit operands: float blocks through cpu::vbinary. Operands that are
// row-major of the output's shape or a single element (x ** 2.0) are read directly (float32) or
// converted in blocks; other layouts (strided, broadcast) are gathered row by row, so every layout
// gives the same values.
template <typename Op, typename T>
void vec_binary_run(const array& a0, const array& b0, array& out) {
  const size_t n = out.size();
  // The arithmetic ops cost a cycle or so a vector: split them across threads only from the cheap ops'
  // grain (pow, atan2 and logaddexp from the medium one).
  constexpr bool kArith = Op::kVec == cpu::VBinary::Add || Op::kVec == cpu::VBinary::Subtract ||
                          Op::kVec == cpu::VBinary::Multiply || Op::kVec == cpu::VBinary::Divide;
  constexpr size_t kGrain = kArith ? cpu::kGrainCheap : cpu::kGrainMedium;
  auto usable = [&](const array& x) { return x.size() == 1 || (x.row_contiguous() && x.shape() == out.shape()); };
  if (!usable(a0) || !usable(b0)) {
    const array& a = a0.shape() == out.shape() ? a0 : broadcast_view(a0, out.shape());
    const array& b = b0.shape() == out.shape() ? b0 : broadcast_view(b0, out.shape());
    out.alloc();
    const T* pa = static_cast<const T*>(a.buffer()->ptr);
    const T* pb = static_cast<const T*>(b.buffer()->ptr);
    T* dst = out.data<T>();
    cpu::for_each_row<3>(
        out.shape(), {&out.strides(), &a.strides(), &b.strides()}, {0, a.offset(), b.offset()}, kGrain,
        [&](const std::array<int64_t, 3>& o, int64_t m, const std::array<int64_t, 3>& st) {
          alignas(64) float x[kHalfBlock], y[kHalfBlock], z[kHalfBlock];
          for (int64_t i = 0; i < m; i += static_cast<int64_t>(kHalfBlock)) {
            const int64_t k = std::min<int64_t>(static_cast<int64_t>(kHalfBlock), m - i);
            for (int64_t j = 0; j < k; ++j) {
              x[j] = static_cast<float>(pa[o[1] + (i + j) * st[1]]);
              y[j] = static_cast<float>(pb[o[2] + (i + j) * st[2]]);
            }
            cpu::vbinary(Op::kVec, x, y, z, static_cast<size_t>(k));
            for (int64_t j = 0; j < k; ++j) dst[o[0] + (i + j) * st[0]] = T(z[j]);
          }
        });
    return;
  }
  out.alloc();
  if (n == 0) return;
  const T* pa = a0.data<T>();
  const T* pb = b0.data<T>();
  const bool sa = a0.size() == 1 && n > 1, sb = b0.size() == 1 && n > 1;
  T* d = out.data<T>();
  cpu::parallel_for(n, kGrain, [&](size_t lo, size_t hi) {
    alignas(64) float x[kHalfBlock], y[kHalfBlock], z[kHalfBlock];
    const size_t fill = std::min(kHalfBlock, hi - lo);  // a small array needs only its own length
    if (sa) std::fill(x, x + fill, static_cast<float>(pa[0]));
    if (sb) std::fill(y, y + fill, static_cast<float>(pb[0]));
    for (size_t i = lo; i < hi; i += kHalfBlock) {
      const size_t m = std::min(kHalfBlock, hi - i);
      const float* xa = x;
      const float* yb = y;
      float* zo = z;
      if constexpr (std::is_same_v<T, float>) {
        if (!sa) xa = pa + i;
        if (!sb) yb = pb + i;
        zo = d + i;
      } else {
        if (!sa) to_float(pa + i, x, m);
        if (!sb) to_float(pb + i, y, m);
      }
      cpu::vbinary(Op::kVec, xa, yb, zo, m);
      if constexpr (!std::is_same_v<T, float>) from_float(z, d + i, m);
    }
  });
}

// Runs Op over one dtype. Row-major float16/bfloat16 operands of the output's shape go through float
// blocks when the op's float16 result is its float result rounded once (kHalfViaFloat).
template <typename Op, typename T>
void arith_run(const std::vector<array>& in, std::vector<array>& out) {
  if constexpr (requires { Op::kVec; } && (std::is_same_v<T, float> || detail::is_half_v<T>)) {
    return vec_binary_run<Op, T>(in[0], in[1], out[0]);
  }
  if constexpr (detail::is_half_v<T> && requires { Op::kHalfViaFloat; }) {
    const array &a = in[0], &b = in[1];
    if (a.row_contiguous() && b.row_contiguous() && a.shape() == out[0].shape() && b.shape() == out[0].shape()) {
      half_blocks<T>(a, b, out[0], [](const float* x, const float* y, float* z, size_t n) {
        for (size_t i = 0; i < n; ++i) z[i] = Op::apply(x[i], y[i]);
      });
      return;
    }
  }
  binary_run<T, T>(in[0], in[1], out[0], [](T x, T y) { return Op::apply(x, y); });
}

template <typename Op>
void arith_cpu(const Node&, const std::vector<array>& in, std::vector<array>& out) {
  detail::dispatch_all(in[0].dtype(), [&](auto tag) { arith_run<Op, decltype(tag)>(in, out); });
}

template <typename Op>
void float_arith_cpu(const Node&, const std::vector<array>& in, std::vector<array>& out) {
  detail::dispatch_all(in[0].dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (detail::is_float_v<T> || detail::is_complex_v<T>) arith_run<Op, T>(in, out);
  });
}

// arith_run's tile function: float32 and 16-bit values the same three ways (vector math, float blocks,
// Op::apply), the others through Op::apply.
template <typename Op, typename T>
void arith_tile(const void* const* in, void* out, size_t n) {
  if constexpr (requires { Op::kTileF32; } && std::is_same_v<T, float>) {
    vbinary_tile<Op::kTileF32>(in, out, n);
  } else if constexpr (requires { Op::kVec; } && std::is_same_v<T, float>) {
    cpu::vbinary(Op::kVec, static_cast<const float*>(in[0]), static_cast<const float*>(in[1]),
                 static_cast<float*>(out), n);
  } else if constexpr (requires { Op::kVec; } && detail::is_half_v<T>) {
    tile_half2<T>(in[0], in[1], out, n,
                  [](const float* x, const float* y, float* z, size_t m) { cpu::vbinary(Op::kVec, x, y, z, m); });
  } else if constexpr (detail::is_half_v<T> && requires { Op::kHalfViaFloat; }) {
    tile_half2<T>(in[0], in[1], out, n, [](const float* x, const float* y, float* z, size_t m) {
      for (size_t i = 0; i < m; ++i) z[i] = Op::apply(x[i], y[i]);
    });
  } else {
    tile_apply2<Op, T>(in, out, n);
  }
}

template <typename Op, bool FloatOnly = false>
cpu::TileFn arith_tile_for(const Node& node, const std::vector<Dtype>& in) {
  if (in[1] != in[0] || node.specs[0].dtype != in[0]) return nullptr;
  return tile_by_dtype(in[0], [](auto tag) -> cpu::TileFn {
    using T = decltype(tag);
    if constexpr (FloatOnly && !(detail::is_float_v<T> || detail::is_complex_v<T>)) return nullptr;
    else return &arith_tile<Op, T>;
  });
}

// DivMod's state `floor` says which MLX semantics the node has; no MLX layout stores it (the file's
// release implies it, see format/version.cpp). false: C-style quotient and remainder (trunc(x / y),
// and fmod for floats), as MLX up to 0.32.1 computes them. true: Python's divmod, as MLX 0.32.2 on
// does: the quotient is floored and the remainder takes the divisor's sign (integers: x / y and x % y
// corrected when the remainder's sign differs from y's; floats: floor(x / y), and fmod corrected the same way).
template <typename T>
inline T floor_int_div(T x, T y) {
  T q = int_div(x, y);
  if constexpr (std::is_signed_v<T>) {
    T r = int_mod(x, y);
    if (r != 0 && ((r < 0) != (y < 0))) q = static_cast<T>(q - 1);
  }
  return q;
}

template <typename T>
inline T floor_int_mod(T x, T y) {
  T r = int_mod(x, y);
  if constexpr (std::is_signed_v<T>) {
    if (r != 0 && ((r < 0) != (y < 0))) r = static_cast<T>(r + y);
  }
  return r;
}

void divmod_cpu(const Node& node, const std::vector<array>& in, std::vector<array>& out) {
  auto& st = node.state.values;
  const bool floor = !st.empty() && std::holds_alternative<bool>(st[0]) && std::get<bool>(st[0]);
  detail::dispatch_all(in[0].dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, bool>) {
      binary_run<T, T>(in[0], in[1], out[0], [](T x, T y) { return x && y; });
      binary_run<T, T>(in[0], in[1], out[1], [](T, T) { return false; });
    } else if constexpr (is_int_v<T>) {
      if (floor) {
        binary_run<T, T>(in[0], in[1], out[0], [](T x, T y) { return floor_int_div(x, y); });
        binary_run<T, T>(in[0], in[1], out[1], [](T x, T y) { return floor_int_mod(x, y); });
        return;
      }
      binary_run<T, T>(in[0], in[1], out[0], [](T x, T y) { return int_div(x, y); });
      binary_run<T, T>(in[0], in[1], out[1], [](T x, T y) { return int_mod(x, y); });
    } else if constexpr (detail::is_float_v<T>) {
      using A = detail::acc_t<T>;
      if (floor) {
        binary_run<T, T>(in[0], in[1], out[0],
                         [](T x, T y) { return T(std::floor(static_cast<A>(x) / static_cast<A>(y))); });
        binary_run<T, T>(in[0], in[1], out[1], [](T x, T y) {
          A b = static_cast<A>(y);
          A r = std::fmod(static_cast<A>(x), b);
          if (r != 0 && ((r < 0) != (b < 0))) r += b;
          return T(r);
        });
        return;
      }
      using A = detail::acc_t<T>;
      binary_run<T, T>(in[0], in[1], out[0],
                       [](T x, T y) { return T(std::trunc(static_cast<A>(x) / static_cast<A>(y))); });
      binary_run<T, T>(in[0], in[1], out[1],
                       [](T x, T y) { return T(std::fmod(static_cast<A>(x), static_cast<A>(y))); });
    }
  });
}

}  // namespace

namespace ew {
void register_cpu_binary(detail::KernelTable& table) {
  table.add({{"Add", arith_cpu<AddOp>}, {"Subtract", arith_cpu<SubtractOp>},
             {"Multiply", arith_cpu<MultiplyOp>}, {"Divide", arith_cpu<DivideOp>},
             {"Remainder", arith_cpu<RemainderOp>}, {"Power", arith_cpu<PowerOp>},
             {"Maximum", arith_cpu<ExtremumOp<true>>}, {"Minimum", arith_cpu<ExtremumOp<false>>},
             {"ArcTan2", float_arith_cpu<ArcTan2Op>}, {"LogAddExp", float_arith_cpu<LogAddExpOp>},
             {"DivMod", divmod_cpu}, {"FloorDivide", arith_cpu<FloorDivideOp>}});
  register_cpu_binary_compare(table);
  register_cpu_ternary(table);
}

// DivMod has two outputs, so fused groups never hold it.
void register_cpu_binary_tiles(cpu::TileTable& table) {
  table.add({{"Add", arith_tile_for<AddOp>}, {"Subtract", arith_tile_for<SubtractOp>},
             {"Multiply", arith_tile_for<MultiplyOp>}, {"Divide", arith_tile_for<DivideOp>},
             {"Remainder", arith_tile_for<RemainderOp>}, {"Power", arith_tile_for<PowerOp>},
             {"Maximum", arith_tile_for<ExtremumOp<true>>}, {"Minimum", arith_tile_for<ExtremumOp<false>>},
             {"ArcTan2", arith_tile_for<ArcTan2Op, true>}, {"LogAddExp", arith_tile_for<LogAddExpOp, true>},
             {"FloorDivide", arith_tile_for<FloorDivideOp>}});
}
}  // namespace ew

}  // namespace kiln
