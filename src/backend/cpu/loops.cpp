#include "backend/cpu/loops.h"

#include <cstring>

namespace kiln::cpu {

void copy_to_contiguous(const array& in, array& out) {
  const size_t isz = in.itemsize();
  if (in.row_contiguous()) {
    out.alloc();
    // In 1 MiB pieces on the pool: one core's copy does not reach the memory bandwidth.
    auto* d = static_cast<uint8_t*>(out.raw_data());
    const auto* s = static_cast<const uint8_t*>(in.raw_data());
    parallel_for(in.nbytes(), size_t(1) << 20, [&](size_t b, size_t e) { std::memcpy(d + b, s + b, e - b); });
    return;
  }
  // Copy by element size, so one instantiation per width serves every dtype.
  auto run = [&](auto tag) {
    using T = decltype(tag);
    unary_loop<T, T>(in, out, [](T v) { return v; });
  };
  switch (isz) {
    case 1: run(uint8_t{}); break;
    case 2: run(uint16_t{}); break;
    case 4: run(uint32_t{}); break;
    case 8: run(uint64_t{}); break;
    default: throw std::logic_error("[copy] bad item size");
  }
}

array contiguous_copy(const array& a) {
  if (a.row_contiguous()) return a;
  array out(a.shape(), a.dtype(), nullptr, 0);
  copy_to_contiguous(a, out);
  return out;
}

}  // namespace kiln::cpu
