// The kernels of QuantizedMatmul and GatherQMM. The kernel dequantizes tiles of the weight matrix into
// float (double for float64) and multiplies them with BLAS; tiles run in parallel. Small tiles for a
// few rows of x (decoding), wide tiles when x has many rows, so x is re-read rarely.
#include "backend/cpu/kernels/fast/fast_kernels.h"
#include "backend/cpu/kernels/quantized/quantized_kernels.h"
#include "backend/cpu/loops.h"
#include "primitives/quantized/quirks.h"

namespace kiln {

namespace quant {

namespace {

// `a` with its last two axes row-contiguous (batch axes may keep any strides, e.g. broadcast ones).
array last2_contiguous(const array& a) {
  const int nd = static_cast<int>(a.ndim());
  const auto& sh = a.shape();
  const auto& st = a.strides();
  const bool ok = (sh[nd - 1] <= 1 || st[nd - 1] == 1) && (sh[nd - 2] <= 1 || st[nd - 2] == sh[nd - 1]);
  return ok ? a : cpu::contiguous_copy(a);
}

// Element offset of batch matrix `b` (row-major over the axes before the last two).
int64_t batch_offset(const array& a, int64_t b) {
  int64_t off = 0;
  for (int d = static_cast<int>(a.ndim()) - 3; d >= 0 && b > 0; --d) {
    off += (b % a.shape()[d]) * a.strides()[d];
    b /= a.shape()[d];
  }
  return off;
}

int64_t batch_count(const array& a) {
  int64_t n = 1;
  for (size_t d = 0; d + 2 < a.ndim(); ++d) n *= a.shape()[d];
  return n;
}

// One product out_b = x_b · W_b(ᵀ) per job; `jobs` holds (x batch, w batch) pairs, out batch = job index.
template <typename T, typename S>
void qmm_kernel(const Node& node, const std::vector<array>& in, array& out,
                const std::vector<std::pair<int64_t, int64_t>>& jobs, int64_t M) {
  using Acc = detail::acc_t<T>;
  const State& st = node.state;
  const int gs = st.i(0), bits = st.i(1);
  const QuantizationMode mode = static_cast<QuantizationMode>(st.i(2));
  const bool transpose = st.b(3);
  const bool affine = mode == QuantizationMode::Affine;
  const array w = last2_contiguous(in[1]), sc = last2_contiguous(in[2]);
  const array bi = affine ? last2_contiguous(in[3]) : array();
  const int64_t N = out.shape().back();
  const int64_t K = in[0].shape().back();
  out.alloc();
  T* o = out.data<T>();
  if (out.size() == 0) return;
  if (K == 0) {
    std::fill(o, o + out.size(), T(0.0f));
    return;
  }
  // x as contiguous Acc rows (batch-major).
  const array& x0 = in[0];
  std::vector<Acc> xbuf;
  const Acc* X;
  if (std::is_same_v<T, Acc> && x0.row_contiguous()) {
    X = reinterpret_cast<const Acc*>(x0.data<T>());
  } else {
    const array x1 = fastk::unit_last_stride(x0);
    xbuf.resize(x1.size());
    const int64_t rows = static_cast<int64_t>(x1.size()) / K;
    cpu::parallel_for(static_cast<size_t>(rows), std::max<size_t>(1, cpu::kGrainCheap / K), [&](size_t b, size_t e) {
      for (size_t r = b; r < e; ++r) {
        fastk::load_row(x1.data<T>() + fastk::row_offset(x1, static_cast<int64_t>(r)), xbuf.data() + r * K, K);
      }
    });
    X = xbuf.data();
  }
  const int64_t row_bytes = (transpose ? K : N) * bits / 8;
  const int64_t row_groups = (transpose ? K : N) / gs;
  const uint8_t* wp = reinterpret_cast<const uint8_t*>(w.data<uint32_t>());
  const S* sp = sc.data<S>();
  const S* bp = affine ? bi.data<S>() : nullptr;
  const int nt = cpu::num_threads();

  dispatch_bits(bits, [&](auto bc) {
    constexpr int B = decltype(bc)::value;
    struct Mat {
      const uint8_t* w;
      const S* s;
      const S* b;
    };
    auto mat = [&](int64_t wb) {
      return Mat{wp + batch_offset(w, wb) * 4, sp + batch_offset(sc, wb), affine ? bp + batch_offset(bi, wb) : nullptr};
    };
    // Dequantize weight rows [r0, r1) (transposed: rows n, all K; otherwise rows k, columns [c0, c1)).
    auto dequant = [&](const Mat& m, int64_t r, int64_t c0, int64_t c1, Acc* dst) {
      dequant_groups<B, Acc, S>(m.w + r * row_bytes, m.s + r * row_groups, m.b ? m.b + r * row_groups : nullptr,
                                c0 / gs, c1 / gs, gs, mode, dst);
    };
    if (M <= 8) {
      // Few rows of x (decoding): many small tiles in parallel, dequantized and used on the fly.
      const int64_t nb = transpose ? 16 : std::clamp<int64_t>((N / (4 * nt) + gs - 1) / gs * gs, gs, 512);
      const int64_t ntiles = (N + nb - 1) / nb;
      cpu::parallel_for(jobs.size() * static_cast<size_t>(ntiles), 1, [&](size_t t0, size_t t1) {
        std::vector<Acc> buf(static_cast<size_t>(transpose ? K : nb)), acc(static_cast<size_t>(M * nb));
        for (size_t t = t0; t < t1; ++t) {
          const int64_t job = static_cast<int64_t>(t) / ntiles, tile = static_cast<int64_t>(t) % ntiles;
          const int64_t n0 = tile * nb, n1 = std::min(N, n0 + nb), nw = n1 - n0;
          const Mat m = mat(jobs[job].second);
          const Acc* xm = X + jobs[job].first * M * K;
          if (transpose) {
            for (int64_t n = n0; n < n1; ++n) {
              dequant(m, n, 0, K, buf.data());
              for (int64_t r = 0; r < M; ++r) acc[r * nw + (n - n0)] = fastk::dot(xm + r * K, buf.data(), K);
            }
          } else {
            std::fill(acc.begin(), acc.begin() + M * nw, Acc(0));
            for (int64_t k = 0; k < K; ++k) {
              dequant(m, k, n0, n1, buf.data());
              for (int64_t r = 0; r < M; ++r) fastk::axpy(xm[r * K + k], buf.data(), acc.data() + r * nw, nw);
            }
          }
          T* om = o + job * M * N + n0;
          for (int64_t r = 0; r < M; ++r) {
            for (int64_t j = 0; j < nw; ++j) om[r * N + j] = T(acc[r * nw + j]);
          }
        }
      });
      return;
    }
    // Many rows: dequantize a wide block in parallel, then one BLAS product (threaded by BLAS).
    int64_t nb = std::clamp<int64_t>((int64_t(1) << 22) / K, 64, 1024);
    if (!transpose) nb = (nb + gs - 1) / gs * gs;
    nb = std::min(nb, N);
    std::vector<Acc> wt(static_cast<size_t>(nb * K));
    std::vector<Acc> cbuf(std::is_same_v<T, Acc> ? 0 : static_cast<size_t>(M * nb));
    for (size_t job = 0; job < jobs.size(); ++job) {
      const Mat m = mat(jobs[job].second);
      const Acc* xm = X + jobs[job].first * M * K;
      for (int64_t n0 = 0; n0 < N; n0 += nb) {
        const int64_t n1 = std::min(N, n0 + nb), nw = n1 - n0;
        const int64_t nrows = transpose ? nw : K;
        cpu::parallel_for(static_cast<size_t>(nrows), std::max<size_t>(1, 8192 / (transpose ? K : nw)),
                          [&](size_t r0, size_t r1) {
                            for (size_t r = r0; r < r1; ++r) {
                              if (transpose) {
                                dequant(m, n0 + static_cast<int64_t>(r), 0, K, wt.data() + r * K);
                              } else {
                                dequant(m, static_cast<int64_t>(r), n0, n1, wt.data() + r * nw);
                              }
                            }
                          });
        T* om = o + static_cast<int64_t>(job) * M * N + n0;
        Acc* c = std::is_same_v<T, Acc> ? reinterpret_cast<Acc*>(om) : cbuf.data();
        const int ldc = std::is_same_v<T, Acc> ? static_cast<int>(N) : static_cast<int>(nw);
        fastk::gemm(false, transpose, static_cast<int>(M), static_cast<int>(nw), static_cast<int>(K), Acc(1), xm,
                    static_cast<int>(K), wt.data(), static_cast<int>(transpose ? K : nw), Acc(0), c, ldc);
        if constexpr (!std::is_same_v<T, Acc>) {
          cpu::parallel_for(static_cast<size_t>(M), std::max<size_t>(1, 8192 / nw), [&](size_t r0, size_t r1) {
            for (size_t r = r0; r < r1; ++r) {
              for (int64_t j = 0; j < nw; ++j) om[r * N + j] = T(cbuf[r * nw + j]);
            }
          });
        }
      }
    }
  });
}

template <typename F>
void dispatch_scales(const Node& node, Dtype x_dtype, F&& f) {
  detail::dispatch_float(x_dtype, "quantized_matmul", [&](auto t) {
    using T = decltype(t);
    if (node.state.i(2) == static_cast<int>(QuantizationMode::Affine)) {
      f(T{}, T{});
    } else {
      f(T{}, uint8_t{});
    }
  });
}

// Each batch matrix of `a` cut to its first rows*new_cols elements, as a contiguous [..., rows, new_cols].
array matrix_prefixes(const array& a, int64_t new_cols) {
  const array c = a.row_contiguous() ? a : cpu::contiguous_copy(a);
  const int64_t rows = a.shape()[a.ndim() - 2], cols = a.shape().back();
  Shape sh = a.shape();
  sh.back() = static_cast<int32_t>(new_cols);
  array out(sh, a.dtype(), nullptr, 0);
  out.alloc();
  const size_t item = size_of(a.dtype());
  const auto* src = static_cast<const uint8_t*>(c.raw_data());
  auto* dst = static_cast<uint8_t*>(out.raw_data());
  for (int64_t b = 0, nb = batch_count(a); b < nb; ++b) {
    std::memcpy(dst + b * rows * new_cols * item, src + b * rows * cols * item, rows * new_cols * item);
  }
  return out;
}

// ImportOptions::writer_cpu_quirks (quirks.h): the operands as MLX < 0.31's CPU read an mxfp8/nvfp4
// product: as mxfp4 data holding the same number of values, from the start of each matrix.
Node as_mxfp4_read(const Node& node, std::vector<array>& in) {
  Node n = node;
  const int gs = node.state.i(0), bits = node.state.i(1);
  in[1] = matrix_prefixes(in[1], in[1].shape().back() * 4 / bits);
  in[2] = matrix_prefixes(in[2], in[2].shape().back() * gs / 32);
  n.state.values[0] = int32_t{32};
  n.state.values[1] = int32_t{4};
  n.state.values[2] = static_cast<int32_t>(QuantizationMode::Mxfp4);
  n.extra.reset();
  return n;
}

void qmm_cpu(const Node& node, const std::vector<array>& in, std::vector<array>& out) {
  if (quirks::fp_qmm_read_as_mxfp4(node)) {
    std::vector<array> in2 = in;
    const Node n2 = as_mxfp4_read(node, in2);
    qmm_cpu(n2, in2, out);
    return;
  }
  const array &x = in[0], &w = in[1];
  const int64_t K = x.shape().back();
  std::vector<std::pair<int64_t, int64_t>> jobs;
  int64_t M;
  if (x.ndim() > 2 && w.ndim() > 2) {
    M = x.shape()[x.ndim() - 2];
    for (int64_t b = 0, n = batch_count(x); b < n; ++b) jobs.push_back({b, b});
  } else {
    // x's batch axes fold into its rows; a batched w with a matrix x uses its first matrix, as MLX does.
    M = K == 0 ? static_cast<int64_t>(out[0].size()) / std::max<int64_t>(out[0].shape().back(), 1)
               : static_cast<int64_t>(x.size()) / K;
    jobs.push_back({0, 0});
  }
  dispatch_scales(node, x.dtype(), [&](auto t, auto s) {
    qmm_kernel<decltype(t), decltype(s)>(node, in, out[0], jobs, M);
  });
}

void gather_qmm_cpu(const Node& node, const std::vector<array>& in, std::vector<array>& out) {
  if (quirks::fp_qmm_read_as_mxfp4(node)) {
    std::vector<array> in2 = in;
    const Node n2 = as_mxfp4_read(node, in2);
    gather_qmm_cpu(n2, in2, out);
    return;
  }
  const array& x = in[0];
  const array& lhs = in[in.size() - 2];
  const array& rhs = in.back();
  const int64_t nx = batch_count(x), nw = batch_count(in[1]);
  std::vector<std::pair<int64_t, int64_t>> jobs(lhs.size());
  auto loc = [](const array& a, int64_t i) {
    int64_t off = 0;
    for (int d = static_cast<int>(a.ndim()) - 1; d >= 0 && i > 0; --d) {
      off += (i % a.shape()[d]) * a.strides()[d];
      i /= a.shape()[d];
    }
    return off;
  };
  for (size_t i = 0; i < jobs.size(); ++i) {
    const int64_t li = lhs.data<uint32_t>()[loc(lhs, static_cast<int64_t>(i))];
    const int64_t ri = rhs.data<uint32_t>()[loc(rhs, static_cast<int64_t>(i))];
    if (li >= nx || ri >= nw) {
      throw std::invalid_argument("[gather_qmm] Index " + std::to_string(li >= nx ? li : ri) + " of " +
                                  (li >= nx ? "lhs_indices" : "rhs_indices") + " is out of range for " +
                                  std::to_string(li >= nx ? nx : nw) + " batch matrices.");
    }
    jobs[i] = {li, ri};
  }
  std::vector<array> ins(in.begin(), in.end() - 2);
  dispatch_scales(node, x.dtype(), [&](auto t, auto s) {
    qmm_kernel<decltype(t), decltype(s)>(node, ins, out[0], jobs, x.shape()[x.ndim() - 2]);
  });
}

}  // namespace

void add_qmm_kernels(detail::KernelTable& table) {
  table.add({{"QuantizedMatmul", qmm_cpu}, {"GatherQMM", gather_qmm_cpu}});
}

}  // namespace quant

}  // namespace kiln
