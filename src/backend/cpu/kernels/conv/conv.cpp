// CPU kernel of Convolution. Every convolution is handled as a 3-D one (missing spatial dimensions
// have size 1), and padding, strides, both dilations and the kernel flip are folded into per-axis
// lookup tables (output position, tap) -> input position. The paths:
//  - im2col: a patch matrix, tile by tile, then one BLAS gemm per group (the general case; a 1x1
//    convolution of a contiguous input is one gemm on the input itself);
//  - depthwise (one input channel per group): a direct loop with the channels innermost;
//  - gather (more output than input positions, i.e. transposed convolutions): one gemm of the
//    undilated input by every tap, then each output sums the products that reach it.
#include <cblas.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <limits>
#include <vector>

#include "backend/cpu/kernels/families.h"
#include "backend/cpu/loops.h"
#include "kiln/primitive.h"

namespace kiln::detail {

namespace {

constexpr int kMaxDims = 3;
// Patch-matrix elements per tile: bounds the scratch memory (16 MiB of floats) whatever the sizes.
constexpr int64_t kTileElems = int64_t(1) << 22;

template <typename C>
void gemm_nt(int m, int n, int k, const C* a, int lda, const C* b, int ldb, C* c, int ldc) {
  // c (m x n) = a (m x k) * b^T, b stored (n x k).
  if constexpr (std::is_same_v<C, double>) {
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, n, k, 1.0, a, lda, b, ldb, 0.0, c, ldc);
  } else {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, n, k, 1.0f, a, lda, b, ldb, 0.0f, c, ldc);
  }
}

struct Geometry {
  int64_t N = 0, Cin = 0, O = 0, G = 1, Cg = 0, Og = 0;
  std::array<int64_t, kMaxDims> in{1, 1, 1}, k{1, 1, 1}, out{1, 1, 1};
  std::array<int64_t, kMaxDims> in_st{0, 0, 0};  // input element strides of the spatial axes
  int64_t n_st = 0, c_st = 1;
  // tab[d][o * k[d] + j]: input index along axis d read by output o and kernel tap j, or -1 (padding or
  // a hole made by input dilation).
  std::array<std::vector<int64_t>, kMaxDims> tab;
  int64_t K = 1;  // kernel taps
};

Geometry geometry(const Node& node, const array& x, const array& w, const array& y) {
  const State& st = node.state;
  const auto& stride = st.ints(0);
  const auto& lo = st.ints(1);
  const auto& kdil = st.ints(3);
  const auto& idil = st.ints(4);
  Geometry g;
  const int d = static_cast<int>(x.ndim()) - 2;
  const int pad = kMaxDims - d;  // leading size-1 axes
  g.N = x.shape(0);
  g.Cin = x.shape(d + 1);
  g.O = w.shape(0);
  g.G = st.i(5);
  g.Cg = g.Cin / g.G;
  g.Og = g.O / g.G;
  g.n_st = x.strides(0);
  g.c_st = x.strides(d + 1);
  for (int a = 0; a < kMaxDims; ++a) {
    if (a < pad) {
      g.tab[a] = {0};
      continue;
    }
    const int i = a - pad;
    g.in[a] = x.shape(i + 1);
    g.k[a] = w.shape(i + 1);
    g.out[a] = y.shape(i + 1);
    g.in_st[a] = x.strides(i + 1);
    g.K *= g.k[a];
    const int64_t dilated = 1 + int64_t(idil[i]) * (g.in[a] - 1);
    g.tab[a].resize(g.out[a] * g.k[a]);
    for (int64_t o = 0; o < g.out[a]; ++o) {
      for (int64_t j = 0; j < g.k[a]; ++j) {
        const int64_t p = o * stride[i] + j * kdil[i] - lo[i];  // position in the dilated input
        const bool ok = p >= 0 && p < dilated && p % idil[i] == 0;
        g.tab[a][o * g.k[a] + j] = ok ? p / idil[i] : -1;
      }
    }
  }
  return g;
}

