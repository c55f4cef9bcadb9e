// The bodies of the vectorized quantized matmul kernels (qmm_simd.h), written once over an "unpacker" U
// and included by each instruction-set file (qmm_avx512.cpp, qmm_avx2.cpp), which defines KQ_TARGET (the
// target attribute of its functions) and its unpackers first. An unpacker U provides:
//   V, W (lanes), B (bits), BLK (codes per block), kAffine, Ctx (per-group constants),
//   prep(scale, bias) -> Ctx, unpack(block bytes, Ctx, V out[BLK / W]), store_natural(V[], float*),
//   perm(uint8_t*) (the lane order), and the vector ops zero/load/store/set1/fmadd/add/hsum, nr_for(mr).
// An affine unpacker may also provide raw(block bytes, V out[]) (each code q minus the middle code
// c = 2^(B−1), as floats): then the transposed product for up to 2 rows of x works per group, as
// s·Σ (q − c)·x + (b + s·c)·Σ x (tile_t_gsum).
// The including file also defines with_unpacker(kind, bits, gs, f), which calls f(U{}) with the unpacker
// of (kind, bits, gs). Everything here is in the including file's namespace.

#define KQ_UNROLL _Pragma("GCC unroll 16")

// Prefetch `bytes` past p, computed as an integer (the address may lie outside p's array), into every
// cache level (prefetch) or into L2 and below (prefetch_l2).
inline void prefetch(const void* p, int64_t bytes) {
  __builtin_prefetch(reinterpret_cast<const void*>(reinterpret_cast<uintptr_t>(p) + static_cast<uintptr_t>(bytes)));
}
inline void prefetch_l2(const void* p, int64_t bytes) {
  __builtin_prefetch(reinterpret_cast<const void*>(reinterpret_cast<uintptr_t>(p) + static_cast<uintptr_t>(bytes)), 0,
                     2);
}
// A weight row's codes at `offset`: into L2 `ahead` tiles (of `tile_bytes`) down, into L1 one tile down
// (tile_t says why).
inline void prefetch_codes(const uint8_t* row, int64_t tile_bytes, int64_t ahead, int64_t offset) {
  prefetch_l2(row, ahead * tile_bytes + offset);
  prefetch(row, tile_bytes + offset);
}

// One register tile of the transposed product: MR rows of x against NR weight rows.
template <class U, int MR, int NR>
KQ_TARGET void tile_t(const Gemv& a, int64_t r0, int m0) {
  using V = typename U::V;
  constexpr int W = U::W, BLK = U::BLK, NV = BLK / W;
  const int bpg = a.gs / BLK;
  const int64_t ng = a.K / a.gs;
  const uint8_t* wr[NR];
  const float* sr[NR];
  const float* br[NR];
  KQ_UNROLL
  for (int r = 0; r < NR; ++r) {
    wr[r] = a.w + (r0 + r) * a.row_bytes;
    sr[r] = a.s + (r0 + r) * a.s_stride;
    br[r] = U::kAffine ? a.b + (r0 + r) * a.s_stride : nullptr;
  }
  const float* x = a.x + m0 * a.ldx;
  constexpr int64_t kAhead = 4;
  V acc[MR][NR][NV];
  KQ_UNROLL
  for (int m = 0; m < MR; ++m)
    KQ_UNROLL
    for (int r = 0; r < NR; ++r)
      KQ_UNROLL
      for (int v = 0; v < NV; ++v) acc[m][r][v] = U::zero();
  for (int64_t g = 0; g < ng; ++g) {
    typename U::Ctx c[NR];
    KQ_UNROLL
    for (int r = 0; r < NR; ++r) {
      // Software prefetch of the same place kAhead tiles down into L2, and one tile down into L1
      // (addresses past the matrix are harmless: a prefetch never faults). Without prefetches,
      // single-thread streaming from DRAM ran at about 70% of the rate with them. With only an L1
      // prefetch kAhead tiles down, a loads-only loop over 4-row tiles read 11.5 GB/s from DRAM, as with
      // none, and 25.7 with the L2 one (2-core AMD EPYC, 24 GB/s for a plain sequential read): the L1's
      // few outstanding misses bound it. The products of 8 4096² matrices (80 MB, 2 threads) went from
      // 12-14 to 18-19 GB/s with the two levels.
      prefetch_codes(wr[r], NR * a.row_bytes, kAhead, g * a.gs * U::B / 8);
      if ((g & 15) == 0) {  // one line of 16 scales (biases)
        prefetch(sr[r], (kAhead * NR * a.s_stride + g) * 4);
        if (U::kAffine) prefetch(br[r], (kAhead * NR * a.s_stride + g) * 4);
      }
      c[r] = U::prep(sr[r][g], U::kAffine ? br[r][g] : 0.0f);
    }
    for (int j = 0; j < bpg; ++j) {
      const int64_t e = g * a.gs + j * BLK;
      // x vectors loaded once for all NR rows when few enough to stay in registers; otherwise read from
      // L1 as FMA operands (preloading MR·NV vectors spills for MR = 4 with 64-code blocks).
      constexpr bool kPreload = NR > 1 && MR * NV <= 4;
      V xv[kPreload ? MR : 1][kPreload ? NV : 1];
      if constexpr (kPreload) {
        KQ_UNROLL
        for (int m = 0; m < MR; ++m)
          KQ_UNROLL
          for (int v = 0; v < NV; ++v) xv[m][v] = U::load(x + m * a.ldx + e + v * W);
      }
      KQ_UNROLL
      for (int r = 0; r < NR; ++r) {
        V w[NV];
        U::unpack(wr[r] + e * U::B / 8, c[r], w);
        KQ_UNROLL
        for (int v = 0; v < NV; ++v) {
          KQ_UNROLL
          for (int m = 0; m < MR; ++m) {
            if constexpr (kPreload) {
              acc[m][r][v] = U::fmadd(w[v], xv[m][v], acc[m][r][v]);
            } else {
              acc[m][r][v] = U::fmadd(w[v], U::load(x + m * a.ldx + e + v * W), acc[m][r][v]);
            }
          }
        }
      }
    }
  }
  KQ_UNROLL
  for (int m = 0; m < MR; ++m) {
    KQ_UNROLL
    for (int r = 0; r < NR; ++r) {
      V t = acc[m][r][0];
      KQ_UNROLL
      for (int v = 1; v < NV; ++v) t = U::add(t, acc[m][r][v]);
      a.y[(m0 + m) * a.ldy + r0 + r] = U::hsum(t);
    }
  }
}

