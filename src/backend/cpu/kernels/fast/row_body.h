// The body of the row loops (row_kernels.h), written once against a vector type V that the including
// file defines (row_avx512.cpp, row_avx2.cpp, row_scalar.cpp) together with the namespace it is
// compiled in. V has W float lanes and provides: set1, load/store (float), loadh/storeh (float16 bits),
// loadb/storeb (bfloat16 bits), roundh/roundb (round each lane to the 16-bit type and back), add, sub,
// mul, fma (a·b + c), max (NaN in the first operand ignored), hsum, hmax, exp (MLX's exp polynomial),
// exp_neg (the same bits for arguments <= 0 that are not NaN, in fewer steps), nan_acc/any_nan
// (remember whether any lane was NaN), stream/fence/kStreamAlign (non-temporal stores; 0: none).
//
// Include only after every other header of the translation unit (the vector files set a target pragma
// just before including this one), and inside an unnamed namespace.

template <typename T>
inline typename V::R ld(const T* p) {
  if constexpr (std::is_same_v<T, float>) return V::load(p);
  else if constexpr (std::is_same_v<T, float16_t>) return V::loadh(reinterpret_cast<const uint16_t*>(p));
  else return V::loadb(reinterpret_cast<const uint16_t*>(p));
}
template <typename T>
inline void st(T* p, typename V::R v) {
  if constexpr (std::is_same_v<T, float>) V::store(p, v);
  else if constexpr (std::is_same_v<T, float16_t>) V::storeh(reinterpret_cast<uint16_t*>(p), v);
  else V::storeb(reinterpret_cast<uint16_t*>(p), v);
}
// Each lane rounded to T (and back to float).
template <typename T>
inline typename V::R rnd(typename V::R v) {
  if constexpr (std::is_same_v<T, float>) return v;
  else if constexpr (std::is_same_v<T, float16_t>) return V::roundh(v);
  else return V::roundb(v);
}
template <typename T>
inline float rnd1(float v) {
  if constexpr (std::is_same_v<T, float>) return v;
  else return static_cast<float>(T(v));
}

// The last n < W values, padded with `fill`; and the store of the first n lanes. The scalar
// conversions round like the vector ones (to nearest even).
template <typename T>
inline typename V::R ld_tail(const T* p, int64_t n, float fill) {
  alignas(64) float b[V::W];
  for (int k = 0; k < V::W; ++k) b[k] = k < n ? static_cast<float>(p[k]) : fill;
  return V::load(b);
}
template <typename T>
inline void st_tail(T* p, typename V::R v, int64_t n) {
  alignas(64) float b[V::W];
  V::store(b, v);
  for (int64_t k = 0; k < n; ++k) p[k] = T(b[k]);
}

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// Maximum of x[0..n); NaN lanes are ignored (the callers' sums propagate NaN).
template <typename T>
float row_max(const T* x, int64_t n) {
  using R = typename V::R;
  constexpr int W = V::W;
  R a0 = V::set1(kNegInf), a1 = a0, a2 = a0, a3 = a0;
  int64_t i = 0;
  for (; i + 4 * W <= n; i += 4 * W) {
    a0 = V::max(ld(x + i), a0);
    a1 = V::max(ld(x + i + W), a1);
    a2 = V::max(ld(x + i + 2 * W), a2);
    a3 = V::max(ld(x + i + 3 * W), a3);
  }
  for (; i + W <= n; i += W) a0 = V::max(ld(x + i), a0);
  if (i < n) a1 = V::max(ld_tail(x + i, n - i, kNegInf), a1);
  return V::hmax(V::max(V::max(a0, a1), V::max(a2, a3)));
}

// Maximum of x[0..n), NaN if any value is NaN.
template <typename T>
float row_max_nan(const T* x, int64_t n) {
  using R = typename V::R;
  constexpr int W = V::W;
  R a0 = V::set1(kNegInf), a1 = a0, bad = V::set1(0.0f);
  int64_t i = 0;
  for (; i + 2 * W <= n; i += 2 * W) {
    const R x0 = ld(x + i), x1 = ld(x + i + W);
    a0 = V::max(x0, a0);
    a1 = V::max(x1, a1);
    bad = V::nan_acc(V::nan_acc(bad, x0), x1);
  }
  for (; i + W <= n; i += W) {
    const R x0 = ld(x + i);
    a0 = V::max(x0, a0);
    bad = V::nan_acc(bad, x0);
  }
  if (i < n) {
    const R x0 = ld_tail(x + i, n - i, kNegInf);
    a1 = V::max(x0, a1);
    bad = V::nan_acc(bad, x0);
  }
  if (V::any_nan(bad)) return std::numeric_limits<float>::quiet_NaN();
  return V::hmax(V::max(a0, a1));
}

