"""Array files, as ``mlx.core``: ``save`` / ``load`` (.npy), ``savez`` / ``savez_compressed`` (.npz),
``save_safetensors`` (.safetensors), ``save_gguf`` (.gguf), with ``load`` dispatching on the extension or
``format=``.

Reading checks every file before trusting it: .npy headers and .safetensors headers are validated by
the C++ readers (see include/kiln/io.h), and .npz members are bounded (see ``NPZ_MAX_MEMBER_BYTES``)
and must hold exactly the bytes the archive declares. Saving to a path writes a temporary file beside
it and renames it into place, so a failed save leaves nothing half written.
"""

import os

from . import _core
from ._core import array

__all__ = ["save", "savez", "savez_compressed", "load", "save_safetensors", "save_gguf"]

# The largest uncompressed .npz member load() reads (bytes). Raise it for bigger arrays.
NPZ_MAX_MEMBER_BYTES = 1 << 36
# Deflate cannot expand data by more than about 1032:1; a member claiming more is corrupt or hostile.
_DEFLATE_MAX_RATIO = 1032


def _is_path(file):
    return isinstance(file, (str, os.PathLike))


def _path(file):
    p = os.fspath(file)
    return os.fsdecode(p) if isinstance(p, bytes) else p


def _as_array(value, api, what):
    if isinstance(value, array):
        return value
    raise TypeError(f"[{api}] Expected {what} to be a kiln.array but found {type(value).__name__}.")


def _array_dict(arrays, api):
    """``arrays`` checked to be a dict of string names to kiln.arrays (a copy)."""
    if not isinstance(arrays, dict):
        raise TypeError(f"[{api}] Expected a dict of arrays but found {type(arrays).__name__}.")
    checked = {}
    for k, v in arrays.items():
        if not isinstance(k, str):
            raise TypeError(f"[{api}] Expected string names but found {type(k).__name__}.")
        checked[k] = _as_array(v, api, f"the value of {k!r}")
    return checked


def _atomic_write(path, write):
    """Run ``write(binary_file)`` on a fresh temporary file beside ``path``, then rename it over ``path``."""
    import secrets  # here, not at module level: `import kiln` stays fast
    fd, tmp = None, None
    for _ in range(16):
        tmp = f"{path}.kiln-tmp-{os.getpid()}-{secrets.token_hex(4)}"
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o666)
            break
        except FileExistsError:
            continue
    if fd is None:
        raise OSError(f"Could not create a temporary file beside {path}")
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


# ---- .npy ----


def save(file, arr):
    """Save the array to a binary file in ``.npy`` format (".npy" is appended to a path without it)."""
    arr = _as_array(arr, "save", "arr")
    if _is_path(file):
        _core._io_save_npy(_path(file), arr)
    elif hasattr(file, "write"):
        _core._io_save_npy_file(file, arr)
    else:
        raise ValueError("[save] Input must be a file-like object, or string")


# ---- .npz ----


def _savez(file, args, kwargs, compressed):
    import zipfile
    api = "savez_compressed" if compressed else "savez"
    arrays = {}
    for k, v in kwargs.items():
        arrays[k] = _as_array(v, api, f"the keyword argument {k!r}")
    for i, v in enumerate(args):
        name = f"arr_{i}"
        if name in arrays:
            raise ValueError(f"[{api}] Cannot use un-named variables and keyword {name}")
        arrays[name] = _as_array(v, api, f"the positional argument {i}")
    # Positional arrays first, as NumPy does, then the keywords in the order given.
    order = [f"arr_{i}" for i in range(len(args))] + list(kwargs)
    compression = zipfile.ZIP_DEFLATED if compressed else zipfile.ZIP_STORED

    def write(f):
        with zipfile.ZipFile(f, mode="w", compression=compression, allowZip64=True) as zf:
            for name in order:
                with zf.open(name + ".npy", mode="w", force_zip64=True) as member:
                    _core._io_save_npy_file(member, arrays[name])

    if _is_path(file):
        path = _path(file)
        if not path.endswith(".npz"):
            path += ".npz"
        _atomic_write(path, write)
    elif hasattr(file, "write"):
        write(file)
    else:
        raise ValueError(f"[{api}] Input must be a file-like object, or string")


