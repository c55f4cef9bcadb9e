"""kiln's public names against mlx.core 0.30.1: every public name of mlx.core and of its random, linalg,
fft and fast submodules (and every method of mlx.core.array) is either in kiln, with the same
parameter names in the same order, or listed below with the reason it is missing. The test fails when
a name is neither, and when a listed name has appeared in kiln (the table is stale)."""

import inspect
import re

import pytest

import kiln

mlx = pytest.importorskip("mlx.core")

BACKENDS = "later (Metal / CUDA / distributed: kiln runs on Linux CPUs)"

# Names kiln does not have, with the reason.
MISSING = {
    "": {
        **{n: BACKENDS for n in ["cuda", "metal", "distributed"]},
        "qqmm": "kiln has no op multiplying two quantized operands",
    },
    "random": {},
    "linalg": {},
    "fft": {},
    "fast": {
        "metal_kernel": "JIT-compiled GPU kernels: kiln has no GPU back end",
        "cuda_kernel": "JIT-compiled GPU kernels: kiln has no GPU back end",
    },
    "array": {},
}

# Names that other parts of the Python package provide (array.cpp, indexing.cpp, device.cpp, export.cpp,
# io.cpp): absent from this branch alone, present once those parts are merged. Either state passes;
# when present, their parameters are checked like every other name.
ELSEWHERE = {
    "": ["ArrayAt", "ArrayIterator", "ArrayLike", "FunctionExporter", "StreamContext", "new_stream",
         "set_default_stream", "stream", "export_function", "export_to_dot", "exporter", "import_function",
         "load", "save", "save_gguf", "save_safetensors", "savez", "savez_compressed"],
    "array": ["__array_namespace__", "__div__", "__rdiv__", "__getitem__", "__setitem__", "at"],
}

# Parameter lists that differ on purpose.
PARAM_EXCEPTIONS = {
    # MLX's written signature leaves out its `precise` keyword, which it accepts.
    ("", "softmax"): (["a", "axis", "*", "precise", "stream"], ["a", "/", "axis", "*", "stream"]),
    # kiln's keyword-only additions: the layout version and metadata to write, the import limits.
    ("", "export_function"): (["file", "fun", "*args", "shapeless", "version", "metadata", "**kwargs"],
                              ["arg0", "fun", "*args", "shapeless", "**kwargs"]),
    ("", "exporter"): (["file", "fun", "*", "shapeless", "version", "metadata"], ["file", "fun", "*", "shapeless"]),
    ("", "import_function"): (["file", "*", "max_array_bytes", "max_call_bytes", "mlx_cpu_quirks"], ["file"]),
}


def split_params(text):
    """The top-level, comma-separated pieces of a parameter list."""
    out, depth, cur = [], 0, ""
    for ch in text:
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        if ch == "," and depth == 0:
            out.append(cur)
            cur = ""
        else:
            cur += ch
    if cur.strip():
        out.append(cur)
    return [p.strip() for p in out if p.strip()]


def names_from_sig(sig):
    """Parameter names of a `def f(...) -> r` signature text, with '*' for the keyword-only marker, '/'
    for the positional-only one and '*name' / '**name' for variadics (`self` is dropped)."""
    start = sig.index("(")
    depth, end = 0, None
    for i in range(start, len(sig)):
        if sig[i] in "([{":
            depth += 1
        elif sig[i] in ")]}":
            depth -= 1
            if depth == 0:
                end = i
                break
    out = []
    for p in split_params(sig[start + 1:end]):
        name = p.split("=")[0].split(":")[0].strip()
        if name != "self":
            out.append(name)
    return out


