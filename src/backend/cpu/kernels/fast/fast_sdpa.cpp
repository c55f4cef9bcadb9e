// The kernel of the fused ScaledDotProductAttention primitive. Work is split into tiles of query rows;
// a tile holds the rows of every query head that shares one key/value head (grouped-query attention),
// so the matrix products of a tile are single BLAS calls: S = scale · Q Kᵀ, then O = softmax(S) V, for
// large tiles one block of keys at a time with an online softmax (no L_q × L_k score matrix).
#include <cfloat>
#include <cmath>
#include <cstring>

#include "backend/cpu/kernels/fast/fast_kernels.h"
#include "backend/cpu/kernels/fast/row_kernels.h"
#include "backend/cpu/loops.h"

namespace kiln::fastk {

namespace {

template <typename T>
double lowest_of() {
  if constexpr (std::is_same_v<T, float16_t>) return -65504.0;
  else if constexpr (std::is_same_v<T, bfloat16_t>) return -3.3895313892515355e38;
  else if constexpr (std::is_same_v<T, float>) return -FLT_MAX;
  else return -DBL_MAX;
}

// A (B, H, L, D) operand as Acc rows: pointer, batch and head strides, row stride (unit last stride).
template <typename Acc>
struct Operand {
  const Acc* p = nullptr;  // null: converted per tile from `src`
  int64_t sb = 0, sh = 0, ld = 0;
  std::vector<Acc> own;
  array src;  // the input with a unit last stride
  const Acc* at(int64_t b, int64_t h) const { return p + b * sb + h * sh; }
};

// Use `a` in place when it already is Acc rows BLAS can read. Otherwise convert it all up front
// (`convert`), or leave it to the tiles, which convert the rows they read (small tiles, in parallel).
template <typename T, typename Acc>
void prepare(const array& a0, Operand<Acc>& op, bool convert) {
  const Shape& sh = a0.shape();
  const int64_t D = sh[3];
  if constexpr (std::is_same_v<T, Acc>) {
    const auto& st = a0.strides();
    const int64_t ld = sh[2] == 1 ? std::max<int64_t>(D, 1) : st[2];
    if (st[3] == 1 && ld >= std::max<int64_t>(D, 1)) {
      op.p = a0.data<Acc>();
      op.sb = st[0];
      op.sh = st[1];
      op.ld = ld;
      return;
    }
  }
  op.src = unit_last_stride(a0);
  if (!convert) return;
  const array& a = op.src;
  op.own.resize(a.size());
  const int64_t rows = D == 0 ? 0 : static_cast<int64_t>(a.size()) / D;
  cpu::parallel_for(static_cast<size_t>(rows), std::max<size_t>(1, cpu::kGrainCheap / std::max<int64_t>(D, 1)),
                    [&](size_t b, size_t e) {
                      for (size_t r = b; r < e; ++r) {
                        load_row(a.data<T>() + row_offset(a, static_cast<int64_t>(r)),
                                 op.own.data() + static_cast<int64_t>(r) * D, D);
                      }
                    });
  op.p = op.own.data();
  op.ld = std::max<int64_t>(D, 1);
  op.sh = static_cast<int64_t>(sh[2]) * D;
  op.sb = static_cast<int64_t>(sh[1]) * op.sh;
}

// Rows [0, n) of head (b, h) of `op` as Acc rows: in place, or converted into `buf`. Returns (rows, ld).
template <typename T, typename Acc>
std::pair<const Acc*, int64_t> rows_of(const Operand<Acc>& op, int64_t b, int64_t h, int64_t n, int64_t D,
                                       std::vector<Acc>& buf) {
  if (op.p) return {op.at(b, h), op.ld};
  const auto& st = op.src.strides();
  const T* base = op.src.template data<T>() + b * st[0] + h * st[1];
  for (int64_t j = 0; j < n; ++j) load_row(base + j * st[2], buf.data() + j * D, D);
  return {buf.data(), std::max<int64_t>(D, 1)};
}

struct SdpaParams {
  float scale;
  bool causal, has_mask, has_sinks, lse;
};

template <typename T>
struct Sdpa {
  using Acc = detail::acc_t<T>;
  explicit Sdpa(const SdpaParams& params) : p(params) {}
  const SdpaParams& p;
  int64_t B = 0, Hq = 0, Lq = 0, D = 0, Hk = 0, Lk = 0, Dv = 0, rep = 1, q_off = 0;
  array q2;
  Operand<Acc> K, V;
  const array* mask = nullptr;
  int64_t msb = 0, msh = 0, msl = 0, msk = 0;
  bool bool_mask = false;
  const array* sinks = nullptr;
  Acc lowest = 0;
  T* o = nullptr;
  float* lse = nullptr;