// Weight as a (O, K * Cg) matrix of the compute type; `flip` reverses all spatial axes, which reverses
// the linear tap index.
template <typename T, typename C>
std::vector<C> weight_matrix(const array& w, const Geometry& g, bool flip) {
  array wc = cpu::contiguous_copy(w);
  const T* src = static_cast<const T*>(wc.buffer()->ptr) + wc.offset();
  std::vector<C> m(static_cast<size_t>(g.O * g.K * g.Cg));
  for (int64_t o = 0; o < g.O; ++o) {
    for (int64_t k = 0; k < g.K; ++k) {
      const T* s = src + (o * g.K + (flip ? g.K - 1 - k : k)) * g.Cg;
      C* dst = m.data() + (o * g.K + k) * g.Cg;
      for (int64_t c = 0; c < g.Cg; ++c) dst[c] = static_cast<C>(static_cast<detail::acc_t<T>>(s[c]));
    }
  }
  return m;
}
// Output row r of `plane` positions per batch entry (entry n, position (o0, o1, o2)): calls
// f(n, i0, i1, i2, k, inside) for every tap k, `inside` telling whether its input position (i0, i1, i2)
// lies inside the input (the geometry's tables hold -1 for taps in the padding or between dilated
// inputs).
template <class F>
inline void walk_taps(const Geometry& g, int64_t r, int64_t plane, F&& f) {
  const int64_t n = r / plane;
  int64_t rem = r % plane;
  const int64_t o2 = rem % g.out[2];
  rem /= g.out[2];
  const int64_t o1 = rem % g.out[1];
  const int64_t o0 = rem / g.out[1];
  const int64_t* t0 = g.tab[0].data() + o0 * g.k[0];
  const int64_t* t1 = g.tab[1].data() + o1 * g.k[1];
  const int64_t* t2 = g.tab[2].data() + o2 * g.k[2];
  int64_t k = 0;
  for (int64_t j0 = 0; j0 < g.k[0]; ++j0) {
    for (int64_t j1 = 0; j1 < g.k[1]; ++j1) {
      for (int64_t j2 = 0; j2 < g.k[2]; ++j2, ++k) {
        const int64_t i0 = t0[j0], i1 = t1[j1], i2 = t2[j2];
        f(n, i0, i1, i2, k, i0 >= 0 && i1 >= 0 && i2 >= 0);
      }
    }
  }
}

// The taps of output row r that lie inside the input: f(n, i0, i1, i2, k).
template <class F>
inline void for_each_tap(const Geometry& g, int64_t r, int64_t plane, F&& f) {
  walk_taps(g, r, plane, [&](int64_t n, int64_t i0, int64_t i1, int64_t i2, int64_t k, bool inside) {
    if (inside) f(n, i0, i1, i2, k);
  });
}


// Fill rows [r0, r1) of the patch matrix, laid out (row, group, tap, channel).
template <typename T, typename C>
void im2col(const T* x, const Geometry& g, int64_t r0, int64_t r1, C* patch) {
  const int64_t row_len = g.G * g.K * g.Cg;
  const int64_t plane = g.out[0] * g.out[1] * g.out[2];
  const size_t grain = std::max<size_t>(1, cpu::kGrainMedium / std::max<int64_t>(row_len, 1));
  cpu::parallel_for(static_cast<size_t>(r1 - r0), grain, [&](size_t b, size_t e) {
    for (int64_t r = r0 + static_cast<int64_t>(b); r < r0 + static_cast<int64_t>(e); ++r) {
      C* row = patch + (r - r0) * row_len;
      walk_taps(g, r, plane, [&](int64_t n, int64_t i0, int64_t i1, int64_t i2, int64_t k, bool inside) {
        const T* src = x + n * g.n_st + i0 * g.in_st[0] + i1 * g.in_st[1] + i2 * g.in_st[2];
        for (int64_t grp = 0; grp < g.G; ++grp) {
          C* dst = row + (grp * g.K + k) * g.Cg;
          if (!inside) {
            std::fill(dst, dst + g.Cg, C(0));
          } else if (g.c_st == 1) {
            const T* s = src + grp * g.Cg;
            for (int64_t c = 0; c < g.Cg; ++c) dst[c] = static_cast<C>(static_cast<detail::acc_t<T>>(s[c]));
          } else {
            const T* s = src + grp * g.Cg * g.c_st;
            for (int64_t c = 0; c < g.Cg; ++c) {
              dst[c] = static_cast<C>(static_cast<detail::acc_t<T>>(s[c * g.c_st]));
            }
          }
        }
      });
    }
  });
}


