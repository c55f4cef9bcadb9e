// CPU kernels of Full (materialise the broadcast, cast input) and Arange (MLX's accumulated steps), the
// rows of primitives/shape/creation.cpp.
#include <stdexcept>
#include <type_traits>

#include "backend/cpu/kernels/shape/shape_kernels.h"
#include "core/dispatch.h"

namespace kiln::cpu {

namespace {

// The input is already broadcast to the output shape and cast: materialise it.
void full_cpu(const Node&, const std::vector<array>& in, std::vector<array>& out) {
  const array& v = in[0];
  array& o = out[0];
  o.alloc();
  if (o.size() == 0) return;
  bool uniform = true;
  for (size_t i = 0; i < v.ndim(); ++i) uniform = uniform && (v.shape()[i] == 1 || v.strides()[i] == 0);
  if (uniform) {
    cpu::fill_items(o.raw_data(), o.size(), v.raw_data(), o.itemsize());
  } else {
    cpu::copy_into(v, o, o.strides(), 0);
  }
}

// As MLX computes it: the first value and the step are converted to the output type, and each next value
// is the previous one plus the step in that type (so the rounding accumulates the same way).
template <typename T>
void arange_fill(T* dst, size_t n, double start, double step) {
  T v = detail::cast_to<T>(start);
  const T next = detail::cast_to<T>(start + step);
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;  // wrapping arithmetic without signed overflow
    const U d = static_cast<U>(static_cast<U>(next) - static_cast<U>(v));
    for (size_t i = 0; i < n; ++i) {
      dst[i] = v;
      v = static_cast<T>(static_cast<U>(static_cast<U>(v) + d));
    }
  } else if constexpr (detail::is_half_v<T>) {
    const T d = T(static_cast<float>(next) - static_cast<float>(v));
    for (size_t i = 0; i < n; ++i) {
      dst[i] = v;
      v = T(static_cast<float>(v) + static_cast<float>(d));
    }
  } else {
    const T d = next - v;
    for (size_t i = 0; i < n; ++i) {
      dst[i] = v;
      v += d;
    }
  }
}

void arange_cpu(const Node& n, const std::vector<array>&, std::vector<array>& out) {
  array& o = out[0];
  if (o.dtype() == bool_) throw std::invalid_argument("[arange] bool not supported for arange.");
  o.alloc();
  const double start = n.state.get<double>(0), step = n.state.get<double>(2);
  detail::dispatch_all(o.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (!std::is_same_v<T, bool>) arange_fill<T>(o.data<T>(), o.size(), start, step);
  });
}

}  // namespace

void register_cpu_creation(detail::KernelTable& table) {
  table.add({{"Full", full_cpu}, {"Arange", arange_cpu}});
}

}  // namespace kiln::cpu