  // Scratch for one tile of `rows_max` query rows.
  struct Scratch {
    std::vector<Acc> Q, S, O, inv, lrow, Kb, Vb, mrow, lsum;
    // S holds `cols` scores per row: every key (the one-thread tiles) or one key block (the BLAS tiles).
    Scratch(int64_t rows, int64_t D, int64_t cols, int64_t Dv)
        : Q(static_cast<size_t>(rows * std::max<int64_t>(D, 1))),
          S(static_cast<size_t>(rows * std::max<int64_t>(cols, 1))),
          O(static_cast<size_t>(rows * std::max<int64_t>(Dv, 1))),
          inv(static_cast<size_t>(rows)),
          lrow(static_cast<size_t>(rows)),
          mrow(static_cast<size_t>(rows)),
          lsum(static_cast<size_t>(rows)) {}
  };

  // y = exp(x - shift) in place, returning the sum (float rows use MLX's exp through fastk::rows).
  static Acc exp_sum(Acc* s, Acc shift, int64_t n) {
    if constexpr (std::is_same_v<Acc, float>) {
      return rows::row_fns().exp_sum(s, shift, s, n);
    } else {
      Acc total = 0;
      for (int64_t j = 0; j < n; ++j) total += (s[j] = std::exp(s[j] - shift));
      return total;
    }
  }

  // Row r of a tile: query head and position.
  int64_t head(int64_t hk, int64_t r, int64_t n_i) const { return hk * rep + r / n_i; }

  void gather_q(int64_t b, int64_t hk, int64_t i0, int64_t n_i, int64_t r, Acc* dst) const {
    const int64_t hq = head(hk, r, n_i), i = i0 + r % n_i;
    load_row(q2.data<T>() + b * q2.strides()[0] + hq * q2.strides()[1] + i * q2.strides()[2], dst, D);
  }

  // Masks and sinks on one row of scores, then exp in place; records 1/sum and the logsumexp.
  void softmax_row(int64_t b, int64_t hk, int64_t i0, int64_t n_i, int64_t r, Acc* s, int64_t kend, Scratch& sc) const {
    const int64_t hq = head(hk, r, n_i), i = i0 + r % n_i;
    if (p.causal) {
      for (int64_t j = std::max<int64_t>(i + q_off + 1, 0); j < kend; ++j) s[j] = lowest;
    }
    if (mask) {
      const int64_t base = b * msb + hq * msh + i * msl;
      if (bool_mask) {
        const bool* m = mask->data<bool>() + base;
        for (int64_t j = 0; j < kend; ++j) s[j] = m[j * msk] ? s[j] : lowest;
      } else {
        const T* m = mask->data<T>() + base;
        for (int64_t j = 0; j < kend; ++j) s[j] += Acc(m[j * msk]);
      }
    }
    Acc mx = -std::numeric_limits<Acc>::infinity();
    Acc sink = 0;
    if (sinks) {
      sink = Acc(sinks->data<T>()[hq * sinks->strides()[0]]);
      mx = sink;
    }
    for (int64_t j = 0; j < kend; ++j) mx = std::max(mx, s[j]);
    const Acc total = (sinks ? std::exp(sink - mx) : Acc(0)) + exp_sum(s, mx, kend);
    sc.inv[r] = Acc(1) / total;
    sc.lrow[r] = mx + std::log(total);
  }

