// The primitive families. Each family file defines register_<family>(), which adds its rows to the
// registry. Families that are not built yet are weak symbols and simply absent: their primitives are
// then unknown, and a file using them gets "[import_function] Unable to deserialize primitive <name>".
#pragma once

namespace kiln::primitives {

#define KILN_FAMILIES(X) \
  X(unary)               \
  X(binary)              \
  X(reduce)              \
  X(scan)                \
  X(shape)               \
  X(index)               \
  X(sort)                \
  X(matmul)              \
  X(conv)                \
  X(fft)                 \
  X(linalg)              \
  X(quantized)           \
  X(random)              \
  X(fast)                \
  X(custom)              \
  X(misc)                \
  X(load)

#define KILN_DECLARE_FAMILY(f) __attribute__((weak)) void register_##f();
KILN_FAMILIES(KILN_DECLARE_FAMILY)
#undef KILN_DECLARE_FAMILY

inline void register_all_families() {
#define KILN_CALL_FAMILY(f) \
  if (register_##f) register_##f();
  KILN_FAMILIES(KILN_CALL_FAMILY)
#undef KILN_CALL_FAMILY
}

}  // namespace kiln::primitives