// Depthwise convolution (one input channel per group): out[oc] = sum_k x[pos_k, oc / Og] * w[oc, k]. A
// gemm per group would be a matrix-vector product of width 1; instead the output channels form the
// inner loop, contiguous in the transposed weight and in the output.
template <typename T, typename C>
void depthwise(const T* x, const Geometry& g, const std::vector<C>& wm, T* out) {
  const int64_t O = g.O, K = g.K;
  std::vector<C> wt(static_cast<size_t>(K * O));
  for (int64_t oc = 0; oc < O; ++oc)
    for (int64_t k = 0; k < K; ++k) wt[k * O + oc] = wm[oc * K + k];
  const int64_t plane = g.out[0] * g.out[1] * g.out[2];
  const int64_t rows = g.N * plane;
  const bool simple = g.Og == 1 && g.c_st == 1;
  const size_t grain = std::max<size_t>(1, cpu::kGrainMedium / std::max<int64_t>(K * O, 1));
  cpu::parallel_for(static_cast<size_t>(rows), grain, [&](size_t b, size_t e) {
    std::vector<C> acc(static_cast<size_t>(O));
    for (int64_t r = static_cast<int64_t>(b); r < static_cast<int64_t>(e); ++r) {
      std::fill(acc.begin(), acc.end(), C(0));
      C* a = acc.data();
      for_each_tap(g, r, plane, [&](int64_t n, int64_t i0, int64_t i1, int64_t i2, int64_t k) {
        const T* src = x + n * g.n_st + i0 * g.in_st[0] + i1 * g.in_st[1] + i2 * g.in_st[2];
        const C* wk = wt.data() + k * O;
        if (simple) {
          for (int64_t oc = 0; oc < O; ++oc) a[oc] += static_cast<C>(static_cast<detail::acc_t<T>>(src[oc])) * wk[oc];
        } else {
          for (int64_t oc = 0; oc < O; ++oc) {
            a[oc] += static_cast<C>(static_cast<detail::acc_t<T>>(src[(oc / g.Og) * g.c_st])) * wk[oc];
          }
        }
      });
      T* o = out + r * O;
      for (int64_t oc = 0; oc < O; ++oc) o[oc] = T(a[oc]);
    }
  });
}

// Convolutions whose output has more positions than their input (input dilation: the transposed
// convolutions). Most taps of an im2col row would hit holes, so instead every input position is
// multiplied by every tap once, cols[i, k, :] = x[i, :] . W[:, k, :] (one gemm over the undilated input),
// and each output gathers the products of the (input, tap) pairs that reach it. Returns false when one
// batch entry's products would not fit the scratch bound (the caller then uses im2col).
template <typename T, typename C>
bool gather_conv(const array& x, const Geometry& g, const std::vector<C>& wm, T* out) {
  const int64_t O = g.O, K = g.K, Cin = g.Cin;
  const int64_t in_plane = g.in[0] * g.in[1] * g.in[2];
  const int64_t out_plane = g.out[0] * g.out[1] * g.out[2];
  const int64_t per_item = in_plane * K * O;
  constexpr int64_t kMaxCols = int64_t(1) << 24;  // 64 MiB of floats
  if (per_item > kMaxCols) return false;
  // Input rows as a contiguous (N * in_plane, Cin) matrix of the compute type.
  array xc = cpu::contiguous_copy(x);
  const T* xs = static_cast<const T*>(xc.buffer()->ptr) + xc.offset();
  std::vector<C> xconv;
  const C* X;
  if constexpr (std::is_same_v<T, C>) {
    X = xs;
  } else {
    xconv.resize(static_cast<size_t>(g.N * in_plane * Cin));
    for (size_t i = 0; i < xconv.size(); ++i) xconv[i] = static_cast<C>(static_cast<detail::acc_t<T>>(xs[i]));
    X = xconv.data();
  }
  // Weight as (K * O, Cin): row k * O + oc holds tap k of output channel oc.
  std::vector<C> wt(static_cast<size_t>(K * O * Cin));
  for (int64_t oc = 0; oc < O; ++oc)
    for (int64_t k = 0; k < K; ++k)
      std::copy_n(wm.data() + (oc * K + k) * Cin, Cin, wt.data() + (k * O + oc) * Cin);

  const int64_t tile_n = std::clamp<int64_t>(kTileElems / std::max<int64_t>(per_item, 1), 1, g.N);
  std::vector<C> cols(static_cast<size_t>(tile_n * per_item));
  for (int64_t n0 = 0; n0 < g.N; n0 += tile_n) {
    const int64_t n1 = std::min(g.N, n0 + tile_n);
    gemm_nt<C>(static_cast<int>((n1 - n0) * in_plane), static_cast<int>(K * O), static_cast<int>(Cin),
               X + n0 * in_plane * Cin, static_cast<int>(Cin), wt.data(), static_cast<int>(Cin), cols.data(),
               static_cast<int>(K * O));
    const size_t grain = std::max<size_t>(1, cpu::kGrainMedium / std::max<int64_t>(K * O, 1));
    cpu::parallel_for(static_cast<size_t>((n1 - n0) * out_plane), grain, [&](size_t b, size_t e) {
      std::vector<C> acc(static_cast<size_t>(O));
      for (int64_t r = static_cast<int64_t>(b); r < static_cast<int64_t>(e); ++r) {
        std::fill(acc.begin(), acc.end(), C(0));
        C* a = acc.data();
        for_each_tap(g, r, out_plane, [&](int64_t n, int64_t i0, int64_t i1, int64_t i2, int64_t k) {
          const C* src = cols.data() + ((n * in_plane + (i0 * g.in[1] + i1) * g.in[2] + i2) * K + k) * O;
          for (int64_t oc = 0; oc < O; ++oc) a[oc] += src[oc];
        });
        const int64_t n = r / out_plane;
        T* o = out + ((n0 + n) * out_plane + (r % out_plane)) * O;
        for (int64_t oc = 0; oc < O; ++oc) o[oc] = T(a[oc]);
      }
    });
  }
  return true;
}