  void write_row(int64_t b, int64_t hk, int64_t i0, int64_t n_i, int64_t r, int64_t kend, const Scratch& sc) const {
    const int64_t hq = head(hk, r, n_i), i = i0 + r % n_i;
    const int64_t orow = (b * Hq + hq) * Lq + i;
    // An empty key range (L_k = 0) gives zeros, as softmax(∅) @ V does.
    const Acc f = kend > 0 ? sc.inv[r] : Acc(0);
    T* dst = o + orow * Dv;
    for (int64_t d = 0; d < Dv; ++d) dst[d] = T(sc.O[r * Dv + d] * f);
    if (lse) lse[orow] = static_cast<float>(sc.lrow[r]);
  }

  // Keys past the last visible one are masked for every row of a causal tile: they are skipped.
  int64_t key_end(int64_t i0, int64_t n_i) const { return p.causal ? std::min(Lk, i0 + n_i + q_off) : Lk; }

  // A tile on one thread, with the vector loops (decoding, short sequences).
  void tile_small(int64_t b, int64_t hk, int64_t i0, int64_t n_i, Scratch& sc) const {
    const int64_t rows = n_i * rep, kend = key_end(i0, n_i);
    if (!K.p && sc.Kb.empty()) sc.Kb.resize(static_cast<size_t>(std::max<int64_t>(Lk * D, 1)));
    if (!V.p && sc.Vb.empty()) sc.Vb.resize(static_cast<size_t>(std::max<int64_t>(Lk * Dv, 1)));
    const auto [kb, kld] = rows_of<T>(K, b, hk, kend, D, sc.Kb);
    const auto [vb, vld] = rows_of<T>(V, b, hk, kend, Dv, sc.Vb);
    for (int64_t r = 0; r < rows; ++r) {
      Acc* qr = sc.Q.data();
      gather_q(b, hk, i0, n_i, r, qr);
      Acc* s = sc.S.data() + r * kend;
      for (int64_t j = 0; j < kend; ++j) s[j] = Acc(p.scale) * fastk::dot(qr, kb + j * kld, D);
      softmax_row(b, hk, i0, n_i, r, s, kend, sc);
      Acc* orow = sc.O.data() + r * Dv;
      std::fill(orow, orow + Dv, Acc(0));
      for (int64_t j = 0; j < kend; ++j) fastk::axpy(s[j], vb + j * vld, orow, Dv);
      write_row(b, hk, i0, n_i, r, kend, sc);
    }
  }

  // One key block [j0, j0 + nb) of row r in the online softmax: masks, then the running maximum and sum
  // updated, the block's scores replaced by their exponentials and the row's output so far rescaled.
  void block_row(int64_t b, int64_t hk, int64_t i0, int64_t n_i, int64_t r, Acc* s, int64_t j0, int64_t nb,
                 Scratch& sc) const {
    const int64_t hq = head(hk, r, n_i), i = i0 + r % n_i;
    if (p.causal) {
      for (int64_t j = std::max<int64_t>(i + q_off + 1 - j0, 0); j < nb; ++j) s[j] = lowest;
    }
    if (mask) {
      const int64_t base = b * msb + hq * msh + i * msl + j0 * msk;
      if (bool_mask) {
        const bool* m = mask->data<bool>() + base;
        for (int64_t j = 0; j < nb; ++j) s[j] = m[j * msk] ? s[j] : lowest;
      } else {
        const T* m = mask->data<T>() + base;
        for (int64_t j = 0; j < nb; ++j) s[j] += Acc(m[j * msk]);
      }
    }
    Acc mx = sc.mrow[r];
    for (int64_t j = 0; j < nb; ++j) mx = std::max(mx, s[j]);
    const Acc alpha = sc.mrow[r] == -std::numeric_limits<Acc>::infinity() ? Acc(0) : std::exp(sc.mrow[r] - mx);
    const Acc sum = exp_sum(s, mx, nb);
    sc.lsum[r] = sc.lsum[r] * alpha + sum;
    sc.mrow[r] = mx;
    if (alpha != Acc(1)) {
      Acc* o = sc.O.data() + r * Dv;
      for (int64_t d = 0; d < Dv; ++d) o[d] *= alpha;
    }
  }