// Prefetches the cache lines of `next` (the row this thread reads after the current one, or null) that
// line up with elements [i, i + K) of the current row: the loops that run from cache (exponentials,
// the output pass) call it, so the next row's first pass finds its data in cache instead of waiting
// for memory between rows.
template <int K, typename T>
inline void prefetch_next(const T* next, int64_t i) {
  if (next == nullptr) return;
  constexpr int bytes = K * static_cast<int>(sizeof(T));
  const char* p = reinterpret_cast<const char*>(next + i);
  for (int b = 0; b < bytes; b += 64) __builtin_prefetch(p + b, 0, 3);
}

// exp, or exp_neg where every argument is known to be <= 0 and not NaN (the same bits).
template <bool Neg>
inline typename V::R vexp(typename V::R v) {
  if constexpr (Neg) return V::exp_neg(v);
  else return V::exp(v);
}

// y = exp(x - shift) (skipped when y is null); returns the sum of the exponentials.
template <bool Neg, typename T>
float row_exp_sum(const T* x, float shift, float* y, int64_t n, const T* next = nullptr) {
  using R = typename V::R;
  constexpr int W = V::W;
  const R sh = V::set1(shift);
  R s0 = V::set1(0.0f), s1 = s0;
  int64_t i = 0;
  for (; i + 2 * W <= n; i += 2 * W) {
    prefetch_next<2 * W>(next, i);
    const R e0 = vexp<Neg>(V::sub(ld(x + i), sh));
    const R e1 = vexp<Neg>(V::sub(ld(x + i + W), sh));
    if (y) {
      V::store(y + i, e0);
      V::store(y + i + W, e1);
    }
    s0 = V::add(s0, e0);
    s1 = V::add(s1, e1);
  }
  for (; i + W <= n; i += W) {
    prefetch_next<W>(next, i);
    const R e0 = vexp<Neg>(V::sub(ld(x + i), sh));
    if (y) V::store(y + i, e0);
    s0 = V::add(s0, e0);
  }
  float s = V::hsum(V::add(s0, s1));
  if (i < n) {
    alignas(64) float b[W];
    V::store(b, V::exp(V::sub(ld_tail(x + i, n - i, 0.0f), sh)));
    for (int64_t k = 0; k < n - i; ++k) {
      if (y) y[i + k] = b[k];
      s += b[k];
    }
  }
  return s;
}

// Writes y[0..n): full(i) gives the vector at i, tail(i) writes the last n - i < W values. With
// `stream`, float rows aligned for it are written with non-temporal stores (large outputs: no read of
// the destination, no eviction of the inputs). `next`: prefetch_next's row (of the input type X).
template <typename T, typename X, typename Full, typename Tail>
inline void emit(T* y, int64_t n, bool stream, const X* next, Full&& full, Tail&& tail) {
  constexpr int W = V::W;
  int64_t i = 0;
  if constexpr (std::is_same_v<T, float> && V::kStreamAlign > 0) {
    if (stream && reinterpret_cast<uintptr_t>(y) % (V::kStreamAlign > 0 ? V::kStreamAlign : 1) == 0) {
      for (; i + W <= n; i += W) {
        prefetch_next<W>(next, i);
        V::stream(y + i, full(i));
      }
      if (i < n) tail(i);
      V::fence();
      return;
    }
  }
  for (; i + W <= n; i += W) {
    prefetch_next<W>(next, i);
    st(y + i, full(i));
  }
  if (i < n) tail(i);
}

// y = T(src · a) for float src.
template <typename T>
void row_store_scaled(const float* src, float a, T* y, int64_t n, bool stream = false) {
  const typename V::R av = V::set1(a);
  emit(
      y, n, stream, static_cast<const T*>(nullptr), [&](int64_t i) { return V::mul(V::load(src + i), av); },
      [&](int64_t i) { st_tail(y + i, V::mul(ld_tail(src + i, n - i, 0.0f), av), n - i); });
}

