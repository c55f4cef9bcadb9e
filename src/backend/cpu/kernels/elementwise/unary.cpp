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

void abs_cpu(const Node&, const std::vector<array>& in, std::vector<array>& out) {
  detail::dispatch_all(in[0].dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (detail::is_complex_v<T>) {
      // The magnitude goes in the real part; the op builder then casts to float32, as MLX does.
      unary_run<T, T>(in[0], out[0], [](T v) { return T(std::abs(v), 0.0f); });
    } else if constexpr (std::is_same_v<T, bool> || std::is_unsigned_v<T>) {
      share_input(in[0], out[0]);
    } else if constexpr (std::is_integral_v<T>) {
      unary_run<T, T>(in[0], out[0], [](T v) { return v < 0 ? wrap_sub(T(0), v) : v; });
    } else {
      unary_run<T, T>(in[0], out[0], [](T v) { return T(std::fabs(static_cast<detail::acc_t<T>>(v))); });
    }
  });
}

void negative_cpu(const Node&, const std::vector<array>& in, std::vector<array>& out) {
  detail::dispatch_all(in[0].dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, bool>) {
      share_input(in[0], out[0]);  // -true is still true once stored as bool
    } else if constexpr (std::is_integral_v<T>) {
      unary_run<T, T>(in[0], out[0], [](T v) { return wrap_sub(T(0), v); });
    } else if constexpr (detail::is_half_v<T>) {
      unary_run<T, T>(in[0], out[0], [](T v) { return T::from_bits(v.bits ^ 0x8000u); });
    } else {
      unary_run<T, T>(in[0], out[0], [](T v) { return -v; });
    }
  });
}

void sign_cpu(const Node&, const std::vector<array>& in, std::vector<array>& out) {
  detail::dispatch_all(in[0].dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, bool>) {
      share_input(in[0], out[0]);
    } else if constexpr (std::is_unsigned_v<T>) {
      unary_run<T, T>(in[0], out[0], [](T v) { return T(v != 0); });
    } else if constexpr (detail::is_complex_v<T>) {
      // v / |v| as MLX computes it, a C complex division by |v| + 0i: a non-finite input gives NaN in
      // both parts, and a zero part takes its sign from (a + b·0), so -0 + 100i gives +0 + 1i.
      unary_run<T, T>(in[0], out[0], [](T v) {
        if (!std::isfinite(v.real()) || !std::isfinite(v.imag())) {
          const float nan = std::numeric_limits<float>::quiet_NaN();
          return T(nan, nan);
        }
        if (v == T(0)) return v;
        const float r = std::abs(v);
        return T((v.real() + v.imag() * 0.0f) / r, (v.imag() - v.real() * 0.0f) / r);
      });
    } else {
      // NaN and -0 give +0, as in MLX.
      using A = detail::acc_t<T>;
      unary_run<T, T>(in[0], out[0], [](T v) {
        A x = static_cast<A>(v);
        return T(x < A(0) ? A(-1) : (x > A(0) ? A(1) : A(0)));
      });
    }
  });
}

void square_cpu(const Node&, const std::vector<array>& in, std::vector<array>& out) {
  detail::dispatch_all(in[0].dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, bool>) {
      share_input(in[0], out[0]);
    } else if constexpr (std::is_integral_v<T>) {
      unary_run<T, T>(in[0], out[0], [](T v) { return wrap_mul(v, v); });
    } else {
      using A = detail::acc_t<T>;
      unary_run<T, T>(in[0], out[0], [](T v) { return T(static_cast<A>(v) * static_cast<A>(v)); });
    }
  });
}

// Floor, Ceil and Round leave integers untouched (sharing the buffer) and round complex parts separately.
template <int Mode>  // 0 floor, 1 ceil, 2 round half to even
void rounding_cpu(const Node&, const std::vector<array>& in, std::vector<array>& out) {
  detail::dispatch_all(in[0].dtype(), [&](auto tag) {
    using T = decltype(tag);
    auto f = [](auto x) {
      if constexpr (Mode == 0) return floor_f(x);
      else if constexpr (Mode == 1) return ceil_f(x);
      else return rint_f(x);
    };
    if constexpr (detail::is_complex_v<T>) {
      unary_run<T, T>(in[0], out[0], [f](T v) { return T(f(v.real()), f(v.imag())); });
    } else if constexpr (detail::is_float_v<T>) {
      unary_run<T, T>(in[0], out[0], [f](T v) { return T(f(static_cast<detail::acc_t<T>>(v))); });
    } else {
      share_input(in[0], out[0]);
    }
  });
}

void logical_not_cpu(const Node&, const std::vector<array>& in, std::vector<array>& out) {
  detail::dispatch_all(in[0].dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (detail::is_half_v<T>) {
      unary_run<T, bool>(in[0], out[0], [](T v) { return static_cast<float>(v) == 0.0f; });
    } else {
      unary_run<T, bool>(in[0], out[0], [](T v) { return v == T(0); });
    }
  });
}

void bitwise_invert_cpu(const Node&, const std::vector<array>& in, std::vector<array>& out) {
  detail::dispatch_all(in[0].dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
      unary_run<T, T>(in[0], out[0], [](T v) { return static_cast<T>(~v); });
    }
  });
}

void conjugate_cpu(const Node&, const std::vector<array>& in, std::vector<array>& out) {
  if (in[0].dtype() != complex64) return share_input(in[0], out[0]);
  unary_run<complex64_t, complex64_t>(in[0], out[0], [](complex64_t v) { return std::conj(v); });
}

void real_cpu(const Node&, const std::vector<array>& in, std::vector<array>& out) {
  unary_run<complex64_t, float>(in[0], out[0], [](complex64_t v) { return v.real(); });
}

void imag_cpu(const Node&, const std::vector<array>& in, std::vector<array>& out) {
  unary_run<complex64_t, float>(in[0], out[0], [](complex64_t v) { return v.imag(); });
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
             {"Abs", abs_cpu}, {"Negative", negative_cpu}, {"Sign", sign_cpu}, {"Square", square_cpu},
             {"Floor", rounding_cpu<0>}, {"Ceil", rounding_cpu<1>}, {"Round", rounding_cpu<2>},
             {"LogicalNot", logical_not_cpu}, {"BitwiseInvert", bitwise_invert_cpu},
             {"Conjugate", conjugate_cpu}, {"Real", real_cpu}, {"Imag", imag_cpu}});
  ew::register_cpu_unary_math(table);
  ew::register_cpu_binary(table);
}
}  // namespace cpu

}  // namespace kiln