  // A large tile, flash-attention style: keys in blocks (all of them up to kOneBlock keys, else kKeyBlock
  // at a time), an online softmax per row (running maximum and sum; the output so far rescaled when the
  // maximum grows), so the scores held are one block per row, never rows × L_k for long sequences. BLAS
  // products (threaded by BLAS), row work in parallel between them.
  static constexpr int64_t kOneBlock = 2048, kKeyBlock = 1024;
  static int64_t key_block(int64_t Lk) { return Lk <= kOneBlock ? std::max<int64_t>(Lk, 1) : kKeyBlock; }
  void tile_blas(int64_t b, int64_t hk, int64_t i0, int64_t n_i, Scratch& sc) const {
    const int64_t rows = n_i * rep, kend = key_end(i0, n_i);
    cpu::parallel_for(static_cast<size_t>(rows), 16, [&](size_t r0, size_t r1) {
      for (size_t r = r0; r < r1; ++r) {
        gather_q(b, hk, i0, n_i, static_cast<int64_t>(r), sc.Q.data() + r * D);
        // Sinks start the row: maximum = sink, sum = exp(sink - sink) = 1.
        sc.mrow[r] = sinks ? Acc(sinks->data<T>()[head(hk, static_cast<int64_t>(r), n_i) * sinks->strides()[0]])
                           : -std::numeric_limits<Acc>::infinity();
        sc.lsum[r] = sinks ? Acc(1) : Acc(0);
        std::fill(sc.O.begin() + r * Dv, sc.O.begin() + (r + 1) * Dv, Acc(0));
      }
    });
    const int64_t kb = key_block(Lk);
    for (int64_t j0 = 0; j0 < kend; j0 += kb) {
      const int64_t nb = std::min(kb, kend - j0);
      if (D > 0) {
        gemm(false, true, static_cast<int>(rows), static_cast<int>(nb), static_cast<int>(D), Acc(p.scale),
             sc.Q.data(), static_cast<int>(D), K.at(b, hk) + j0 * K.ld, static_cast<int>(K.ld), Acc(0), sc.S.data(),
             static_cast<int>(nb));
      } else {
        std::fill(sc.S.begin(), sc.S.begin() + rows * nb, Acc(0));
      }
      cpu::parallel_for(static_cast<size_t>(rows), 1, [&](size_t r0, size_t r1) {
        for (size_t r = r0; r < r1; ++r) {
          block_row(b, hk, i0, n_i, static_cast<int64_t>(r), sc.S.data() + r * nb, j0, nb, sc);
        }
      });
      if (Dv > 0) {
        gemm(false, false, static_cast<int>(rows), static_cast<int>(Dv), static_cast<int>(nb), Acc(1), sc.S.data(),
             static_cast<int>(nb), V.at(b, hk) + j0 * V.ld, static_cast<int>(V.ld), Acc(1), sc.O.data(),
             static_cast<int>(Dv));
      }
    }
    cpu::parallel_for(static_cast<size_t>(rows), 16, [&](size_t r0, size_t r1) {
      for (size_t r = r0; r < r1; ++r) {
        sc.inv[r] = Acc(1) / sc.lsum[r];
        sc.lrow[r] = sc.mrow[r] + std::log(sc.lsum[r]);
        write_row(b, hk, i0, n_i, static_cast<int64_t>(r), kend, sc);
      }
    });
  }

