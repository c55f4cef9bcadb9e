// The fused ScaledDotProductAttention primitive. Work is split into tiles of query rows; a tile holds
// the rows of every query head that shares one key/value head (grouped-query attention), so both
// matrix products of a tile are single BLAS calls: S = scale · Q Kᵀ, then O = softmax(S) V.
#include <cfloat>
#include <cmath>
#include <cstring>

#include "backend/cpu/loops.h"
#include "primitives/common.h"
#include "primitives/fast_internal.h"

namespace kiln::fastk {

namespace {

// State: placeholder, scale, do_causal, has_sinks, output_logsumexp.
std::vector<ArraySpec> sdpa_infer(const State& st, const std::vector<ArraySpec>& in) {
  const char* api = "scaled_dot_product_attention";
  check_arity(api, in, 3, 5);
  const bool has_sinks = st.b(3);
  const int n_mask = static_cast<int>(in.size()) - 3 - (has_sinks ? 1 : 0);
  if (n_mask != 0 && n_mask != 1) {
    throw std::invalid_argument("[scaled_dot_product_attention] Expected 3 to 5 inputs (q, k, v, [mask], [sinks]) "
                                "consistent with has_sinks but got " +
                                std::to_string(in.size()) + ".");
  }
  const ArraySpec &q = in[0], &k = in[1], &v = in[2];
  for (const ArraySpec* t : {&q, &k, &v}) {
    if (t->shape.size() != 4) {
      throw std::invalid_argument("[scaled_dot_product_attention] input with shape " + detail::shape_str(t->shape) +
                                  " expected to be rank 4");
    }
  }
  if (k.shape[0] != q.shape[0] || v.shape[0] != q.shape[0]) {
    throw std::invalid_argument(
        "[scaled_dot_product_attention] mismatching batch dimension for input with shape " +
        detail::shape_str(k.shape[0] != q.shape[0] ? k.shape : v.shape) + ".");
  }
  if (q.shape[3] != k.shape[3]) {
    throw std::invalid_argument(
        "[scaled_dot_product_attention] query, keys expected to have matching last dimension; found query shape " +
        detail::shape_str(q.shape) + " for keys shape " + detail::shape_str(k.shape) + ".");
  }
  if (k.shape[1] != v.shape[1] || k.shape[2] != v.shape[2]) {
    throw std::invalid_argument("[scaled_dot_product_attention] keys, values expected to have matching n_kv_heads "
                                "and sequence length; found keys with shape " +
                                detail::shape_str(k.shape) + " and values with shape " + detail::shape_str(v.shape) +
                                ".");
  }
  if (k.shape[1] <= 0 || q.shape[1] % k.shape[1] != 0) {
    throw std::invalid_argument(
        "[scaled_dot_product_attention] n_heads must be a multiple of n_kv_heads, found n_heads " +
        std::to_string(q.shape[1]) + " for n_kv_heads " + std::to_string(k.shape[1]) + ".");
  }
  if (!is_floating_point(q.dtype) || k.dtype != q.dtype || v.dtype != q.dtype) {
    throw std::invalid_argument("[scaled_dot_product_attention] q, k and v must share one floating dtype but got " +
                                dtype_name(q.dtype) + ", " + dtype_name(k.dtype) + " and " + dtype_name(v.dtype) +
                                ".");
  }
  const Shape scores{q.shape[0], q.shape[1], q.shape[2], k.shape[2]};
  if (n_mask == 1) {
    const ArraySpec& m = in[3];
    if (m.shape.size() > 4 || detail::broadcast_shapes(m.shape, scores) != scores) {
      throw std::invalid_argument("[scaled_dot_product_attention] the mask with shape " +
                                  detail::shape_str(m.shape) + " does not broadcast to the scores' shape " +
                                  detail::shape_str(scores) + ".");
    }
    if (m.dtype != bool_ && m.dtype != q.dtype) {
      throw std::invalid_argument("[scaled_dot_product_attention] Mask type must be bool or the output type " +
                                  dtype_name(q.dtype) + " but is " + dtype_name(m.dtype) + ".");
    }
  }
  if (has_sinks) {
    const ArraySpec& s = in.back();
    if (s.shape.size() != 1 || s.shape[0] != q.shape[1] || s.dtype != q.dtype) {
      throw std::invalid_argument("[scaled_dot_product_attention] Received invalid shape for sinks " +
                                  detail::shape_str(s.shape) + ".");
    }
  }
  std::vector<ArraySpec> out{{{q.shape[0], q.shape[1], q.shape[2], v.shape[3]}, q.dtype}};
  if (st.b(4)) out.push_back({{q.shape[0], q.shape[1], q.shape[2], 1}, float32});
  return out;
}

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
  const Acc* p = nullptr;
  int64_t sb = 0, sh = 0, ld = 0;
  std::vector<Acc> own;
  const Acc* at(int64_t b, int64_t h) const { return p + b * sb + h * sh; }
};

// Use `a` in place when it already is Acc rows BLAS can read; otherwise convert to a contiguous copy.
template <typename T, typename Acc>
void prepare(const array& a0, Operand<Acc>& op) {
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
  const array a = unit_last_stride(a0);
  op.own.resize(a.size());
  const int64_t rows = D == 0 ? 0 : static_cast<int64_t>(a.size()) / D;
  cpu::parallel_for(static_cast<size_t>(rows), std::max<size_t>(1, cpu::kGrainCheap / std::max<int64_t>(D, 1)),
                    [&](size_t b, size_t e) {
                      for (size_t r = b; r < e; ++r) {
                        const T* src = a.data<T>() + row_offset(a, static_cast<int64_t>(r));
                        Acc* dst = op.own.data() + static_cast<int64_t>(r) * D;
                        for (int64_t i = 0; i < D; ++i) dst[i] = Acc(src[i]);
                      }
                    });
  op.p = op.own.data();
  op.ld = std::max<int64_t>(D, 1);
  op.sh = static_cast<int64_t>(sh[2]) * D;
  op.sb = static_cast<int64_t>(sh[1]) * op.sh;
}

struct SdpaParams {
  float scale;
  bool causal, has_mask, has_sinks, lse;
};

template <typename T>
void sdpa_kernel(const std::vector<array>& in, std::vector<array>& out, const SdpaParams& p) {
  using Acc = cpu::acc_t<T>;
  const array &q = in[0], &k = in[1], &v = in[2];
  const int64_t B = q.shape()[0], Hq = q.shape()[1], Lq = q.shape()[2], D = q.shape()[3];
  const int64_t Hk = k.shape()[1], Lk = k.shape()[2], Dv = v.shape()[3];
  const int64_t rep = Hq / Hk;
  const int64_t q_off = std::max<int64_t>(Lk - Lq, 0);
  out[0].alloc();
  if (p.lse) out[1].alloc();
  T* o = out[0].data<T>();
  float* lse = p.lse ? out[1].data<float>() : nullptr;
  if (B * Hq * Lq == 0) return;

  const array q2 = unit_last_stride(q);
  Operand<Acc> K, V;
  prepare<T, Acc>(k, K);
  prepare<T, Acc>(v, V);
  const array* mask = p.has_mask ? &in[3] : nullptr;
  const int64_t msb = mask ? bstride(*mask, 0, 4) : 0, msh = mask ? bstride(*mask, 1, 4) : 0;
  const int64_t msl = mask ? bstride(*mask, 2, 4) : 0, msk = mask ? bstride(*mask, 3, 4) : 0;
  const bool bool_mask = mask && mask->dtype() == bool_;
  const array* sinks = p.has_sinks ? &in.back() : nullptr;
  const Acc lowest = Acc(lowest_of<T>());

  // Query rows per tile: about 64 rows of all heads of one group, fewer when L_k is long.
  const int64_t budget = std::clamp<int64_t>((int64_t(1) << 20) / std::max<int64_t>(Lk, 1), 1, 64);
  const int64_t tq = std::max<int64_t>(1, budget / rep);
  const int64_t ntiles = (Lq + tq - 1) / tq;
  const size_t tasks = static_cast<size_t>(B * Hk * ntiles);

  cpu::parallel_for(tasks, 1, [&](size_t t0, size_t t1) {
    const int64_t rows_max = tq * rep;
    std::vector<Acc> Q(static_cast<size_t>(rows_max * std::max<int64_t>(D, 1)));
    std::vector<Acc> S(static_cast<size_t>(rows_max * std::max<int64_t>(Lk, 1)));
    std::vector<Acc> O(static_cast<size_t>(rows_max * std::max<int64_t>(Dv, 1)));
    std::vector<Acc> inv(static_cast<size_t>(rows_max)), lrow(static_cast<size_t>(rows_max));
    for (size_t task = t0; task < t1; ++task) {
      const int64_t tile = static_cast<int64_t>(task) % ntiles;
      const int64_t hk = (static_cast<int64_t>(task) / ntiles) % Hk;
      const int64_t b = static_cast<int64_t>(task) / (ntiles * Hk);
      const int64_t i0 = tile * tq, n_i = std::min(tq, Lq - i0);
      const int64_t rows = n_i * rep;
      // Keys past the last visible one are masked for every row of the tile: skip them.
      const int64_t kend = p.causal ? std::min(Lk, i0 + n_i + q_off) : Lk;
      // Gather the tile's query rows (head-major) as Acc.
      for (int64_t r = 0; r < rows; ++r) {
        const int64_t hq = hk * rep + r / n_i, i = i0 + r % n_i;
        const T* src = q2.data<T>() + b * q2.strides()[0] + hq * q2.strides()[1] + i * q2.strides()[2];
        for (int64_t d = 0; d < D; ++d) Q[r * D + d] = Acc(src[d]);
      }
      if (kend > 0 && D > 0) {
        gemm(false, true, static_cast<int>(rows), static_cast<int>(kend), static_cast<int>(D), Acc(p.scale),
             Q.data(), static_cast<int>(D), K.at(b, hk), static_cast<int>(K.ld), Acc(0), S.data(),
             static_cast<int>(kend));
      } else {
        std::fill(S.begin(), S.begin() + rows * kend, Acc(0));
      }
      for (int64_t r = 0; r < rows; ++r) {
        const int64_t hq = hk * rep + r / n_i, i = i0 + r % n_i;
        Acc* s = S.data() + r * kend;
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
        Acc sum = sinks ? std::exp(sink - mx) : Acc(0);
        for (int64_t j = 0; j < kend; ++j) {
          s[j] = std::exp(s[j] - mx);
          sum += s[j];
        }
        inv[r] = Acc(1) / sum;
        lrow[r] = mx + std::log(sum);
      }
      if (Dv > 0) {
        if (kend > 0) {
          gemm(false, false, static_cast<int>(rows), static_cast<int>(Dv), static_cast<int>(kend), Acc(1), S.data(),
               static_cast<int>(kend), V.at(b, hk), static_cast<int>(V.ld), Acc(0), O.data(), static_cast<int>(Dv));
        } else {
          std::fill(O.begin(), O.begin() + rows * Dv, Acc(0));
        }
      }
      for (int64_t r = 0; r < rows; ++r) {
        const int64_t hq = hk * rep + r / n_i, i = i0 + r % n_i;
        const int64_t orow = (b * Hq + hq) * Lq + i;
        // An empty key range (L_k = 0) gives zeros, as softmax(∅) @ V does.
        const Acc scale = kend > 0 ? inv[r] : Acc(0);
        T* dst = o + orow * Dv;
        for (int64_t d = 0; d < Dv; ++d) dst[d] = T(O[r * Dv + d] * scale);
        if (lse) lse[orow] = static_cast<float>(lrow[r]);
      }
    }
  });
}

void sdpa_cpu(const Node& node, const std::vector<array>& in, std::vector<array>& out) {
  const State& st = node.state;
  const bool has_sinks = st.b(3);
  SdpaParams p{st.f(1), st.b(2), static_cast<int>(in.size()) - 3 - (has_sinks ? 1 : 0) == 1, has_sinks, st.b(4)};
  cpu::dispatch_float(out[0].dtype(), "scaled_dot_product_attention",
                      [&](auto t) { sdpa_kernel<decltype(t)>(in, out, p); });
}

}  // namespace

void define_sdpa() {
  registry::define({.name = "ScaledDotProductAttention",
                    .fields = {{"fallback", FieldType::Placeholder},
                               {"scale", FieldType::Float},
                               {"do_causal", FieldType::Bool},
                               {"has_sinks", FieldType::Bool},
                               {"output_logsumexp", FieldType::Bool}},
                    .min_inputs = 3,
                    .max_inputs = 5,
                    .num_outputs = -1,
                    .infer = sdpa_infer,
                    .cpu = sdpa_cpu});
}

}  // namespace kiln::fastk