template <class U>
concept HasRaw = requires(const uint8_t* p, typename U::V* w) { U::raw(p, w); };

// One block of tile_t_gsum: gacc[m][r] += (codes of weight row r − c) · x row m, at element e.
template <class U, int MR, int NR>
KQ_INLINE void gsum_block(const Gemv& a, const float* x, const uint8_t* const* wr, int64_t e,
                          typename U::V (&gacc)[MR][NR][U::BLK / U::W]) {
  using V = typename U::V;
  constexpr int W = U::W, NV = U::BLK / W;
  constexpr bool kPreload = NR > 1 && MR * NV <= 4;
  V xv[kPreload ? MR : 1][kPreload ? NV : 1];
  if constexpr (kPreload) {
    KQ_UNROLL
    for (int m = 0; m < MR; ++m)
      KQ_UNROLL
      for (int v = 0; v < NV; ++v) xv[m][v] = U::load(x + m * a.ldx + e + v * W);
  }
  KQ_UNROLL
  for (int r = 0; r < NR; ++r) {
    V w[NV];
    U::raw(wr[r] + e * U::B / 8, w);
    KQ_UNROLL
    for (int v = 0; v < NV; ++v) {
      KQ_UNROLL
      for (int m = 0; m < MR; ++m) {
        if constexpr (kPreload) {
          gacc[m][r][v] = U::fmadd(w[v], xv[m][v], gacc[m][r][v]);
        } else {
          gacc[m][r][v] = U::fmadd(w[v], U::load(x + m * a.ldx + e + v * W), gacc[m][r][v]);
        }
      }
    }
  }
}