  void run(const array& k_in, const array& v_in) {
    // Small tiles (about 64 rows of all heads of a group, fewer for long key ranges) when each is cheap:
    // many of them in parallel. Otherwise large tiles through BLAS, one after another.
    int64_t tq = std::max<int64_t>(1, std::clamp<int64_t>((int64_t(1) << 20) / std::max<int64_t>(Lk, 1), 1, 64) / rep);
    const double tile_flops = 2.0 * static_cast<double>(std::min(tq, Lq) * rep) * Lk * (D + Dv);
    const bool small = tile_flops <= kSmallTaskFlops || Lk == 0;
    prepare<T>(k_in, K, !small);
    prepare<T>(v_in, V, !small);
    if (!small) tq = std::max<int64_t>(1, 512 / rep);
    const int64_t ntiles = (Lq + tq - 1) / tq;
    const size_t tasks = static_cast<size_t>(B * Hk * ntiles);
    auto coords = [&](size_t task, int64_t& b, int64_t& hk, int64_t& i0, int64_t& n_i) {
      const int64_t tile = static_cast<int64_t>(task) % ntiles;
      hk = (static_cast<int64_t>(task) / ntiles) % Hk;
      b = static_cast<int64_t>(task) / (ntiles * Hk);
      i0 = tile * tq;
      n_i = std::min(tq, Lq - i0);
    };
    if (small) {
      cpu::parallel_for(tasks, 1, [&](size_t t0, size_t t1) {
        Scratch sc(tq * rep, D, Lk, Dv);
        for (size_t t = t0; t < t1; ++t) {
          int64_t b, hk, i0, n_i;
          coords(t, b, hk, i0, n_i);
          tile_small(b, hk, i0, n_i, sc);
        }
      });
      return;
    }
    Scratch sc(tq * rep, D, key_block(Lk), Dv);
    for (size_t t = 0; t < tasks; ++t) {
      int64_t b, hk, i0, n_i;
      coords(t, b, hk, i0, n_i);
      tile_blas(b, hk, i0, n_i, sc);
    }
  }
};

template <typename T>
void sdpa_kernel(const std::vector<array>& in, std::vector<array>& out, const SdpaParams& p) {
  const array &q = in[0], &k = in[1], &v = in[2];
  Sdpa<T> s(p);
  s.B = q.shape()[0], s.Hq = q.shape()[1], s.Lq = q.shape()[2], s.D = q.shape()[3];
  s.Hk = k.shape()[1], s.Lk = k.shape()[2], s.Dv = v.shape()[3];
  s.rep = s.Hq / s.Hk;
  s.q_off = std::max<int64_t>(s.Lk - s.Lq, 0);
  out[0].alloc();
  if (p.lse) out[1].alloc();
  s.o = out[0].data<T>();
  s.lse = p.lse ? out[1].data<float>() : nullptr;
  if (s.B * s.Hq * s.Lq == 0) return;
  s.q2 = unit_last_stride(q);
  if (p.has_mask) {
    s.mask = &in[3];
    s.msb = bstride(*s.mask, 0, 4), s.msh = bstride(*s.mask, 1, 4);
    s.msl = bstride(*s.mask, 2, 4), s.msk = bstride(*s.mask, 3, 4);
    s.bool_mask = s.mask->dtype() == bool_;
  }
  s.sinks = p.has_sinks ? &in.back() : nullptr;
  s.lowest = typename Sdpa<T>::Acc(lowest_of<T>());
  s.run(k, v);
}

void sdpa_cpu(const Node& node, const std::vector<array>& in, std::vector<array>& out) {
  const State& st = node.state;
  const bool has_sinks = st.b(3);
  SdpaParams p{st.f(1), st.b(2), static_cast<int>(in.size()) - 3 - (has_sinks ? 1 : 0) == 1, has_sinks, st.b(4)};
  detail::dispatch_float(out[0].dtype(), "scaled_dot_product_attention",
                      [&](auto t) { sdpa_kernel<decltype(t)>(in, out, p); });
}

}  // namespace

void add_sdpa_kernels(detail::KernelTable& table) { table.add("ScaledDotProductAttention", sdpa_cpu); }

}  // namespace kiln::fastk
