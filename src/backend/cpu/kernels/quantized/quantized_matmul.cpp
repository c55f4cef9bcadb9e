// The kernels of QuantizedMatmul and GatherQMM.
//
// float32 / float16 / bfloat16 x (float32 accumulation) on a CPU with AVX2 or AVX-512: the vectorized
// kernels of qmm_simd.h. For few rows of x (decoding) they read the packed weights directly and expand
// them to floats in registers, threaded over output columns (and GatherQMM's jobs). For many rows of
// x · Wᵀ: on CPUs with AMX, tile products of the codes with x split into bfloat16 planes
// (cpu::qgemm_amx); otherwise the weights dequantized into the packed GEMM's panels (up to 256 rows) or
// a dequantized panel and cpu::gemm.
// float64 (and KILN_CPU_ISA=scalar): the portable path, which dequantizes tiles into float (double) and
// uses dot / axpy for few rows, cpu::gemm for many.
#include <algorithm>
#include <array>
#include <atomic>
#include <cstdlib>
#include <cstring>

#include "backend/cpu/blas.h"
#include "backend/cpu/cpu_features.h"
#include "backend/cpu/gemm/gemm.h"
#include "backend/cpu/kernels/fast/fast_kernels.h"
#include "backend/cpu/kernels/quantized/qmm_simd.h"
#include "backend/cpu/kernels/quantized/quantized_kernels.h"
#include "backend/cpu/loops.h"
#include "core/fusion.h"
#include "primitives/quantized/quirks.h"

