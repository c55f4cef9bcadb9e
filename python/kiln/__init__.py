"""kiln: MLX's array API, function export and import on Linux.

Code written for MLX runs with ``import kiln as mx``: the ops, ``kiln.random``, ``kiln.linalg``,
``kiln.fft``, ``kiln.fast``, ``export_function`` / ``import_function`` / ``exporter`` and the array
files (``save``, ``load``, ``savez``, ``save_safetensors``) mirror ``mlx.core``.
"""

from ._core import *  # noqa: F401,F403
from . import _core
from ._core import random, linalg, fft, fast  # noqa: F401

import sys as _sys

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
