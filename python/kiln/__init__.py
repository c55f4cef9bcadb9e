"""kiln: MLX's array API, function export and import on Linux.

Code written for MLX runs with ``import kiln as mx``: the ops, ``kiln.random``, ``kiln.linalg``,
``kiln.fft``, ``kiln.fast``, ``export_function`` / ``import_function`` / ``exporter`` and the array
files (``save``, ``load``, ``savez``, ``save_safetensors``) mirror ``mlx.core``.
"""

import os as _os

# OpenBLAS (the system library kiln's extension links) starts its threads as it loads, and each spins on
# sched_yield for 2^28 TSC cycles (~0.1 s) before it sleeps, again after every BLAS call. On a 2-core machine
# that spin takes a core from kiln's own threads during the first call: the float32 llama's first call
# took 213-281 ms (median 240) with the default and 200-228 ms (median 218) with 2^20 (~0.4 ms), in
# alternating processes. OpenBLAS reads the variable once, as it loads with the extension just below; a
# value already set wins. (NumPy's bundled OpenBLAS, if loaded after kiln, reads it too.)
_os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "20")

from ._core import *  # noqa: F401,F403,E402
from . import _core  # noqa: E402
from ._core import random, linalg, fft, fast  # noqa: F401,E402

import sys as _sys  # noqa: E402

# `import kiln.random` (and the others) name the extension's submodules.
for _name in ("random", "linalg", "fft", "fast"):
    _sys.modules[__name__ + "." + _name] = getattr(_core, _name)
del _name

# The parts written in Python over kiln._core: convolve, segmented_mm and constants (_ops), the array
# files (_io), the export API's Python side (_export), and the function transforms over trees of arrays
# (_transforms: grad, value_and_grad, vjp, jvp, vmap, checkpoint, custom_function).
from ._ops import *  # noqa: F401,F403,E402
from ._io import *  # noqa: F401,F403,E402
from ._export import *  # noqa: F401,F403,E402
from ._transforms import *  # noqa: F401,F403,E402

__version__ = "0.1.0"