namespace kiln {

namespace quant {

// ---- instruction set ----

namespace {

// The CPU's levels (backend/cpu/cpu_features.h: detection, and KILN_CPU_ISA) as the kernels' paths.
QmmIsa from_cpu(cpu::Isa i) {
  if (i >= cpu::Isa::amx && cpu::amx_permitted()) return QmmIsa::Amx;
  return i >= cpu::Isa::avx512 ? QmmIsa::Avx512 : i == cpu::Isa::avx2 ? QmmIsa::Avx2 : QmmIsa::Scalar;
}

std::atomic<int> g_isa_override{-1};

}  // namespace

QmmIsa qmm_best_isa() { return from_cpu(cpu::isa_detected()); }

QmmIsa qmm_isa() {
  const int o = g_isa_override.load(std::memory_order_relaxed);
  if (o >= 0) return std::min(static_cast<QmmIsa>(o), qmm_best_isa());
  return from_cpu(cpu::isa_level());
}

void set_qmm_isa(std::optional<QmmIsa> isa) { g_isa_override.store(isa ? static_cast<int>(*isa) : -1); }

namespace {
std::atomic<int> g_int8_override{-1};
std::atomic<int64_t> g_int8_calls{0};
}  // namespace

void set_qmm_int8(std::optional<bool> on) { g_int8_override.store(on ? static_cast<int>(*on) : -1); }
int64_t qmm_int8_calls() { return g_int8_calls.load(std::memory_order_relaxed); }
bool qmm_int8_available() { return cpu::has_avx512_vnni() && cpu::isa_level() >= cpu::Isa::avx512; }

namespace {

// Rows of x up to which the register kernels run (above: dequantized panels and cpu::gemm). They
// unpack each weight block once per 4 rows of x, so their cost grows with M; measured on this machine
// (BM_QuantizedMatmul/2816/1024/M) they are ahead of dequantize + GEMM up to about 16 rows.
constexpr int64_t kDecodeRows = 16;
// Rows of x up to which the integer decode kernel (qmm_simd.h) runs where it serves: all the register
// kernels' rows. It does the float kernels' work in about 60% of their instructions for one row of x, and
// stays ahead with more (the float kernels share each unpacked weight among up to 4 rows): 2816 × 1024,
// 1 to 16 rows of x, 72-1050 µs against 91-1396 µs (eager calls, a slow phase of the 2-core EPYC).
constexpr int64_t kInt8Rows = kDecodeRows;

// Whether the integer decode kernel may run: set_qmm_int8, else KILN_QMM_INT8 (0 turns it off), on CPUs
// with AVX512_VNNI at the avx512 level or above.
bool qmm_int8_enabled() {
  static const bool env = [] {
    const char* v = std::getenv("KILN_QMM_INT8");
    return v == nullptr || std::strcmp(v, "0") != 0;
  }();
  const int o = g_int8_override.load(std::memory_order_relaxed);
  return (o >= 0 ? o != 0 : env) && qmm_int8_available();
}

// x · Wᵀ products of up to this many rows dequantize into the packed GEMM's panels (fast_qmm).
constexpr int64_t kFusedDequantMaxRows = 256;

// Scales and biases as floats: uint8 scales through a table per mode, the float types converted.
template <typename S>
struct ScaleReader {
  const float* table = nullptr;  // uint8 scales
  explicit ScaleReader(QuantizationMode mode) {
    if constexpr (std::is_same_v<S, uint8_t>) {
      static const auto e8m0_t = [] {
        std::array<float, 256> t{};
        for (int i = 0; i < 256; ++i) t[i] = e8m0<float>(static_cast<uint8_t>(i));
        return t;
      }();
      static const auto fp8_t = [] {
        std::array<float, 256> t{};
        for (int i = 0; i < 256; ++i) t[i] = from_fp8(static_cast<uint8_t>(i));
        return t;
      }();
      table = mode == QuantizationMode::Nvfp4 ? fp8_t.data() : e8m0_t.data();
    }
  }
  // src as float: src itself for float scales, else converted into buf.
  const float* read(const S* src, int64_t n, std::vector<float>& buf) const {
    if constexpr (std::is_same_v<S, float>) {
      return src;
    } else {
      if (static_cast<int64_t>(buf.size()) < n) buf.resize(static_cast<size_t>(n));
      if constexpr (std::is_same_v<S, uint8_t>) {
        for (int64_t i = 0; i < n; ++i) buf[i] = table[src[i]];
      } else {
        fastk::to_float(src, buf.data(), n);  // vectorized (F16C for float16)
      }
      return buf.data();
    }
  }
  // A [rows, n] block of a [.., ld] scale matrix as floats; the result's row stride is *stride.
  const float* read_block(const S* src, int64_t rows, int64_t n, int64_t ld, std::vector<float>& buf,
                          int64_t* stride) const {
    if constexpr (std::is_same_v<S, float>) {
      *stride = ld;
      return src;
    } else {
      if (ld == n) {  // whole rows: one contiguous run
        *stride = n;
        return read(src, rows * n, buf);
      }
      if (static_cast<int64_t>(buf.size()) < rows * n) buf.resize(static_cast<size_t>(rows * n));
      for (int64_t r = 0; r < rows; ++r) {
        if constexpr (std::is_same_v<S, uint8_t>) {
          for (int64_t i = 0; i < n; ++i) buf[r * n + i] = table[src[r * ld + i]];
        } else {
          fastk::to_float(src + r * ld, buf.data() + r * n, n);
        }
      }
      *stride = n;
      return buf.data();
    }
  }
};

template <typename T>
void store_rows(const float* src, int64_t ld_src, T* dst, int64_t ld_dst, int64_t rows, int64_t cols) {
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t j = 0; j < cols; ++j) dst[r * ld_dst + j] = T(src[r * ld_src + j]);
  }
}

// What the vectorized path needs of one call.
struct FastCall {
  const simd::Ops* ops;
  simd::Kind kind;
  int gs, bits;
  bool transpose;
  int64_t M, N, K, row_bytes, row_groups;
  bool amx;        // prefill-sized x · Wᵀ on AMX tiles
  const float* X;  // x rows, float, batch-major
  int64_t x_rows;
};

// One product of the register kernels (few rows of x): a weight matrix with its scales and biases, its
// output columns, which x batch it reads (M rows each) and where its M rows of output go.
template <typename T, typename S>
struct DecodeJob {
  const uint8_t* w;
  const S* s;
  const S* b;
  int64_t N;
  int64_t xb;
  T* o;
  int64_t ldo;
};

// The register kernels over a list of products that share x's rows (and K, the group size, bits and
// mode): one job per (x batch, weight matrix) pair of a batched product or GatherQMM, or one per
// sibling product reading the same x (qmm_batch_cpu). Their output columns are cut into tasks of about
// 256 KiB of packed weights, spread over the pool's threads in one parallel_for. c.row_bytes and
// c.row_groups serve every job: transposed products (rows of K) or jobs of one N.
template <typename T, typename S>
void decode_qmm(const FastCall& c, QuantizationMode mode, const std::vector<DecodeJob<T, S>>& jobs) {
  const ScaleReader<S> rd(mode);
  const int64_t M = c.M, K = c.K;
  const bool affine = c.kind == simd::Kind::Affine;
  constexpr bool kF32 = std::is_same_v<T, float>;
  const bool tr = c.transpose;
  // The transposed product reads x permuted to the kernels' lane order: done once per call.
  // Affine kernels that work per group (Ops::group_sums) also take the sum of x over each group.
  std::vector<float> xp, xsum;
  const int64_t ng = K / c.gs;
  // The integer kernel (qmm_simd.h) where it serves: x in byte planes, prepared once per call; x with
  // inf, NaN or extreme blocks falls back to the float kernels.
  std::vector<int8_t> xq;
  std::vector<int32_t> xc;
  std::vector<float> xf;
  bool i8 = tr && M <= kInt8Rows && c.ops->gemv_t_i8 != nullptr && qmm_int8_enabled() &&
            simd::int8_fits(c.kind, c.bits, c.gs, K);
  if (i8) {
    xq.resize(static_cast<size_t>(c.x_rows * 3 * K));
    xc.resize(static_cast<size_t>(c.x_rows * K / 8));
    xf.resize(xc.size());
    xsum.resize(static_cast<size_t>(c.x_rows * ng));
    for (int64_t r = 0; r < c.x_rows && i8; ++r) {
      const simd::XInt8 out{xq.data() + r * 3 * K, xc.data() + r * K / 8, xf.data() + r * K / 8,
                            xsum.data() + r * ng};
      i8 = c.ops->prepare_x_i8(c.X + r * K, K, c.gs, out);
    }
  }
  if (i8) g_int8_calls.fetch_add(1, std::memory_order_relaxed);
  const bool gsums = !i8 && tr && affine && c.ops->group_sums;
  if (tr && !i8) {
    uint8_t perm[64];
    const int blk = c.ops->layout(c.kind, c.bits, c.gs, perm);
    xp.resize(static_cast<size_t>(c.x_rows * K));
    if (gsums) xsum.resize(static_cast<size_t>(c.x_rows * ng));
    for (int64_t r = 0; r < c.x_rows; ++r) {
      const float* src = c.X + r * K;
      float* dst = xp.data() + r * K;
      for (int64_t e = 0; e < K; e += blk) {
        for (int i = 0; i < blk; ++i) dst[e + i] = src[e + perm[i]];
      }
      if (gsums) {
        for (int64_t g = 0; g < ng; ++g) {
          float t = 0.0f;
          for (int64_t k = g * c.gs; k < (g + 1) * c.gs; ++k) t += src[k];
          xsum[static_cast<size_t>(r * ng + g)] = t;
        }
      }
    }
  }
  const float* xs = tr && !i8 ? xp.data() : c.X;
  // Task units: 16 weight rows (transposed) or 128 columns (plain) of the output. Chunks of about
  // 256 KiB of packed weights, but at least two per thread: each chunk is one sequential stream, and
  // every new one starts cold. In a 4-bit llama decode step (in-process, alternating), chunks of 32 KiB
  // took 5.6-6.0 ms, 128 KiB 5.2-5.5 and 256 KiB 5.1-5.4 (a slow phase of the 2-core EPYC).
  const int64_t U = tr ? 16 : 128;
  // Task units of every job, in order: job j's are [first[j], first[j + 1]).
  std::vector<int64_t> first(jobs.size() + 1, 0);
  for (size_t j = 0; j < jobs.size(); ++j) first[j + 1] = first[j] + (jobs[j].N + U - 1) / U;
  const int64_t unit_bytes = tr ? U * c.row_bytes : K * U * c.bits / 8;
  const int64_t all_units = first.back();
  const size_t grain = static_cast<size_t>(
      std::max<int64_t>(1, std::min<int64_t>((256 << 10) / unit_bytes, all_units / (2 * cpu::num_threads()))));
  void (*kernel)(const simd::Gemv&) = i8 ? c.ops->gemv_t_i8 : tr ? c.ops->gemv_t : c.ops->gemv_n;
  cpu::parallel_for(static_cast<size_t>(all_units), grain, [&](size_t t0, size_t t1) {
    std::vector<float> sbuf, bbuf, ybuf(kF32 ? 0 : static_cast<size_t>(M * U));
    for (size_t t = t0; t < t1; ++t) {
      const int64_t unit = static_cast<int64_t>(t);
      const size_t j = static_cast<size_t>(std::upper_bound(first.begin(), first.end(), unit) - first.begin()) - 1;
      const DecodeJob<T, S>& m = jobs[j];
      const int64_t N = m.N, n0 = (unit - first[j]) * U;
      const int64_t n1 = std::min(N, n0 + U);
      // Scales and biases: weight rows n0..n1, every group (transposed), or the groups of columns
      // n0..n1 in every row k (plain).
      const int64_t srows = tr ? n1 - n0 : K, sn = tr ? c.row_groups : (n1 - n0) / c.gs;
      const int64_t soff = tr ? n0 * c.row_groups : n0 / c.gs;
      simd::Gemv a{};
      a.w = m.w + (tr ? n0 * c.row_bytes : n0 * c.bits / 8);
      a.row_bytes = c.row_bytes;
      a.s = rd.read_block(m.s + soff, srows, sn, c.row_groups, sbuf, &a.s_stride);
      int64_t bstride = 0;
      a.b = affine ? rd.read_block(m.b + soff, srows, sn, c.row_groups, bbuf, &bstride) : nullptr;
      a.n = n1 - n0;
      a.K = K;
      a.gs = c.gs;
      a.bits = c.bits;
      a.kind = c.kind;
      a.x = xs + m.xb * M * K;
      a.xsum = gsums || i8 ? xsum.data() + m.xb * M * ng : nullptr;
      if (i8) {
        a.xq = xq.data() + m.xb * M * 3 * K;
        a.xc = xc.data() + m.xb * M * K / 8;
        a.xf = xf.data() + m.xb * M * K / 8;
      }
      a.ldx = K;
      a.M = static_cast<int>(M);
      T* om = m.o + n0;
      if constexpr (kF32) {
        a.y = om;
        a.ldy = m.ldo;
      } else {
        a.y = ybuf.data();
        a.ldy = U;
      }
      kernel(a);
      if constexpr (!kF32) store_rows(ybuf.data(), U, om, m.ldo, M, n1 - n0);
    }
  });
}

template <typename T, typename S, typename MatFn>
void fast_qmm(const FastCall& c, QuantizationMode mode, const std::vector<std::pair<int64_t, int64_t>>& jobs,
              MatFn&& mat, T* o) {
  const ScaleReader<S> rd(mode);
  const int64_t M = c.M, N = c.N, K = c.K;
  const bool affine = c.kind == simd::Kind::Affine;
  constexpr bool kF32 = std::is_same_v<T, float>;
  if (M <= kDecodeRows) {
    std::vector<DecodeJob<T, S>> dj;
    dj.reserve(jobs.size());
    for (size_t j = 0; j < jobs.size(); ++j) {
      const auto m = mat(jobs[j].second);
      dj.push_back({m.w, m.s, m.b, N, jobs[j].first, o + static_cast<int64_t>(j) * M * N, N});
    }
    decode_qmm<T, S>(c, mode, dj);
    return;
  }
  // Groups [g0, g0 + ng) of packed row `wrow` of one weight matrix dequantized to dst (its scales and
  // biases converted to float through the caller's buffers where needed).
  auto dequant_row = [&](const auto& m, int64_t wrow, int64_t g0, int64_t ng, std::vector<float>& sbuf,
                         std::vector<float>& bbuf, float* dst) {
    const float* s = rd.read(m.s + wrow * c.row_groups + g0, ng, sbuf);
    const float* b = affine ? rd.read(m.b + wrow * c.row_groups + g0, ng, bbuf) : nullptr;
    c.ops->dequant(m.w + wrow * c.row_bytes + g0 * c.gs * c.bits / 8, s, b, ng, c.gs, c.bits, c.kind, dst);
  };
  // M rows of `cols` float32 results (row stride ld) stored to the output (row stride N), in parallel.
  auto store_out = [&](const float* src, int64_t ld, T* dst, int64_t cols) {
    cpu::parallel_for(static_cast<size_t>(M), std::max<size_t>(1, 8192 / cols), [&](size_t r0, size_t r1) {
      store_rows(src + r0 * ld, ld, dst + r0 * N, N, static_cast<int64_t>(r1 - r0), cols);
    });
  };
  // On CPUs with AMX, x · Wᵀ multiplies the codes (exact in bfloat16) with x split into three bfloat16
  // planes in tile products, then scales each group's sums (cpu::qgemm_amx, float32-accurate). Affine
  // codes are centered as in the decode kernels' group sums (q − 2^(bits−1), bias b + s·2^(bits−1)), so
  // neither term outgrows the result when x has one sign. It declines (and the paths below run) for
  // groups that are not a multiple of 32 and for x with inf or NaN.
  if (c.transpose && c.amx && c.gs % 32 == 0) {
    std::vector<float> cbuf(kF32 ? 0 : static_cast<size_t>(M * N));
    const int center = affine ? 1 << (c.bits - 1) : 0;
    bool done = true;
    for (size_t job = 0; job < jobs.size() && done; ++job) {
      const auto m = mat(jobs[job].second);
      const float* xm = c.X + jobs[job].first * M * K;
      std::vector<float> sbuf, bbuf, bc;
      int64_t ld_sb = 0, ld_b = 0;
      const float* sc = rd.read_block(m.s, N, c.row_groups, c.row_groups, sbuf, &ld_sb);
      if (affine) {
        const float* bi = rd.read_block(m.b, N, c.row_groups, c.row_groups, bbuf, &ld_b);
        bc.resize(static_cast<size_t>(N * c.row_groups));
        for (int64_t n = 0; n < N; ++n) {
          for (int64_t g = 0; g < c.row_groups; ++g) {
            bc[n * c.row_groups + g] = bi[n * ld_b + g] + sc[n * ld_sb + g] * static_cast<float>(center);
          }
        }
      }
      const cpu::CodesB codes = [&](int64_t n0, int64_t nr, int64_t k0, int64_t kc, uint16_t* dst, int64_t ldd) {
        // 4- and 8-bit codes straight to bfloat16; the others through the dequantizer with unit scales
        // and biases −center, then to bfloat16 (exactly: codes are integers up to 255, fp4 or fp8 values).
        static thread_local std::vector<float> f, ones, shift;
        const int64_t ng = kc / c.gs, g0 = k0 / c.gs;
        f.resize(static_cast<size_t>(kc));
        ones.assign(static_cast<size_t>(ng), 1.0f);
        shift.assign(static_cast<size_t>(ng), -static_cast<float>(center));
        for (int64_t r = 0; r < nr; ++r) {
          const uint8_t* src = m.w + (n0 + r) * c.row_bytes + g0 * c.gs * c.bits / 8;
          if (affine && simd::codes_bf16_avx512(src, kc, c.bits, center, dst + r * ldd)) continue;
          c.ops->dequant(src, ones.data(), affine ? shift.data() : nullptr, ng, c.gs, c.bits, c.kind, f.data());
          for (int64_t k = 0; k < kc; ++k) dst[r * ldd + k] = bfloat16_t(f[k]).bits;  // exact values
        }
      };
      T* om = o + static_cast<int64_t>(job) * M * N;
      float* cm = kF32 ? reinterpret_cast<float*>(om) : cbuf.data();
      // (the scales' row stride is row_groups whether read in place or converted, as is bc's)
      done = cpu::qgemm_amx(M, N, K, xm, K, c.gs, codes, sc, affine ? bc.data() : nullptr, ld_sb, cm, N);
      if (done && !kF32) store_out(cbuf.data(), N, om, N);
    }
    if (done) return;
  }
  // Prefill-sized products of x · Wᵀ (the nn.Linear layout): kiln's packed GEMM with the weights
  // dequantized straight into its packed panels, a (32 rows × 256 k) block at a time inside each GEMM
  // task, so no float copy of W is written and read back and no pass runs before the product. Up to 2
  // row blocks of the GEMM (M <= 256): each row block dequantizes the weights again.
  if (c.transpose && M <= kFusedDequantMaxRows && cpu::isa_level() != cpu::Isa::scalar) {
    std::vector<float> cbuf(kF32 ? 0 : static_cast<size_t>(M * N));
    for (size_t job = 0; job < jobs.size(); ++job) {
      const auto m = mat(jobs[job].second);
      const float* xm = c.X + jobs[job].first * M * K;
      auto rows_b = [&](int64_t n0, int64_t nr, int64_t k0, int64_t kc, float* dst, int64_t ldd) {
        static thread_local std::vector<float> sbuf, bbuf;
        // The block's codes are a few lines of each row, a row's length apart: no stream for the hardware
        // prefetcher, so each row waited for its codes (the dequantizer's first load took ~80% of its
        // samples). They are prefetched kAhead rows ahead (into the next panel's rows at the end).
        constexpr int64_t kAhead = 4;
        const int64_t bytes = kc * c.bits / 8, off = k0 * c.bits / 8;
        for (int64_t r = 0; r < nr; ++r) {
          const int64_t ahead = std::min(n0 + r + kAhead, N - 1);
          const uint8_t* next = m.w + ahead * c.row_bytes + off;
          for (int64_t l = 0; l < bytes; l += 64) __builtin_prefetch(next + l);
          dequant_row(m, n0 + r, k0 / c.gs, kc / c.gs, sbuf, bbuf, dst + r * ldd);
        }
      };
      T* om = o + static_cast<int64_t>(job) * M * N;
      float* cm = kF32 ? reinterpret_cast<float*>(om) : cbuf.data();
      cpu::gemm_packed_rows_b(M, N, K, xm, K, c.gs, rows_b, cm, N);
      if constexpr (!kF32) store_out(cbuf.data(), N, om, N);
    }
    return;
  }
  // Many rows: a panel of nb output columns × K dequantized once (in parallel, vectorized) and used by
  // one cpu::gemm for all M rows.
  int64_t nb = std::clamp<int64_t>((int64_t(1) << 22) / K, 64, 1024);
  if (!c.transpose) nb = (nb + c.gs - 1) / c.gs * c.gs;
  nb = std::min(nb, N);
  std::vector<float> wt(static_cast<size_t>(nb * K));
  std::vector<float> cbuf(kF32 ? 0 : static_cast<size_t>(M * nb));
  for (size_t job = 0; job < jobs.size(); ++job) {
    const auto m = mat(jobs[job].second);
    const float* xm = c.X + jobs[job].first * M * K;
    for (int64_t n0 = 0; n0 < N; n0 += nb) {
      const int64_t n1 = std::min(N, n0 + nb), nw = n1 - n0;
      const int64_t nrows = c.transpose ? nw : K;
      const int64_t rlen = c.transpose ? K : nw;  // values per panel row
      cpu::parallel_for(static_cast<size_t>(nrows), std::max<size_t>(1, 16384 / rlen), [&](size_t r0, size_t r1) {
        std::vector<float> sbuf, bbuf;
        for (size_t rr = r0; rr < r1; ++rr) {
          const int64_t r = static_cast<int64_t>(rr);
          const int64_t wrow = c.transpose ? n0 + r : r;       // packed row
          const int64_t g0 = c.transpose ? 0 : n0 / c.gs;      // first group in it
          dequant_row(m, wrow, g0, rlen / c.gs, sbuf, bbuf, wt.data() + r * rlen);
        }
      });
      T* om = o + static_cast<int64_t>(job) * M * N + n0;
      float* cm = kF32 ? reinterpret_cast<float*>(om) : cbuf.data();
      const int ldc = kF32 ? static_cast<int>(N) : static_cast<int>(nw);
      cpu::gemm(false, c.transpose, static_cast<int>(M), static_cast<int>(nw), static_cast<int>(K), 1.0f, xm,
                static_cast<int>(K), wt.data(), static_cast<int>(rlen), 0.0f, cm, ldc);
      if constexpr (!kF32) store_out(cbuf.data(), nw, om, nw);
    }
  }
}


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

// x's rows (of K values) as contiguous accumulator-type rows, batch-major: x itself where it already is,
// else converted into buf.
template <typename T, typename Acc = detail::acc_t<T>>
const Acc* x_rows(const array& x0, int64_t K, std::vector<Acc>& buf) {
  if (std::is_same_v<T, Acc> && x0.row_contiguous()) return reinterpret_cast<const Acc*>(x0.data<T>());
  const array x1 = fastk::unit_last_stride(x0);
  buf.resize(x1.size());
  const int64_t rows = static_cast<int64_t>(x1.size()) / K;
  cpu::parallel_for(static_cast<size_t>(rows), std::max<size_t>(1, cpu::kGrainCheap / K), [&](size_t b, size_t e) {
    for (size_t r = b; r < e; ++r) {
      fastk::load_row(x1.data<T>() + fastk::row_offset(x1, static_cast<int64_t>(r)), buf.data() + r * K, K);
    }
  });
  return buf.data();
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
  const Acc* X = x_rows<T>(x0, K, xbuf);
  const int64_t row_bytes = (transpose ? K : N) * bits / 8;
  const int64_t row_groups = (transpose ? K : N) / gs;
  const uint8_t* wp = reinterpret_cast<const uint8_t*>(w.data<uint32_t>());
  const S* sp = sc.data<S>();
  const S* bp = affine ? bi.data<S>() : nullptr;
  const int nt = cpu::num_threads();

  if constexpr (std::is_same_v<Acc, float>) {
    const QmmIsa isa = qmm_isa();
    if (isa != QmmIsa::Scalar) {
      struct FMat {
        const uint8_t* w;
        const S* s;
        const S* b;
      };
      auto fmat = [&](int64_t wb) {
        return FMat{wp + batch_offset(w, wb) * 4, sp + batch_offset(sc, wb),
                    affine ? bp + batch_offset(bi, wb) : nullptr};
      };
      FastCall c{};
      c.ops = isa >= QmmIsa::Avx512 ? &simd::avx512_ops() : &simd::avx2_ops();
      c.amx = isa == QmmIsa::Amx;
      c.kind = affine ? simd::Kind::Affine : mode == QuantizationMode::Mxfp8 ? simd::Kind::Fp8 : simd::Kind::Fp4;
      c.gs = gs;
      c.bits = bits;
      c.transpose = transpose;
      c.M = M;
      c.N = N;
      c.K = K;
      c.row_bytes = row_bytes;
      c.row_groups = row_groups;
      c.X = X;
      c.x_rows = static_cast<int64_t>(x0.size()) / K;
      fast_qmm<T, S>(c, mode, jobs, fmat, o);
      return;
    }
  }

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
        cpu::gemm(false, transpose, static_cast<int>(M), static_cast<int>(nw), static_cast<int>(K), Acc(1), xm,
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

// ---- Sibling products (core/kernels.h BatchRule): x · Wᵢᵀ for several W reading one x ----

// The register kernels' products of one x: transposed, 2-D weights, the same quantization, dtypes and x
// rows (at most kDecodeRows of them).
bool qmm_joins(const Node& a, const Node& b) {
  const State &sa = a.state, &sb = b.state;
  if (!sa.b(3) || !sb.b(3) || sa.i(0) != sb.i(0) || sa.i(1) != sb.i(1) || sa.i(2) != sb.i(2)) return false;
  if (a.inputs.size() != b.inputs.size() || a.specs.size() != 1 || b.specs.size() != 1) return false;
  if (a.specs[0].dtype != b.specs[0].dtype) return false;
  if (quirks::fp_qmm_read_as_mxfp4(a) || quirks::fp_qmm_read_as_mxfp4(b)) return false;
  const array& x = a.inputs[0];
  if (x.ndim() < 1 || x.shape().back() == 0) return false;
  const int64_t K = x.shape().back();
  if (static_cast<int64_t>(x.size()) / K > kDecodeRows) return false;
  for (size_t k = 1; k < a.inputs.size(); ++k) {
    if (a.inputs[k].ndim() != 2 || b.inputs[k].ndim() != 2 || a.inputs[k].dtype() != b.inputs[k].dtype()) return false;
  }
  return true;
}

// A batch group of QuantizedMatmul nodes (qmm_joins holds for each with the first): one parallel job over
// every member's output columns (decode_qmm), where the register kernels serve; otherwise each member's
// own kernel in turn.
void qmm_batch_cpu(detail::fusion::Group& g) {
  const Node& first = *g.members[0].node;
  const array& x = first.inputs[0];
  const Dtype xt = x.dtype();
  const bool fast = (xt == float32 || xt == float16 || xt == bfloat16) && qmm_isa() != QmmIsa::Scalar;
  if (!fast) {
    for (auto& m : g.members) {
      std::vector<array> out{m.out};
      qmm_cpu(*m.node, m.node->inputs, out);
    }
    return;
  }
  dispatch_scales(first, xt, [&](auto t, auto s) {
    using T = decltype(t);
    using S = decltype(s);
    if constexpr (std::is_same_v<detail::acc_t<T>, float>) {
      const State& st = first.state;
      const int gs = st.i(0), bits = st.i(1);
      const QuantizationMode mode = static_cast<QuantizationMode>(st.i(2));
      const bool affine = mode == QuantizationMode::Affine;
      const int64_t K = x.shape().back();
      std::vector<float> xbuf;
      FastCall c{};
      c.ops = qmm_isa() >= QmmIsa::Avx512 ? &simd::avx512_ops() : &simd::avx2_ops();
      c.kind = affine ? simd::Kind::Affine : mode == QuantizationMode::Mxfp8 ? simd::Kind::Fp8 : simd::Kind::Fp4;
      c.gs = gs;
      c.bits = bits;
      c.transpose = true;
      c.x_rows = c.M = static_cast<int64_t>(x.size()) / K;
      c.K = K;
      c.row_bytes = K * bits / 8;
      c.row_groups = K / gs;
      c.X = x_rows<T>(x, K, xbuf);
      std::vector<array> keep;  // contiguous copies of operands that were not (kept until the call ends)
      std::vector<DecodeJob<T, S>> jobs;
      for (auto& m : g.members) {
        const std::vector<array>& in = m.node->inputs;
        keep.push_back(last2_contiguous(in[1]));
        keep.push_back(last2_contiguous(in[2]));
        keep.push_back(affine ? last2_contiguous(in[3]) : array());
        const array &w = keep[keep.size() - 3], &sc = keep[keep.size() - 2], &bi = keep.back();
        const int64_t N = m.out.shape().back();
        jobs.push_back({reinterpret_cast<const uint8_t*>(w.data<uint32_t>()), sc.data<S>(),
                        affine ? bi.data<S>() : nullptr, N, 0, m.out.data<T>(), N});
      }
      c.N = jobs[0].N;
      decode_qmm<T, S>(c, mode, jobs);
    }
  });
}

}  // namespace

void add_qmm_kernels(detail::KernelTable& table) {
  table.add({{"QuantizedMatmul", qmm_cpu}, {"GatherQMM", gather_qmm_cpu}});
  table.add_batch("QuantizedMatmul", {qmm_joins, qmm_batch_cpu});
}

}  // namespace quant

}  // namespace kiln
