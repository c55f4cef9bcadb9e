"""Python-level parts of kiln's export API (the rest is in kiln._core, python/src/export*.cpp)."""

import os as _os

from ._core import import_function as _import_function

__all__ = ["inspect"]


def inspect(file, *, tape=False):
    """The structure of an ``.mlxfn`` file as a dict: what ``kiln inspect --json FILE`` prints.

    Keys: ``file`` (the path as given), ``version`` (the header's MLX version), ``format`` (the layout
    kiln decoded), ``metadata``, ``shapeless``, ``file_bytes``, ``constants``, ``constant_bytes`` and
    ``functions``: one dict per exported signature with ``positional_inputs``, ``keyword_inputs``
    (name -> spec) and ``outputs`` (specs are ``{"shape": [...], "dtype": "float32"}``), ``tape_length``,
    ``primitives``, ``primitive_histogram``, ``streams``, ``new_constants`` and ``new_constant_bytes``;
    with ``tape=True`` (``--tape``) also ``tape``, the file's entries in order.
    """
    fn = _import_function(file)
    out = {"file": _os.fsdecode(file) if isinstance(file, bytes) else _os.fspath(file)}
    out.update(fn._inspect(tape))
    return out
