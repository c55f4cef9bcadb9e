// CPU kernels of the element-wise unary primitives without transcendental math (casts, views, sign and
// rounding ops, logical/bitwise negation, complex parts), and the element-wise family's entry
// register_cpu_elementwise. The math ones (Exp, Sin, ...) are in unary_math.cpp; the rows in
// src/primitives/elementwise/unary.cpp.
#include "backend/cpu/kernels/elementwise/elementwise_common.h"  // first: it sets the kernels' float options

#include <cmath>
#include <limits>

#include "backend/cpu/kernels/families.h"

namespace kiln {

namespace ew {

array broadcast_view(const array& a, const Shape& shape) {
  if (a.shape() == shape) return a;
  array v(shape, a.dtype(), nullptr, 0);
  const int nd = static_cast<int>(shape.size());
  const int off = nd - static_cast<int>(a.ndim());
  Strides st(nd, 0);
  for (int i = 0; i < static_cast<int>(a.ndim()); ++i) st[off + i] = a.shape()[i] == 1 ? 0 : a.strides()[i];
  v.set_view(a, std::move(st), a.offset());
  return v;
}

}  // namespace ew

namespace {

using namespace ew;

// float32 <-> float16/bfloat16 of row-major arrays use the block conversions (F16C when available).
template <typename From, typename To>
void convert_blocks(const array& in, array& out) {
  out.alloc();
  const From* s = in.data<From>();
  To* d = out.data<To>();
  cpu::parallel_for(out.size(), cpu::kGrainCheap, [&](size_t b, size_t e) {
    if constexpr (std::is_same_v<From, float>) from_float(s + b, d + b, e - b);
    else to_float(s + b, d + b, e - b);
  });
}

void astype_cpu(const Node&, const std::vector<array>& in, std::vector<array>& out) {
  const Dtype from = in[0].dtype(), to = out[0].dtype();
  if (in[0].row_contiguous()) {
    if (from == float32 && to == float16) return convert_blocks<float, float16_t>(in[0], out[0]);
    if (from == float32 && to == bfloat16) return convert_blocks<float, bfloat16_t>(in[0], out[0]);
    if (from == float16 && to == float32) return convert_blocks<float16_t, float>(in[0], out[0]);
    if (from == bfloat16 && to == float32) return convert_blocks<bfloat16_t, float>(in[0], out[0]);
  }
  detail::dispatch_all(in[0].dtype(), [&](auto s) {
    using S = decltype(s);
    detail::dispatch_all(out[0].dtype(), [&](auto t) {
      using T = decltype(t);
      unary_run<S, T>(in[0], out[0], [](S v) { return detail::cast_to<T>(v); });
    });
  });
}

void share_cpu(const Node&, const std::vector<array>& in, std::vector<array>& out) { share_input(in[0], out[0]); }

// The same-type unary ops. apply(v) computes one element; kShares<T>: for dtype T the kernel shares its
// input's buffer instead (the value is the input's); kTileF32: the exact vector op (cpu/vmath.h) that gives
// apply's float32 bits, for the tile function.
struct AbsOp {
  static constexpr cpu::VUnary kTileF32 = cpu::VUnary::Abs;  // the tile function's float32 loop
  template <typename T>
  static constexpr bool kShares = std::is_same_v<T, bool> || std::is_unsigned_v<T>;
  template <typename T>
  static T apply(T v) {
    if constexpr (detail::is_complex_v<T>) {
      // The magnitude goes in the real part; the op builder then casts to float32, as MLX does.
      return T(std::abs(v), 0.0f);
    } else if constexpr (std::is_integral_v<T>) {
      return v < 0 ? wrap_sub(T(0), v) : v;
    } else {
      return T(std::fabs(static_cast<detail::acc_t<T>>(v)));
    }
  }
};

struct NegativeOp {
  static constexpr cpu::VUnary kTileF32 = cpu::VUnary::Negative;  // the tile function's float32 loop
  template <typename T>
  static constexpr bool kShares = std::is_same_v<T, bool>;  // -true is still true once stored as bool
  template <typename T>
  static T apply(T v) {
    if constexpr (std::is_integral_v<T>) return wrap_sub(T(0), v);
    else if constexpr (detail::is_half_v<T>) return T::from_bits(v.bits ^ 0x8000u);
    else return -v;
  }
};

struct SignOp {
  template <typename T>
  static constexpr bool kShares = std::is_same_v<T, bool>;
  template <typename T>
  static T apply(T v) {
    if constexpr (std::is_unsigned_v<T>) {
      return T(v != 0);
    } else if constexpr (detail::is_complex_v<T>) {
      // v / |v| as MLX computes it, a C complex division by |v| + 0i: a non-finite input gives NaN in
      // both parts, and a zero part takes its sign from (a + b·0), so -0 + 100i gives +0 + 1i.
      if (!std::isfinite(v.real()) || !std::isfinite(v.imag())) {
        const float nan = std::numeric_limits<float>::quiet_NaN();
        return T(nan, nan);
      }
      if (v == T(0)) return v;
      const float r = std::abs(v);
      return T((v.real() + v.imag() * 0.0f) / r, (v.imag() - v.real() * 0.0f) / r);
    } else {
      // NaN and -0 give +0, as in MLX.
      using A = detail::acc_t<T>;
      A x = static_cast<A>(v);
      return T(x < A(0) ? A(-1) : (x > A(0) ? A(1) : A(0)));
    }
  }
};

struct SquareOp {
  static constexpr cpu::VUnary kTileF32 = cpu::VUnary::Square;  // the tile function's float32 loop
  template <typename T>
  static constexpr bool kShares = std::is_same_v<T, bool>;
  template <typename T>
  static T apply(T v) {
    if constexpr (std::is_integral_v<T>) {
      return wrap_mul(v, v);
    } else {
      using A = detail::acc_t<T>;
      return T(static_cast<A>(v) * static_cast<A>(v));
    }
  }
};

// Floor, Ceil and Round leave integers untouched (sharing the buffer) and round complex parts separately.
template <int Mode>  // 0 floor, 1 ceil, 2 round half to even
struct RoundingOp {
  template <typename T>
  static constexpr bool kShares = !detail::is_complex_v<T> && !detail::is_float_v<T>;
  template <typename X>
  static X f(X x) {
    if constexpr (Mode == 0) return floor_f(x);
    else if constexpr (Mode == 1) return ceil_f(x);
    else return rint_f(x);
  }
  template <typename T>
  static T apply(T v) {
    if constexpr (detail::is_complex_v<T>) return T(f(v.real()), f(v.imag()));
    else return T(f(static_cast<detail::acc_t<T>>(v)));
  }
};

struct BitwiseInvertOp {
  template <typename T>
  static constexpr bool kShares = false;
  template <typename T>
  static T apply(T v) {
    return static_cast<T>(~v);
  }
};

struct ConjugateOp {
  template <typename T>
  static constexpr bool kShares = !detail::is_complex_v<T>;
  template <typename T>
  static T apply(T v) {
    return std::conj(v);
  }
};

// Whether Op's kernel computes dtype T (the rows reject the others).
template <typename Op, typename T>
constexpr bool computes() {
  if constexpr (std::is_same_v<Op, BitwiseInvertOp>) return std::is_integral_v<T> && !std::is_same_v<T, bool>;
  else if constexpr (std::is_same_v<Op, ConjugateOp>) return detail::is_complex_v<T>;
  else return true;
}

// The kernel of a same-type unary op, any layout.
template <typename Op>
void same_type_cpu(const Node&, const std::vector<array>& in, std::vector<array>& out) {
  detail::dispatch_all(in[0].dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (Op::template kShares<T>) share_input(in[0], out[0]);
    else if constexpr (computes<Op, T>()) unary_run<T, T>(in[0], out[0], [](T v) { return Op::apply(v); });
  });
}

// Its tile function: the input copied where the kernel shares it.
template <typename Op, typename T>
cpu::TileFn same_type_tile_fn() {
  if constexpr (Op::template kShares<T>) return copy_tile(sizeof(T));
  else if constexpr (std::is_same_v<T, float> && requires { Op::kTileF32; }) return &vunary_tile<Op::kTileF32>;
  else if constexpr (computes<Op, T>()) return &tile_apply1<Op, T>;
  else return nullptr;
}

template <typename Op>
cpu::TileFn same_type_tile(const Node& node, const std::vector<Dtype>& in) {
  if (node.specs[0].dtype != in[0]) return nullptr;
  return tile_by_dtype(in[0], [](auto tag) -> cpu::TileFn { return same_type_tile_fn<Op, decltype(tag)>(); });
}

struct LogicalNotOp {
  template <typename T>
  static bool apply(T v) {
    if constexpr (detail::is_half_v<T>) return static_cast<float>(v) == 0.0f;
    else return v == T(0);
  }
};

void logical_not_cpu(const Node&, const std::vector<array>& in, std::vector<array>& out) {
  detail::dispatch_all(in[0].dtype(), [&](auto tag) {
    using T = decltype(tag);
    unary_run<T, bool>(in[0], out[0], [](T v) { return LogicalNotOp::apply(v); });
  });
}

cpu::TileFn logical_not_tile(const Node& node, const std::vector<Dtype>& in) {
  if (node.specs[0].dtype != bool_) return nullptr;
  return tile_by_dtype(in[0], [](auto tag) -> cpu::TileFn { return &tile_apply1<LogicalNotOp, decltype(tag), bool>; });
}

struct RealOp {
  static float apply(complex64_t v) { return v.real(); }
};
struct ImagOp {
  static float apply(complex64_t v) { return v.imag(); }
};

template <typename Op>
void part_cpu(const Node&, const std::vector<array>& in, std::vector<array>& out) {
  unary_run<complex64_t, float>(in[0], out[0], [](complex64_t v) { return Op::apply(v); });
}

template <typename Op>
cpu::TileFn part_tile(const Node& node, const std::vector<Dtype>& in) {
  if (in[0] != complex64 || node.specs[0].dtype != float32) return nullptr;
  return &tile_apply1<Op, complex64_t, float>;
}

// AsType's tile function: float32 <-> float16/bfloat16 through the block conversions (as the kernel on
// row-major arrays), every other pair through cast_to.
template <typename S, typename T>
void cast_tile(const void* const* in, void* out, size_t n) {
  const S* s = static_cast<const S*>(in[0]);
  T* d = static_cast<T*>(out);
  if constexpr (std::is_same_v<S, float> && detail::is_half_v<T>) from_float(s, d, n);
  else if constexpr (detail::is_half_v<S> && std::is_same_v<T, float>) to_float(s, d, n);
  else
    for (size_t i = 0; i < n; ++i) d[i] = detail::cast_to<T>(s[i]);
}

cpu::TileFn astype_tile(const Node& node, const std::vector<Dtype>& in) {
  const Dtype to = node.specs[0].dtype;
  return tile_by_dtype(in[0], [&](auto s) -> cpu::TileFn {
    using S = decltype(s);
    return tile_by_dtype(to, [](auto t) -> cpu::TileFn { return &cast_tile<S, decltype(t)>; });
  });
}

cpu::TileFn share_tile(const Node& node, const std::vector<Dtype>& in) {
  if (node.specs[0].dtype != in[0]) return nullptr;
  return copy_tile(in[0].size);
}

// View reinterprets the bytes. It shares the buffer whenever the new strides and offset are whole
// elements of the new type, and otherwise copies to a row-contiguous buffer first.
void view_cpu(const Node&, const std::vector<array>& in, std::vector<array>& out) {
  const array& a = in[0];
  array& o = out[0];
  const int64_t ib = a.itemsize(), ob = o.itemsize();
  const int nd = static_cast<int>(a.ndim());
  bool last_unit = nd == 0 || a.shape().back() == 1 || a.strides().back() == 1;
  bool offset_ok = (a.offset() * ib) % ob == 0;
  if (offset_ok && (a.row_contiguous() || ib == ob || (ob < ib && last_unit))) {
    Strides st(o.ndim());
    if (a.row_contiguous()) {
      st = row_major_strides(o.shape());
    } else {
      for (int i = 0; i < nd; ++i) st[i] = a.strides()[i] * ib / ob;
      if (nd > 0 && ib != ob) st[nd - 1] = 1;
    }
    o.set_view(a, std::move(st), a.offset() * ib / ob);
    return;
  }
  array c(a.shape(), a.dtype(), nullptr, 0);
  cpu::copy_to_contiguous(a, c);
  o.set_view(c, row_major_strides(o.shape()), 0);
}

}  // namespace