template <typename T>
void conv_typed(const Node& node, const array& x, const array& w, array& y) {
  // float64 is computed in double; the 16-bit floats in float, rounded once at the end.
  using C = std::conditional_t<std::is_same_v<T, double>, double, float>;
  y.alloc();
  if (y.size() == 0) return;
  T* out = y.data<T>();
  const Geometry g = geometry(node, x, w, y);
  const int64_t KC = g.K * g.Cg;
  if (KC == 0) {  // no input channels: every output is an empty sum
    std::fill(out, out + y.size(), T(0.0f));
    return;
  }
  const std::vector<C> wm = weight_matrix<T, C>(w, g, node.state.b(6));
  const T* xp = static_cast<const T*>(x.buffer()->ptr) + x.offset();
  if (g.G > 1 && g.Cg == 1) return depthwise<T, C>(xp, g, wm, out);
  // Fewer input positions than output positions: multiply each input by each tap once.
  if (g.G == 1 && g.in[0] * g.in[1] * g.in[2] < g.out[0] * g.out[1] * g.out[2] && gather_conv<T, C>(x, g, wm, out)) {
    return;
  }
  const int64_t rows = g.N * g.out[0] * g.out[1] * g.out[2];
  const int64_t row_len = g.G * KC;

  // A 1x1 convolution over a contiguous input of the compute type needs no patch matrix.
  bool direct = std::is_same_v<T, C> && g.K == 1 && g.G == 1 && x.row_contiguous() &&
                rows <= std::numeric_limits<int>::max();
  for (int a = 0; a < kMaxDims && direct; ++a) direct = g.in[a] == g.out[a] && g.tab[a][0] == 0 &&
                                                     (g.out[a] < 2 || g.tab[a][1] == 1);
  if (direct) {
    if constexpr (std::is_same_v<T, C>) {
      gemm_nt<C>(static_cast<int>(rows), static_cast<int>(g.O), static_cast<int>(KC), xp, static_cast<int>(KC),
                 wm.data(), static_cast<int>(KC), out, static_cast<int>(g.O));
    }
    return;
  }

  const int64_t tile = std::clamp<int64_t>(kTileElems / row_len, 1, rows);
  std::vector<C> patch(static_cast<size_t>(tile * row_len));
  std::vector<C> acc;
  if constexpr (!std::is_same_v<T, C>) acc.resize(static_cast<size_t>(tile * g.O));
  for (int64_t r0 = 0; r0 < rows; r0 += tile) {
    const int64_t r1 = std::min(rows, r0 + tile);
    im2col<T, C>(xp, g, r0, r1, patch.data());
    C* dst;
    if constexpr (std::is_same_v<T, C>) dst = out + r0 * g.O;
    else dst = acc.data();
    for (int64_t grp = 0; grp < g.G; ++grp) {
      gemm_nt<C>(static_cast<int>(r1 - r0), static_cast<int>(g.Og), static_cast<int>(KC), patch.data() + grp * KC,
                 static_cast<int>(row_len), wm.data() + grp * g.Og * KC, static_cast<int>(KC), dst + grp * g.Og,
                 static_cast<int>(g.O));
    }
    if constexpr (!std::is_same_v<T, C>) {
      T* o = out + r0 * g.O;
      const size_t n = static_cast<size_t>((r1 - r0) * g.O);
      for (size_t i = 0; i < n; ++i) o[i] = T(acc[i]);
    }
  }
}

void convolution_cpu(const Node& node, const std::vector<array>& in, std::vector<array>& out) {
  detail::dispatch_float(in[0].dtype(), "conv", [&](auto tag) {
    using T = decltype(tag);
    conv_typed<T>(node, in[0], in[1], out[0]);
  });
}

}  // namespace

}  // namespace kiln::detail

namespace kiln::cpu {
void register_cpu_conv(detail::KernelTable& table) { table.add("Convolution", detail::convolution_cpu); }
}  // namespace kiln::cpu