// Softmax: the maximum (one pass, NaN noted), the exponentials and their sum (kept in y, or in
// `scratch` when the output is streamed), then the scaled output.
template <typename T>
void softmax_row(const T* x, T* y, int64_t n, bool precise, float* scratch, bool stream, const T* next) {
  if (n <= 0) return;
  const float mx = row_max_nan(x, n);
  // x - max <= 0 everywhere unless the row has a NaN or an infinite maximum.
  const bool neg = std::isfinite(mx);
  auto exp_sum = [&](float* dst) {
    return neg ? row_exp_sum<true>(x, mx, dst, n, next) : row_exp_sum<false>(x, mx, dst, n, next);
  };
  if constexpr (std::is_same_v<T, float>) {
    (void)precise;
    if (stream && scratch) {
      const float s = exp_sum(scratch);
      row_store_scaled(scratch, 1.0f / s, y, n, true);
    } else {
      const float s = exp_sum(y);
      row_store_scaled(y, 1.0f / s, y, n);
    }
  } else if (precise) {
    const float s = exp_sum(scratch);
    row_store_scaled(scratch, 1.0f / s, y, n);
  } else {
    // MLX's 16-bit softmax: x - max, each exponential and the running (sequential) sum rounded to T.
    constexpr int W = V::W;
    const typename V::R m = V::set1(mx);
    int64_t i = 0;
    for (; i + W <= n; i += W) {
      prefetch_next<W>(next, i);
      V::store(scratch + i, rnd<T>(V::exp(rnd<T>(V::sub(ld(x + i), m)))));
    }
    if (i < n) {
      alignas(64) float b[W];
      V::store(b, rnd<T>(V::exp(rnd<T>(V::sub(ld_tail(x + i, n - i, 0.0f), m)))));
      for (int64_t k = 0; k < n - i; ++k) scratch[i + k] = b[k];
    }
    float sum = 0.0f;
    for (int64_t k = 0; k < n; ++k) sum = rnd1<T>(sum + scratch[k]);
    row_store_scaled(scratch, rnd1<T>(1.0f / sum), y, n);
  }
}

template <typename T>
float logsumexp_row(const T* x, int64_t n, const T* next) {
  const float mx = row_max_nan(x, n);
  if (std::isinf(mx) || std::isnan(mx)) return mx;
  return std::log(row_exp_sum<true>(x, mx, static_cast<float*>(nullptr), n, next)) + mx;
}

template <typename T>
float sum_sq(const T* x, int64_t n, float center) {
  using R = typename V::R;
  constexpr int W = V::W;
  const R c = V::set1(center);
  R a0 = V::set1(0.0f), a1 = a0, a2 = a0, a3 = a0;
  int64_t i = 0;
  for (; i + 4 * W <= n; i += 4 * W) {
    const R d0 = V::sub(ld(x + i), c), d1 = V::sub(ld(x + i + W), c);
    const R d2 = V::sub(ld(x + i + 2 * W), c), d3 = V::sub(ld(x + i + 3 * W), c);
    a0 = V::fma(d0, d0, a0);
    a1 = V::fma(d1, d1, a1);
    a2 = V::fma(d2, d2, a2);
    a3 = V::fma(d3, d3, a3);
  }
  for (; i + W <= n; i += W) {
    const R d0 = V::sub(ld(x + i), c);
    a0 = V::fma(d0, d0, a0);
  }
  if (i < n) {
    const R d0 = V::sub(ld_tail(x + i, n - i, center), c);
    a1 = V::fma(d0, d0, a1);
  }
  return V::hsum(V::add(V::add(a0, a1), V::add(a2, a3)));
}

template <typename T>
float sum_row(const T* x, int64_t n) {
  using R = typename V::R;
  constexpr int W = V::W;
  R a0 = V::set1(0.0f), a1 = a0, a2 = a0, a3 = a0;
  int64_t i = 0;
  for (; i + 4 * W <= n; i += 4 * W) {
    a0 = V::add(a0, ld(x + i));
    a1 = V::add(a1, ld(x + i + W));
    a2 = V::add(a2, ld(x + i + 2 * W));
    a3 = V::add(a3, ld(x + i + 3 * W));
  }
  for (; i + W <= n; i += W) a0 = V::add(a0, ld(x + i));
  if (i < n) a1 = V::add(a1, ld_tail(x + i, n - i, 0.0f));
  return V::hsum(V::add(V::add(a0, a1), V::add(a2, a3)));
}

template <typename T>
void rms_row(const T* x, const float* w, T* y, int64_t n, float eps, bool stream, const T* next) {
  using R = typename V::R;
  if (n <= 0) return;
  const float inv = 1.0f / std::sqrt(sum_sq(x, n, 0.0f) / static_cast<float>(n) + eps);
  const R iv = V::set1(inv);
  emit(
      y, n, stream, next, [&](int64_t i) { return V::mul(V::load(w + i), rnd<T>(V::mul(ld(x + i), iv))); },
      [&](int64_t i) {
        const int64_t k = n - i;
        st_tail(y + i, V::mul(ld_tail(w + i, k, 0.0f), rnd<T>(V::mul(ld_tail(x + i, k, 0.0f), iv))), k);
      });
}