namespace cpu {
void register_cpu_elementwise(detail::KernelTable& table) {
  table.add({{"AsType", astype_cpu}, {"View", view_cpu}, {"Copy", share_cpu}, {"StopGradient", share_cpu},
             {"Abs", same_type_cpu<AbsOp>}, {"Negative", same_type_cpu<NegativeOp>}, {"Sign", same_type_cpu<SignOp>},
             {"Square", same_type_cpu<SquareOp>}, {"Floor", same_type_cpu<RoundingOp<0>>},
             {"Ceil", same_type_cpu<RoundingOp<1>>}, {"Round", same_type_cpu<RoundingOp<2>>},
             {"LogicalNot", logical_not_cpu}, {"BitwiseInvert", same_type_cpu<BitwiseInvertOp>},
             {"Conjugate", same_type_cpu<ConjugateOp>}, {"Real", part_cpu<RealOp>}, {"Imag", part_cpu<ImagOp>}});
  ew::register_cpu_unary_math(table);
  ew::register_cpu_binary(table);
}

// The element-wise family's tile functions (fusion.h): one resolver for every row that a fused group may
// hold (View is no member: it is not flagged element-wise; DivMod has two outputs).
void register_cpu_elementwise_tiles(TileTable& table) {
  table.add({{"AsType", astype_tile}, {"Copy", share_tile}, {"StopGradient", share_tile},
             {"Abs", same_type_tile<AbsOp>}, {"Negative", same_type_tile<NegativeOp>},
             {"Sign", same_type_tile<SignOp>}, {"Square", same_type_tile<SquareOp>},
             {"Floor", same_type_tile<RoundingOp<0>>}, {"Ceil", same_type_tile<RoundingOp<1>>},
             {"Round", same_type_tile<RoundingOp<2>>}, {"LogicalNot", logical_not_tile},
             {"BitwiseInvert", same_type_tile<BitwiseInvertOp>}, {"Conjugate", same_type_tile<ConjugateOp>},
             {"Real", part_tile<RealOp>}, {"Imag", part_tile<ImagOp>}});
  ew::register_cpu_unary_math_tiles(table);
  ew::register_cpu_binary_tiles(table);
  ew::register_cpu_binary_compare_tiles(table);
  ew::register_cpu_ternary_tiles(table);
}
}  // namespace cpu

}  // namespace kiln