def savez(file, *args, **kwargs):
    """Save several arrays to a binary file in uncompressed ``.npz`` format.

    Positional arrays are named ``arr_0``, ``arr_1``, ...; keyword arrays by their keyword.
    """
    _savez(file, args, kwargs, compressed=False)


def savez_compressed(file, *args, **kwargs):
    """Save several arrays to a binary file in compressed (deflated) ``.npz`` format."""
    _savez(file, args, kwargs, compressed=True)


def _npz_error(where, what):
    return ValueError(f"[load] Invalid .npz file {where}: {what}")


def _load_npz(file):
    import zipfile
    where = repr(_path(file)) if _is_path(file) else "(file object)"
    try:
        zf = zipfile.ZipFile(_path(file) if _is_path(file) else file, mode="r")
    except zipfile.BadZipFile as e:
        raise _npz_error(where, f"expected a zip archive but found none ({e})") from None
    except FileNotFoundError:
        raise
    out = {}
    with zf:
        for info in zf.infolist():
            if info.is_dir():
                continue
            name = info.filename
            key = name[:-4] if len(name) > 4 and name.endswith(".npy") else name
            member = f"the member {name!r}"
            if key in out:
                raise _npz_error(where, f"expected unique names but found {member} twice")
            if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
                raise _npz_error(
                    where,
                    f"expected {member} to be stored or deflated (as NumPy and MLX write) "
                    f"but found compression method {info.compress_type}",
                )
            if info.file_size > NPZ_MAX_MEMBER_BYTES:
                raise _npz_error(
                    where,
                    f"expected {member} to hold at most NPZ_MAX_MEMBER_BYTES = {NPZ_MAX_MEMBER_BYTES} bytes "
                    f"but it declares {info.file_size}",
                )
            if info.compress_type == zipfile.ZIP_STORED and info.compress_size != info.file_size:
                raise _npz_error(
                    where,
                    f"expected the stored member {name!r} to be as large compressed as uncompressed but found "
                    f"{info.compress_size} and {info.file_size} bytes",
                )
            if info.compress_type == zipfile.ZIP_DEFLATED and info.file_size > info.compress_size * _DEFLATE_MAX_RATIO + 1024:
                raise _npz_error(
                    where,
                    f"expected the deflated member {name!r} to expand at most {_DEFLATE_MAX_RATIO}-fold but it declares "
                    f"{info.file_size} bytes from {info.compress_size}",
                )
            try:
                with zf.open(info) as f:
                    data = f.read(info.file_size + 1)
            except (zipfile.BadZipFile, EOFError, OSError, ValueError) as e:
                raise _npz_error(where, f"could not read {member}: {e}") from None
            if len(data) != info.file_size:
                raise _npz_error(where, f"expected {member} to hold {info.file_size} bytes but found {len(data)}")
            try:
                out[key] = _core._io_load_npy_bytes(data)
            except (RuntimeError, ValueError) as e:
                raise type(e)(f"{e} (in {member} of the .npz file {where})") from None
    return out


# ---- .safetensors ----


def save_safetensors(file, arrays, metadata=None):
    """Save array(s) to a binary file in ``.safetensors`` format (".safetensors" appended to a path
    without it). ``metadata`` maps strings to strings."""
    if metadata is None:
        metadata = {}
    if not isinstance(metadata, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in metadata.items()):
        raise ValueError("[save_safetensors] Metadata must be a dictionary with string keys and values")
    checked = _array_dict(arrays, "save_safetensors")
    if _is_path(file):
        _core._io_save_safetensors(_path(file), checked, metadata)
    elif hasattr(file, "write"):
        _core._io_save_safetensors_file(file, checked, metadata)
    else:
        raise ValueError("[save_safetensors] Input must be a file-like object, or string")


