// The kernel of the fused RoPE primitive: rotary position embeddings over the last axis, positions
// along axis -2. Angles are computed once per (position, frequency) into a table shared by every head.
#include <cmath>

#include "backend/cpu/kernels/fast/fast_kernels.h"
#include "backend/cpu/kernels/fast/row_kernels.h"
#include "backend/cpu/loops.h"
#include "backend/cpu/vmath.h"

namespace kiln::fastk {

namespace {

struct RopeParams {
  int dims;
  bool traditional;
  float base, scale;
  bool forward;
};

template <typename T>
void rope_kernel(const std::vector<array>& in, array& out, const RopeParams& p) {
  using A = detail::acc_t<T>;
  const array x = unit_last_stride(in[0]);
  const array& offset = in[1];
  const int64_t B = x.shape()[0];
  const int64_t L = x.shape()[x.ndim() - 2];
  const int64_t D = x.shape().back();
  const int64_t rows_per_b = B == 0 ? 0 : static_cast<int64_t>(x.size()) / (B * D);
  const int half = p.dims / 2;
  out.alloc();
  if (x.size() == 0) return;

  // Inverse frequencies as MLX computes them: exp(-i · log(base) / half), or 1 / freqs. Angles are
  // float (double for float64 inputs). The float exp, sin and cos are the element-wise kernels' own
  // (cpu::vexp, vsin, vcos: lane by lane, so a value does not depend on its place in the array), which
  // makes the angles, sines and cosines those of MLX's decomposed form run node by node (the row pattern
  // pass turns that form into this primitive).
  std::vector<A> inv_freq(half);
  if (in.size() == 3) {
    array f = cpu::contiguous_copy(in[2]);
    for (int i = 0; i < half; ++i) inv_freq[i] = A(1) / A(f.data<float>()[i]);
  } else {
    const A c = std::log(A(p.base)) / static_cast<A>(half);
    std::vector<A> arg(half);
    for (int i = 0; i < half; ++i) arg[i] = static_cast<A>(-i) * c;
    if constexpr (std::is_same_v<A, float>) {
      cpu::vexp(arg.data(), inv_freq.data(), static_cast<size_t>(half));
    } else {
      for (int i = 0; i < half; ++i) inv_freq[i] = std::exp(arg[i]);
    }
  }
  auto offset_of = [&](int64_t b) -> int64_t {
    int64_t k = offset.size() == 1 ? 0 : b;
    const int64_t pos = offset.ndim() == 0 ? 0 : k * offset.strides()[0];
    return offset.dtype() == uint32 ? static_cast<int64_t>(offset.data<uint32_t>()[pos])
                                    : static_cast<int64_t>(offset.data<int32_t>()[pos]);
  };

  std::vector<A> cos_t(static_cast<size_t>(L) * half), sin_t(cos_t.size()), theta(cos_t.size());
  int64_t table_offset = 0;
  bool have_table = false;
  T* o = out.data<T>();
  const T* xb = x.data<T>();
  const rows::RowFns& fns = rows::row_fns();  // float and 16-bit rows: the vector loop (row_kernels.h)
  for (int64_t b = 0; b < B; ++b) {
    const int64_t off = offset_of(b);
    if (!have_table || off != table_offset) {
      cpu::parallel_for(static_cast<size_t>(L), std::max<size_t>(1, 256 / std::max(half, 1)), [&](size_t t0, size_t t1) {
        for (size_t t = t0; t < t1; ++t) {
          const A pos = (static_cast<A>(t) + static_cast<A>(off)) * A(p.scale);
          for (int i = 0; i < half; ++i) theta[t * half + i] = pos * inv_freq[i];
        }
        const size_t k0 = t0 * static_cast<size_t>(half), n = (t1 - t0) * static_cast<size_t>(half);
        if constexpr (std::is_same_v<A, float>) {
          cpu::vcos(theta.data() + k0, cos_t.data() + k0, n);
          cpu::vsin(theta.data() + k0, sin_t.data() + k0, n);
        } else {
          for (size_t k = k0; k < k0 + n; ++k) {
            cos_t[k] = std::cos(theta[k]);
            sin_t[k] = std::sin(theta[k]);
          }
        }
      });
      table_offset = off;
      have_table = true;
    }
    const int64_t r0 = b * rows_per_b;
    cpu::parallel_for(static_cast<size_t>(rows_per_b), std::max<size_t>(1, cpu::kGrainMedium / D),
                      [&](size_t rb, size_t re) {
      for (size_t rr = rb; rr < re; ++rr) {
        const int64_t r = r0 + static_cast<int64_t>(rr);
        const int64_t t = static_cast<int64_t>(rr) % L;
        const T* xr = xb + row_offset(x, r);
        T* orow = o + r * D;
        const A* c = cos_t.data() + t * half;
        const A* s = sin_t.data() + t * half;
        if constexpr (!std::is_same_v<T, double>) {
          rows::of<T>(fns).rope(xr, c, s, orow, half, p.traditional, p.forward);
        } else {
          const int64_t i1s = p.traditional ? 2 : 1, i2d = p.traditional ? 1 : half;
          for (int i = 0; i < half; ++i) {
            const int64_t j1 = i * i1s, j2 = j1 + i2d;
            const A x1 = A(xr[j1]), x2 = A(xr[j2]);
            const A ci = c[i], si = s[i];
            if (p.forward) {
              orow[j1] = T(x1 * ci - x2 * si);
              orow[j2] = T(x1 * si + x2 * ci);
            } else {
              orow[j1] = T(x2 * si + x1 * ci);
              orow[j2] = T(x2 * ci - x1 * si);
            }
          }
        }
        for (int64_t j = p.dims; j < D; ++j) orow[j] = xr[j];
      }
    });
  }
}

void rope_cpu(const Node& node, const std::vector<array>& in, std::vector<array>& out) {
  const State& st = node.state;
  RopeParams p{st.i(1), st.b(2), st.f(3), st.f(4), st.b(5)};
  detail::dispatch_float(out[0].dtype(), "rope", [&](auto t) { rope_kernel<decltype(t)>(in, out[0], p); });
}

}  // namespace

void add_rope_kernels(detail::KernelTable& table) { table.add("RoPE", rope_cpu); }

}  // namespace kiln::fastk
