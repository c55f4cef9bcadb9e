// The kernel of the Quantize primitive (quantize and dequantize, every mode).
// Results match MLX 0.30.1 bit for bit: affine quantization follows MLX's CPU kernel (float math),
// the fp modes and dequantization follow the op graphs MLX evaluates on the CPU, so every step that
// MLX does in the weight's dtype is rounded to that dtype here too.
#include "backend/cpu/kernels/quantized/quantized_kernels.h"
#include "backend/cpu/loops.h"
#include "core/dispatch.h"

namespace kiln {

namespace quant {

namespace {

// A value of T in T's arithmetic type: rounds to T (the step MLX does in the weight's dtype).
template <typename T>
inline detail::acc_t<T> rt(detail::acc_t<T> v) {
  return detail::acc_t<T>(T(v));
}

template <typename T, int B>
void affine_quantize(const array& w, std::vector<array>& out, int gs) {
  using A = std::conditional_t<std::is_same_v<T, double>, double, float>;
  const T* src = w.data<T>();
  uint8_t* dst = reinterpret_cast<uint8_t*>(out[0].data<uint32_t>());
  T* sc = out[1].data<T>();
  T* bi = out[2].data<T>();
  const int64_t ngroups = static_cast<int64_t>(w.size()) / gs;
  const int64_t gbytes = static_cast<int64_t>(gs) * B / 8;
  const A n_bins = A((1 << B) - 1);
  const A eps = A(1e-7f);
  cpu::parallel_for(static_cast<size_t>(ngroups), std::max(1, 4096 / gs), [&](size_t g0, size_t g1) {
    uint32_t c[8];
    for (size_t g = g0; g < g1; ++g) {
      const T* x = src + g * gs;
      A wmin = std::numeric_limits<A>::infinity(), wmax = -wmin;
      for (int j = 0; j < gs; ++j) {
        wmax = std::max(wmax, A(x[j]));  // std::max/min skip NaN here, as in MLX
        wmin = std::min(wmin, A(x[j]));
      }
      const bool mask = std::abs(wmin) > std::abs(wmax);
      A scale = std::max((wmax - wmin) / n_bins, eps);
      scale = mask ? scale : -scale;
      const A edge = mask ? wmin : wmax;
      const A q0 = std::rint(edge / scale);
      A bias = 0;
      if (q0 != 0) {
        scale = edge / q0;
        bias = edge;
      }
      uint8_t* p = dst + g * gbytes;
      for (int j = 0; j < gs; j += 8, p += B) {
        for (int k = 0; k < 8; ++k) {
          A q = std::rint((A(x[j + k]) - bias) / scale);
          q = std::min(std::max(q, A(0)), n_bins);
          c[k] = std::isnan(q) ? 0u : static_cast<uint32_t>(q);
        }
        pack8<B>(c, p);
      }
      sc[g] = T(scale);
      bi[g] = T(bias);
    }
  });
}

template <typename T, int B>
void affine_dequantize(const std::vector<array>& in, array& out, int gs) {
  using A = detail::acc_t<T>;
  const array s = cpu::contiguous_copy(in[1]), b = cpu::contiguous_copy(in[2]);
  const uint8_t* src = reinterpret_cast<const uint8_t*>(in[0].data<uint32_t>());
  const T* sp = s.data<T>();
  const T* bp = b.data<T>();
  T* dst = out.data<T>();
  const int64_t gbytes = static_cast<int64_t>(gs) * B / 8;
  cpu::parallel_for(s.size(), std::max(1, 4096 / gs), [&](size_t g0, size_t g1) {
    uint32_t c[8];
    for (size_t g = g0; g < g1; ++g) {
      const uint8_t* p = src + g * gbytes;
      const A sv = A(sp[g]), bv = A(bp[g]);
      T* d = dst + g * gs;
      for (int j = 0; j < gs; j += 8, p += B) {
        unpack8<B>(p, c);
        for (int k = 0; k < 8; ++k) d[j + k] = T(rt<T>(A(c[k]) * sv) + bv);
      }
    }
  });
}

template <typename T>
void fp_quantize(const array& w, std::vector<array>& out, int gs, QuantizationMode mode) {
  using A = detail::acc_t<T>;
  const T* src = w.data<T>();
  uint8_t* dst = reinterpret_cast<uint8_t*>(out[0].data<uint32_t>());
  uint8_t* sc = out[1].data<uint8_t>();
  const int bits = mode == QuantizationMode::Mxfp8 ? 8 : 4;
  const A maxval = bits == 4 ? A(6) : A(448);
  const int64_t ngroups = static_cast<int64_t>(w.size()) / gs;
  cpu::parallel_for(static_cast<size_t>(ngroups), std::max(1, 4096 / gs), [&](size_t g0, size_t g1) {
    std::vector<A> wq(gs);
    for (size_t g = g0; g < g1; ++g) {
      const T* x = src + g * gs;
      A amax = std::abs(A(x[0]));
      for (int j = 1; j < gs; ++j) {
        const A v = std::abs(A(x[j]));
        amax = (std::isnan(v) || v > amax) ? v : amax;  // NaN propagates, as MLX's max does
        if (std::isnan(amax)) break;
      }
      const A scale = rt<T>(amax / maxval);
      A div;
      if (mode == QuantizationMode::Nvfp4) {
        sc[g] = to_fp8(static_cast<float>(scale));
        div = A(from_fp8(sc[g]));
      } else {
        // E8M0: round(log2(scale)) through int32, kept as T; zero scales give exponent 0.
        A e = 0;
        if (scale != A(0)) e = A(T(static_cast<A>(detail::cast_to<int32_t>(std::rint(rt<T>(std::log2(scale)))))));
        div = rt<T>(std::pow(A(2), e));
        sc[g] = detail::cast_to<uint8_t>(rt<T>(e + A(127)));
      }
      for (int j = 0; j < gs; ++j) wq[j] = rt<T>(A(x[j]) / div);
      uint8_t* p = dst + g * (static_cast<int64_t>(gs) * bits / 8);
      if (bits == 8) {
        for (int j = 0; j < gs; ++j) p[j] = to_fp8(static_cast<float>(wq[j]));
        continue;
      }
      for (int j = 0; j < gs; j += 2) {
        uint8_t code[2];
        for (int h = 0; h < 2; ++h) {
          // The nearest E2M1 value by distance computed in T; the first of equals wins.
          const A v = wq[j + h];
          int best = 0;
          A bd = std::abs(rt<T>(v - A(kFp4[0])));
          for (int k = 1; k < 16; ++k) {
            const A d = std::abs(rt<T>(v - A(kFp4[k])));
            if (d < bd) {
              bd = d;
              best = k;
            }
          }
          code[h] = static_cast<uint8_t>(best);
        }
        p[j / 2] = static_cast<uint8_t>(code[0] | (code[1] << 4));
      }
    }
  });
}

template <typename T>
void fp_dequantize(const std::vector<array>& in, array& out, int gs, QuantizationMode mode) {
  using A = detail::acc_t<T>;
  const array s = cpu::contiguous_copy(in[1]);
  const uint8_t* src = reinterpret_cast<const uint8_t*>(in[0].data<uint32_t>());
  const uint8_t* sp = s.data<uint8_t>();
  T* dst = out.data<T>();
  const int bits = mode == QuantizationMode::Mxfp8 ? 8 : 4;
  cpu::parallel_for(s.size(), std::max(1, 4096 / gs), [&](size_t g0, size_t g1) {
    for (size_t g = g0; g < g1; ++g) {
      const A sv = mode == QuantizationMode::Nvfp4 ? rt<T>(A(from_fp8(sp[g])))
                                                   : rt<T>(std::pow(A(2), rt<T>(A(sp[g]) - A(127))));
      const uint8_t* p = src + g * (static_cast<int64_t>(gs) * bits / 8);
      T* d = dst + g * gs;
      for (int j = 0; j < gs; ++j) {
        const A v = bits == 8 ? rt<T>(A(from_fp8(p[j]))) : A(kFp4[(p[j / 2] >> (4 * (j & 1))) & 15]);
        d[j] = T(v * sv);
      }
    }
  });
}

void quantize_cpu(const Node& node, const std::vector<array>& in, std::vector<array>& out) {
  const State& st = node.state;
  const int gs = st.i(1), bits = st.i(2);
  const QuantizationMode mode = static_cast<QuantizationMode>(st.i(3));
  for (auto& o : out) o.alloc();
  if (!st.b(4)) {
    const array w = cpu::contiguous_copy(in[0]);
    detail::dispatch_float(w.dtype(), "quantize", [&](auto t) {
      using T = decltype(t);
      if (mode == QuantizationMode::Affine) {
        dispatch_bits(bits, [&](auto b) { affine_quantize<T, decltype(b)::value>(w, out, gs); });
      } else {
        fp_quantize<T>(w, out, gs, mode);
      }
    });
    return;
  }
  std::vector<array> ins{cpu::contiguous_copy(in[0])};
  for (size_t i = 1; i < in.size(); ++i) ins.push_back(in[i]);
  detail::dispatch_float(out[0].dtype(), "dequantize", [&](auto t) {
    using T = decltype(t);
    if (mode == QuantizationMode::Affine) {
      dispatch_bits(bits, [&](auto b) { affine_dequantize<T, decltype(b)::value>(ins, out[0], gs); });
    } else {
      fp_dequantize<T>(ins, out[0], gs, mode);
    }
  });
}

}  // namespace

}  // namespace quant

namespace cpu {
void register_cpu_quantized(detail::KernelTable& table) {
  table.add("Quantize", quant::quantize_cpu);
  quant::add_qmm_kernels(table);
}
}  // namespace cpu

}  // namespace kiln
