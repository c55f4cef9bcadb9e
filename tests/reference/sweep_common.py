"""Reference sweep, shared pieces: dtypes, .npy writing, input values and views (see gen_sweep.py)."""

import hashlib
import math
import os

import numpy as np
import mlx.core as mx

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "sweep")

ALL = ["bool", "uint8", "uint16", "uint32", "uint64", "int8", "int16", "int32", "int64",
       "float16", "bfloat16", "float32", "float64", "complex64"]
INTS = ["uint8", "uint16", "uint32", "uint64", "int8", "int16", "int32", "int64"]
FLOATS = ["float16", "bfloat16", "float32", "float64"]
TAG = {"bool": "b", "uint8": "u8", "uint16": "u16", "uint32": "u32", "uint64": "u64", "int8": "i8",
       "int16": "i16", "int32": "i32", "int64": "i64", "float16": "f16", "bfloat16": "bf16",
       "float32": "f32", "float64": "f64", "complex64": "c64"}
MXD = {n: getattr(mx, "bool_" if n == "bool" else n) for n in ALL}
DNAME = {v: k for k, v in MXD.items()}
DESCR = {"bool": "|b1", "uint8": "|u1", "uint16": "<u2", "uint32": "<u4", "uint64": "<u8", "int8": "|i1",
         "int16": "<i2", "int32": "<i4", "int64": "<i8", "float16": "<f2", "bfloat16": "<V2",
         "float32": "<f4", "float64": "<f8", "complex64": "<c8"}

# Tolerances of inexact outputs, by output dtype (scaled per case by `tol`).
# MLX's CPU computes many float64 ops (exp, log, softmax, conv, norms, ...) with float32 accuracy, so its
# float64 outputs are compared at about float32 precision.
TOL = {"float16": (2e-3, 2e-3), "bfloat16": (1.6e-2, 1.6e-2), "float32": (2e-5, 2e-6),
       "complex64": (2e-5, 2e-6), "float64": (1e-6, 1e-6)}


def is_int(d):
    return d in INTS


def is_float(d):
    return d in FLOATS


def is_inexact(d):
    return d in FLOATS or d == "complex64"


# ---------------------------------------------------------------- files

written = {}


def npy_bytes(a):
    a = mx.contiguous(a) if a.ndim else a
    d = DNAME[a.dtype]
    if d == "bfloat16":
        raw = np.array(a.view(mx.uint16)).tobytes()
    else:
        raw = np.ascontiguousarray(np.array(a)).tobytes()
    shape = tuple(int(s) for s in a.shape)
    # A compact (still standard) header, so most files need one 64-byte header block. (MLX's own
    # reader wants the space after 'descr': and ", " between dimensions.)
    sh = "(" + ", ".join(str(s) for s in shape) + ("," if len(shape) == 1 else "") + ")"
    header = "{'descr': '%s','fortran_order':False,'shape':%s}" % (DESCR[d], sh)
    pad = (64 - (10 + len(header) + 1) % 64) % 64
    header = header + " " * pad + "\n"
    return b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header.encode() + raw


def store(a):
    b = npy_bytes(a)
    name = hashlib.sha1(b).hexdigest()[:12]  # the file is <name>.npy
    if name not in written:
        written[name] = b
    return name


# ---------------------------------------------------------------- input values

DOMAINS = {
    # float range, signed int range, unsigned int range
    "any": ((-3.0, 3.0), (-9, 9), (0, 18)),
    "small": ((-1.5, 1.5), (-3, 3), (0, 4)),
    "pos": ((0.2, 4.0), (1, 9), (1, 9)),
    "unit": ((-0.9, 0.9), (-1, 1), (0, 1)),
    "ge1": ((1.1, 4.0), (1, 4), (1, 4)),
    "nonzero": ((0.5, 3.0), (1, 9), (1, 9)),  # sign is random for signed types
    "shift": ((0.0, 7.0), (0, 7), (0, 7)),
    "prob": ((0.0, 1.0), (0, 1), (0, 1)),
    "cast": ((0.0, 100.0), (0, 100), (0, 100)),  # values every dtype holds (casts)
}

SPECIAL = [math.nan, math.inf, -math.inf, 0.0, -0.0, 0.5, -0.5, 1.0, -1.0, 2.5, -3.75, 100.0]