def save_gguf(file, arrays, metadata=None):
    """Save array(s) to a binary file in ``.gguf`` format (".gguf" appended to a path without it):
    float32, float16, int8, int16 and int32 arrays; ``metadata`` maps strings to a string, a list of
    strings or an array of at most one dimension (a 0-d array is a scalar)."""
    if not _is_path(file):
        raise TypeError(f"[save_gguf] Expected a path (str or os.PathLike) but found {type(file).__name__}.")
    checked = _array_dict(arrays, "save_gguf")
    meta = {}
    for k, v in (metadata or {}).items():
        if not isinstance(k, str):
            raise TypeError(f"[save_gguf] Expected string metadata keys but found {type(k).__name__}.")
        if isinstance(v, str):
            meta[k] = v
        elif isinstance(v, (list, tuple)) and all(isinstance(x, str) for x in v):
            meta[k] = list(v)
        elif isinstance(v, array):
            meta[k] = v
        else:
            raise TypeError(f"[save_gguf] Expected the metadata {k!r} to be a str, a list of str or a kiln.array "
                            f"but found {type(v).__name__}.")
    _core._io_save_gguf(_path(file), checked, meta)


# ---- load ----


def _read_all(file, api):
    if not hasattr(file, "read"):
        raise ValueError(f"[{api}] Input must be a file-like object opened in binary mode, or string")
    data = file.read()
    if isinstance(data, str):
        raise ValueError(f"[{api}] The file object must be opened in binary mode (its read() returned str).")
    return bytes(data)


def load(file, /, format=None, return_metadata=False, *, stream=None):
    """Load array(s) from a binary file: ``.npy`` gives an array, ``.npz``, ``.safetensors`` and
    ``.gguf`` a dict of arrays (with ``return_metadata=True``, ``(arrays, metadata)`` for
    ``.safetensors`` and ``.gguf``; GGUF's Q4_0, Q4_1 and Q8_0 tensors come as MLX's affine
    quantization, ``name``, ``name.scales`` and ``name.biases``, group size 32).

    ``format`` ("npy", "npz", "safetensors" or "gguf") overrides the file's extension; a file object
    without a ``name`` needs it (GGUF is read from paths only).
    """
    if format is None:
        if _is_path(file):
            fname = _path(file)
        elif hasattr(file, "read"):
            fname = getattr(file, "name", None)
            if not isinstance(fname, str):
                raise ValueError("[load] Could not infer the file format of a file object without a name: pass format=")
        else:
            raise ValueError("[load] Input must be a file-like object opened in binary mode, or string")
        dot = fname.rfind(".")
        if dot < 0:
            raise ValueError("[load] Could not infer file format from extension")
        format = fname[dot + 1 :]
    if return_metadata and format in ("npy", "npz"):
        raise ValueError(f"[load] metadata not supported for format {format}")
    if format == "safetensors":
        if _is_path(file):
            arrays, metadata = _core._io_load_safetensors(_path(file))
        else:
            arrays, metadata = _core._io_load_safetensors_bytes(_read_all(file, "load"))
        return (arrays, metadata) if return_metadata else arrays
    if format == "npz":
        return _load_npz(file)
    if format == "npy":
        if _is_path(file):
            return _core._io_load_npy(_path(file))
        return _core._io_load_npy_bytes(_read_all(file, "load"))
    if format == "gguf":
        if not _is_path(file):
            raise ValueError("[load] A .gguf file is read from a path (str or os.PathLike), not a file object")
        arrays, metadata = _core._io_load_gguf(_path(file))
        return (arrays, metadata) if return_metadata else arrays
    raise ValueError(f"[load] Unknown file format {format}")
