// CPU kernel of Scan (cumulative Max, Min, Sum, Prod, LogAddExp along one axis).
//
// The kernel views the contiguous input as (outer, n, inner) around the axis. With inner == 1 every row
// is an independent sequential scan; otherwise the axis is walked once and a block of `inner` running
// values is updated with an element-wise loop. Element rules follow MLX's CPU backend: the running value
// is `y`, the next input `x`; max keeps `x < y ? y : x` and min `x < y ? x : y` (so cummin propagates a
// NaN and cummax does not), an exclusive scan starts from the identity (+-inf for floating max/min,
// the type's limits otherwise). float16/bfloat16 run in float and round each output once.
#include <cmath>
#include <memory>
#include <limits>

#include "core/dispatch.h"
#include "backend/cpu/loops.h"
#include "backend/cpu/ordering.h"
#include "backend/cpu/threading.h"
#include "backend/cpu/kernels/reduce/reduce_kernels.h"

namespace kiln {

namespace {

using namespace reduce;

using cpu::ordered_less;

// Wrapping integer arithmetic (no signed-overflow UB); bool stays logical. Types narrower than int are
// widened to unsigned int first, since they would otherwise promote to (signed) int.
template <typename A>
using WideU = std::conditional_t<(sizeof(A) < sizeof(unsigned)), unsigned, std::make_unsigned_t<A>>;
template <typename A>
inline A wrap_add(A a, A b) {
  if constexpr (std::is_same_v<A, bool>) return a || b;
  else if constexpr (std::is_integral_v<A>) return static_cast<A>(WideU<A>(a) + WideU<A>(b));
  else return a + b;
}
template <typename A>
inline A wrap_mul(A a, A b) {
  if constexpr (std::is_same_v<A, bool>) return a && b;
  else if constexpr (std::is_integral_v<A>) return static_cast<A>(WideU<A>(a) * WideU<A>(b));
  else return a * b;
}

template <typename A>
inline A logaddexp(A y, A x) {
  if constexpr (std::is_floating_point_v<A>) {
    A mx = (y != y) ? y : (y > x ? y : x);
    A mn = (y != y) ? y : (y < x ? y : x);
    if (mn == -std::numeric_limits<A>::infinity() || mx == std::numeric_limits<A>::infinity()) return mx;
    return mx + std::log1p(std::exp(mn - mx));
  } else if constexpr (detail::is_complex_v<A>) {
    A mx = ordered_less(y, x) ? x : y;
    A mn = ordered_less(y, x) ? y : x;
    return mx + std::log(A(1.0f) + std::exp(mn - mx));
  } else if constexpr (std::is_same_v<A, bool>) {
    return y || x;  // what MLX 0.30.1 computes for bool
  } else {
    // Integers go through the same formula in the integer type, as MLX does: the difference is taken
    // as C++ takes it (8- and 16-bit types promote to int, so uint8 3 - 250 is -247; wider ones
    // wrap), exp (in float) and log1p truncate to the type.
    A mx = y > x ? y : x;
    A mn = y < x ? y : x;
    using D = decltype(mn - mx);
    D diff;
    if constexpr (sizeof(A) < sizeof(int)) diff = D(mn) - D(mx);
    else diff = static_cast<D>(std::make_unsigned_t<A>(mn) - std::make_unsigned_t<A>(mx));
    A e = detail::cast_to<A>(std::exp(static_cast<float>(diff)));
    A l = detail::cast_to<A>(std::log1p(static_cast<double>(e)));
    return wrap_add<A>(mx, l);
  }
}

template <typename A, int Type>
inline A scan_step(A y, A x) {
  if constexpr (Type == ScanSum) return wrap_add(y, x);
  else if constexpr (Type == ScanProd) return wrap_mul(y, x);
  else if constexpr (Type == ScanMax) return ordered_less(x, y) ? y : x;
  else if constexpr (Type == ScanMin) return ordered_less(x, y) ? x : y;
  else return logaddexp(y, x);
}

template <typename A, int Type, bool Floating>
A scan_init() {
  if constexpr (Type == ScanSum) return A(0);
  else if constexpr (Type == ScanProd) return A(1);
  else if constexpr (detail::is_complex_v<A>) return A(0);  // MLX uses numeric_limits, which is 0 for complex
  else if constexpr (Floating) {
    return Type == ScanMin ? std::numeric_limits<A>::infinity() : -std::numeric_limits<A>::infinity();
  } else {
    return Type == ScanMin ? std::numeric_limits<A>::max() : std::numeric_limits<A>::min();
  }
}

// T: input type, U: output type, A: running value type.
template <typename T, typename U, int Type>
void run_scan(const array& in, array& out, int axis, bool reverse, bool inclusive) {
  using A = std::conditional_t<detail::is_half_v<U>, float, U>;
  constexpr bool floating = detail::is_float_v<T>;
  const array x = cpu::contiguous_copy(in);
  out.alloc();
  if (x.size() == 0) return;
  const T* src = x.data<T>();
  U* dst = out.data<U>();
  const int64_t n = x.shape()[axis];
  int64_t inner = 1;
  for (size_t d = axis + 1; d < x.ndim(); ++d) inner *= x.shape()[d];
  const int64_t outer = static_cast<int64_t>(x.size()) / (n * inner);
  const A init = scan_init<A, Type, floating>();
  const int64_t first = reverse ? n - 1 : 0;
  const int64_t step = reverse ? -1 : 1;
  if (inner == 1) {
    const size_t grain = std::max<size_t>(1, cpu::kGrainCheap / static_cast<size_t>(n));
    cpu::parallel_for(static_cast<size_t>(outer), grain, [&](size_t b, size_t e) {
      for (size_t r = b; r < e; ++r) {
        const T* xs = src + r * n;
        U* ys = dst + r * n;
        int64_t i = first;
        A y;
        if (inclusive) {
          y = static_cast<A>(xs[i]);
          ys[i] = static_cast<U>(y);
        } else {
          y = init;
          ys[i] = static_cast<U>(y);
          y = scan_step<A, Type>(y, static_cast<A>(xs[i]));
        }
        for (int64_t k = 1; k < n; ++k) {
          i += step;
          if (inclusive) {
            y = scan_step<A, Type>(y, static_cast<A>(xs[i]));
            ys[i] = static_cast<U>(y);
          } else {
            ys[i] = static_cast<U>(y);
            y = scan_step<A, Type>(y, static_cast<A>(xs[i]));
          }
        }
      }
    });
    return;
  }
  const int64_t chunk = column_chunk(inner, outer, 1024);
  const int64_t nchunks = (inner + chunk - 1) / chunk;
  const size_t grain = std::max<size_t>(1, cpu::kGrainCheap / static_cast<size_t>(chunk * n));
  cpu::parallel_for(static_cast<size_t>(outer * nchunks), grain, [&](size_t b, size_t e) {
    std::unique_ptr<A[]> y(new A[static_cast<size_t>(chunk)]);  // not vector: A may be bool
    for (size_t t = b; t < e; ++t) {
      const int64_t o = static_cast<int64_t>(t) / nchunks;
      const int64_t j0 = (static_cast<int64_t>(t) % nchunks) * chunk;
      const int64_t len = std::min(chunk, inner - j0);
      const T* xs = src + o * n * inner + j0;
      U* ys = dst + o * n * inner + j0;
      int64_t i = first;
      for (int64_t j = 0; j < len; ++j) {
        A x0 = static_cast<A>(xs[i * inner + j]);
        y[j] = inclusive ? x0 : init;
        ys[i * inner + j] = static_cast<U>(y[j]);
        if (!inclusive) y[j] = scan_step<A, Type>(y[j], x0);
      }
      for (int64_t k = 1; k < n; ++k) {
        i += step;
        const T* xr = xs + i * inner;
        U* yr = ys + i * inner;
        if (inclusive) {
          for (int64_t j = 0; j < len; ++j) {
            y[j] = scan_step<A, Type>(y[j], static_cast<A>(xr[j]));
            yr[j] = static_cast<U>(y[j]);
          }
        } else {
          for (int64_t j = 0; j < len; ++j) {
            yr[j] = static_cast<U>(y[j]);
            y[j] = scan_step<A, Type>(y[j], static_cast<A>(xr[j]));
          }
        }
      }
    }
  });
}

template <typename T, typename U>
void scan_dispatch(int type, const array& in, array& out, int axis, bool reverse, bool inclusive) {
  switch (type) {
    case ScanMax: return run_scan<T, U, ScanMax>(in, out, axis, reverse, inclusive);
    case ScanMin: return run_scan<T, U, ScanMin>(in, out, axis, reverse, inclusive);
    case ScanSum: return run_scan<T, U, ScanSum>(in, out, axis, reverse, inclusive);
    case ScanProd: return run_scan<T, U, ScanProd>(in, out, axis, reverse, inclusive);
    default: return run_scan<T, U, ScanLogAddExp>(in, out, axis, reverse, inclusive);
  }
}

}  // namespace

void reduce::scan_cpu(const Node& node, const std::vector<array>& in, std::vector<array>& out) {
  const int type = node.state.i(0);
  const int axis = node.state.i(1);
  const bool reverse = node.state.b(2);
  const bool inclusive = node.state.b(3);
  const Dtype natural = scan_dtype(type, in[0].dtype());
  // A recorded dtype other than the natural one goes through a temporary and a conversion.
  array target = out[0].dtype() == natural ? out[0] : array(out[0].shape(), natural, nullptr, 0);
  if (natural == int32 && in[0].dtype() == bool_) {
    scan_dispatch<bool, int32_t>(type, in[0], target, axis, reverse, inclusive);
  } else {
    detail::dispatch_all(in[0].dtype(), [&](auto tag) {
      using T = decltype(tag);
      scan_dispatch<T, T>(type, in[0], target, axis, reverse, inclusive);
    });
  }
  if (!target.is_same(out[0])) {
    out[0].alloc();
    convert_values(target.raw_data(), natural, out[0].raw_data(), out[0].dtype(), out[0].size());
  }
}

}  // namespace kiln