// The transposed product per group, for unpackers with raw(): y = Σ_g s_g · (Σ_{k∈g} (q_k − c) x_k) +
// Σ_g (b_g + s_g·c) · (Σ_{k∈g} x_k), the sums of x given in a.xsum. Each code costs one FMA with x
// instead of a dequantizing FMA and then one with x; on AVX2 that is what bounds a decode step's speed.
// Centering the codes keeps both terms of the size of the result (with q itself, x of one sign made
// them cancel and the error grew sixfold); b + s·c is one rounding of a value of the weights' size.
// test_qmm_kernels' accuracy case checks the error against float64 stays that of dequantizing first.
template <class U, int MR, int NR>
KQ_TARGET void tile_t_gsum(const Gemv& a, int64_t r0, int m0) {
  using V = typename U::V;
  constexpr int W = U::W, BLK = U::BLK, NV = BLK / W;
  const int bpg = a.gs / BLK;
  const int64_t ng = a.K / a.gs;
  const uint8_t* wr[NR];
  const float* sr[NR];
  const float* br[NR];
  KQ_UNROLL
  for (int r = 0; r < NR; ++r) {
    wr[r] = a.w + (r0 + r) * a.row_bytes;
    sr[r] = a.s + (r0 + r) * a.s_stride;
    br[r] = a.b + (r0 + r) * a.s_stride;
  }
  const float* x = a.x + m0 * a.ldx;
  const float* xs = a.xsum + m0 * ng;
  constexpr int64_t kAhead = 4;
  V acc[MR][NR][NV];
  float bacc[MR][NR];
  KQ_UNROLL
  for (int m = 0; m < MR; ++m)
    KQ_UNROLL
    for (int r = 0; r < NR; ++r) {
      bacc[m][r] = 0.0f;
      KQ_UNROLL
      for (int v = 0; v < NV; ++v) acc[m][r][v] = U::zero();
    }
  for (int64_t g = 0; g < ng; ++g) {
    KQ_UNROLL
    for (int r = 0; r < NR; ++r) {
      prefetch_codes(wr[r], NR * a.row_bytes, kAhead, g * a.gs * U::B / 8);  // as tile_t
      if ((g & 15) == 0) {
        prefetch(sr[r], (kAhead * NR * a.s_stride + g) * 4);
        prefetch(br[r], (kAhead * NR * a.s_stride + g) * 4);
      }
    }
    V gacc[MR][NR][NV];
    KQ_UNROLL
    for (int m = 0; m < MR; ++m)
      KQ_UNROLL
      for (int r = 0; r < NR; ++r)
        KQ_UNROLL
        for (int v = 0; v < NV; ++v) gacc[m][r][v] = U::zero();
    for (int j = 0; j < bpg; ++j) gsum_block<U, MR, NR>(a, x, wr, g * a.gs + j * BLK, gacc);
    KQ_UNROLL
    for (int r = 0; r < NR; ++r) {
      const V sv = U::set1(sr[r][g]);
      const float b = br[r][g] + sr[r][g] * static_cast<float>(1 << (U::B - 1));
      KQ_UNROLL
      for (int m = 0; m < MR; ++m) {
        bacc[m][r] = std::fma(b, xs[m * ng + g], bacc[m][r]);
        KQ_UNROLL
        for (int v = 0; v < NV; ++v) acc[m][r][v] = U::fmadd(gacc[m][r][v], sv, acc[m][r][v]);
      }
    }
  }
  KQ_UNROLL
  for (int m = 0; m < MR; ++m) {
    KQ_UNROLL
    for (int r = 0; r < NR; ++r) {
      V t = acc[m][r][0];
      KQ_UNROLL
      for (int v = 1; v < NV; ++v) t = U::add(t, acc[m][r][v]);
      a.y[(m0 + m) * a.ldy + r0 + r] = U::hsum(t) + bacc[m][r];
    }
  }
}

template <class U, int MR>
KQ_TARGET void rows_t(const Gemv& a, int64_t r0, int64_t r1, int m0) {
  constexpr int NR = U::nr_for(MR);
  int64_t r = r0;
  if constexpr (HasRaw<U> && MR <= 2) {
    if (a.xsum != nullptr) {
      for (; r + NR <= r1; r += NR) tile_t_gsum<U, MR, NR>(a, r, m0);
      for (; r < r1; ++r) tile_t_gsum<U, MR, 1>(a, r, m0);
      return;
    }
  }
  for (; r + NR <= r1; r += NR) tile_t<U, MR, NR>(a, r, m0);
  for (; r < r1; ++r) tile_t<U, MR, 1>(a, r, m0);
}

template <class U>
KQ_TARGET void gemv_t_impl(const Gemv& a) {
  // Groups of 4 weight rows at a time so every x chunk reuses those rows from the cache.
  for (int64_t r0 = 0; r0 < a.n; r0 += 4) {
    const int64_t r1 = std::min<int64_t>(a.n, r0 + 4);
    for (int m0 = 0; m0 < a.M; m0 += 4) {
      switch (std::min(4, a.M - m0)) {
        case 1: rows_t<U, 1>(a, r0, r1, m0); break;
        case 2: rows_t<U, 2>(a, r0, r1, m0); break;
        case 3: rows_t<U, 3>(a, r0, r1, m0); break;
        default: rows_t<U, 4>(a, r0, r1, m0); break;
      }
    }
  }
}

