// The kernels of the fused normalization primitives: RMSNorm, LayerNorm and their VJPs. One pass per
// row over the last axis, accumulating in float (double for float64); rows run in parallel.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "backend/cpu/kernels/fast/fast_kernels.h"
#include "backend/cpu/kernels/fast/row_kernels.h"
#include "backend/cpu/loops.h"

namespace kiln::fastk {

namespace {

using detail::acc_t;

// Row geometry shared by the kernels: x with a unit last stride, D features per row.
struct Rows {
  array x;
  int64_t D = 0, n = 0;
  size_t grain = 1;
  explicit Rows(const array& in) : x(unit_last_stride(in)) {
    D = x.shape().back();
    n = D == 0 ? 0 : static_cast<int64_t>(x.size()) / D;
    grain = std::max<size_t>(1, cpu::kGrainMedium / std::max<int64_t>(D, 1));
  }
  // Row r converted to the accumulation type.
  template <typename T, typename A>
  void load(int64_t r, A* dst) const {
    load_row(x.data<T>() + row_offset(x, r), dst, D);
  }
};

// A weight or bias (a scalar or a vector of D) expanded to D values of the accumulation type.
template <typename T, typename A>
std::vector<A> expand_param(const array& p0, int64_t D) {
  const array p = cpu::contiguous_copy(p0);
  const T* src = p.data<T>();  // once: data() is a call, not inlined, and this runs per element
  std::vector<A> v(static_cast<size_t>(D));
  if (p.size() == 1) {
    std::fill(v.begin(), v.end(), A(src[0]));
  } else {
    for (int64_t i = 0; i < D; ++i) v[i] = A(src[i]);
  }
  return v;
}

// Split `rows` into a few chunks (one partial sum buffer each) and run fn(chunk, begin, end) in parallel.
template <typename F>
int64_t chunked(int64_t rows, size_t grain, F&& fn) {
  int64_t chunks = std::max<int64_t>(1, std::min<int64_t>(cpu::num_threads(), rows / static_cast<int64_t>(grain)));
  int64_t per = (rows + chunks - 1) / std::max<int64_t>(chunks, 1);
  cpu::parallel_for(static_cast<size_t>(chunks), 1, [&](size_t b, size_t e) {
    for (size_t c = b; c < e; ++c) {
      int64_t r0 = static_cast<int64_t>(c) * per;
      fn(static_cast<int64_t>(c), r0, std::min(rows, r0 + per));
    }
  });
  return chunks;
}

// Forward kernels. float, float16 and bfloat16 rows run the vector loops of fastk::rows (row_kernels.h:
// RMSNorm reads a row twice, LayerNorm three times, both from cache, and writes it once); float64 rows
// the loops below. Rows run in parallel.
template <typename T>
void rms_kernel(const std::vector<array>& in, array& out, float eps) {
  using A = detail::acc_t<T>;
  Rows R(in[0]);
  const int64_t D = R.D;
  const std::vector<A> w = expand_param<T, A>(in[1], D);
  out.alloc();
  T* o = out.data<T>();
  const bool contiguous = R.x.row_contiguous();
  const bool stream = out.nbytes() >= rows::kStreamBytes;
  if constexpr (!std::is_same_v<T, double>) {
    const auto& f = rows::of<T>(rows::row_fns());
    auto row = [&](int64_t ri) { return R.x.data<T>() + (contiguous ? ri * D : row_offset(R.x, ri)); };
    cpu::parallel_for(static_cast<size_t>(R.n), R.grain, [&](size_t b, size_t e) {
      for (size_t r = b; r < e; ++r) {
        const int64_t ri = static_cast<int64_t>(r);
        f.rms_norm(row(ri), w.data(), o + ri * D, D, eps, stream, r + 1 < e ? row(ri + 1) : nullptr);
      }
    });
  } else {
    cpu::parallel_for(static_cast<size_t>(R.n), R.grain, [&](size_t b, size_t e) {
      std::vector<A> xb(static_cast<size_t>(D));
      for (size_t r = b; r < e; ++r) {
        R.load<T>(static_cast<int64_t>(r), xb.data());
        T* orow = o + static_cast<int64_t>(r) * D;
        const A inv = A(1) / std::sqrt(dot(xb.data(), xb.data(), D) / A(D) + A(eps));
        for (int64_t i = 0; i < D; ++i) orow[i] = T(w[i] * A(T(xb[i] * inv)));
      }
    });
  }
}

template <typename T>
void layer_kernel(const std::vector<array>& in, array& out, float eps) {
  using A = detail::acc_t<T>;
  Rows R(in[0]);
  const int64_t D = R.D;
  const std::vector<A> w = expand_param<T, A>(in[1], D), bias = expand_param<T, A>(in[2], D);
  out.alloc();
  T* o = out.data<T>();
  const bool contiguous = R.x.row_contiguous();
  const bool stream = out.nbytes() >= rows::kStreamBytes;
  if constexpr (!std::is_same_v<T, double>) {
    const auto& f = rows::of<T>(rows::row_fns());
    auto row = [&](int64_t ri) { return R.x.data<T>() + (contiguous ? ri * D : row_offset(R.x, ri)); };
    cpu::parallel_for(static_cast<size_t>(R.n), R.grain, [&](size_t b, size_t e) {
      for (size_t r = b; r < e; ++r) {
        const int64_t ri = static_cast<int64_t>(r);
        f.layer_norm(row(ri), w.data(), bias.data(), o + ri * D, D, eps, stream, r + 1 < e ? row(ri + 1) : nullptr);
      }
    });
  } else {
    cpu::parallel_for(static_cast<size_t>(R.n), R.grain, [&](size_t b, size_t e) {
      std::vector<A> xb(static_cast<size_t>(D));
      for (size_t r = b; r < e; ++r) {
        R.load<T>(static_cast<int64_t>(r), xb.data());
        T* orow = o + static_cast<int64_t>(r) * D;
        const A mean = sum(xb.data(), D) / A(D);
        for (int64_t i = 0; i < D; ++i) xb[i] -= mean;
        const A inv = A(1) / std::sqrt(dot(xb.data(), xb.data(), D) / A(D) + A(eps));
        for (int64_t i = 0; i < D; ++i) orow[i] = T(A(T(A(T(xb[i] * inv)) * w[i])) + bias[i]);
      }
    });
  }
}

// Writes the summed partial buffers (chunks × D) into `out` (shape (D,)), or zeros for a scalar parameter.
template <typename T, typename A>
void finish_param_grad(const std::vector<A>& part, int64_t chunks, int64_t D, array& out) {
  out.alloc();
  T* p = out.data<T>();
  if (out.ndim() == 0) {
    p[0] = T(0.0f);
    return;
  }
  for (int64_t i = 0; i < D; ++i) {
    A s = 0;
    for (int64_t c = 0; c < chunks; ++c) s += part[c * D + i];
    p[i] = T(s);
  }
}

template <typename T>
void rms_vjp_kernel(const std::vector<array>& in, std::vector<array>& out, float eps) {
  using A = detail::acc_t<T>;
  Rows R(in[0]), G(in[2]);
  const int64_t D = R.D;
  const std::vector<A> w = expand_param<T, A>(in[1], D);
  out[0].alloc();
  T* dx = out[0].data<T>();
  const int64_t max_chunks = std::max<int64_t>(1, cpu::num_threads());
  std::vector<A> part(static_cast<size_t>(max_chunks * D), A(0));
  int64_t chunks = chunked(R.n, R.grain, [&](int64_t c, int64_t r0, int64_t r1) {
    A* dw = part.data() + c * D;
    std::vector<A> xb(static_cast<size_t>(D)), gw(xb.size());
    for (int64_t r = r0; r < r1; ++r) {
      R.load<T>(r, xb.data());
      G.load<T>(r, gw.data());
      T* dr = dx + r * D;
      const A n = A(1) / std::sqrt(dot(xb.data(), xb.data(), D) / A(D) + A(eps));
      for (int64_t i = 0; i < D; ++i) dw[i] += gw[i] * xb[i] * n;  // g · x · n, before g becomes g · w
      for (int64_t i = 0; i < D; ++i) gw[i] *= w[i];
      const A c3 = (dot(gw.data(), xb.data(), D) / A(D)) * n * n * n;
      for (int64_t i = 0; i < D; ++i) dr[i] = T(gw[i] * n - xb[i] * c3);
    }
  });
  finish_param_grad<T>(part, chunks, D, out[1]);
}

template <typename T>
void layer_vjp_kernel(const std::vector<array>& in, std::vector<array>& out, float eps) {
  using A = detail::acc_t<T>;
  Rows R(in[0]), G(in[3]);
  const int64_t D = R.D;
  const std::vector<A> w = expand_param<T, A>(in[1], D);
  out[0].alloc();
  T* dx = out[0].data<T>();
  const int64_t max_chunks = std::max<int64_t>(1, cpu::num_threads());
  std::vector<A> pw(static_cast<size_t>(max_chunks * D), A(0)), pb(pw.size(), A(0));
  int64_t chunks = chunked(R.n, R.grain, [&](int64_t c, int64_t r0, int64_t r1) {
    A* dw = pw.data() + c * D;
    A* db = pb.data() + c * D;
    std::vector<A> xc(static_cast<size_t>(D)), g(xc.size()), wg(xc.size());
    for (int64_t r = r0; r < r1; ++r) {
      R.load<T>(r, xc.data());
      G.load<T>(r, g.data());
      T* dr = dx + r * D;
      const A mean = sum(xc.data(), D) / A(D);
      for (int64_t i = 0; i < D; ++i) xc[i] -= mean;
      const A n = A(1) / std::sqrt(dot(xc.data(), xc.data(), D) / A(D) + A(eps));
      for (int64_t i = 0; i < D; ++i) wg[i] = w[i] * g[i];
      const A mwg = sum(wg.data(), D) / A(D);
      const A c3 = (dot(wg.data(), xc.data(), D) / A(D)) * n * n * n;
      for (int64_t i = 0; i < D; ++i) {
        dr[i] = T((wg[i] - mwg) * n - xc[i] * c3);
        dw[i] += g[i] * xc[i] * n;
        db[i] += g[i];
      }
    }
  });
  finish_param_grad<T>(pw, chunks, D, out[1]);
  finish_param_grad<T>(pb, chunks, D, out[2]);
}

// Empty inputs: allocate the outputs (zero-filled, so parameter gradients are the empty sums).
bool handle_empty(const std::vector<array>& in, std::vector<array>& out) {
  if (in[0].size() != 0) return false;
  for (auto& o : out) {
    o.alloc();
    if (o.nbytes()) std::memset(o.raw_data(), 0, o.nbytes());
  }
  return true;
}

void rms_cpu(const Node& node, const std::vector<array>& in, std::vector<array>& out) {
  if (handle_empty(in, out)) return;
  detail::dispatch_float(out[0].dtype(), "rms_norm",
                      [&](auto t) { rms_kernel<decltype(t)>(in, out[0], node.state.f(1)); });
}
void layer_cpu(const Node& node, const std::vector<array>& in, std::vector<array>& out) {
  if (handle_empty(in, out)) return;
  detail::dispatch_float(out[0].dtype(), "layer_norm",
                      [&](auto t) { layer_kernel<decltype(t)>(in, out[0], node.state.f(1)); });
}
void rms_vjp_cpu(const Node& node, const std::vector<array>& in, std::vector<array>& out) {
  if (handle_empty(in, out)) return;
  detail::dispatch_float(out[0].dtype(), "rms_norm_vjp",
                      [&](auto t) { rms_vjp_kernel<decltype(t)>(in, out, node.state.f(1)); });
}
void layer_vjp_cpu(const Node& node, const std::vector<array>& in, std::vector<array>& out) {
  if (handle_empty(in, out)) return;
  detail::dispatch_float(out[0].dtype(), "layer_norm_vjp",
                      [&](auto t) { layer_vjp_kernel<decltype(t)>(in, out, node.state.f(1)); });
}

}  // namespace

void add_norm_kernels(detail::KernelTable& table) {
  table.add({{"RMSNorm", rms_cpu}, {"RMSNormVJP", rms_vjp_cpu}, {"LayerNorm", layer_cpu},
             {"LayerNormVJP", layer_vjp_cpu}});
}

}  // namespace kiln::fastk