def gen_values(shape, dtype, dom, rng):
    n = int(np.prod(shape)) if len(shape) else 1
    if dom == "distinct":  # no ties (sorting); fits every dtype but bool
        v = rng.permutation(n).astype(np.float64)
        if dtype not in ("uint8", "uint16", "uint32", "uint64"):
            v = v - n // 2
        if is_inexact(dtype):
            v = v * 0.5
        if dtype == "complex64":
            v = v + 0j
        return v.reshape(shape)
    if dom == "special":
        if dtype == "complex64":  # complex(), not re + 1j * im: 1j * inf has a NaN real part
            return np.array([complex(SPECIAL[i % len(SPECIAL)], SPECIAL[(i * 5 + 3) % len(SPECIAL)])
                             for i in range(n)]).reshape(shape)
        return np.array([SPECIAL[i % len(SPECIAL)] for i in range(n)], dtype=np.float64).reshape(shape)
    (flo, fhi), (slo, shi), (ulo, uhi) = DOMAINS[dom]
    if dtype == "bool":
        if dom in ("nonzero", "pos", "ge1"):  # a divisor: True only (division by False is undefined)
            return np.ones(shape, dtype=bool)
        return rng.integers(0, 2, n).astype(bool).reshape(shape)
    if is_int(dtype):
        lo, hi = (ulo, uhi) if dtype.startswith("u") else (slo, shi)
        v = rng.integers(lo, hi + 1, n)
        if dom == "nonzero" and not dtype.startswith("u"):
            v = v * rng.choice([-1, 1], n)
        return v.reshape(shape)
    v = rng.uniform(flo, fhi, n)
    if dom == "nonzero":
        v = v * rng.choice([-1, 1], n)
    v = np.round(v, 3)
    if dtype == "complex64":
        w = np.round(rng.uniform(flo, fhi, n), 3)
        if dom in ("pos", "ge1"):
            w = w * 0.25
        v = v + 1j * w
    return v.reshape(shape)


def to_mx(v, dtype):
    v = np.asarray(v)
    if dtype == "complex64":
        return mx.array(v.astype(np.complex64))
    if dtype == "bool":
        return mx.array(v.astype(bool))
    if is_int(dtype):
        return mx.array(v.astype(getattr(np, dtype)))
    if dtype == "float64":
        return mx.array(v.astype(np.float32)).astype(mx.float64)
    if dtype == "float16":  # numpy's conversion: MLX's own turns NaN into a signaling float16 NaN (0x7d00)
        return mx.array(v.astype(np.float16))
    return mx.array(v.astype(np.float32)).astype(MXD[dtype])


class A:
    """An array input: logical shape, dtype, value domain (or explicit data) and optional view kind:
    'T' transposed, 'S' strided slice (offset 1, step 2), 'R' reversed last axis, 'B' broadcast."""

    def __init__(self, shape, dtype="float32", dom="any", view=None, data=None):
        self.shape = list(shape)
        self.dtype = dtype
        self.dom = dom
        self.view = view
        self.data = data


def make_input(spec, rng):
    shape = spec.shape
    data = spec.data if spec.data is not None else gen_values(shape, spec.dtype, spec.dom, rng)
    data = np.asarray(data).reshape(shape)
    kind = spec.view
    r = len(shape)
    if kind == "T" and r < 2:
        kind = "S"
    if kind is None or r == 0:
        base = to_mx(data, spec.dtype)
        return base, None, base
    if kind == "T":
        perm = list(range(r))[::-1]
        inv = np.argsort(perm)
        base_np = np.transpose(data, inv)
        view = {"kind": "transpose", "axes": perm}
    elif kind == "S":  # offset 1 on every axis, step 2 on the last (kept small: the base is stored)
        bshape = [d + 1 for d in shape[:-1]] + [2 * shape[-1] + 1]
        base_np = np.zeros(bshape, dtype=data.dtype)
        if data.size:
            base_np[...] = data.reshape(-1)[0]
        idx = tuple(slice(1, 1 + d) for d in shape[:-1]) + (slice(1, 1 + 2 * shape[-1], 2),)
        base_np[idx] = data
        view = {"kind": "slice", "start": [1] * r, "stop": [1 + d for d in shape[:-1]] + [1 + 2 * shape[-1]],
                "strides": [1] * (r - 1) + [2]}
    elif kind == "R":
        d = shape[-1]
        base_np = data[..., ::-1].copy()
        view = {"kind": "slice", "start": [0] * (r - 1) + [d - 1], "stop": list(shape[:-1]) + [-d - 1],
                "strides": [1] * (r - 1) + [-1]}
    elif kind == "B":
        ax = next((i for i, d in enumerate(shape) if d > 1), 0)
        base_np = np.take(data, [0], axis=ax) if shape[ax] > 0 else data
        view = {"kind": "broadcast", "shape": list(shape)}
    else:
        raise ValueError(kind)
    base = to_mx(base_np, spec.dtype)
    return base, view, apply_view(base, view)


def view_code(v):
    """The manifest's short form of a view, given the base's shape: "T" (reverse the axes), "S" (start 1 on
    every axis, stop at the base's end, step 2 on the last axis), "R" (the last axis reversed) or
    ["B", shape] (broadcast to shape)."""
    if v["kind"] == "transpose":
        return "T"
    if v["kind"] == "broadcast":
        return ["B", v["shape"]]
    return "R" if v["strides"][-1] < 0 else "S"


def apply_view(a, v):
    if v["kind"] == "transpose":
        return mx.transpose(a, v["axes"])
    if v["kind"] == "slice":
        idx = []
        for s, e, k, n in zip(v["start"], v["stop"], v["strides"], a.shape):
            if k < 0 and e < 0:
                e = e + n
                idx.append(slice(s, e if e >= 0 else None, k))
            else:
                idx.append(slice(s, e, k))
        return a[tuple(idx)]
    if v["kind"] == "broadcast":
        return mx.broadcast_to(a, v["shape"])
    raise ValueError(v)
