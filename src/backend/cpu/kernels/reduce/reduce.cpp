// CPU kernel of Reduce (And, Or, Sum, Prod, Min, Max) over any strided input, the reduction plan shared
// by this folder's kernels, the NumberOfElements kernel, and register_cpu_reduce (the family's table).
//
// The plan (reduce_kernels.h) splits the non-unit dims into kept and reduced lists. Two loop shapes cover all
// layouts: "row" mode when the reduced dims are innermost in memory (each output reduces a run, with
// several accumulators so the inner loop vectorizes), and "column" mode when a kept dim is innermost
// (rows of the input are accumulated into a block of outputs with an element-wise loop). Independent
// outputs are spread over threads; a single large reduction is split into partial results.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <memory>
#include <type_traits>

#include "core/dispatch.h"
#include "backend/cpu/ordering.h"
#include "backend/cpu/threading.h"
#include "backend/cpu/kernels/families.h"
#include "backend/cpu/kernels/reduce/reduce_kernels.h"
#include "backend/cpu/kernels/reduce/reduce_simd.h"

namespace kiln {

namespace reduce {

ReducePlan make_plan(const Shape& shape, const Strides& strides, const std::vector<int>& axes) {
  ReducePlan p;
  std::vector<char> is_red(shape.size(), 0);
  for (int a : axes) is_red[a] = 1;
  std::vector<Dim> red;
  for (size_t d = 0; d < shape.size(); ++d) {
    const int64_t n = shape[d];
    (is_red[d] ? p.red_size : p.out_size) *= n;
    if (n == 1) continue;
    if (is_red[d]) {
      red.push_back({n, strides[d]});
    } else if (!p.kept.empty() && p.kept.back().stride == strides[d] * n) {
      // Index i*n + j of the merged dim lands at the same place as (i, j): the output stays row-major.
      p.kept.back().n *= n;
      p.kept.back().stride = strides[d];
    } else {
      p.kept.push_back({n, strides[d]});
    }
  }
  // The reduction order is free, so walk the reduced dims by decreasing stride and merge runs.
  std::stable_sort(red.begin(), red.end(),
                   [](const Dim& a, const Dim& b) { return std::llabs(a.stride) > std::llabs(b.stride); });
  for (const Dim& d : red) {
    if (!p.red.empty() && p.red.back().stride == d.stride * d.n) {
      p.red.back().n *= d.n;
      p.red.back().stride = d.stride;
    } else {
      p.red.push_back(d);
    }
  }
  return p;
}

int64_t column_chunk(int64_t inner, int64_t outer, int64_t max_chunk) {
  const int64_t want = 4 * static_cast<int64_t>(cpu::num_threads());
  const int64_t per_outer = std::max<int64_t>(1, (want + outer - 1) / std::max<int64_t>(outer, 1));
  int64_t c = std::max<int64_t>((inner + per_outer - 1) / per_outer, 256);
  return std::max<int64_t>(1, std::min({c, max_chunk, inner}));
}

}  // namespace reduce

namespace {

using reduce::Dim;
using reduce::kept_offset;
using reduce::ReducePlan;
using reduce::SumOut;

// ---- element operations. A: accumulator, O: stored output ----

// And/Or see the raw bits, as MLX does: -0.0 and NaN count as true.
template <typename U, bool IsAnd>
struct BoolOp {
  using In = U;
  using A = bool;
  using O = bool;
  static A init() { return IsAnd; }
  static A step(A acc, U x) { return IsAnd ? (acc & (x != 0)) : (acc | (x != 0)); }
  static A combine(A a, A b) { return IsAnd ? (a & b) : (a | b); }
  static O finish(A a) { return a; }
};

// Integers accumulate unsigned so overflow wraps without undefined behaviour; half types in float.
template <typename O, bool = std::is_integral_v<O>>
struct SumAccOf {
  using type = detail::acc_t<O>;
};
template <typename O>
struct SumAccOf<O, true> {
  using type = std::make_unsigned_t<O>;
};
template <typename O>
using SumAcc = typename SumAccOf<O>::type;

template <typename T, bool IsSum>
struct ArithOp {
  using In = T;
  using O = SumOut<T>;
  using A = SumAcc<O>;
  static A init() { return A(IsSum ? 0 : 1); }
  static A conv(T x) {
    if constexpr (std::is_integral_v<T>) return static_cast<A>(static_cast<O>(x));  // sign-extends
    else return static_cast<A>(x);
  }
  static A step(A acc, T x) { return IsSum ? A(acc + conv(x)) : A(acc * conv(x)); }
  static A combine(A a, A b) { return IsSum ? A(a + b) : A(a * b); }
  static O finish(A a) { return static_cast<O>(a); }
};

using cpu::ordered_greater;

template <typename A>
inline bool is_nan(const A& a) {
  if constexpr (std::is_floating_point_v<A>) return a != a;
  else if constexpr (detail::is_complex_v<A>) return a.real() != a.real();  // MLX tests the real part only
  else return false;
}
// The NaN a Max/Min reduction gives: a complex one is NaN+0j whatever the element (as MLX).
template <typename A>
inline A nan_result(const A& x) {
  if constexpr (detail::is_complex_v<A>) return A(std::numeric_limits<float>::quiet_NaN(), 0.0f);
  else return x;
}

// Max/Min propagate NaN: once an operand is NaN the result stays NaN.
template <typename T, bool IsMax>
struct ExtremeOp {
  using In = T;
  using O = T;
  using A = detail::acc_t<T>;
  static A init() {
    if constexpr (std::is_floating_point_v<A>) {
      return IsMax ? -std::numeric_limits<A>::infinity() : std::numeric_limits<A>::infinity();
    } else if constexpr (detail::is_complex_v<A>) {
      float inf = std::numeric_limits<float>::infinity();
      return A(IsMax ? -inf : inf, 0.0f);
    } else {
      return IsMax ? std::numeric_limits<A>::lowest() : std::numeric_limits<A>::max();
    }
  }
  static A step(A acc, T xv) { return step_a(acc, static_cast<A>(xv)); }
  static A combine(A a, A b) { return step_a(a, b); }
  static A step_a(A acc, A x) {
    if (is_nan(x)) return nan_result(x);
    bool take = IsMax ? ordered_greater(x, acc) : ordered_greater(acc, x);
    return take ? x : acc;
  }
  static O finish(A a) { return static_cast<O>(a); }
  static constexpr bool kSimd = std::is_same_v<T, float> || std::is_same_v<T, double>;
  static constexpr bool kIsMax = IsMax;
};

template <class Op>
concept SimdExtreme = requires { Op::kSimd; } && Op::kSimd;

// ---- loops ----

// Reduce n elements spaced by `st`.
template <class Op>
typename Op::A reduce_run(const typename Op::In* p, int64_t n, int64_t st) {
  using A = typename Op::A;
  if constexpr (SimdExtreme<Op>) {
    if (st == 1) return reduce::extreme_contig<Op::kIsMax>(p, n);
  }
  if (st == 1) {
    constexpr int L = 8;
    A acc[L];
    for (int k = 0; k < L; ++k) acc[k] = Op::init();
    int64_t i = 0;
    for (; i + L <= n; i += L) {
      for (int k = 0; k < L; ++k) acc[k] = Op::step(acc[k], p[i + k]);
    }
    for (; i < n; ++i) acc[0] = Op::step(acc[0], p[i]);
    A r = acc[0];
    for (int k = 1; k < L; ++k) r = Op::combine(r, acc[k]);
    return r;
  }
  A r = Op::init();
  for (int64_t i = 0; i < n; ++i) r = Op::step(r, p[i * st]);
  return r;
}

// Reduce the block spanned by dims d[0..nd) (nd >= 1) into acc. Recursion depth is bounded by the rank.
template <class Op>
typename Op::A reduce_block(const typename Op::In* p, const Dim* d, int nd, typename Op::A acc) {
  if (nd == 1) return Op::combine(acc, reduce_run<Op>(p, d->n, d->stride));
  for (int64_t i = 0; i < d->n; ++i) acc = reduce_block<Op>(p + i * d->stride, d + 1, nd - 1, acc);
  return acc;
}

// One reduction over all of `red`, split into partial results on several threads when large.
template <class Op>
typename Op::A reduce_all(const typename Op::In* p, const std::vector<Dim>& red, int64_t red_size) {
  using A = typename Op::A;
  const int nd = static_cast<int>(red.size());
  const int64_t n0 = red[0].n;
  const int nt = cpu::num_threads();
  if (nt <= 1 || red_size < static_cast<int64_t>(2 * cpu::kGrainCheap) || n0 < 2) {
    return reduce_block<Op>(p, red.data(), nd, Op::init());
  }
  const int64_t chunks = std::min<int64_t>(n0, int64_t(nt) * 4);
  const int64_t per = (n0 + chunks - 1) / chunks;
  std::vector<A> partial(chunks, Op::init());
  cpu::parallel_for(static_cast<size_t>(chunks), 1, [&](size_t b, size_t e) {
    for (size_t c = b; c < e; ++c) {
      const int64_t i0 = static_cast<int64_t>(c) * per, i1 = std::min(n0, i0 + per);
      if (i0 >= i1) continue;
      if (nd == 1) {
        partial[c] = reduce_run<Op>(p + i0 * red[0].stride, i1 - i0, red[0].stride);
      } else {
        A acc = Op::init();
        for (int64_t i = i0; i < i1; ++i) acc = reduce_block<Op>(p + i * red[0].stride, red.data() + 1, nd - 1, acc);
        partial[c] = acc;
      }
    }
  });
  A r = Op::init();
  for (const A& v : partial) r = Op::combine(r, v);
  return r;
}

// Accumulate the block spanned by d[0..nd) into acc[0..len), whose elements are `s_in` apart in the input.
template <class Op>
void column_block(const typename Op::In* p, const Dim* d, int nd, int64_t s_in, typename Op::A* acc, int64_t len) {
  if (nd == 0) {
    if (s_in == 1) {
      for (int64_t j = 0; j < len; ++j) acc[j] = Op::step(acc[j], p[j]);
    } else {
      for (int64_t j = 0; j < len; ++j) acc[j] = Op::step(acc[j], p[j * s_in]);
    }
    return;
  }
  for (int64_t i = 0; i < d->n; ++i) column_block<Op>(p + i * d->stride, d + 1, nd - 1, s_in, acc, len);
}

template <class Op>
void run_reduce(const array& in, array& out, const std::vector<int>& axes) {
  using T = typename Op::In;
  using A = typename Op::A;
  using O = typename Op::O;
  out.alloc();
  O* dst = out.data<O>();
  const T* src = static_cast<const T*>(in.raw_data());
  ReducePlan plan = reduce::make_plan(in.shape(), in.strides(), axes);
  if (plan.out_size == 0) return;
  if (plan.red_size == 0) {
    for (int64_t i = 0; i < plan.out_size; ++i) dst[i] = Op::finish(Op::init());
    return;
  }
  if (plan.red.empty()) plan.red.push_back({1, 1});
  const auto& kept = plan.kept;
  const auto& red = plan.red;
  const int nk = static_cast<int>(kept.size());
  const int nr = static_cast<int>(red.size());
  if (kept.empty()) {
    dst[0] = Op::finish(reduce_all<Op>(src, red, plan.red_size));
    return;
  }
  const int64_t nout = plan.out_size;
  const int64_t rsize = plan.red_size;
  const bool row_mode = std::llabs(red.back().stride) < std::llabs(kept.back().stride);
  if (row_mode) {
    if (nout < 2 * cpu::num_threads() && rsize >= static_cast<int64_t>(2 * cpu::kGrainCheap)) {
      // Few, long reductions: parallelize inside each one instead.
      for (int64_t o = 0; o < nout; ++o) dst[o] = Op::finish(reduce_all<Op>(src + kept_offset(o, kept.data(), nk), red, rsize));
      return;
    }
    const size_t grain = std::max<size_t>(1, cpu::kGrainCheap / static_cast<size_t>(rsize));
    cpu::parallel_for(static_cast<size_t>(nout), grain, [&](size_t b, size_t e) {
      for (size_t o = b; o < e; ++o) {
        const T* p = src + kept_offset(static_cast<int64_t>(o), kept.data(), nk);
        dst[o] = Op::finish(reduce_block<Op>(p, red.data(), nr, Op::init()));
      }
    });
    return;
  }
  // Column mode: the innermost kept dim runs along the vector of accumulators.
  const Dim inner = kept.back();
  const int64_t nouter = nout / inner.n;
  const int64_t chunk = reduce::column_chunk(inner.n, nouter, 1024);
  const int64_t nchunks = (inner.n + chunk - 1) / chunk;
  const size_t grain = std::max<size_t>(1, cpu::kGrainCheap / static_cast<size_t>(chunk * rsize));
  cpu::parallel_for(static_cast<size_t>(nouter * nchunks), grain, [&](size_t b, size_t e) {
    std::unique_ptr<A[]> acc(new A[static_cast<size_t>(chunk)]);  // not vector: A may be bool
    for (size_t t = b; t < e; ++t) {
      const int64_t o = static_cast<int64_t>(t) / nchunks;
      const int64_t j0 = (static_cast<int64_t>(t) % nchunks) * chunk;
      const int64_t len = std::min(chunk, inner.n - j0);
      const T* p = src + kept_offset(o, kept.data(), nk - 1) + j0 * inner.stride;
      std::fill(acc.get(), acc.get() + len, Op::init());
      column_block<Op>(p, red.data(), nr, inner.stride, acc.get(), len);
      O* d = dst + o * inner.n + j0;
      for (int64_t j = 0; j < len; ++j) d[j] = Op::finish(acc[j]);
    }
  });
}

// Runs `op` into `out`, through a temporary when the recorded dtype differs from the natural one.
template <class Op>
void run_into(const array& in, array& out, const std::vector<int>& axes) {
  constexpr Dtype natural = storage_dtype_of<typename Op::O>;
  if (out.dtype() == natural) {
    run_reduce<Op>(in, out, axes);
    return;
  }
  array tmp(out.shape(), natural, nullptr, 0);
  run_reduce<Op>(in, tmp, axes);
  out.alloc();
  convert_values(tmp.raw_data(), natural, out.raw_data(), out.dtype(), out.size());
}

template <bool IsAnd>
void run_bool(const array& in, array& out, const std::vector<int>& axes) {
  switch (in.itemsize()) {
    case 1: return run_into<BoolOp<uint8_t, IsAnd>>(in, out, axes);
    case 2: return run_into<BoolOp<uint16_t, IsAnd>>(in, out, axes);
    case 4: return run_into<BoolOp<uint32_t, IsAnd>>(in, out, axes);
    default: return run_into<BoolOp<uint64_t, IsAnd>>(in, out, axes);
  }
}

}  // namespace

void reduce::reduce_cpu(const Node& node, const std::vector<array>& in, std::vector<array>& out) {
  const int type = node.state.i(0);
  const std::vector<int>& axes = node.state.ints(1);
  switch (type) {
    case And: return run_bool<true>(in[0], out[0], axes);
    case Or: return run_bool<false>(in[0], out[0], axes);
    default: break;
  }
  detail::dispatch_all(in[0].dtype(), [&](auto tag) {
    using T = decltype(tag);
    switch (type) {
      case Sum: return run_into<ArithOp<T, true>>(in[0], out[0], axes);
      case Prod: return run_into<ArithOp<T, false>>(in[0], out[0], axes);
      case Min: return run_into<ExtremeOp<T, false>>(in[0], out[0], axes);
      default: return run_into<ExtremeOp<T, true>>(in[0], out[0], axes);
    }
  });
}

namespace {

void number_of_elements_cpu(const Node& node, const std::vector<array>& in, std::vector<array>& out) {
  double n = 1;
  for (int a : node.state.ints(0)) n *= in[0].shape()[a];
  if (node.state.b(1)) n = 1.0 / n;
  out[0].alloc();
  detail::dispatch_all(out[0].dtype(), [&](auto tag) {
    using T = decltype(tag);
    *out[0].data<T>() = detail::cast_to<T>(n);
  });
}

}  // namespace

namespace cpu {
void register_cpu_reduce(detail::KernelTable& table) {
  table.add({{"Reduce", reduce::reduce_cpu}, {"ArgReduce", reduce::arg_reduce_cpu},
             {"LogSumExp", reduce::logsumexp_cpu}, {"Softmax", reduce::softmax_cpu},
             {"NumberOfElements", number_of_elements_cpu}, {"Scan", reduce::scan_cpu}});
}
}  // namespace cpu

}  // namespace kiln