// The plain product: accumulators for up to 8 rows of x and a 128-column tile live in L1; per row k of
// W the tile's codes are unpacked once and used for those rows of x.
template <class U>
KQ_TARGET void gemv_n_rows(const Gemv& a) {
  using V = typename U::V;
  constexpr int W = U::W, BLK = U::BLK, NV = BLK / W, TW = 128;
  constexpr int GB = BLK * U::B / 8;
  alignas(64) float acc[8][TW];
  uint8_t perm[64];
  U::perm(perm);
  for (int64_t c0 = 0; c0 < a.n; c0 += TW) {
    const int cw = static_cast<int>(std::min<int64_t>(TW, a.n - c0));
    const int nb = cw / BLK;
    for (int m = 0; m < a.M; ++m) std::fill(acc[m], acc[m] + cw, 0.0f);
    for (int64_t k = 0; k < a.K; ++k) {
      const uint8_t* p = a.w + k * a.row_bytes + c0 * U::B / 8;
      const float* sk = a.s + k * a.s_stride;
      const float* bk = U::kAffine ? a.b + k * a.s_stride : nullptr;
      V xk[8];
      for (int m = 0; m < a.M; ++m) xk[m] = U::set1(a.x[m * a.ldx + k]);
      for (int blk = 0; blk < nb; ++blk) {
        const int64_t g = (c0 + blk * BLK) / a.gs;
        const typename U::Ctx c = U::prep(sk[g], U::kAffine ? bk[g] : 0.0f);
        V w[NV];
        U::unpack(p + blk * GB, c, w);
        for (int m = 0; m < a.M; ++m) {
          float* am = acc[m] + blk * BLK;
          for (int v = 0; v < NV; ++v) U::store(am + v * W, U::fmadd(w[v], xk[m], U::load(am + v * W)));
        }
      }
    }
    for (int m = 0; m < a.M; ++m) {
      float* ym = a.y + m * a.ldy + c0;
      for (int blk = 0; blk < nb; ++blk) {
        for (int i = 0; i < BLK; ++i) ym[blk * BLK + perm[i]] = acc[m][blk * BLK + i];
      }
    }
  }
}

template <class U>
KQ_TARGET void gemv_n_impl(const Gemv& a) {
  for (int m0 = 0; m0 < a.M; m0 += 8) {
    Gemv c = a;
    c.M = std::min(8, a.M - m0);
    c.x = a.x + m0 * a.ldx;
    c.y = a.y + m0 * a.ldy;
    gemv_n_rows<U>(c);
  }
}

template <class U>
KQ_TARGET void dequant_impl(const uint8_t* p, const float* s, const float* b, int64_t ngroups, int gs, float* dst) {
  using V = typename U::V;
  constexpr int BLK = U::BLK, NV = BLK / U::W, GB = BLK * U::B / 8;
  const int bpg = gs / BLK;
  for (int64_t g = 0; g < ngroups; ++g) {
    const typename U::Ctx c = U::prep(s[g], U::kAffine ? b[g] : 0.0f);
    for (int j = 0; j < bpg; ++j, p += GB, dst += BLK) {
      V w[NV];
      U::unpack(p, c, w);
      U::store_natural(w, dst);
    }
  }
}

inline int layout_impl(Kind kind, int bits, int gs, uint8_t* perm) {
  int blk = 0;
  with_unpacker(kind, bits, gs, [&](auto u) {
    using U = decltype(u);
    U::perm(perm);
    blk = U::BLK;
  });
  return blk;
}

inline void gemv_t_entry(const Gemv& a) {
  with_unpacker(a.kind, a.bits, a.gs, [&](auto u) { gemv_t_impl<decltype(u)>(a); });
}

inline void gemv_n_entry(const Gemv& a) {
  with_unpacker(a.kind, a.bits, a.gs, [&](auto u) { gemv_n_impl<decltype(u)>(a); });
}

inline void dequant_entry(const uint8_t* p, const float* s, const float* b, int64_t ngroups, int gs, int bits,
                          Kind kind, float* dst) {
  with_unpacker(kind, bits, gs, [&](auto u) { dequant_impl<decltype(u)>(p, s, b, ngroups, gs, dst); });
}

