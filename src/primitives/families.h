// The primitive families: one explicit list, the names of the folders src/primitives/<family>/ and
// src/backend/cpu/kernels/<family>/. Each family folder defines register_<family>(), which adds its rows
// to the registry, and each kernel folder register_cpu_<family>() (src/backend/cpu/kernels/families.h);
// a family named here and not built fails to link (not to load).
#pragma once

namespace kiln::primitives {

#define KILN_FAMILIES(X) \
  X(elementwise)         \
  X(reduce)              \
  X(shape)               \
  X(index)               \
  X(sort)                \
  X(linalg)              \
  X(conv)                \
  X(fft)                 \
  X(quantized)           \
  X(random)              \
  X(fast)                \
  X(misc)

#define KILN_DECLARE_FAMILY(f) void register_##f();
KILN_FAMILIES(KILN_DECLARE_FAMILY)
#undef KILN_DECLARE_FAMILY

inline void register_all_families() {
#define KILN_CALL_FAMILY(f) register_##f();
  KILN_FAMILIES(KILN_CALL_FAMILY)
#undef KILN_CALL_FAMILY
}

}  // namespace kiln::primitives