def signatures(fn):
    """Each overload's parameter names."""
    nb = getattr(fn, "__nb_signature__", None)
    if nb is not None:
        return [names_from_sig(s[0]) for s in nb]
    sig = inspect.signature(fn)
    out = []
    for p in sig.parameters.values():
        if p.kind == p.VAR_POSITIONAL:
            out.append("*" + p.name)
        elif p.kind == p.VAR_KEYWORD:
            out.append("**" + p.name)
        else:
            if p.kind == p.KEYWORD_ONLY and "*" not in out and not any(o.startswith("*") for o in out):
                out.append("*")
            out.append(p.name)
    return [out]


def normalise(names):
    """Names without the keyword-only marker right after a *args (where Python has no marker)."""
    out = []
    for n in names:
        if n == "*" and out and out[-1].startswith("*"):
            continue
        out.append(n)
    return out


AUTO_NAME = re.compile(r"arg\d*$")


def same_params(ks, ms):
    """Whether kiln's parameter list matches MLX's. Parameters before a '/' (on either side) are
    positional-only, so only their number counts; kiln accepts MLX's positional-only parameters by name
    as well. nanobind's generated names (arg, arg0, ...) stand for unnamed positional parameters."""
    p = max(ks.index("/") if "/" in ks else 0, ms.index("/") if "/" in ms else 0)
    ks = [n for n in ks if n != "/"]
    ms = [n for n in ms if n != "/"]
    if len(ks) != len(ms):
        return False
    return all(i < p or k == m or AUTO_NAME.match(m) for i, (k, m) in enumerate(zip(ks, ms)))


def module_pair(sub):
    if sub == "array":
        return mlx.array, kiln.array
    return (getattr(mlx, sub), getattr(kiln, sub)) if sub else (mlx, kiln)


def public_names(sub):
    m, _ = module_pair(sub)
    if sub == "array":
        return sorted(n for n in dir(m) if not n.startswith("_") or n in ELSEWHERE["array"])
    return sorted(n for n in dir(m) if not n.startswith("_"))


CASES = [(sub, n) for sub in ["", "random", "linalg", "fft", "fast", "array"] for n in public_names(sub)]


@pytest.mark.parametrize("sub,name", CASES, ids=[f"{s or 'core'}.{n}" for s, n in CASES])
def test_name(sub, name):
    m, k = module_pair(sub)
    missing = MISSING[sub]
    elsewhere = ELSEWHERE.get(sub, [])
    if name in missing:
        assert not hasattr(k, name), f"{name} is now in kiln: remove it from MISSING ({missing[name]})"
        return
    if not hasattr(k, name):
        assert name in elsewhere, f"{sub or 'kiln'}.{name} is neither in kiln nor listed in MISSING"
        return
    mv, kv = getattr(m, name), getattr(k, name)
    if callable(mv) and not isinstance(mv, type) and hasattr(mv, "__nb_signature__"):
        msigs = [normalise(s) for s in signatures(mv)]
        ksigs = [normalise(s) for s in signatures(kv)]
        if (sub, name) in PARAM_EXCEPTIONS:
            ours, theirs = PARAM_EXCEPTIONS[(sub, name)]
            assert ksigs == [ours] and msigs == [theirs]
            return
        assert len(ksigs) == len(msigs), f"{name}: kiln {ksigs} vs MLX {msigs}"
        unmatched = list(ksigs)
        for ms in msigs:
            hit = next((ks for ks in unmatched if same_params(ks, ms)), None)
            assert hit is not None, f"{name}: kiln {ksigs} vs MLX {msigs}"
            unmatched.remove(hit)
    elif not callable(mv) and not isinstance(mv, type(mlx)):
        if isinstance(mv, (int, float)) or mv is None:
            assert (kv == mv) or (kv != kv and mv != mv), name


def test_tables_name_real_mlx_names():
    for sub, names in MISSING.items():
        m, _ = module_pair(sub)
        for n in names:
            assert hasattr(m, n), f"{sub}.{n} is not an MLX name"
    for sub, names in ELSEWHERE.items():
        m, _ = module_pair(sub)
        for n in names:
            assert hasattr(m, n), f"{sub}.{n} is not an MLX name"
