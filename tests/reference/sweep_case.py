"""Reference sweep: the case builder (case(), each_dtype()) and helpers the case families share."""

import hashlib
import os
import sys

import numpy as np
import mlx.core as mx

from sweep_common import *  # noqa: F401,F403
from sweep_ops import OPS, EXACT
from sweep_refs import DERIVE, EXPECTED_DIFF, _via_f32

# Cases where MLX 0.30.1 throws from its CPU worker thread (std::terminate): not catchable from python.
# The driver (main) appends to this list and restarts the generator when a case crashes MLX.
ABORTS_FILE = os.path.join(HERE, "mlx_aborts.txt")
MLX_ABORTS = set(l.strip() for l in open(ABORTS_FILE) if l.strip() and not l.startswith("#")) \
    if os.path.exists(ABORTS_FILE) else set()

CASES = []
NAMES = set()
REJECTED = []  # (name, message): MLX raised building the graph; kept as must-fail cases
ABORTED = []  # names in mlx_aborts.txt: MLX crashed or failed inside evaluation; no case


def case(op, ins, params=None, name=None, tol=1.0, exact=None, derive=None, ref="mlx", note=None, ref_fn=None):
    params = dict(params or {})
    nm = op.replace(".", "_") + "_" + (name if name is not None else "_".join(TAG[s.dtype] for s in ins))
    nm = "".join(ch if ch.isalnum() else "_" for ch in nm)
    if nm in EXPECTED_DIFF:
        note, ref_fn = EXPECTED_DIFF[nm]
        if ref_fn is None:  # MLX's float32 result: compared at float32 accuracy
            ref_fn = _via_f32(OPS[op])
            tol = max(tol, 50)
        ref = "numpy"
        if op == "quantize":  # float64 scales are computed in double: not bit-comparable with float32's
            exact = False
    if nm in NAMES:
        raise RuntimeError("duplicate case name " + nm)
    # Values are seeded by the input's spec and position, so cases with equal specs share input files.
    built = []
    for k, sp in enumerate(ins):
        key = f"{sp.shape}/{sp.dtype}/{sp.dom}/{sp.view}/{k}"
        built.append(make_input(sp, np.random.default_rng(int(hashlib.sha1(key.encode()).hexdigest()[:8], 16))))
    xs = [b[2] for b in built]
    if os.environ.get("SWEEP_CASE") and nm != os.environ["SWEEP_CASE"]:
        return None
    if nm in MLX_ABORTS and nm not in EXPECTED_DIFF:
        ABORTED.append(nm)
        return None
    if os.environ.get("SWEEP_TRACE"):
        with open(os.environ["SWEEP_TRACE"], "a") as f:
            f.write(nm + "\n")
    try:
        outs = (ref_fn or OPS[op])(xs, params)
        outs = list(outs) if isinstance(outs, (list, tuple)) else [outs]
    except (ValueError, RuntimeError) as e:  # rejected while building the graph: a must-fail case
        msg = str(e).split("\n")[0]
        REJECTED.append((nm, msg[:120]))
        c = {"name": nm, "op": op}
        if params:
            c["params"] = params
        c["inputs"] = [[store(b), view_code(v)] if v else store(b) for b, v, _ in built]
        c["error"] = msg[:100]
        if note:
            c["ref"], c["note"] = ref, note
        CASES.append(c)
        NAMES.add(nm)
        return None
    try:
        mx.eval(outs)
        if derive:
            outs = DERIVE[derive](xs, params, outs)
            mx.eval(outs)
    except Exception as e:
        print(f"{nm}: {e}", file=sys.stderr)
        # An error raised by an MLX CPU kernel can leave the process corrupt: record the case and let
        # the driver restart the generator without it.
        with open(ABORTS_FILE, "a") as f:
            f.write(nm + "\n")
        os._exit(3)
    NAMES.add(nm)
    c = {"name": nm, "op": op}
    if params:
        c["params"] = params
    c["inputs"] = [[store(b), view_code(v)] if v else store(b) for b, v, _ in built]
    c["outputs"] = [store(o) for o in outs]
    # Integer and bool outputs are always compared exactly; inexact ones bit for bit when `exact`, else
    # with TOL[dtype] scaled by `tol`.
    ex = exact if exact is not None else (op in EXACT or derive in ("partition", "argpartition", "sorted"))
    if ex:
        c["exact"] = True
    elif tol != 1:
        c["tol"] = tol
    if derive:
        c["derive"] = derive
    if ref != "mlx":
        c["ref"] = ref
    if note:
        c["note"] = note
    CASES.append(c)
    return c


def each_dtype(op, make, params=None, dtypes=ALL, suffix="", **kw):
    for d in dtypes:
        case(op, make(d), params, name=TAG[d] + suffix, **kw)


# Non-contiguous variants: (dtype, view kind) pairs tried per op (a dtype MLX rejects is skipped).
VIEWS = [("float32", "T"), ("float32", "S"), ("float32", "R"), ("float32", "B"), ("float16", "T"),
         ("bfloat16", "S"), ("int32", "B"), ("uint8", "R"), ("bool", "T"), ("complex64", "S")]
SPECIAL_DTYPES = ["float32", "float16", "bfloat16", "complex64"]
LONG_DTYPES = ["float32", "float16", "bfloat16"]

MIXED = [("int32", "float32"), ("uint8", "int8"), ("bool", "float16"), ("float16", "bfloat16"), ("int64", "uint64"),
         ("uint32", "int32"), ("bool", "int8"), ("float32", "complex64"), ("uint64", "float32"), ("int16", "uint16"),
         ("bfloat16", "float32"), ("float64", "float16")]

IDX_DTYPES = ["uint8", "uint16", "uint32", "uint64", "int8", "int16", "int32", "int64"]


def I(shape, hi, dtype="int32", neg=False, view=None, seed=0, unique=False):
    """An index array in [0, hi) (or [-hi, hi) when neg)."""
    rng = np.random.default_rng(seed + hi * 7 + len(shape))
    n = int(np.prod(shape)) if shape else 1
    if unique:  # no repeats along the last axis
        k = shape[-1] if shape else 1
        v = np.concatenate([rng.permutation(hi)[:k] for _ in range(n // max(k, 1))]) if n else np.zeros(0, int)
    else:
        v = rng.integers(-hi if neg else 0, hi, n)
    return A(shape, dtype, data=v.reshape(shape), view=view)


def spd(n, batch=(), seed=0):
    rng = np.random.default_rng(seed)
    a = rng.uniform(-1, 1, tuple(batch) + (n, n))
    return np.round(a @ np.swapaxes(a, -1, -2) + n * np.eye(n), 3)


def well(shape, seed=0):
    rng = np.random.default_rng(seed)
    a = np.round(rng.uniform(-1, 1, shape), 3)
    if shape[-1] == shape[-2]:
        a = a + 3 * np.eye(shape[-1])
    return a
