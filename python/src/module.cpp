// The extension module kiln._core; python/kiln/__init__.py re-exports it as `kiln`.
#include <kiln/export.h>

#include "bindings.h"

NB_MODULE(_core, m) {
  using namespace kiln::py;
  m.doc() = "kiln: MLX's array API and function export on Linux (import kiln as mx)";
  init_dtypes(m);
  init_devices(m);
  init_array(m);
  init_ops(m);
  nb::module_ random = m.def_submodule("random", "Random number generation (kiln.random, as mlx.core.random)");
  init_random(random);
  nb::module_ linalg = m.def_submodule("linalg", "Linear algebra (kiln.linalg, as mlx.core.linalg)");
  init_linalg(linalg);
  nb::module_ fft = m.def_submodule("fft", "Fast Fourier transforms (kiln.fft, as mlx.core.fft)");
  init_fft(fft);
  nb::module_ fast = m.def_submodule("fast", "Fused operations (kiln.fast, as mlx.core.fast)");
  init_fast(fast);
  init_export(m);
  init_io(m);
  init_memory(m);
  init_transforms(m);
  // The registry, the file layouts and the kernel table, built here rather than in the first
  // import_function or evaluation (as importing mlx registers MLX's).
  kiln::prepare_import();
}