template <typename T>
void layer_row(const T* x, const float* w, const float* b, T* y, int64_t n, float eps, bool stream,
               const T* next) {
  using R = typename V::R;
  if (n <= 0) return;
  const float mean = sum_row(x, n) / static_cast<float>(n);
  const float inv = 1.0f / std::sqrt(sum_sq(x, n, mean) / static_cast<float>(n) + eps);
  const R iv = V::set1(inv), mv = V::set1(mean);
  auto out = [&](R xv, R wv, R bv) { return V::add(rnd<T>(V::mul(rnd<T>(V::mul(V::sub(xv, mv), iv)), wv)), bv); };
  emit(
      y, n, stream, next, [&](int64_t i) { return out(ld(x + i), V::load(w + i), V::load(b + i)); },
      [&](int64_t i) {
        const int64_t k = n - i;
        st_tail(y + i, out(ld_tail(x + i, k, 0.0f), ld_tail(w + i, k, 0.0f), ld_tail(b + i, k, 0.0f)), k);
      });
}

// In x's type, as MLX's CPU computes fast.rope (its decomposition, run node by node): the cosines and
// sines rounded to T, each product rounded to T, then the difference or sum (rounded on store). For
// float32 those roundings are the identity (rnd), so this is the float arithmetic it always was.
template <typename T>
void rope_row(const T* x, const float* c, const float* s, T* y, int64_t half, bool traditional, bool forward) {
  using R = typename V::R;
  constexpr int W = V::W;
  auto rot = [forward](R x1, R x2, R cv, R sv, R& y1, R& y2) {
    cv = rnd<T>(cv);
    sv = rnd<T>(sv);
    if (forward) {
      y1 = V::sub(rnd<T>(V::mul(x1, cv)), rnd<T>(V::mul(x2, sv)));
      y2 = V::add(rnd<T>(V::mul(x1, sv)), rnd<T>(V::mul(x2, cv)));
    } else {
      y1 = V::add(rnd<T>(V::mul(x2, sv)), rnd<T>(V::mul(x1, cv)));
      y2 = V::sub(rnd<T>(V::mul(x2, cv)), rnd<T>(V::mul(x1, sv)));
    }
  };
  int64_t i = 0;
  if (!traditional) {
    for (; i + W <= half; i += W) {
      R y1, y2;
      rot(ld(x + i), ld(x + half + i), V::load(c + i), V::load(s + i), y1, y2);
      st(y + i, y1);
      st(y + half + i, y2);
    }
  }
  // The traditional (interleaved) pairs and the tail, one pair at a time with the same arithmetic.
  for (; i < half; ++i) {
    const int64_t j1 = traditional ? 2 * i : i, j2 = traditional ? j1 + 1 : i + half;
    const float x1 = static_cast<float>(x[j1]), x2 = static_cast<float>(x[j2]);
    const float ci = rnd1<T>(c[i]), si = rnd1<T>(s[i]);
    if (forward) {
      y[j1] = T(rnd1<T>(x1 * ci) - rnd1<T>(x2 * si));
      y[j2] = T(rnd1<T>(x1 * si) + rnd1<T>(x2 * ci));
    } else {
      y[j1] = T(rnd1<T>(x2 * si) + rnd1<T>(x1 * ci));
      y[j2] = T(rnd1<T>(x2 * ci) - rnd1<T>(x1 * si));
    }
  }
}

float max_f32(const float* x, int64_t n) { return row_max(x, n); }
float exp_sum_f32(const float* x, float shift, float* y, int64_t n) { return row_exp_sum<false>(x, shift, y, n); }
float exp_sum_nonpos_f32(const float* x, float shift, float* y, int64_t n) {
  return row_exp_sum<true>(x, shift, y, n);
}
void scale_f32(float* y, float a, int64_t n) { row_store_scaled(y, a, y, n); }
void axpy_f32(float a, const float* x, float* y, int64_t n) {
  constexpr int W = V::W;
  const typename V::R av = V::set1(a);
  int64_t i = 0;
  for (; i + W <= n; i += W) V::store(y + i, V::fma(av, V::load(x + i), V::load(y + i)));
  for (; i < n; ++i) y[i] += a * x[i];
}

template <typename T>
RowFnsOf<T> fns_of() {
  return {softmax_row<T>, logsumexp_row<T>, rms_row<T>, layer_row<T>, rope_row<T>};
}

RowFns make_fns(int level) {
  return {fns_of<float>(), fns_of<float16_t>(), fns_of<bfloat16_t>(), max_f32, exp_sum_f32, exp_sum_nonpos_f32,
          scale_f32, axpy_f32, level};
}
