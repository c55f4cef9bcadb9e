#!/usr/bin/env python3
"""Reference sweep: one table of cases covering every kiln primitive, with outputs from real MLX 0.30.1.

Run with the python3 that has `mlx` 0.30.1 (CPU) and numpy:

    python3 tests/reference/gen_sweep.py            # rewrites tests/reference/sweep/

Each case names an op by its MLX python name (kiln-only ops have a `kiln.` prefix or are noted), its
array inputs (small, deterministic), its non-array parameters and, per input, an optional view: the
stored .npy is then the *base* array and the test builds the input from it (transpose, strided slice,
reversed slice or broadcast), so the kernel sees strides. Every dtype MLX accepts is tried (a dtype
MLX rejects is skipped: the case list is what MLX does). Outputs are written by MLX, except where the
case says `"ref": "numpy"` (an independent numpy computation, used where MLX has no python API for
the op or where MLX 0.30.1 is known to be wrong).

Files are named by the hash of their content, so equal arrays are stored once. The manifest
(sweep/manifest.json) lists, per case: name, op, params, inputs (a file name, or [file, view] with
view as view_code() writes it),
outputs (file names), exact (inexact outputs bit for bit) or tol (scales the per-dtype tolerances of
TOL below, which test_sweep.cpp repeats), derive (a post-processing both sides apply before
comparing, for outputs defined only up to sign, order or permutation), ref and note (where the
reference is not MLX's output), or error (MLX rejects the call: kiln must throw). File names are
the first 12 hex digits of the file's SHA-1, without ".npy".
"""

import hashlib
import json
import math
import os
import shutil
import sys

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
        v = np.array([SPECIAL[i % len(SPECIAL)] for i in range(n)], dtype=np.float64)
        if dtype == "complex64":
            v = v + 1j * np.array([SPECIAL[(i * 5 + 3) % len(SPECIAL)] for i in range(n)])
        return v.reshape(shape)
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


# ---------------------------------------------------------------- the MLX side of every op
# fn(inputs, params) -> array or list of arrays. The C++ table in tests/unit/test_sweep.cpp mirrors it.

def D(p, k="dtype"):
    return MXD[p[k]] if p.get(k) is not None else None


def opt_axes(p, k="axes"):
    a = p.get(k)
    return a if a is None else list(a)


OPS = {}

UNARY = ["abs", "negative", "sign", "square", "floor", "ceil", "logical_not", "bitwise_invert",
         "conjugate", "real", "imag", "exp", "expm1", "log1p", "sin", "cos", "tan", "sinh", "cosh", "tanh",
         "arcsin", "arccos", "arctan", "arcsinh", "arccosh", "arctanh", "sigmoid", "erf", "erfinv", "log",
         "log2", "log10", "sqrt", "rsqrt", "reciprocal", "degrees", "radians", "isnan", "isinf", "isfinite",
         "isposinf", "isneginf", "stop_gradient"]
for _n in UNARY:
    OPS[_n] = (lambda f: lambda x, p: f(x[0]))(getattr(mx, _n))
OPS["round"] = lambda x, p: mx.round(x[0], p.get("decimals", 0))
OPS["kiln.copy"] = lambda x, p: mx.array(x[0])  # kiln's copy(): a Copy node; the value is the input
OPS["astype"] = lambda x, p: x[0].astype(D(p))
OPS["view"] = lambda x, p: x[0].view(D(p))
OPS["nan_to_num"] = lambda x, p: mx.nan_to_num(x[0], p.get("nan", 0.0), p.get("posinf"), p.get("neginf"))

BINARY = ["add", "subtract", "multiply", "divide", "floor_divide", "remainder", "power", "maximum", "minimum",
          "arctan2", "logaddexp", "equal", "not_equal", "greater", "greater_equal", "less", "less_equal",
          "logical_and", "logical_or", "bitwise_and", "bitwise_or", "bitwise_xor", "left_shift", "right_shift"]
for _n in BINARY:
    OPS[_n] = (lambda f: lambda x, p: f(x[0], x[1]))(getattr(mx, _n))
OPS["divmod"] = lambda x, p: list(mx.divmod(x[0], x[1]))
OPS["array_equal"] = lambda x, p: mx.array_equal(x[0], x[1], equal_nan=p.get("equal_nan", False))
OPS["isclose"] = lambda x, p: mx.isclose(x[0], x[1], rtol=p["rtol"], atol=p["atol"], equal_nan=p["equal_nan"])
OPS["allclose"] = lambda x, p: mx.allclose(x[0], x[1], rtol=p["rtol"], atol=p["atol"], equal_nan=p["equal_nan"])
OPS["where"] = lambda x, p: mx.where(x[0], x[1], x[2])
OPS["clip"] = lambda x, p: mx.clip(x[0], x[1], x[2])

for _n in ["all", "any", "sum", "prod", "max", "min", "mean", "logsumexp"]:
    OPS[_n] = (lambda f: lambda x, p: f(x[0], axis=opt_axes(p), keepdims=p.get("keepdims", False)))(getattr(mx, _n))
for _n in ["var", "std"]:
    OPS[_n] = (lambda f: lambda x, p: f(x[0], axis=opt_axes(p), keepdims=p.get("keepdims", False),
                                        ddof=p.get("ddof", 0)))(getattr(mx, _n))
for _n in ["argmin", "argmax"]:
    OPS[_n] = (lambda f: lambda x, p: f(x[0], axis=p.get("axis"), keepdims=p.get("keepdims", False)))(getattr(mx, _n))
OPS["softmax"] = lambda x, p: mx.softmax(x[0], axis=opt_axes(p), precise=p.get("precise", False))
for _n in ["cumsum", "cumprod", "cummax", "cummin", "logcumsumexp"]:
    OPS[_n] = (lambda f: lambda x, p: f(x[0], axis=p.get("axis"), reverse=p.get("reverse", False),
                                        inclusive=p.get("inclusive", True)))(getattr(mx, _n))

# shapes and views
OPS["reshape"] = lambda x, p: mx.reshape(x[0], p["shape"])
OPS["flatten"] = lambda x, p: mx.flatten(x[0], p.get("start_axis", 0), p.get("end_axis", -1))
OPS["unflatten"] = lambda x, p: mx.unflatten(x[0], p["axis"], p["shape"])
OPS["squeeze"] = lambda x, p: mx.squeeze(x[0], opt_axes(p))
OPS["expand_dims"] = lambda x, p: mx.expand_dims(x[0], p["axes"])
OPS["transpose"] = lambda x, p: mx.transpose(x[0], opt_axes(p))
OPS["swapaxes"] = lambda x, p: mx.swapaxes(x[0], p["axis1"], p["axis2"])
OPS["moveaxis"] = lambda x, p: mx.moveaxis(x[0], p["source"], p["destination"])
OPS["broadcast_to"] = lambda x, p: mx.broadcast_to(x[0], p["shape"])
OPS["broadcast_arrays"] = lambda x, p: list(mx.broadcast_arrays(*x))
OPS["as_strided"] = lambda x, p: mx.as_strided(x[0], p["shape"], p["strides"], p["offset"])
OPS["contiguous"] = lambda x, p: mx.contiguous(x[0], p.get("allow_col_major", False))
OPS["atleast_1d"] = lambda x, p: mx.atleast_1d(x[0])
OPS["atleast_2d"] = lambda x, p: mx.atleast_2d(x[0])
OPS["atleast_3d"] = lambda x, p: mx.atleast_3d(x[0])


def _static_slice(a, p):
    idx = []
    for s, e, k in zip(p["start"], p["stop"], p["strides"]):
        idx.append(slice(s, e, k))
    return tuple(idx)


OPS["slice"] = lambda x, p: x[0][_static_slice(x[0], p)]  # kiln slice(a, start, stop, strides)
OPS["slice_dynamic"] = lambda x, p: mx.slice(x[0], x[1], p["axes"], p["slice_size"])


def _slice_update(x, p):
    out = mx.array(x[0])
    out[_static_slice(x[0], p)] = x[1]
    return out


OPS["slice_update"] = _slice_update
OPS["slice_update_dynamic"] = lambda x, p: mx.slice_update(x[0], x[1], x[2], p["axes"])
OPS["split"] = lambda x, p: list(mx.split(x[0], p["indices"], axis=p.get("axis", 0)))
OPS["concatenate"] = lambda x, p: mx.concatenate(x, axis=p.get("axis", 0))
OPS["stack"] = lambda x, p: mx.stack(x, axis=p.get("axis", 0))
OPS["tile"] = lambda x, p: mx.tile(x[0], p["reps"])
OPS["repeat"] = lambda x, p: mx.repeat(x[0], p["repeats"], p.get("axis"))
OPS["roll"] = lambda x, p: mx.roll(x[0], p["shift"], p.get("axis"))
OPS["pad"] = lambda x, p: mx.pad(x[0], [tuple(w) for w in p["pad_width"]], mode=p.get("mode", "constant"),
                                 constant_values=x[1] if len(x) > 1 else 0)
OPS["meshgrid"] = lambda x, p: list(mx.meshgrid(*x, sparse=p.get("sparse", False), indexing=p.get("indexing", "xy")))
OPS["tril"] = lambda x, p: mx.tril(x[0], p.get("k", 0))
OPS["triu"] = lambda x, p: mx.triu(x[0], p.get("k", 0))
# creation
OPS["arange"] = lambda x, p: mx.arange(p["start"], p["stop"], p["step"], dtype=D(p))
OPS["linspace"] = lambda x, p: mx.linspace(p["start"], p["stop"], p["num"], dtype=D(p))
# (python's mx.full ignores dtype for an array fill value; MLX's C++ full(shape, vals, dtype) casts)
OPS["full"] = lambda x, p: mx.full(p["shape"], x[0].astype(D(p)))
OPS["zeros"] = lambda x, p: mx.zeros(p["shape"], dtype=D(p))
OPS["ones"] = lambda x, p: mx.ones(p["shape"], dtype=D(p))
OPS["zeros_like"] = lambda x, p: mx.zeros_like(x[0])
OPS["ones_like"] = lambda x, p: mx.ones_like(x[0])
OPS["eye"] = lambda x, p: mx.eye(p["n"], p.get("m"), p.get("k", 0), dtype=D(p))
OPS["identity"] = lambda x, p: mx.identity(p["n"], dtype=D(p))
OPS["tri"] = lambda x, p: mx.tri(p["n"], p.get("m"), p.get("k", 0), dtype=D(p))

# indexing
OPS["take"] = lambda x, p: mx.take(x[0], x[1], axis=p.get("axis"))
OPS["take_along_axis"] = lambda x, p: mx.take_along_axis(x[0], x[1], axis=p.get("axis"))
OPS["put_along_axis"] = lambda x, p: mx.put_along_axis(x[0], x[1], x[2], axis=p.get("axis"))


def _gather(x, p):
    """kiln gather(a, indices, axes, slice_sizes): out[i..., w...] = a[idx_0[i], ..., window w]."""
    a, idx, axes, ss = x[0], x[1:], p["axes"], p["slice_sizes"]
    idx = mx.broadcast_arrays(*idx) if len(idx) > 1 else idx
    ishape = list(idx[0].shape) if idx else []
    a_np = np.array(a.astype(mx.float32)) if a.dtype == mx.bfloat16 else np.array(a)
    ids = [np.array(i).astype(np.int64).reshape(-1) for i in idx]
    out = np.zeros([int(np.prod(ishape))] + list(ss), dtype=a_np.dtype)
    for n in range(out.shape[0]):
        sl = [slice(0, s) for s in ss]
        for j, ax in enumerate(axes):
            st = ids[j][n] % a.shape[ax]
            sl[ax] = slice(st, st + ss[ax])
        out[n] = a_np[tuple(sl)]
    out = out.reshape(ishape + list(ss))
    if a.dtype == mx.bfloat16:
        return mx.array(out.astype(np.float32)).astype(a.dtype)
    return mx.array(out, dtype=a.dtype)


OPS["gather"] = _gather


def _scatter_at(kind):
    def f(x, p):
        a, idx, upd, axes = x[0], x[1:-1], x[-1], p["axes"]
        # kiln's updates are idx_shape + a window of rank(a) dims; MLX's .at[] takes idx_shape + the
        # dims a keeps (the indexed axes, which must lead here, dropped).
        nidx = len(idx)
        assert axes == list(range(nidx)), "python reference needs leading axes"
        ishape = list(mx.broadcast_arrays(*idx)[0].shape) if nidx > 1 else list(idx[0].shape)
        u = upd.reshape(ishape + list(upd.shape[len(ishape) + nidx:]))
        at = a.at[tuple(idx)]
        if kind == "none":
            out = mx.array(a)
            out[tuple(idx)] = u
            return out
        return {"add": at.add, "prod": at.multiply, "max": at.maximum, "min": at.minimum}[kind](u)
    return f


for _k in ["none", "add", "prod", "max", "min"]:
    OPS["scatter" + ("" if _k == "none" else "_" + _k)] = _scatter_at(_k)


def _scatter_add_axis(x, p):
    a = np.array(x[0].astype(mx.float32) if x[0].dtype == mx.bfloat16 else x[0]).copy()
    idx = np.array(x[1]).astype(np.int64)
    upd = np.array(x[2].astype(mx.float32) if x[2].dtype == mx.bfloat16 else x[2])
    ax = p["axis"] % a.ndim
    for pos in np.ndindex(*idx.shape):
        t = list(pos)
        t[ax] = idx[pos] % a.shape[ax]
        a[tuple(t)] += upd[pos]
    return mx.array(a.astype(np.float32)).astype(x[0].dtype) if x[0].dtype == mx.bfloat16 else mx.array(a, dtype=x[0].dtype)


OPS["kiln.scatter_add_axis"] = _scatter_add_axis


def _masked_scatter(x, p):
    out = mx.array(x[0])
    out[x[1]] = x[2]
    return out


OPS["masked_scatter"] = _masked_scatter

# sorting
OPS["sort"] = lambda x, p: mx.sort(x[0], axis=p.get("axis", -1))
OPS["argsort"] = lambda x, p: mx.argsort(x[0], axis=p.get("axis", -1))
OPS["partition"] = lambda x, p: mx.partition(x[0], p["kth"], axis=p.get("axis", -1))
OPS["argpartition"] = lambda x, p: mx.argpartition(x[0], p["kth"], axis=p.get("axis", -1))
OPS["topk"] = lambda x, p: mx.topk(x[0], p["k"], axis=p.get("axis", -1))

# products
OPS["matmul"] = lambda x, p: mx.matmul(x[0], x[1])
OPS["addmm"] = lambda x, p: mx.addmm(x[0], x[1], x[2], alpha=p.get("alpha", 1.0), beta=p.get("beta", 1.0))


def _bmm(x, p):
    n = p.get("masks", "")
    it = iter(x[2:])
    mo = next(it) if "o" in n else None
    ml = next(it) if "l" in n else None
    mr = next(it) if "r" in n else None
    return mx.block_masked_mm(x[0], x[1], p["block_size"], mo, ml, mr)


OPS["block_masked_mm"] = _bmm
OPS["gather_mm"] = lambda x, p: mx.gather_mm(x[0], x[1], x[2] if len(x) > 2 else None,
                                             x[3] if len(x) > 3 else None, sorted_indices=p.get("sorted", False))
OPS["hadamard_transform"] = lambda x, p: mx.hadamard_transform(x[0], p.get("scale"))
OPS["tensordot"] = lambda x, p: mx.tensordot(x[0], x[1], axes=p["axes"])
OPS["inner"] = lambda x, p: mx.inner(x[0], x[1])
OPS["outer"] = lambda x, p: mx.outer(x[0], x[1])
OPS["kron"] = lambda x, p: mx.kron(x[0], x[1])

# convolutions
OPS["conv1d"] = lambda x, p: mx.conv1d(x[0], x[1], p.get("stride", 1), p.get("padding", 0), p.get("dilation", 1),
                                       p.get("groups", 1))
OPS["conv2d"] = lambda x, p: mx.conv2d(x[0], x[1], tuple(p.get("stride", [1, 1])), tuple(p.get("padding", [0, 0])),
                                       tuple(p.get("dilation", [1, 1])), p.get("groups", 1))
OPS["conv3d"] = lambda x, p: mx.conv3d(x[0], x[1], tuple(p.get("stride", [1] * 3)), tuple(p.get("padding", [0] * 3)),
                                       tuple(p.get("dilation", [1] * 3)), p.get("groups", 1))
OPS["conv_transpose1d"] = lambda x, p: mx.conv_transpose1d(x[0], x[1], p.get("stride", 1), p.get("padding", 0),
                                                           p.get("dilation", 1), p.get("output_padding", 0),
                                                           p.get("groups", 1))
OPS["conv_transpose2d"] = lambda x, p: mx.conv_transpose2d(
    x[0], x[1], tuple(p.get("stride", [1, 1])), tuple(p.get("padding", [0, 0])), tuple(p.get("dilation", [1, 1])),
    tuple(p.get("output_padding", [0, 0])), p.get("groups", 1))
OPS["conv_transpose3d"] = lambda x, p: mx.conv_transpose3d(
    x[0], x[1], tuple(p.get("stride", [1] * 3)), tuple(p.get("padding", [0] * 3)), tuple(p.get("dilation", [1] * 3)),
    tuple(p.get("output_padding", [0] * 3)), p.get("groups", 1))
OPS["conv_general"] = lambda x, p: mx.conv_general(
    x[0], x[1], p.get("stride", 1), (p.get("padding_lo", [0]), p.get("padding_hi", [0])),
    p.get("kernel_dilation", 1), p.get("input_dilation", 1), p.get("groups", 1), p.get("flip", False))

# fft
for _n in ["fft", "ifft", "rfft", "irfft"]:
    OPS["fft." + _n] = (lambda f: lambda x, p: f(x[0], n=p.get("n"), axis=p.get("axis", -1)))(getattr(mx.fft, _n))
for _n in ["fft2", "ifft2", "fftn", "ifftn", "rfft2", "irfft2", "rfftn", "irfftn"]:
    OPS["fft." + _n] = (lambda f, d: lambda x, p: f(x[0], s=p.get("s"), axes=p.get("axes", d)))(
        getattr(mx.fft, _n), [-2, -1] if _n.endswith("2") else None)
OPS["fft.fftshift"] = lambda x, p: mx.fft.fftshift(x[0], axes=p.get("axes"))
OPS["fft.ifftshift"] = lambda x, p: mx.fft.ifftshift(x[0], axes=p.get("axes"))

# linalg
def _ord(o):  # JSON has no infinity: "inf" / "-inf" stand for them
    return {"inf": math.inf, "-inf": -math.inf}.get(o, o) if isinstance(o, str) else o


OPS["linalg.norm"] = lambda x, p: mx.linalg.norm(x[0], _ord(p.get("ord")), axis=p.get("axis"),
                                                 keepdims=p.get("keepdims", False))
OPS["linalg.qr"] = lambda x, p: list(mx.linalg.qr(x[0], stream=mx.cpu))
OPS["linalg.svd"] = lambda x, p: (list(mx.linalg.svd(x[0], compute_uv=True, stream=mx.cpu)) if p.get("compute_uv", True)
                                  else mx.linalg.svd(x[0], compute_uv=False, stream=mx.cpu))
OPS["linalg.inv"] = lambda x, p: mx.linalg.inv(x[0], stream=mx.cpu)
OPS["linalg.tri_inv"] = lambda x, p: mx.linalg.tri_inv(x[0], upper=p.get("upper", False), stream=mx.cpu)
OPS["linalg.cholesky"] = lambda x, p: mx.linalg.cholesky(x[0], upper=p.get("upper", False), stream=mx.cpu)
OPS["linalg.cholesky_inv"] = lambda x, p: mx.linalg.cholesky_inv(x[0], upper=p.get("upper", False), stream=mx.cpu)
OPS["linalg.pinv"] = lambda x, p: mx.linalg.pinv(x[0], stream=mx.cpu)
OPS["linalg.lu"] = lambda x, p: list(mx.linalg.lu(x[0], stream=mx.cpu))
OPS["linalg.lu_factor"] = lambda x, p: list(mx.linalg.lu_factor(x[0], stream=mx.cpu))
OPS["linalg.solve"] = lambda x, p: mx.linalg.solve(x[0], x[1], stream=mx.cpu)
OPS["linalg.solve_triangular"] = lambda x, p: mx.linalg.solve_triangular(x[0], x[1], upper=p.get("upper", False),
                                                                         stream=mx.cpu)
OPS["linalg.cross"] = lambda x, p: mx.linalg.cross(x[0], x[1], axis=p.get("axis", -1))
OPS["linalg.eig"] = lambda x, p: list(mx.linalg.eig(x[0], stream=mx.cpu))
OPS["linalg.eigvals"] = lambda x, p: mx.linalg.eigvals(x[0], stream=mx.cpu)
OPS["linalg.eigh"] = lambda x, p: list(mx.linalg.eigh(x[0], UPLO=p.get("UPLO", "L"), stream=mx.cpu))
OPS["linalg.eigvalsh"] = lambda x, p: mx.linalg.eigvalsh(x[0], UPLO=p.get("UPLO", "L"), stream=mx.cpu)

# quantization
OPS["quantize"] = lambda x, p: list(mx.quantize(x[0], p.get("group_size"), p.get("bits"), mode=p.get("mode", "affine")))
OPS["dequantize"] = lambda x, p: mx.dequantize(x[0], x[1], x[2] if len(x) > 2 else None, p.get("group_size"),
                                               p.get("bits"), mode=p.get("mode", "affine"), dtype=D(p))
OPS["quantized_matmul"] = lambda x, p: mx.quantized_matmul(
    x[0], x[1], x[2], x[3] if p.get("mode", "affine") == "affine" else None, transpose=p.get("transpose", True),
    group_size=p.get("group_size"), bits=p.get("bits"), mode=p.get("mode", "affine"))


def _gather_qmm(x, p):
    aff = p.get("mode", "affine") == "affine"
    rest = x[4:] if aff else x[3:]
    return mx.gather_qmm(x[0], x[1], x[2], x[3] if aff else None, rest[0], rest[1],
                         transpose=p.get("transpose", True), group_size=p.get("group_size"), bits=p.get("bits"),
                         mode=p.get("mode", "affine"), sorted_indices=p.get("sorted", False))


OPS["gather_qmm"] = _gather_qmm

# random (keys are inputs)
OPS["random.split"] = lambda x, p: mx.random.split(x[0], p.get("num", 2))
OPS["random.uniform"] = lambda x, p: mx.random.uniform(x[1], x[2], p["shape"], dtype=D(p), key=x[0])
OPS["random.normal"] = lambda x, p: mx.random.normal(p["shape"], dtype=D(p), loc=p.get("loc", 0.0),
                                                     scale=p.get("scale", 1.0), key=x[0])
OPS["random.randint"] = lambda x, p: mx.random.randint(x[1], x[2], p["shape"], dtype=D(p), key=x[0])
OPS["random.bernoulli"] = lambda x, p: mx.random.bernoulli(x[1], p.get("shape"), key=x[0])
OPS["random.truncated_normal"] = lambda x, p: mx.random.truncated_normal(x[1], x[2], p["shape"], dtype=D(p), key=x[0])
OPS["random.gumbel"] = lambda x, p: mx.random.gumbel(p["shape"], dtype=D(p), key=x[0])
OPS["random.categorical"] = lambda x, p: mx.random.categorical(x[1], axis=p.get("axis", -1),
                                                               num_samples=p.get("num_samples"), key=x[0])
OPS["random.laplace"] = lambda x, p: mx.random.laplace(p["shape"], dtype=D(p), loc=p.get("loc", 0.0),
                                                       scale=p.get("scale", 1.0), key=x[0])
OPS["random.permutation"] = lambda x, p: mx.random.permutation(x[1] if len(x) > 1 else p["n"], axis=p.get("axis", 0),
                                                               key=x[0])
OPS["random.multivariate_normal"] = lambda x, p: mx.random.multivariate_normal(x[1], x[2], p["shape"], dtype=D(p),
                                                                               key=x[0], stream=mx.cpu)

# fast (MLX's CPU build computes these with its unfused fallback)
OPS["fast.rms_norm"] = lambda x, p: mx.fast.rms_norm(x[0], x[1] if len(x) > 1 else None, p["eps"])
OPS["fast.layer_norm"] = lambda x, p: mx.fast.layer_norm(x[0], x[1] if p.get("w") else None,
                                                         x[-1] if p.get("b") else None, p["eps"])


def _rope(x, p):
    off = x[1] if p.get("offset_array") else p.get("offset", 0)
    freqs = x[-1] if p.get("freqs") else None
    return mx.fast.rope(x[0], p["dims"], traditional=p["traditional"], base=None if freqs is not None else p["base"],
                        scale=p["scale"], offset=off, freqs=freqs)


OPS["fast.rope"] = _rope


def _rope_inverse(x, p):
    # kiln fast::detail::rope(forward = false): the inverse rotation, which is RoPE's VJP.
    _, vjp = mx.vjp(lambda a: _rope([a] + x[1:-1], p), [mx.zeros_like(x[0])], [x[-1]])
    return vjp[0]


OPS["kiln.rope_inverse"] = _rope_inverse


def _sdpa(x, p):
    mode = p.get("mask", "")
    it = iter(x[3:])
    mask = "causal" if mode == "causal" else (next(it) if mode == "array" else None)
    sinks = next(it) if p.get("sinks") else None
    return mx.fast.scaled_dot_product_attention(x[0], x[1], x[2], scale=p["scale"], mask=mask, sinks=sinks)


OPS["fast.scaled_dot_product_attention"] = _sdpa


def _sdpa_lse(x, p):
    """The log-sum-exp output of SDPA (kiln scaled_dot_product_attention_with_lse), unfused."""
    q, k, v = x[0], x[1], x[2]
    rep = q.shape[1] // k.shape[1]
    k = mx.repeat(k, rep, axis=1)
    s = (q.astype(mx.float32) * p["scale"]) @ mx.swapaxes(k.astype(mx.float32), -1, -2)
    if p.get("mask") == "causal":
        lq, lk = s.shape[-2], s.shape[-1]
        keep = mx.arange(lk)[None, :] <= (mx.arange(lq)[:, None] + lk - lq)
        s = mx.where(keep, s, -mx.inf)
    return [_sdpa(x, p), mx.logsumexp(s, axis=-1, keepdims=True)]


OPS["kiln.sdpa_with_lse"] = _sdpa_lse


def _rms_norm_vjp(x, p):
    f = lambda a, w: mx.fast.rms_norm(a, w, p["eps"])
    _, g = mx.vjp(f, [x[0], x[1]], [x[2]])
    return [g[0], g[1]]


def _layer_norm_vjp(x, p):
    f = lambda a, w, b: mx.fast.layer_norm(a, w, b, p["eps"])
    _, g = mx.vjp(f, [x[0], x[1], x[2]], [x[3]])
    return list(g)


OPS["kiln.rms_norm_vjp"] = _rms_norm_vjp
OPS["kiln.layer_norm_vjp"] = _layer_norm_vjp

# graph utilities
OPS["depends"] = lambda x, p: list(mx.depends(x[:p["n"]], x[p["n"]:]))
# kiln-only nodes that MLX emits only inside shapeless traces; their values are plain broadcasts / counts.
OPS["kiln.broadcast_axes"] = lambda x, p: [mx.broadcast_to(x[0], _bcast_ignore(x, p["ignore_axes"]))]
OPS["kiln.number_of_elements"] = lambda x, p: mx.array(
    _noe(x[0].shape, p["axes"], p["inverted"]), dtype=D(p))


def _bcast_ignore(x, ignore):
    k = len(ignore)
    shapes = [list(a.shape[:len(a.shape) - k]) for a in x]
    out = list(np.broadcast_shapes(*[tuple(s) for s in shapes]))
    return out + list(x[0].shape[len(x[0].shape) - k:])


def _noe(shape, axes, inverted):
    n = 1
    for a in axes:
        n *= shape[a]
    return 1.0 / n if inverted else n


# RandomBits: no python API in MLX; numpy threefry-2x32 (20 rounds, Random123), laid out per key as
# MLX's CPU backend does (checked against mx.random.split, which is RandomBits of width 4).
def _rotl(x, r):
    return ((x << np.uint32(r)) | (x >> np.uint32(32 - r))).astype(np.uint32)


def threefry2x32(k0, k1, c0, c1):
    rot = [13, 15, 26, 6, 17, 29, 16, 24]
    ks = [np.uint32(k0), np.uint32(k1), np.uint32(np.uint32(k0) ^ np.uint32(k1) ^ np.uint32(0x1BD11BDA))]
    with np.errstate(over="ignore"):
        x0 = (np.asarray(c0, dtype=np.uint32) + ks[0]).astype(np.uint32)
        x1 = (np.asarray(c1, dtype=np.uint32) + ks[1]).astype(np.uint32)
        for i in range(5):
            for j in range(4):
                x0 = (x0 + x1).astype(np.uint32)
                x1 = _rotl(x1, rot[(i % 2) * 4 + j])
                x1 = (x1 ^ x0).astype(np.uint32)
            x0 = (x0 + ks[(i + 1) % 3]).astype(np.uint32)
            x1 = (x1 + ks[(i + 2) % 3] + np.uint32(i + 1)).astype(np.uint32)
    return x0, x1


def random_bits(key, shape, width):
    lead = [] if np.array(key).ndim == 1 else [int(np.array(key).shape[0])]
    key = np.array(key).reshape(-1, 2)
    n = int(np.prod(shape)) if shape else 1
    nbytes = n * width
    words = (nbytes + 3) // 4
    half, odd = words // 2, words % 2
    outs = []
    for k0, k1 in key:
        w = np.zeros(words, dtype=np.uint32)
        c = np.arange(half, dtype=np.uint32)
        x, y = threefry2x32(k0, k1, c, c + np.uint32(half + odd))
        w[:half] = x
        w[half + odd:] = y
        if odd:
            w[half] = threefry2x32(k0, k1, np.uint32(half), np.uint32(0))[0]
        dt = {1: np.uint8, 2: np.uint16, 4: np.uint32}[width]
        outs.append(w.view(np.uint8)[:nbytes].view(dt))
    return np.stack(outs).reshape(lead + list(shape))


_k = np.array(mx.random.key(7))
assert (random_bits(_k, [3, 2], 4) == np.array(mx.random.split(mx.random.key(7), 3))).all()
OPS["random.bits"] = lambda x, p: mx.array(random_bits(np.array(x[0]), p["shape"], p.get("width", 4)))


# ---------------------------------------------------------------- derivations (both sides)

def _derive_partition(x, p, outs, arg):
    ax = p.get("axis", -1)
    v = mx.take_along_axis(x[0], outs[0], axis=ax) if arg else outs[0]
    kth = p["kth"]
    n = v.shape[ax]
    k = kth % n
    vk = mx.take(v, mx.array([k]), axis=ax)
    lo = mx.take(v, mx.arange(0, k), axis=ax)
    hi = mx.take(v, mx.arange(k, n), axis=ax)
    ok = mx.all(lo <= vk) & mx.all(hi >= vk)
    return [mx.sort(v, axis=ax), vk, ok]


def _derive_eig(outs, with_vectors):
    w = outs[0]
    key = mx.real(w) + 1e-3 * mx.imag(w)
    order = mx.argsort(key, axis=-1)
    res = [mx.take_along_axis(w, order, axis=-1)]
    if with_vectors:
        v = mx.abs(outs[1])
        res.append(mx.take_along_axis(v, mx.broadcast_to(mx.expand_dims(order, -2), v.shape), axis=-1))
    return res


def _derive_svd(outs):
    u, s, vt = outs
    k = s.shape[-1]
    return [mx.abs(u[..., :, :k]), s, mx.abs(vt[..., :k, :])]


DERIVE = {
    "abs": lambda x, p, o: [mx.abs(t) for t in o],
    "sorted": lambda x, p, o: [mx.sort(t, axis=p.get("axis", -1)) for t in o],
    "partition": lambda x, p, o: _derive_partition(x, p, o, False),
    "argpartition": lambda x, p, o: _derive_partition(x, p, o, True),
    "eig": lambda x, p, o: _derive_eig(o, True),
    "eigvals": lambda x, p, o: _derive_eig(o, False),
    "svd": lambda x, p, o: _derive_svd(o),
}

# ---------------------------------------------------------------- where MLX 0.30.1 is not the reference
# name -> (why, reference). Mirrored by kExpectedDifferences in tests/unit/test_sweep.cpp.

def _np_in(a):
    return np.array(a.astype(mx.float32)) if a.dtype == mx.bfloat16 else np.array(a)


def _complex_truth(x):  # NumPy: a complex number is true when either part is non-zero
    return np.array(x) != 0


def _nan_to_num_np(x, p):
    a = _np_in(x[0]).astype(np.float64)
    big = {mx.float16: 65504.0, mx.bfloat16: 3.3895313892515355e38}[x[0].dtype]
    out = np.nan_to_num(a, nan=p.get("nan", 0.0), posinf=p.get("posinf", big), neginf=p.get("neginf", -big))
    return mx.array(out.astype(np.float32)).astype(x[0].dtype)


def _bf16_sum_np(x, p):
    return mx.array(np.array(_np_in(x[0]), dtype=np.float64).sum().astype(np.float32)).astype(mx.bfloat16)


def _quantize_f32(x, p):
    return list(mx.quantize(x[0].astype(mx.float32), p["group_size"], p["bits"], mode=p["mode"]))


_COMPLEX_BOOL = "MLX 0.30.1 takes a complex number's truth from its real part only (0+1j is false); kiln, as NumPy"
_MLX_CRASH = "MLX 0.30.1 crashes (SIGFPE) on this empty input; the reference is the empty result"
EXPECTED_DIFF = {
    "logical_not_c64_special": (_COMPLEX_BOOL, lambda x, p: mx.array(~_complex_truth(x[0]))),
    "logical_and_c64_special": (_COMPLEX_BOOL, lambda x, p: mx.array(_complex_truth(x[0]) & _complex_truth(x[1]))),
    "logical_or_c64_special": (_COMPLEX_BOOL, lambda x, p: mx.array(_complex_truth(x[0]) | _complex_truth(x[1]))),
    "astype_c64_special_to_b": (_COMPLEX_BOOL, lambda x, p: mx.array(_complex_truth(x[0]))),
    "any_c64_special": (_COMPLEX_BOOL, lambda x, p: mx.array(_complex_truth(x[0]).any())),
    "all_c64_special": (_COMPLEX_BOOL, lambda x, p: mx.array(_complex_truth(x[0]).all())),
    "where_c64cond_special": (_COMPLEX_BOOL, lambda x, p: mx.array(np.where(_complex_truth(x[0]), np.array(x[1]),
                                                                            np.array(x[2])))),
    "nan_to_num_f16": ("MLX 0.30.1 maps +-inf to 0 in float16 (its limits lookup); kiln to +-65504, as NumPy",
                       _nan_to_num_np),
    "nan_to_num_bf16": ("MLX 0.30.1 maps +-inf to 0 in bfloat16 (its limits lookup); kiln to the largest finite "
                        "value, as NumPy", _nan_to_num_np),
    "sum_bf16_all": ("MLX 0.30.1 accumulates a bfloat16 sum in bfloat16 (off by 0.06 here); kiln in float, rounding "
                     "once", _bf16_sum_np),
    "quantize_mxfp8_f64": ("MLX 0.30.1 quantizes float64 input wrongly in mxfp8 mode (dequantizing gives errors of 6); "
                           "the reference is the float32 quantization of the same values", _quantize_f32),
    "quantize_nvfp4_f64": ("MLX 0.30.1 quantizes float64 input wrongly in nvfp4 mode (dequantizing gives errors of 8); "
                           "the reference is the float32 quantization of the same values", _quantize_f32),
    "dequantize_affine_empty": ("MLX 0.30.1 rejects an empty dequantize ('[reshape] Cannot infer the shape of an "
                                "empty array'); kiln returns the empty result", lambda x, p: mx.zeros([0, 64])),
}
# MLX 0.30.1 fails inside its CPU evaluation for these (an error thrown from its worker thread, which
# can crash the process); kiln computes them, checked against numpy or MLX's float32 path.
def _np_to(out, dtype):
    out = np.asarray(out, dtype=np.float64)
    if dtype == mx.bfloat16:
        return mx.array(out.astype(np.float32)).astype(dtype)
    return mx.array(out, dtype=dtype) if dtype == mx.float64 else mx.array(out.astype(np.float32)).astype(dtype)


def _f64(a):
    return np.array(a.astype(mx.float32)).astype(np.float64)


def _gather_mm_np(x, p):
    a, b = _f64(x[0]), _f64(x[1])
    li, ri = np.array(x[2]).astype(int), np.array(x[3]).astype(int)
    out = np.stack([a[i] @ b[j] for i, j in zip(li.reshape(-1), ri.reshape(-1))]).reshape(li.shape + (a.shape[-2], b.shape[-1]))
    return _np_to(out, x[0].dtype)


def _bmm_np(x, p):
    out = _f64(x[0]) @ _f64(x[1])
    m, bs = np.array(x[2]), p["block_size"]
    for i in range(m.shape[0]):
        for j in range(m.shape[1]):
            if not m[i, j]:
                out[i * bs:(i + 1) * bs, j * bs:(j + 1) * bs] = 0
    return _np_to(out, x[0].dtype)


def _hadamard_np(x, p):
    n = x[0].shape[-1]
    h = np.array([[1.0]])
    while h.shape[0] < n:
        h = np.block([[h, h], [h, -h]])
    return _np_to(_f64(x[0]) @ h.T * (p["scale"] if p.get("scale") is not None else n ** -0.5), x[0].dtype)


def _via_f32(fn):
    def f(x, p):
        outs = fn([a.astype(mx.float32) if a.dtype == mx.float64 else a for a in x], p)
        outs = outs if isinstance(outs, list) else [outs]
        return [o.astype(mx.float64) if o.dtype == mx.float32 else o for o in outs]
    return f


def _unsupported(msg):
    def f(x, p):
        raise ValueError(msg)
    return f


_MLX_EVAL = "MLX 0.30.1 fails inside its CPU evaluation ({}); kiln computes it, checked against {}"
for _d in ["f16", "bf16", "f64"]:
    EXPECTED_DIFF["gather_mm_" + _d] = (_MLX_EVAL.format("only float32 is supported", "numpy"), _gather_mm_np)
    EXPECTED_DIFF["block_masked_mm_" + _d] = (_MLX_EVAL.format("only float32 is supported", "numpy"), _bmm_np)
EXPECTED_DIFF["hadamard_transform_f64"] = (_MLX_EVAL.format("no float64 kernel", "numpy"), _hadamard_np)
for _op in ["conv_transpose1d", "conv_transpose2d"]:
    EXPECTED_DIFF[_op + "_f64"] = (_MLX_EVAL.format("no float64 kernel", "MLX's float32 result"), None)
for _b in [3, 4, 8]:
    EXPECTED_DIFF[f"quantize_affine_f64_g64_b{_b}"] = (_MLX_EVAL.format("float64 is not supported",
                                                                         "MLX's float32 result"), None)
EXPECTED_DIFF["divmod_b"] = (_MLX_EVAL.format("crashes", "numpy"), lambda x, p: [
    mx.array(np.array(x[0]) & np.array(x[1])), mx.zeros(x[0].shape, mx.bool_)])
EXPECTED_DIFF["divmod_b_Ta"] = EXPECTED_DIFF["divmod_b"]
for _op in ["erf", "erfinv"]:
    for _v in ["", "_S", "_special", "_empty"]:
        EXPECTED_DIFF[f"{_op}_c64{_v}"] = ("MLX 0.30.1 aborts (std::terminate) on complex64; kiln rejects it",
                                          _unsupported(f"[{_op}] Does not support complex64."))

EXPECTED_DIFF["quantized_matmul_affine_bf16_g64_b8_t1"] = (
    "MLX 0.30.1 accumulates a bfloat16 quantized_matmul in bfloat16 (0.27 off here); kiln in float, rounding once",
    lambda x, p: _qmm_numpy(x, p))
for _op in ["cumsum", "cumprod", "cummax", "cummin", "logcumsumexp"]:
    EXPECTED_DIFF[_op + "_f32_empty"] = (_MLX_CRASH, lambda x, p: mx.zeros([3, 0, 5], mx.float32))
    EXPECTED_DIFF[_op + "_i32_empty_flat"] = (_MLX_CRASH, lambda x, p: mx.zeros([0], mx.int32))
EXPECTED_DIFF["sort_f32_empty"] = (_MLX_CRASH.replace("SIGFPE", "SIGSEGV"), lambda x, p: mx.zeros([3, 0]))
EXPECTED_DIFF["argsort_f32_empty"] = (_MLX_CRASH.replace("SIGFPE", "SIGSEGV"), lambda x, p: mx.zeros([3, 0], mx.uint32))
EXPECTED_DIFF["quantized_matmul_affine_empty"] = (_MLX_CRASH, lambda x, p: mx.zeros([0, 16]))


# Ops whose float outputs must match bit for bit (they move, select or compare values, or round).
EXACT = set(["abs", "negative", "sign", "floor", "ceil", "round", "logical_not", "bitwise_invert", "conjugate",
             "real", "imag", "isnan", "isinf", "isfinite", "isposinf", "isneginf", "stop_gradient", "kiln.copy",
             "astype", "view", "nan_to_num", "maximum", "minimum", "equal", "not_equal", "greater",
             "greater_equal", "less", "less_equal", "logical_and", "logical_or", "bitwise_and", "bitwise_or",
             "bitwise_xor", "left_shift", "right_shift", "array_equal", "isclose", "allclose", "where", "clip",
             "all", "any", "max", "min", "argmin", "argmax", "cummax", "cummin",
             "sort", "argsort", "partition", "argpartition", "topk", "take", "take_along_axis", "put_along_axis",
             "gather", "scatter", "scatter_max", "scatter_min", "masked_scatter", "square"])
EXACT |= set(k for k in OPS if k in ["reshape", "flatten", "unflatten", "squeeze", "expand_dims", "transpose",
                                     "swapaxes", "moveaxis", "broadcast_to", "broadcast_arrays", "as_strided",
                                     "contiguous", "atleast_1d", "atleast_2d", "atleast_3d", "slice",
                                     "slice_dynamic", "slice_update", "slice_update_dynamic", "split",
                                     "concatenate", "stack", "tile", "repeat", "roll", "pad", "meshgrid", "tril",
                                     "triu", "full", "zeros", "ones", "zeros_like", "ones_like", "eye", "identity",
                                     "tri", "depends", "kiln.broadcast_axes", "kiln.number_of_elements",
                                     "fft.fftshift", "fft.ifftshift", "random.bits", "random.split",
                                     "random.permutation", "quantize"])

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


# ---------------------------------------------------------------- the cases

# Non-contiguous variants: (dtype, view kind) pairs tried per op (a dtype MLX rejects is skipped).
VIEWS = [("float32", "T"), ("float32", "S"), ("float32", "R"), ("float32", "B"), ("float16", "T"),
         ("bfloat16", "S"), ("int32", "B"), ("uint8", "R"), ("bool", "T"), ("complex64", "S")]
SPECIAL_DTYPES = ["float32", "float16", "bfloat16", "complex64"]
LONG_DTYPES = ["float32", "float16", "bfloat16"]

UNARY_DOM = {"exp": "small", "expm1": "small", "log1p": "pos", "tan": "unit", "arcsin": "unit", "arccos": "unit",
             "arccosh": "ge1", "arctanh": "unit", "erfinv": "unit", "log": "pos", "log2": "pos", "log10": "pos",
             "sqrt": "pos", "rsqrt": "pos", "reciprocal": "nonzero", "sinh": "small", "cosh": "small"}
# Looser tolerances where the math library and MLX's approximations may differ by a few ulps.
UNARY_TOL = {"erfinv": 5, "tan": 5, "arccosh": 4, "arctanh": 4, "expm1": 3, "log1p": 3, "sinh": 3, "cosh": 3,
             "power": 4, "logaddexp": 3}


def gen_unary():
    for op in UNARY + ["round"]:
        dom = UNARY_DOM.get(op, "any")
        tol = UNARY_TOL.get(op, 1)
        each_dtype(op, lambda d: [A([3, 4], d, dom)], tol=tol)
        for d, v in VIEWS:
            case(op, [A([3, 4], d, dom, view=v)], name=f"{TAG[d]}_{v}", tol=tol)
        case(op, [A([0, 4], "float32", dom)], name="f32_empty")
        case(op, [A([2, 0, 3], "int32", dom)], name="i32_empty")
        case(op, [A([0, 3], "complex64", dom)], name="c64_empty")
        case(op, [A([], "float32", dom)], name="f32_scalar")
        for d in LONG_DTYPES:  # vector loops plus a tail
            case(op, [A([35], d, dom)], name=TAG[d] + "_long", tol=tol)
        for d in SPECIAL_DTYPES:
            case(op, [A([12], d, "special")], name=TAG[d] + "_special", tol=tol)
    case("round", [A([3, 4], "float32")], {"decimals": 2}, name="f32_dec2")
    case("round", [A([3, 4], "float16")], {"decimals": 1}, name="f16_dec1", tol=1)
    case("round", [A([3, 4], "int32")], {"decimals": -1}, name="i32_decm1")
    for d in ALL:
        for t in ALL:
            case("astype", [A([3, 4], d, "cast")], {"dtype": t}, name=f"{TAG[d]}_to_{TAG[t]}")
    for d in ["float32", "float16", "float64", "bfloat16"]:
        for t in ALL:
            case("astype", [A([12], d, "special")], {"dtype": t}, name=f"{TAG[d]}_special_to_{TAG[t]}") \
                if t in ("bool", "float16", "bfloat16", "float32", "float64", "complex64") else None
    for t in ["bool", "float16", "bfloat16", "float32", "float64", "complex64"]:  # (NaN / inf to int: undefined)
        case("astype", [A([12], "complex64", "special")], {"dtype": t}, name=f"c64_special_to_{TAG[t]}")
    case("astype", [A([3, 4], "float32", view="T")], {"dtype": "float16"}, name="f32_T_to_f16")
    case("astype", [A([3, 4], "int32", view="S")], {"dtype": "float32"}, name="i32_S_to_f32")
    case("astype", [A([67], "float32")], {"dtype": "bfloat16"}, name="f32_long_to_bf16")
    case("astype", [A([0, 3], "float32")], {"dtype": "int8"}, name="f32_empty_to_i8")
    for d in ALL:
        for t in ALL:
            case("view", [A([2, 8], d, "cast")], {"dtype": t}, name=f"{TAG[d]}_to_{TAG[t]}")
    case("view", [A([3, 4], "float32", view="T")], {"dtype": "int32"}, name="f32_T_to_i32")
    case("view", [A([0, 4], "float32")], {"dtype": "uint8"}, name="f32_empty_to_u8")
    case("view", [A([3, 4], "int32", view="B")], {"dtype": "int16"}, name="i32_B_to_i16")
    for d in ALL:
        case("kiln.copy", [A([3, 4], d)], name=TAG[d])
    case("kiln.copy", [A([3, 4], "float32", view="T")], name="f32_T")
    case("kiln.copy", [A([0, 4], "float32")], name="f32_empty")
    for d in SPECIAL_DTYPES:
        case("nan_to_num", [A([12], d, "special")], name=TAG[d])
        case("nan_to_num", [A([12], d, "special")], {"nan": 1.5, "posinf": 7.0, "neginf": -7.0}, name=TAG[d] + "_vals")
    case("nan_to_num", [A([3, 4], "int32")], name="i32")
    case("nan_to_num", [A([3, 4], "float32", view="T")], name="f32_T")


BINARY_DOM = {"divide": ("any", "nonzero"), "floor_divide": ("any", "nonzero"), "remainder": ("any", "nonzero"),
              "divmod": ("any", "nonzero"), "power": ("pos", "shift"), "left_shift": ("any", "shift"),
              "right_shift": ("any", "shift")}
MIXED = [("int32", "float32"), ("uint8", "int8"), ("bool", "float16"), ("float16", "bfloat16"), ("int64", "uint64"),
         ("uint32", "int32"), ("bool", "int8"), ("float32", "complex64"), ("uint64", "float32"), ("int16", "uint16"),
         ("bfloat16", "float32"), ("float64", "float16")]


def gen_binary():
    for op in BINARY + ["divmod"]:
        da, db = BINARY_DOM.get(op, ("any", "any"))
        tol = UNARY_TOL.get(op, 1)
        each_dtype(op, lambda d: [A([3, 4], d, da), A([3, 4], d, db)], tol=tol)
        for a, b in MIXED[:9]:
            case(op, [A([3, 4], a, da), A([3, 4], b, db)], tol=tol)
        case(op, [A([3, 1], "float32", da), A([1, 4], "float32", db)], name="f32_bcast", tol=tol)
        case(op, [A([], "int32", da), A([2, 3], "int32", db)], name="i32_scalar_left", tol=tol)
        case(op, [A([2, 3], "float16", da), A([], "float16", db)], name="f16_scalar_right", tol=tol)
        case(op, [A([4], "float32", da), A([3, 2, 4], "float32", db)], name="f32_rank_bcast", tol=tol)
        for d, v in VIEWS:
            case(op, [A([3, 4], d, da, view=v), A([3, 4], d, db)], name=f"{TAG[d]}_{v}a", tol=tol)
        case(op, [A([3, 4], "float32", da), A([3, 4], "float32", db, view="S")], name="f32_Sb", tol=tol)
        case(op, [A([3, 4], "int32", da, view="T"), A([3, 4], "int32", db, view="R")], name="i32_TaRb", tol=tol)
        case(op, [A([5, 6], "float32", da, view="T"), A([5, 6], "float32", db, view="T")], name="f32_TT", tol=tol)
        case(op, [A([0, 4], "float32", da), A([0, 4], "float32", db)], name="f32_empty", tol=tol)
        case(op, [A([0, 4], "int32", da), A([1, 4], "int32", db)], name="i32_empty_bcast", tol=tol)
        for d in LONG_DTYPES:
            case(op, [A([35], d, da), A([35], d, db)], name=TAG[d] + "_long", tol=tol)
        for d in SPECIAL_DTYPES:
            s = np.array(SPECIAL)
            case(op, [A([12, 1], d, "special"), A([1, 12], d, data=s.reshape(1, 12))], name=TAG[d] + "_special",
                 tol=tol)
    for eq in [False, True]:
        for d in ALL:
            case("array_equal", [A([3, 4], d, "small"), A([3, 4], d, "small")], {"equal_nan": eq},
                 name=f"{TAG[d]}_{int(eq)}")
        case("array_equal", [A([12], "float32", "special"), A([12], "float32", "special")], {"equal_nan": eq},
             name=f"f32_special_same_{int(eq)}")
    v = gen_values([3, 4], "float32", "any", np.random.default_rng(1))
    case("array_equal", [A([3, 4], "float32", data=v), A([3, 4], "float32", data=v, view="T")], {},
         name="f32_equal_T")
    case("array_equal", [A([3, 4], "float32", data=v), A([3, 5], "float32")], {}, name="f32_shape_mismatch")
    case("array_equal", [A([3, 4], "int32", data=v.astype(int)), A([3, 4], "float32", data=v.astype(int))], {},
         name="i32_f32_equal")
    case("array_equal", [A([0, 4], "float32"), A([0, 4], "float32")], {}, name="f32_empty")
    for op in ["isclose", "allclose"]:
        for d in ALL:
            case(op, [A([3, 4], d, "small"), A([3, 4], d, "small")], {"rtol": 0.5, "atol": 0.1, "equal_nan": False})
        for eq in [False, True]:
            case(op, [A([12, 1], "float32", "special"), A([1, 12], "float32", data=np.array(SPECIAL).reshape(1, 12))],
                 {"rtol": 1e-5, "atol": 1e-8, "equal_nan": eq}, name=f"f32_special_{int(eq)}")
        case(op, [A([3, 4], "float32", view="T"), A([3, 4], "float32", view="S")],
             {"rtol": 0.3, "atol": 0.3, "equal_nan": False}, name="f32_TS")
        case(op, [A([0, 4], "float32"), A([0, 4], "float32")], {"rtol": 1e-5, "atol": 1e-8, "equal_nan": False},
             name="f32_empty")
    # where / clip
    for d in ALL:
        case("where", [A([3, 4], "bool"), A([3, 4], d), A([3, 4], d)], name=TAG[d])
        case("clip", [A([3, 4], d, "any"), A([], d, "small"), A([3, 4], d, "pos")], name=TAG[d])
    for a, b in MIXED[:6]:
        case("where", [A([3, 4], "bool"), A([3, 4], a), A([3, 4], b)], name=f"{TAG[a]}_{TAG[b]}")
    case("where", [A([3, 1], "bool"), A([1, 4], "float32"), A([], "float32")], name="f32_bcast")
    case("where", [A([3, 4], "bool", view="T"), A([3, 4], "float32", view="S"), A([3, 4], "float32", view="B")],
         name="f32_TSB")
    case("where", [A([3, 4], "int32"), A([3, 4], "float32"), A([3, 4], "float32")], name="i32cond")
    case("where", [A([0, 4], "bool"), A([0, 4], "float32"), A([1, 4], "float32")], name="f32_empty")
    case("where", [A([67], "bool"), A([67], "float32"), A([67], "float32")], name="f32_long")
    case("where", [A([12], "bool"), A([12], "float32", "special"), A([12], "float32", "special")],
         name="f32_special")
    case("where", [A([12], "complex64", "special"), A([12], "float32"), A([12], "float32")], name="c64cond_special")
    case("clip", [A([3, 4], "float32", view="T"), A([4], "float32", "small"), A([3, 1], "float32", "pos")],
         name="f32_T_bcast")
    case("clip", [A([12], "float32", "special"), A([], "float32", "small"), A([], "float32", "pos")],
         name="f32_special")
    case("clip", [A([0, 2], "float32"), A([], "float32", "small"), A([], "float32", "pos")], name="f32_empty")


REDUCE_DOM = {"prod": "small", "logsumexp": "any"}


def gen_reduce():
    for op in ["all", "any", "sum", "prod", "max", "min", "mean", "logsumexp", "var", "std"]:
        dom = REDUCE_DOM.get(op, "any")
        each_dtype(op, lambda d: [A([2, 3, 4], d, dom)], {"axes": [-1]})
        each_dtype(op, lambda d: [A([2, 3, 4], d, dom)], {"axes": None}, suffix="_all",
                   dtypes=["float32", "int32", "float16", "bfloat16", "bool", "uint8", "complex64", "int64"])
        for axes, kd, nm in [([1], False, "ax1"), ([0, 2], False, "ax02"), ([-3, -1], True, "axm3m1_keep"),
                             ([0, 1, 2], True, "axall_keep"), ([], False, "noaxes"), ([0], False, "ax0")]:
            case(op, [A([2, 3, 4], "float32", dom)], {"axes": axes, "keepdims": kd}, name="f32_" + nm)
        case(op, [A([2, 3, 4], "int32", dom)], {"axes": [0, 2], "keepdims": True}, name="i32_ax02_keep")
        for d, v in VIEWS:
            case(op, [A([2, 3, 4], d, dom, view=v)], {"axes": [0] if v in "TB" else [1, 2]}, name=f"{TAG[d]}_{v}")
        case(op, [A([3, 0, 5], "float32", dom)], {"axes": [1]}, name="f32_empty_reduced")
        case(op, [A([3, 0, 5], "float32", dom)], {"axes": [2]}, name="f32_empty_kept")
        case(op, [A([0], "int32", dom)], {"axes": None}, name="i32_empty_all")
        case(op, [A([], "float32", dom)], {"axes": None}, name="f32_scalar")
        for d in ["float32", "bfloat16", "int32"]:
            case(op, [A([67], d, dom)], {"axes": None}, name=TAG[d] + "_long", tol=4)
            case(op, [A([4, 33], d, dom)], {"axes": [0]}, name=TAG[d] + "_cols", tol=4)
        case(op, [A([67, 5], "float32", dom, view="T")], {"axes": [1]}, name="f32_longT", tol=4)
        case(op, [A([12], "float32", "special")], {"axes": None}, name="f32_special")
        case(op, [A([12], "complex64", "special")], {"axes": None}, name="c64_special")
        case(op, [A([4, 3], "float32", data=np.array(SPECIAL).reshape(4, 3))], {"axes": [0]}, name="f32_special_ax0")
    for op in ["var", "std"]:
        case(op, [A([2, 3, 4], "float32")], {"axes": [1], "ddof": 1}, name="f32_ddof1")
        case(op, [A([2, 3, 4], "float16")], {"axes": None, "ddof": 2}, name="f16_ddof2")
    for op in ["argmin", "argmax"]:
        each_dtype(op, lambda d: [A([2, 3, 4], d, "small")], {"axis": -1})
        case(op, [A([2, 3, 4], "float32", "small")], {"axis": None}, name="f32_flat")
        case(op, [A([2, 3, 4], "int32", "small")], {"axis": 1, "keepdims": True}, name="i32_ax1_keep")
        case(op, [A([2, 3, 4], "float32", "small")], {"axis": -3}, name="f32_axm3")
        for d, v in VIEWS:
            case(op, [A([2, 3, 4], d, "small", view=v)], {"axis": 0 if v in "TB" else 2}, name=f"{TAG[d]}_{v}")
        case(op, [A([3, 0, 5], "float32")], {"axis": 2}, name="f32_empty_kept")
        case(op, [A([12], "float32", "special")], {"axis": 0}, name="f32_special")
        case(op, [A([4, 3], "float32", data=np.array(SPECIAL).reshape(4, 3))], {"axis": 0}, name="f32_special_ax0")
        case(op, [A([67], "float32", "small")], {"axis": 0}, name="f32_long")
        case(op, [A([5, 67], "int32", "small")], {"axis": 0}, name="i32_cols")
    each_dtype("softmax", lambda d: [A([2, 3, 4], d)], {"axes": [-1]})
    for axes, pr, nm in [([0, 2], False, "ax02"), (None, False, "all"), ([-1], True, "precise"), ([1], False, "ax1")]:
        case("softmax", [A([2, 3, 4], "float32")], {"axes": axes, "precise": pr}, name="f32_" + nm)
        case("softmax", [A([2, 3, 4], "float16")], {"axes": axes, "precise": pr}, name="f16_" + nm)
    for d, v in VIEWS:
        case("softmax", [A([2, 3, 4], d, view=v)], {"axes": [-1]}, name=f"{TAG[d]}_{v}")
    case("softmax", [A([3, 0], "float32")], {"axes": [-1]}, name="f32_empty")
    case("softmax", [A([0, 3], "float32")], {"axes": [-1]}, name="f32_empty_rows")
    case("softmax", [A([12], "float32", "special")], {"axes": [-1]}, name="f32_special")
    case("softmax", [A([4, 3], "float32", data=np.array(SPECIAL).reshape(4, 3))], {"axes": [0]}, name="f32_special_ax0")
    for d in LONG_DTYPES:
        case("softmax", [A([3, 67], d)], {"axes": [-1]}, name=TAG[d] + "_long", tol=2)
    for op in ["cumsum", "cumprod", "cummax", "cummin", "logcumsumexp"]:
        dom = "small" if op == "cumprod" else "any"
        each_dtype(op, lambda d: [A([2, 3, 4], d, dom)], {"axis": -1})
        for ax, rev, inc, nm in [(0, False, True, "ax0"), (1, True, True, "ax1_rev"), (-1, False, False, "excl"),
                                 (-2, True, False, "axm2_rev_excl"), (None, False, True, "flat"),
                                 (None, True, False, "flat_rev_excl")]:
            case(op, [A([2, 3, 4], "float32", dom)], {"axis": ax, "reverse": rev, "inclusive": inc},
                 name="f32_" + nm, tol=2)
            case(op, [A([2, 3, 4], "int32", dom)], {"axis": ax, "reverse": rev, "inclusive": inc}, name="i32_" + nm)
        for d, v in VIEWS:
            case(op, [A([2, 3, 4], d, dom, view=v)], {"axis": 0 if v in "TB" else -1}, name=f"{TAG[d]}_{v}", tol=2)
        case(op, [A([3, 0, 5], "float32", dom)], {"axis": 1}, name="f32_empty")  # (EXPECTED_DIFF: MLX crashes)
        case(op, [A([0], "int32", dom)], {"axis": None}, name="i32_empty_flat")
        case(op, [A([12], "float32", "special")], {"axis": 0}, name="f32_special")
        case(op, [A([12], "float32", "special")], {"axis": 0, "reverse": True}, name="f32_special_rev")
        for d in LONG_DTYPES:
            case(op, [A([67], d, dom if op != "cumprod" else "unit")], {"axis": 0}, name=TAG[d] + "_long", tol=8)
            case(op, [A([6, 67], d, dom if op != "cumprod" else "unit")], {"axis": 0}, name=TAG[d] + "_cols", tol=8)


def gen_shape():
    X = lambda d, v=None, s=(2, 3, 4): [A(list(s), d, view=v)]
    each_dtype("reshape", lambda d: X(d, "T"), {"shape": [4, -1]})
    case("reshape", X("float32"), {"shape": [6, 4]}, name="f32_plain")
    case("reshape", X("float32", "S"), {"shape": [-1]}, name="f32_S")
    case("reshape", X("int32", "B"), {"shape": [3, 8]}, name="i32_B")
    case("reshape", [A([0, 3], "float32")], {"shape": [3, 0, -1]}, name="f32_empty")  # (MLX: must fail)
    case("reshape", [A([0, 3], "float32", view="T")], {"shape": [3, 1, 0]}, name="f32_empty_T")
    each_dtype("flatten", lambda d: X(d, "T"), {"start_axis": 1, "end_axis": -1})
    case("flatten", X("float32"), {"start_axis": -3, "end_axis": -2}, name="f32_neg")
    case("flatten", [A([2, 0, 3], "float32")], {}, name="f32_empty")
    case("flatten", [A([], "float32")], {}, name="f32_scalar")
    each_dtype("unflatten", lambda d: [A([2, 12], d, view="S")], {"axis": -1, "shape": [3, -1]})
    case("unflatten", [A([0, 6], "float32")], {"axis": 1, "shape": [2, 3]}, name="f32_empty")
    each_dtype("squeeze", lambda d: [A([2, 1, 3, 1], d, view="T")], {"axes": [-1, 1]})
    case("squeeze", [A([1, 3, 1], "float32")], {"axes": None}, name="f32_all")
    case("squeeze", [A([0, 1], "float32")], {"axes": [1]}, name="f32_empty")
    each_dtype("expand_dims", lambda d: X(d, "S"), {"axes": [0, -1]})
    case("expand_dims", [A([0, 2], "float32")], {"axes": [-2]}, name="f32_empty")
    each_dtype("transpose", lambda d: X(d), {"axes": [2, 0, 1]})
    case("transpose", X("float32", "S"), {"axes": [-1, 0, -2]}, name="f32_S_neg")
    case("transpose", X("float32"), {"axes": None}, name="f32_reverse")
    case("transpose", [A([2, 0, 3], "float32")], {"axes": [1, 2, 0]}, name="f32_empty")
    each_dtype("swapaxes", lambda d: X(d, "R"), {"axis1": 0, "axis2": -1})
    case("swapaxes", [A([0, 3], "float32")], {"axis1": 0, "axis2": 1}, name="f32_empty")
    each_dtype("moveaxis", lambda d: X(d, "B"), {"source": -1, "destination": 0})
    case("moveaxis", [A([2, 0, 3], "float32")], {"source": 0, "destination": -1}, name="f32_empty")
    each_dtype("broadcast_to", lambda d: [A([3, 1], d, view="S")], {"shape": [2, 3, 4]})
    case("broadcast_to", [A([], "float32")], {"shape": [2, 2]}, name="f32_scalar")
    case("broadcast_to", [A([1, 3], "float32")], {"shape": [0, 3]}, name="f32_empty")
    case("broadcast_to", [A([3, 1], "float32", view="T")], {"shape": [3, 5]}, name="f32_T")
    each_dtype("broadcast_arrays", lambda d: [A([3, 1], d), A([4], d, view="S"), A([], d)])
    case("broadcast_arrays", [A([0, 1], "float32"), A([3], "float32")], name="f32_empty")
    each_dtype("as_strided", lambda d: [A([4, 6], d)], {"shape": [3, 3], "strides": [5, 2], "offset": 1})
    case("as_strided", [A([4, 6], "float32", view="T")], {"shape": [2, 4], "strides": [1, 3], "offset": 2},
         name="f32_T")
    case("as_strided", [A([12], "float32")], {"shape": [3, 4], "strides": [0, 1], "offset": 0}, name="f32_zero_stride")
    case("as_strided", [A([12], "float32")], {"shape": [0, 4], "strides": [4, 1], "offset": 0}, name="f32_empty")
    each_dtype("contiguous", lambda d: X(d, "T"))
    case("contiguous", X("float32", "S"), {"allow_col_major": True}, name="f32_S_colmajor")
    case("contiguous", [A([3, 4], "float32", view="T")], {"allow_col_major": True}, name="f32_T_colmajor")
    case("contiguous", [A([3, 4], "float32", view="B")], name="f32_B")
    case("contiguous", [A([0, 4], "float32")], name="f32_empty")
    for op in ["atleast_1d", "atleast_2d", "atleast_3d"]:
        case(op, [A([], "float32")], name="f32_scalar")
        case(op, [A([3], "int32", view="S")], name="i32_S")
        case(op, [A([2, 3], "float16", view="T")], name="f16_T")
        case(op, [A([0], "float32")], name="f32_empty")
    # slicing
    each_dtype("slice", lambda d: [A([5, 6], d)], {"start": [1, 0], "stop": [4, 6], "strides": [2, 1]})
    case("slice", [A([5, 6], "float32", view="T")], {"start": [4, -2], "stop": [0, -7], "strides": [-1, -2]},
         name="f32_T_negstride")
    case("slice", [A([5, 6], "float32", view="S")], {"start": [-3, 1], "stop": [5, 100], "strides": [1, 3]},
         name="f32_S_negstart")
    case("slice", [A([5, 6], "int32")], {"start": [2, 0], "stop": [2, 6], "strides": [1, 1]}, name="i32_empty_out")
    case("slice", [A([0, 6], "float32")], {"start": [0, 1], "stop": [0, 5], "strides": [1, 2]}, name="f32_empty_in")
    for d in ["int32", "int8", "uint32", "int64", "uint8"]:
        case("slice_dynamic", [A([5, 6], "float32"), A([2], d, data=np.array([1, 2]))],
             {"axes": [0, 1], "slice_size": [3, 2]}, name="f32_idx" + TAG[d])
    # (MLX reads out of bounds for a negative dynamic start: no such case)
    each_dtype("slice_dynamic", lambda d: [A([5, 6], d, view="T"), A([1], "int32", data=np.array([3]))],
               {"axes": [-1], "slice_size": [5, 2]})
    case("slice_dynamic", [A([5, 6], "float32"), A([], "int32", data=np.array(2))],
         {"axes": [0], "slice_size": [2, 6]}, name="f32_scalar_start")
    case("slice_dynamic", [A([5, 6], "float32"), A([1], "int32", data=np.array([1]))],
         {"axes": [1], "slice_size": [5, 0]}, name="f32_empty")
    each_dtype("slice_update", lambda d: [A([5, 6], d), A([2, 6], d)],
               {"start": [1, 0], "stop": [5, 6], "strides": [2, 1]})
    case("slice_update", [A([5, 6], "float32", view="T"), A([3], "float32")],
         {"start": [4, 0], "stop": [-6, 6], "strides": [-2, 2]}, name="f32_T_negstride_bcast")
    case("slice_update", [A([5, 6], "float32"), A([2, 3], "int32", view="S")],
         {"start": [-2, 3], "stop": [5, 6], "strides": [1, 1]}, name="f32_i32_S")
    case("slice_update", [A([5, 6], "float32"), A([0, 6], "float32")],
         {"start": [2, 0], "stop": [2, 6], "strides": [1, 1]}, name="f32_empty")
    each_dtype("slice_update_dynamic", lambda d: [A([5, 6], d), A([2, 3], d), A([2], "int32", data=np.array([2, 1]))],
               {"axes": [0, 1]})
    case("slice_update_dynamic", [A([5, 6], "float32", view="T"), A([2], "float32", view="S"),
                                  A([1], "int64", data=np.array([3]))], {"axes": [-1]}, name="f32_T_neg")
    case("slice_update_dynamic", [A([5, 6], "float32"), A([0, 6], "float32"), A([1], "int32", data=np.array([1]))],
         {"axes": [0]}, name="f32_empty")
    each_dtype("split", lambda d: [A([6, 4], d, view="T")], {"indices": 3, "axis": 0})
    case("split", [A([6, 5], "float32")], {"indices": [1, 3], "axis": -1}, name="f32_idx_neg")
    case("split", [A([6, 5], "float32", view="S")], {"indices": [0, 2, 2, 7], "axis": 0}, name="f32_S_edges")
    case("split", [A([0, 4], "float32")], {"indices": 2, "axis": 1}, name="f32_empty")
    # joining
    each_dtype("concatenate", lambda d: [A([2, 3], d), A([2, 1], d, view="S"), A([2, 2], d, view="T")], {"axis": 1})
    for a, b in MIXED[:6]:
        case("concatenate", [A([2, 3], a), A([1, 3], b)], {"axis": 0}, name=f"{TAG[a]}_{TAG[b]}")
    case("concatenate", [A([2, 3], "float32"), A([2, 0], "float32"), A([2, 2], "float32", view="B")],
         {"axis": -1}, name="f32_empty_part")
    case("concatenate", [A([2, 3, 4], "float32", view="R"), A([2, 3, 4], "float32")], {"axis": -2}, name="f32_R")
    each_dtype("stack", lambda d: [A([2, 3], d), A([2, 3], d, view="T")], {"axis": -1})
    case("stack", [A([0, 3], "float32"), A([0, 3], "float32")], {"axis": 1}, name="f32_empty")
    case("stack", [A([2, 3], "int32", view="B"), A([2, 3], "int32")], {"axis": 0}, name="i32_B")
    each_dtype("tile", lambda d: [A([2, 3], d, view="T")], {"reps": [2, 1, 2]})
    case("tile", [A([0, 2], "float32")], {"reps": [3, 2]}, name="f32_empty")
    each_dtype("repeat", lambda d: [A([2, 3], d, view="S")], {"repeats": 2, "axis": -1})
    case("repeat", [A([2, 3], "float32")], {"repeats": 3, "axis": None}, name="f32_flat")
    case("repeat", [A([2, 3], "float32")], {"repeats": 0, "axis": 0}, name="f32_zero")
    each_dtype("roll", lambda d: [A([3, 4], d, view="T")], {"shift": 1, "axis": -1})
    case("roll", [A([3, 4], "float32")], {"shift": -5, "axis": None}, name="f32_flat_neg")
    case("roll", [A([3, 4], "float32", view="S")], {"shift": [1, -2], "axis": [0, 1]}, name="f32_S_multi")
    case("roll", [A([0, 4], "float32")], {"shift": 2, "axis": 1}, name="f32_empty")
    each_dtype("pad", lambda d: [A([2, 3], d, view="T"), A([], d, "small")], {"pad_width": [[1, 0], [2, 1]]})
    each_dtype("pad", lambda d: [A([2, 3], d, view="S")], {"pad_width": [[1, 2], [0, 1]], "mode": "edge"},
               suffix="_edge")
    case("pad", [A([0, 3], "float32"), A([], "float32")], {"pad_width": [[1, 1], [0, 0]]}, name="f32_empty")
    case("pad", [A([2, 3], "float32")], {"pad_width": [[0, 0], [0, 0]]}, name="f32_nopad")
    each_dtype("meshgrid", lambda d: [A([3], d), A([2], d, view="S")], {"indexing": "xy"})
    case("meshgrid", [A([3], "float32"), A([2], "float32"), A([4], "float32")], {"indexing": "ij"}, name="f32_ij")
    case("meshgrid", [A([3], "float32"), A([2], "float32")], {"sparse": True}, name="f32_sparse")
    case("meshgrid", [A([0], "float32"), A([2], "float32")], {}, name="f32_empty")
    for op in ["tril", "triu"]:
        each_dtype(op, lambda d: [A([4, 5], d, view="T")], {"k": 1})
        case(op, [A([2, 3, 4], "float32", view="S")], {"k": -1}, name="f32_batch_S")
        case(op, [A([0, 3], "float32")], {"k": 0}, name="f32_empty")
    # creation
    for d in ALL:
        case("arange", [], {"start": 1, "stop": 7, "step": 1.5, "dtype": d}, name=TAG[d])
        case("linspace", [], {"start": -1, "stop": 2, "num": 7, "dtype": d}, name=TAG[d], tol=2)
        case("full", [A([], d, "small")], {"shape": [2, 3], "dtype": d}, name=TAG[d])
        case("zeros", [], {"shape": [2, 3], "dtype": d}, name=TAG[d])
        case("ones", [], {"shape": [2, 3], "dtype": d}, name=TAG[d])
        case("eye", [], {"n": 3, "m": 4, "k": 1, "dtype": d}, name=TAG[d])
        case("identity", [], {"n": 3, "dtype": d}, name=TAG[d])
        case("tri", [], {"n": 3, "m": 4, "k": -1, "dtype": d}, name=TAG[d])
        case("zeros_like", [A([2, 3], d)], name=TAG[d])
        case("ones_like", [A([2, 3], d, view="T")], name=TAG[d])
    case("arange", [], {"start": 10, "stop": 0, "step": -3, "dtype": "int32"}, name="i32_neg_step")
    case("arange", [], {"start": 0, "stop": 0, "step": 1, "dtype": "float32"}, name="f32_empty")
    case("arange", [], {"start": 0.5, "stop": 2.75, "step": 0.25, "dtype": "float16"}, name="f16_frac")
    case("linspace", [], {"start": 0, "stop": 1, "num": 0, "dtype": "float32"}, name="f32_empty")
    case("linspace", [], {"start": 3, "stop": -3, "num": 1, "dtype": "float32"}, name="f32_one")
    case("full", [A([3], "float32", view="S")], {"shape": [2, 3], "dtype": "float32"}, name="f32_S_bcast")
    case("full", [A([], "float32")], {"shape": [2, 3], "dtype": "int32"}, name="f32_to_i32")
    case("full", [A([], "float32")], {"shape": [0, 3], "dtype": "float32"}, name="f32_empty")
    case("eye", [], {"n": 0, "m": 3, "k": 0, "dtype": "float32"}, name="f32_empty")
    case("eye", [], {"n": 4, "m": 3, "k": -2, "dtype": "float32"}, name="f32_negk")


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


def gen_index():
    # take (Gather)
    each_dtype("take", lambda d: [A([4, 5], d), I([3], 4)], {"axis": 0})
    for d in IDX_DTYPES:
        case("take", [A([4, 5], "float32"), I([2, 2], 5, d)], {"axis": 1}, name="f32_idx" + TAG[d])
    case("take", [A([4, 5], "float32"), I([3], 5, neg=True)], {"axis": -1}, name="f32_negidx_negaxis")
    case("take", [A([4, 5], "float32"), I([2, 3], 20)], {"axis": None}, name="f32_flat")
    case("take", [A([4, 5], "float32", view="T"), I([3], 4, view="S")], {"axis": 0}, name="f32_T_idxS")
    case("take", [A([4, 5], "int32", view="B"), I([3], 5)], {"axis": 1}, name="i32_B")
    case("take", [A([4, 5], "float16", view="R"), I([2], 5, view="B")], {"axis": -1}, name="f16_R_idxB")
    case("take", [A([4, 5], "float32"), I([0], 4)], {"axis": 0}, name="f32_empty_idx")
    case("take", [A([0, 5], "float32"), I([2], 5)], {"axis": 1}, name="f32_empty_src")
    case("take", [A([4, 5], "float32"), I([], 4)], {"axis": 0}, name="f32_scalar_idx")
    # gather (general, kiln layout); reference by numpy
    each_dtype("gather", lambda d: [A([4, 5, 3], d), I([2, 3], 4), I([2, 3], 5)],
               {"axes": [0, 1], "slice_sizes": [1, 1, 3]}, ref="numpy")
    case("gather", [A([4, 5, 3], "float32", view="T"), I([3], 3, neg=True, view="S")],
         {"axes": [2], "slice_sizes": [2, 5, 1]}, name="f32_T_negidx_window", ref="numpy")
    case("gather", [A([4, 5, 3], "int32"), I([2], 4, "uint8"), I([1], 3, "int64")],
         {"axes": [0, 2], "slice_sizes": [1, 2, 1]}, name="i32_mixed_idx", ref="numpy")
    case("gather", [A([4, 5], "float32"), I([0], 4)], {"axes": [0], "slice_sizes": [1, 5]}, name="f32_empty",
         ref="numpy")
    case("gather", [A([4, 5], "float32")], {"axes": [], "slice_sizes": [2, 3]}, name="f32_noidx", ref="numpy")
    # take_along_axis (GatherAxis), put_along_axis / scatter_add_axis (ScatterAxis)
    each_dtype("take_along_axis", lambda d: [A([3, 4], d), I([3, 2], 4)], {"axis": 1})
    for d in IDX_DTYPES:
        case("take_along_axis", [A([3, 4], "float32"), I([2, 4], 3, d)], {"axis": 0}, name="f32_idx" + TAG[d])
    case("take_along_axis", [A([3, 4], "float32", view="T"), I([1, 5], 4, neg=True)], {"axis": -1},
         name="f32_T_neg_bcast")
    case("take_along_axis", [A([3, 4], "float32", view="S"), I([3, 4], 12, view="T")], {"axis": None}, name="f32_S_flat")
    case("take_along_axis", [A([3, 4], "float32", view="S"), I([5], 12, view="R")], {"axis": None}, name="f32_S_flat1d")
    case("take_along_axis", [A([3, 4], "float32"), I([3, 0], 4)], {"axis": 1}, name="f32_empty")
    each_dtype("put_along_axis", lambda d: [A([3, 4], d), I([3, 1], 4, unique=True), A([3, 1], d)], {"axis": 1})
    case("put_along_axis", [A([3, 4], "float32", view="T"), I([1, 4], 3, neg=True), A([], "float32")],
         {"axis": -2}, name="f32_T_neg_scalarval")
    case("put_along_axis", [A([3, 4], "float32"), I([3, 0], 4), A([3, 0], "float32")], {"axis": 1}, name="f32_empty")
    case("put_along_axis", [A([3, 4], "int32", view="S"), I([3, 2], 4, "uint16", unique=True), A([3, 2], "int32", view="B")],
         {"axis": 1}, name="i32_S_u16idx")
    each_dtype("kiln.scatter_add_axis", lambda d: [A([3, 4], d), I([3, 5], 4), A([3, 5], d)], {"axis": 1},
               ref="numpy", dtypes=[d for d in ALL if d not in ("bool", "complex64")])
    case("kiln.scatter_add_axis", [A([3, 4], "float32", view="T"), I([4, 4], 3, neg=True), A([4, 4], "float32", view="S")],
         {"axis": -2}, name="f32_T_neg", ref="numpy")
    case("kiln.scatter_add_axis", [A([3, 4], "float32"), I([3, 0], 4), A([3, 0], "float32")], {"axis": 1},
         name="f32_empty", ref="numpy")
    # scatter family (Scatter); updates in kiln layout idx_shape + window
    for op in ["scatter", "scatter_add", "scatter_prod", "scatter_max", "scatter_min"]:
        uniq = op == "scatter"
        dom = "small" if op == "scatter_prod" else "any"
        each_dtype(op, lambda d: [A([5, 3], d, dom), I([4], 5, unique=uniq), A([4, 1, 3], d, dom)], {"axes": [0]})
        for d in IDX_DTYPES:
            case(op, [A([5, 3], "float32", dom), I([2], 5, d, unique=uniq), A([2, 1, 3], "float32", dom)],
                 {"axes": [0]}, name="f32_idx" + TAG[d])
        case(op, [A([4, 3, 2], "float32", dom), I([2, 2], 4, unique=uniq, seed=1), I([2, 2], 3, unique=uniq, seed=2),
                  A([2, 2, 1, 1, 2], "float32", dom)], {"axes": [0, 1]}, name="f32_2idx")
        case(op, [A([5, 3], "float32", dom, view="T"), I([3], 5, neg=True, unique=uniq, view="S"),
                  A([3, 1, 3], "float32", dom, view="B")], {"axes": [0]}, name="f32_T_neg_views")
        case(op, [A([5, 3], "int32", dom, view="S"), I([3], 5, unique=uniq), A([3, 1, 3], "int32", dom, view="R")],
             {"axes": [0]}, name="i32_S_R")
        case(op, [A([5, 3], "float32", dom), I([0], 5), A([0, 1, 3], "float32", dom)], {"axes": [0]}, name="f32_empty")
    for d in ALL:
        case("masked_scatter", [A([3, 4], d), A([3, 4], "bool"), A([12], d)], name=TAG[d])
    case("masked_scatter", [A([3, 4], "float32", view="T"), A([3, 4], "bool", view="S"), A([12], "float32", view="R")],
         name="f32_views")
    case("masked_scatter", [A([3, 4], "int32", view="B"), A([3], "bool", data=np.array([True, False, True])),
                            A([2, 4], "int32", view="T")], name="i32_rows_views")
    case("masked_scatter", [A([3, 4], "float32"), A([3, 4], "bool", data=np.zeros((3, 4), bool)), A([2], "float32")],
         name="f32_nomask")
    case("masked_scatter", [A([0, 4], "float32"), A([0, 4], "bool"), A([3], "float32")], name="f32_empty")


def gen_sort():
    for op in ["sort", "argsort"]:
        each_dtype(op, lambda d: [A([3, 5], d, "distinct")], {"axis": -1})
        case(op, [A([4, 5], "float32", "distinct")], {"axis": 0}, name="f32_ax0")
        case(op, [A([3, 5], "float32", "distinct")], {"axis": None}, name="f32_flat")
        case(op, [A([3, 6], "int32", "small")], {"axis": -1}, name="i32_ties")
        case(op, [A([3, 6], "float32", "small")], {"axis": 0}, name="f32_ties_ax0")
        for d, v in VIEWS:
            case(op, [A([4, 5], d, "distinct", view=v)], {"axis": 0 if v in "TB" else -1}, name=f"{TAG[d]}_{v}")
        case(op, [A([3, 0], "float32")], {"axis": -1}, name="f32_empty")  # (EXPECTED_DIFF: MLX crashes)
        case(op, [A([12], "float32", "special")], {"axis": 0}, name="f32_special")
        if op == "sort":  # (MLX's complex argsort orders NaNs arbitrarily: no index case)
            case(op, [A([12], "complex64", "special")], {"axis": 0}, name="c64_special")
        case(op, [A([67], "float32", "distinct")], {"axis": 0}, name="f32_long")
        case(op, [A([67, 3], "float16", "distinct")], {"axis": 0}, name="f16_long_ax0")
    for op in ["partition", "argpartition"]:
        dv = "partition" if op == "partition" else "argpartition"
        each_dtype(op, lambda d: [A([3, 7], d, "distinct")], {"kth": 2, "axis": -1}, derive=dv)
        case(op, [A([6, 5], "float32", "small")], {"kth": -2, "axis": 0}, name="f32_negk_ax0_ties", derive=dv)
        case(op, [A([3, 7], "float32", "distinct")], {"kth": 0, "axis": 1}, name="f32_k0", derive=dv)
        case(op, [A([3, 7], "float32", "distinct")], {"kth": 6, "axis": 1}, name="f32_klast", derive=dv)
        for d, v in VIEWS:
            case(op, [A([6, 5], d, "distinct", view=v)], {"kth": 3, "axis": 0 if v in "TB" else -1},
                 name=f"{TAG[d]}_{v}", derive=dv)
        case(op, [A([12], "float32", "special")], {"kth": 5, "axis": 0}, name="f32_special", derive=dv)
        case(op, [A([0, 5], "float32")], {"kth": 2, "axis": 1}, name="f32_empty")
        case(op, [A([67], "float32", "distinct")], {"kth": 30, "axis": 0}, name="f32_long", derive=dv)
    each_dtype("topk", lambda d: [A([3, 7], d, "distinct")], {"k": 3, "axis": -1}, derive="sorted")
    case("topk", [A([6, 5], "float32", "small")], {"k": 2, "axis": 0}, name="f32_ties_ax0", derive="sorted")
    case("topk", [A([6, 5], "float32", "distinct", view="T")], {"k": 5, "axis": -1}, name="f32_T_all", derive="sorted")
    case("topk", [A([6, 5], "int32", "distinct", view="S")], {"k": 1, "axis": -2}, name="i32_S", derive="sorted")
    case("topk", [A([12], "float32", "special")], {"k": 4, "axis": 0}, name="f32_special", derive="sorted")


def gen_products():
    each_dtype("matmul", lambda d: [A([3, 4], d, "small"), A([4, 5], d, "small")])
    M = lambda *s, v=None, d="float32": A(list(s), d, "small", view=v)
    for nm, ins in [("batch_bcast", [M(2, 1, 3, 4), M(3, 4, 5)]), ("vec_mat", [M(4), M(2, 4, 5)]),
                    ("mat_vec", [M(3, 4), M(4)]), ("vec_vec", [M(4), M(4)]),
                    ("Ta", [M(3, 4, v="T"), M(4, 5)]), ("Tb", [M(3, 4), M(4, 5, v="T")]),
                    ("TaTb", [M(2, 3, 4, v="T"), M(2, 4, 5, v="T")]), ("Sa", [M(3, 4, v="S"), M(4, 5)]),
                    ("Bb", [M(3, 4), M(2, 4, 5, v="B")]), ("Ra", [M(3, 4, v="R"), M(4, 5)]),
                    ("emptyK", [M(3, 0), M(0, 5)]), ("emptyM", [M(0, 4), M(4, 5)]),
                    ("emptybatch", [M(0, 3, 4), M(4, 5)]), ("long", [M(17, 33), M(33, 9)]),
                    ("f16_T", [M(3, 4, v="T", d="float16"), M(4, 5, d="float16")]),
                    ("bf16_S", [M(3, 4, v="S", d="bfloat16"), M(4, 5, d="bfloat16")]),
                    ("mixed", [M(3, 4, d="float16"), M(4, 5, d="float32")]),
                    ("c64_T", [M(3, 4, v="T", d="complex64"), M(4, 5, d="complex64")])]:
        case("matmul", ins, name=nm, tol=4)
    each_dtype("addmm", lambda d: [A([3, 5], d, "small"), A([3, 4], d, "small"), A([4, 5], d, "small")],
               {"alpha": 0.5, "beta": 2.0}, tol=4)
    case("addmm", [M(5), M(2, 3, 4), M(4, 5, v="T")], {"alpha": 1.0, "beta": 1.0}, name="bcast_c_T", tol=4)
    case("addmm", [M(3, 5, v="S"), M(3, 4), M(4, 5)], {"alpha": -1.0, "beta": 0.0}, name="beta0_S", tol=4)
    case("addmm", [M(3, 5), M(3, 0), M(0, 5)], {"alpha": 1.0, "beta": 0.5}, name="emptyK", tol=4)
    each_dtype("block_masked_mm", lambda d: [A([40, 8], d, "small"), A([8, 6], d, "small"),
                                             A([2, 1], "bool", data=np.array([[1], [0]], bool))],
               {"block_size": 32, "masks": "o"}, tol=8)
    case("block_masked_mm", [M(8, 40), M(40, 4), A([1, 1], "float32", data=np.array([[0.5]])),
                             A([1, 2], "bool", data=np.array([[1, 0]], bool)),
                             A([2, 1], "bool", data=np.array([[1], [1]], bool))],
         {"block_size": 32, "masks": "olr"}, name="all_masks", tol=8)
    case("block_masked_mm", [M(40, 33, v="T"), M(33, 20), A([2, 2], "float32", data=np.array([[1, -1], [0.5, 0]])),
                             A([2, 1], "float32", data=np.array([[2.0], [1.0]]))],
         {"block_size": 32, "masks": "lr"}, name="operand_masks_T", tol=8)
    case("block_masked_mm", [M(2, 6, 16), M(16, 8, v="S")], {"block_size": 64, "masks": ""}, name="nomask_S", tol=8)
    case("block_masked_mm", [M(0, 8), M(8, 6), A([0, 1], "bool")], {"block_size": 32, "masks": "o"}, name="empty", tol=8)
    each_dtype("gather_mm", lambda d: [A([3, 2, 4], d, "small"), A([2, 4, 5], d, "small"), I([4], 3, "uint32"),
                                       I([4], 2, "uint32")], tol=4)
    case("gather_mm", [M(3, 2, 4, v="T"), M(2, 4, 5), I([2, 2], 3, "uint32"), I([2, 1], 2, "uint32")],
         name="T_bcast_idx", tol=4)
    case("gather_mm", [M(3, 2, 4), M(2, 4, 5, v="S"), I([4], 3, "uint32", seed=3), I([4], 2, "uint32", seed=4)],
         {"sorted": False}, name="S", tol=4)
    case("gather_mm", [M(3, 2, 4), M(2, 4, 5), I([0], 3, "uint32"), I([0], 2, "uint32")], name="empty", tol=4)
    for n in [8, 16, 12, 20, 28, 24]:
        case("hadamard_transform", [M(3, n)], {"scale": None}, name=f"n{n}", tol=4)
    each_dtype("hadamard_transform", lambda d: [A([2, 16], d)], {"scale": 0.25}, tol=4)
    case("hadamard_transform", [M(3, 16, v="T")], {"scale": None}, name="T", tol=4)
    case("hadamard_transform", [M(0, 8)], {"scale": None}, name="empty")
    case("tensordot", [M(2, 3, 4), M(3, 4, 5)], {"axes": 2}, name="f32_2", tol=4)
    case("tensordot", [M(2, 3, 4, v="T"), M(4, 2)], {"axes": [[0], [1]]}, name="f32_T_axes", tol=4)
    case("inner", [M(2, 4), M(3, 4, v="S")], name="f32_S", tol=4)
    case("outer", [M(3, d="int32"), M(4, d="int32")], name="i32")
    case("outer", [M(3), M(2, 2, v="T")], name="f32_T")
    case("kron", [M(2, 2, d="int32"), M(2, 3, d="int32", v="T")], name="i32_T")
    case("kron", [M(2, 2), M(3)], name="f32")


def gen_conv():
    C = lambda *s, v=None, d="float32": A(list(s), d, "small", view=v)
    T4 = 4
    each_dtype("conv1d", lambda d: [A([2, 7, 3], d, "small"), A([4, 3, 3], d, "small")], {}, tol=T4)
    for nm, ins, p in [
        ("stride_pad_dil", [C(2, 9, 3), C(4, 3, 3)], {"stride": 2, "padding": 2, "dilation": 2}),
        ("groups", [C(2, 7, 6), C(4, 3, 3)], {"groups": 2}),
        ("depthwise", [C(1, 7, 4), C(4, 3, 1)], {"groups": 4}),
        ("T", [C(2, 7, 3, v="T"), C(4, 3, 3)], {"padding": 1}),
        ("S_wT", [C(2, 7, 3, v="S"), C(4, 3, 3, v="T")], {}),
        ("empty_batch", [C(0, 7, 3), C(4, 3, 3)], {}),
        ("long", [C(2, 67, 5), C(6, 5, 5)], {"padding": 2}),
        ("f16_S", [C(2, 7, 3, v="S", d="float16"), C(4, 3, 3, d="float16")], {}),
        ("bf16_T", [C(2, 7, 3, v="T", d="bfloat16"), C(4, 3, 3, d="bfloat16")], {"stride": 2})]:
        case("conv1d", ins, p, name=nm, tol=T4)
    each_dtype("conv2d", lambda d: [A([1, 5, 6, 4], d, "small"), A([3, 3, 2, 4], d, "small")], {}, tol=T4)
    for nm, ins, p in [
        ("stride_pad_dil", [C(2, 6, 7, 3), C(4, 3, 2, 3)], {"stride": [2, 1], "padding": [1, 2], "dilation": [2, 1]}),
        ("groups", [C(1, 5, 5, 4), C(6, 3, 3, 2)], {"groups": 2}),
        ("T", [C(1, 5, 6, 4, v="T"), C(3, 3, 2, 4)], {"padding": [1, 1]}),
        ("S", [C(1, 5, 6, 4, v="S"), C(3, 3, 2, 4, v="S")], {"stride": [1, 2]}),
        ("empty_batch", [C(0, 5, 6, 4), C(3, 3, 2, 4)], {}),
        ("k1", [C(2, 4, 4, 8), C(5, 1, 1, 8)], {}),
        ("big", [C(1, 9, 10, 8), C(8, 3, 3, 8)], {"padding": [1, 1]})]:
        case("conv2d", ins, p, name=nm, tol=T4)
    each_dtype("conv3d", lambda d: [A([1, 4, 5, 3, 2], d, "small"), A([2, 2, 3, 2, 2], d, "small")], {}, tol=T4)
    case("conv3d", [C(1, 5, 4, 6, 4, v="T"), C(4, 3, 2, 3, 2)],
         {"stride": [2, 1, 1], "padding": [1, 0, 1], "dilation": [1, 2, 1], "groups": 2}, name="all_T", tol=T4)
    case("conv3d", [C(1, 5, 4, 6, 2, v="T"), C(3, 3, 2, 3, 2)],
         {"stride": [2, 1, 1], "padding": [1, 0, 1], "dilation": [1, 2, 1]}, name="strided_T", tol=T4)
    case("conv3d", [C(0, 4, 5, 3, 2), C(2, 2, 3, 2, 2)], {}, name="empty_batch", tol=T4)
    each_dtype("conv_transpose1d", lambda d: [A([2, 5, 3], d, "small"), A([4, 3, 3], d, "small")],
               {"stride": 2, "padding": 1, "output_padding": 1}, tol=T4)
    case("conv_transpose1d", [C(2, 5, 4, v="T"), C(4, 3, 2)], {"stride": 3, "dilation": 2, "groups": 2},
         name="T_dil_groups", tol=T4)
    each_dtype("conv_transpose2d", lambda d: [A([1, 4, 3, 2], d, "small"), A([3, 3, 2, 2], d, "small")],
               {"stride": [2, 1], "padding": [1, 0], "output_padding": [1, 0]}, tol=T4)
    case("conv_transpose2d", [C(1, 4, 3, 2, v="S"), C(3, 2, 2, 2)], {"dilation": [2, 1]}, name="S_dil", tol=T4)
    case("conv_transpose3d", [C(1, 3, 3, 2, 2), C(2, 2, 2, 2, 2)], {"stride": [2, 1, 2], "padding": [0, 1, 0]},
         name="f32", tol=T4)
    case("conv_transpose3d", [C(1, 3, 3, 2, 2, d="float16", v="T"), C(2, 2, 2, 2, 2, d="float16")], {},
         name="f16_T", tol=T4)
    for nm, ins, p in [
        ("flip", [C(1, 6, 5, 2), C(3, 3, 2, 2)], {"flip": True, "padding_lo": [1], "padding_hi": [2]}),
        ("input_dil", [C(1, 4, 4, 2), C(2, 3, 3, 2)], {"input_dilation": [2, 1], "padding_lo": [2, 0],
                                                       "padding_hi": [1, 1]}),
        ("everything", [C(2, 5, 6, 4, v="T"), C(4, 2, 3, 2)], {"stride": [2, 1], "kernel_dilation": [1, 2],
                                                                "input_dilation": [1, 2], "groups": 2, "flip": True,
                                                                "padding_lo": [0, 1], "padding_hi": [1, 0]}),
        ("1d_flip_groups", [C(2, 8, 6), C(3, 3, 2)], {"flip": True, "groups": 3, "stride": [2]})]:
        case("conv_general", ins, p, name=nm, tol=T4)


def gen_fft():
    F = lambda *s, v=None, d="complex64": A(list(s), d, "any", view=v)
    T = 10
    for op in ["fft.fft", "fft.ifft"]:
        each_dtype(op, lambda d: [A([3, 8], d)], {}, tol=T)
        for nm, ins, p in [("pad", [F(3, 5)], {"n": 8}), ("crop", [F(3, 7)], {"n": 4}), ("ax0", [F(6, 3)], {"axis": 0}),
                           ("T", [F(3, 8, v="T")], {"axis": -1}), ("S", [F(3, 8, v="S")], {"axis": -2}),
                           ("n67", [F(2, 67)], {}), ("n60", [F(60)], {}), ("n64", [F(64)], {}), ("n1", [F(3, 1)], {}),
                           ("empty", [F(0, 8)], {})]:
            case(op, ins, p, name=nm, tol=T)
    for op in ["fft.fft2", "fft.ifft2", "fft.fftn", "fft.ifftn"]:
        each_dtype(op, lambda d: [A([2, 3, 4], d)], {}, dtypes=["complex64", "float32", "float16"], tol=T)
        case(op, [F(2, 3, 4, v="T")], {"s": [4, 2], "axes": [0, -1]}, name="T_s_axes", tol=T)
        case(op, [F(2, 3, 5, v="S")], {"s": [3, 6], "axes": [-2, -1]}, name="S_s", tol=T)
    case("fft.fftn", [F(2, 3, 4)], {"axes": [0, 1, 2]}, name="3d", tol=T)
    for op in ["fft.rfft"]:
        each_dtype(op, lambda d: [A([3, 8], d)], {}, tol=T)
        for nm, ins, p in [("odd", [F(3, 7, d="float32")], {}), ("pad", [F(3, 5, d="float32")], {"n": 9}),
                           ("ax0_T", [F(6, 3, d="float32", v="T")], {"axis": 0}), ("n67", [F(67, d="float32")], {}),
                           ("S", [F(3, 8, d="float32", v="S")], {})]:
            case(op, ins, p, name=nm, tol=T)
    for op in ["fft.irfft"]:
        each_dtype(op, lambda d: [A([3, 5], d)], {}, tol=T)
        for nm, ins, p in [("odd_n", [F(3, 5)], {"n": 9}), ("crop", [F(3, 6)], {"n": 6}),
                           ("ax0_T", [F(4, 3, v="T")], {"axis": 0}), ("S", [F(3, 5, v="S")], {})]:
            case(op, ins, p, name=nm, tol=T)
    for op in ["fft.rfft2", "fft.rfftn"]:
        each_dtype(op, lambda d: [A([2, 4, 6], d)], {}, dtypes=["float32", "float16", "int32"], tol=T)
        case(op, [F(2, 4, 5, d="float32", v="T")], {"s": [3, 5], "axes": [0, 2]}, name="T_s", tol=T)
    for op in ["fft.irfft2", "fft.irfftn"]:
        each_dtype(op, lambda d: [A([2, 4, 4], d)], {}, dtypes=["complex64", "float32"], tol=T)
        case(op, [F(2, 4, 4, v="S")], {"s": [3, 7], "axes": [-2, -1]}, name="S_s", tol=T)
    for op in ["fft.fftshift", "fft.ifftshift"]:
        each_dtype(op, lambda d: [A([3, 5], d)], {})
        case(op, [F(4, 5, v="T")], {"axes": [-1]}, name="T_ax")
        case(op, [F(0, 5)], {}, name="empty")


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


def gen_linalg():
    L = lambda s, d="float32", v=None, seed=0: A(list(s), d, data=well(list(s), seed), view=v)
    T = 50
    for d in ALL:
        case("linalg.norm", [A([3, 4], d)], {"ord": None, "axis": None}, name=TAG[d], tol=4)
    for o in [None, 2, 1, 0, 3, -1, "inf", "-inf"]:
        case("linalg.norm", [A([3, 4], "float32")], {"ord": o, "axis": [-1]}, name=f"vec_{o}".replace("-", "m"),
             tol=4)
    for o in ["fro", "nuc", 1, -1, 2, -2, "inf", "-inf"]:
        case("linalg.norm", [A([2, 3, 4], "float32")], {"ord": o, "axis": [-2, -1], "keepdims": True},
             name=f"mat_{o}".replace("-", "m"), tol=T)
    case("linalg.norm", [A([3, 4], "float32", view="T")], {"ord": None, "axis": [0], "keepdims": False}, name="T_ax0",
         tol=4)
    case("linalg.norm", [A([3, 4], "float16", view="S")], {"ord": None, "axis": None}, name="f16_S", tol=4)
    case("linalg.norm", [A([0, 4], "float32")], {"ord": None, "axis": [0]}, name="empty", tol=4)
    case("linalg.norm", [A([3, 4], "complex64")], {"ord": 1, "axis": [1]}, name="c64_ord1", tol=4)
    for d in ALL:
        case("linalg.qr", [L([4, 4], d)], name=TAG[d], derive="abs", tol=T)
        case("linalg.svd", [L([4, 4], d)], name=TAG[d], derive="svd", tol=T)
        case("linalg.inv", [L([4, 4], d)], name=TAG[d], tol=T)
        case("linalg.cholesky", [A([4, 4], d, data=spd(4))], name=TAG[d], tol=T)
        case("linalg.eigh", [A([4, 4], d, data=spd(4, seed=2))], name=TAG[d], derive="abs", tol=T)
        case("linalg.eigvalsh", [A([4, 4], d, data=spd(4, seed=3))], name=TAG[d], tol=T)
        case("linalg.lu", [L([4, 4], d)], name=TAG[d], tol=T)
        case("linalg.lu_factor", [L([4, 4], d)], name=TAG[d], tol=T)
        case("linalg.solve", [L([4, 4], d), A([4, 2], d)], name=TAG[d], tol=T)
        case("linalg.cross", [A([2, 3], d), A([2, 3], d)], name=TAG[d])
    for nm, s, v in [("tall", [5, 3], None), ("wide", [3, 5], None), ("batch_T", [2, 4, 4], "T"),
                     ("S", [4, 4], "S"), ("empty_batch", [0, 3, 3], None)]:
        case("linalg.qr", [L(s, v=v)], name=nm, derive="abs", tol=T)
        case("linalg.svd", [L(s, v=v)], name=nm, derive="svd", tol=T)
        case("linalg.svd", [L(s, v=v)], {"compute_uv": False}, name=nm + "_novec", tol=T)
        case("linalg.pinv", [L(s, v=v)], name=nm, tol=T)
    for nm, s, v in [("batch_T", [2, 4, 4], "T"), ("S", [3, 3], "S"), ("empty", [0, 3, 3], None), ("one", [1, 1], None)]:
        case("linalg.inv", [L(s, v=v)], name=nm, tol=T)
        case("linalg.lu", [L(s, v=v)], name=nm, tol=T)
        case("linalg.lu_factor", [L(s, v=v)], name=nm, tol=T)
        case("linalg.solve", [L(s, v=v), A(s[:-1], "float32")], name=nm + "_vec", tol=T)
        case("linalg.solve", [L(s, v=v), A(s[:-1] + [2], "float32", view="S")], name=nm + "_mat", tol=T)
    for up in [False, True]:
        tri = np.triu(well([4, 4], 5)) if up else np.tril(well([4, 4], 5))
        case("linalg.tri_inv", [A([4, 4], "float32", data=tri)], {"upper": up}, name=f"up{int(up)}", tol=T)
        case("linalg.tri_inv", [A([4, 4], "float32", data=well([4, 4], 6), view="T")], {"upper": up},
             name=f"up{int(up)}_T_full", tol=T)
        case("linalg.cholesky", [A([2, 4, 4], "float32", data=spd(4, (2,)), view="T")], {"upper": up},
             name=f"up{int(up)}_T", tol=T)
        f = np.linalg.cholesky(spd(4, seed=7))
        case("linalg.cholesky_inv", [A([4, 4], "float32", data=f.T if up else f)], {"upper": up}, name=f"up{int(up)}",
             tol=T)
        case("linalg.solve_triangular", [A([4, 4], "float32", data=tri), A([4, 3], "float32")], {"upper": up},
             name=f"up{int(up)}", tol=T)
        case("linalg.solve_triangular", [A([4, 4], "float32", data=tri, view="T"), A([4], "float32", view="S")],
             {"upper": not up}, name=f"up{int(not up)}_T_vec", tol=T)
        case("linalg.eigh", [A([4, 4], "float32", data=spd(4, seed=8), view="T")], {"UPLO": "U" if up else "L"},
             name=f"uplo{int(up)}_T", derive="abs", tol=T)
        case("linalg.eigvalsh", [A([2, 4, 4], "float32", data=spd(4, (2,), seed=9))], {"UPLO": "U" if up else "L"},
             name=f"uplo{int(up)}_batch", tol=T)
    for d in ["float32", "float64", "complex64"]:
        case("linalg.tri_inv", [A([3, 3], d, data=np.tril(well([3, 3], 4)))], {"upper": False}, name=TAG[d], tol=T)
        case("linalg.cholesky_inv", [A([3, 3], d, data=np.linalg.cholesky(spd(3, seed=4)))], name=TAG[d], tol=T)
        case("linalg.solve_triangular", [A([3, 3], d, data=np.triu(well([3, 3], 4))), A([3, 2], d)], {"upper": True},
             name=TAG[d], tol=T)
        case("linalg.pinv", [L([4, 3], d)], name=TAG[d], tol=T)
    h = spd(3, seed=11) + 1j * np.array([[0, 1, -0.5], [-1, 0, 0.25], [0.5, -0.25, 0]])
    case("linalg.eigh", [A([3, 3], "complex64", data=h)], name="c64_hermitian", derive="abs", tol=T)
    case("linalg.eigvalsh", [A([3, 3], "complex64", data=h)], name="c64_hermitian", tol=T)
    case("linalg.cholesky", [A([0, 3, 3], "float32")], name="empty", tol=T)
    case("linalg.eigh", [A([0, 3, 3], "float32")], name="empty", derive="abs", tol=T)
    # eig: real distinct spectrum (S diag S^-1) and a complex pair (a rotation block)
    rng = np.random.default_rng(12)
    s = rng.uniform(-1, 1, (4, 4)) + 2 * np.eye(4)
    real_spec = s @ np.diag([3.0, -1.5, 0.5, 2.0]) @ np.linalg.inv(s)
    cplx = np.array([[0.5, -2.0, 0.1, 0.0], [2.0, 0.5, 0.0, 0.2], [0.0, 0.0, -1.0, 0.3], [0.0, 0.1, 0.0, 1.5]])
    for d in ALL:
        case("linalg.eig", [A([4, 4], d, data=real_spec)], name=TAG[d], derive="eig", tol=T)
        case("linalg.eigvals", [A([4, 4], d, data=real_spec)], name=TAG[d], derive="eigvals", tol=T)
    case("linalg.eig", [A([4, 4], "float32", data=cplx)], name="cplx", derive="eig", tol=T)
    case("linalg.eig", [A([2, 4, 4], "float32", data=np.stack([real_spec, cplx]), view="T")], name="batch_T",
         derive="eig", tol=T)
    case("linalg.eigvals", [A([4, 4], "float32", data=cplx, view="S")], name="cplx_S", derive="eigvals", tol=T)
    case("linalg.eig", [A([0, 2, 2], "float32")], name="empty", derive="eig", tol=T)
    case("linalg.cross", [A([3], "float32", view="S"), A([4, 3], "float32", view="T")], {"axis": -1}, name="S_T_bcast")
    case("linalg.cross", [A([3, 2], "int32"), A([3, 2], "int32")], {"axis": 0}, name="i32_ax0")
    case("linalg.cross", [A([0, 3], "float32"), A([0, 3], "float32")], {"axis": -1}, name="empty")


def gen_quantized():
    for d in ["float32", "float16", "bfloat16", "float64"]:
        for gs in [32, 64, 128]:
            for bits in [2, 3, 4, 5, 6, 8]:
                if d != "float32" and (gs != 64 or bits not in (3, 4, 8)):
                    continue
                case("quantize", [A([2, 128], d)], {"group_size": gs, "bits": bits, "mode": "affine"},
                     name=f"affine_{TAG[d]}_g{gs}_b{bits}")
        for mode, gs, bits in [("mxfp4", 32, 4), ("mxfp8", 32, 8), ("nvfp4", 16, 4)]:
            case("quantize", [A([2, 64], d)], {"group_size": gs, "bits": bits, "mode": mode}, name=f"{mode}_{TAG[d]}")
    case("quantize", [A([4, 64], "float32", view="T")], {"group_size": 32, "bits": 4, "mode": "affine"}, name="affine_T")
    case("quantize", [A([4, 64], "float32", view="S")], {"group_size": 32, "bits": 4, "mode": "mxfp4"}, name="mxfp4_S")
    case("quantize", [A([0, 64], "float32")], {"group_size": 64, "bits": 4, "mode": "affine"}, name="affine_empty")
    case("quantize", [A([2, 3, 64], "float16")], {"group_size": 32, "bits": 8, "mode": "affine"}, name="affine_batch")
    # dequantize: inputs from MLX's quantize
    rng = np.random.default_rng(21)
    def qd(shape, dt, mode, gs, bits, view=None, seed=0):
        w = to_mx(np.round(np.random.default_rng(seed).uniform(-2, 2, shape), 3), dt)
        q = mx.quantize(w, gs, bits, mode=mode)
        ins = [A(list(q[0].shape), "uint32", data=np.array(q[0]), view=view)]
        ins.append(A(list(q[1].shape), DNAME[q[1].dtype], data=np.array(q[1].astype(mx.float32) if q[1].dtype == mx.bfloat16 else q[1])))
        if mode == "affine":
            ins.append(A(list(q[2].shape), DNAME[q[2].dtype], data=np.array(q[2].astype(mx.float32) if q[2].dtype == mx.bfloat16 else q[2])))
        return ins
    for d in ["float32", "float16", "bfloat16"]:
        for gs, bits in [(32, 2), (64, 3), (64, 4), (128, 5), (32, 6), (64, 8)]:
            case("dequantize", qd([2, 128], d, "affine", gs, bits), {"group_size": gs, "bits": bits, "mode": "affine"},
                 name=f"affine_{TAG[d]}_g{gs}_b{bits}")
        for mode, gs, bits in [("mxfp4", 32, 4), ("mxfp8", 32, 8), ("nvfp4", 16, 4)]:
            case("dequantize", qd([3, 64], d, mode, gs, bits), {"group_size": gs, "bits": bits, "mode": mode},
                 name=f"{mode}_{TAG[d]}")
    for mode, gs, bits in [("mxfp4", 32, 4), ("mxfp8", 32, 8), ("nvfp4", 16, 4)]:
        for t in ["float16", "bfloat16", "float32"]:
            case("dequantize", qd([2, 64], "float32", mode, gs, bits),
                 {"group_size": gs, "bits": bits, "mode": mode, "dtype": t}, name=f"{mode}_to_{TAG[t]}")
    case("dequantize", qd([4, 64], "float32", "affine", 32, 4, view="S"), {"group_size": 32, "bits": 4, "mode": "affine"},
         name="affine_S")
    case("dequantize", qd([0, 64], "float32", "affine", 64, 4), {"group_size": 64, "bits": 4, "mode": "affine"},
         name="affine_empty")
    # quantized_matmul
    for d in ["float32", "float16", "bfloat16"]:
        for gs, bits in [(32, 2), (64, 3), (64, 4), (128, 5), (32, 6), (64, 8)]:
            for tr in [True, False]:
                if d != "float32" and (bits not in (4, 8) or not tr):
                    continue
                k = 128 if tr or gs == 128 else 64
                w = qd([8, k] if tr else [k, 64 if gs == 64 else k], d, "affine", gs, bits, seed=gs + bits)
                case("quantized_matmul", [A([3, k], d, "small")] + w,
                     {"group_size": gs, "bits": bits, "mode": "affine", "transpose": tr},
                     name=f"affine_{TAG[d]}_g{gs}_b{bits}_t{int(tr)}", tol=8)
        case("quantized_matmul", [A([3, 64], d, "small")] + qd([16, 64], d, "mxfp4", 32, 4),
             {"group_size": 32, "bits": 4, "mode": "mxfp4", "transpose": True}, name=f"mxfp4_{TAG[d]}", tol=8)
    case("quantized_matmul", [A([2, 3, 128], "float32", "small", view="T")] + qd([16, 128], "float32", "affine", 64, 4),
         {"group_size": 64, "bits": 4, "mode": "affine", "transpose": True}, name="affine_x_T_batch", tol=8)
    case("quantized_matmul", [A([128], "float32", "small", view="S")] + qd([16, 128], "float32", "affine", 64, 4),
         {"group_size": 64, "bits": 4, "mode": "affine", "transpose": True}, name="affine_vec_S", tol=8)
    case("quantized_matmul", [A([0, 128], "float32", "small")] + qd([16, 128], "float32", "affine", 64, 4),
         {"group_size": 64, "bits": 4, "mode": "affine", "transpose": True}, name="affine_empty", tol=8)
    case("quantized_matmul", [A([3, 64], "float32", "small")] + qd([64, 64], "float32", "mxfp4", 32, 4),
         {"group_size": 32, "bits": 4, "mode": "mxfp4", "transpose": False}, name="mxfp4_t0", tol=8)
    for mode, gs, bits in [("mxfp8", 32, 8), ("nvfp4", 16, 4)]:
        for tr in [True, False]:
            w = qd([16, 64] if tr else [64, 64], "float32", mode, gs, bits, seed=5)
            case("kiln.qmm_numpy", [A([3, 64], "float32", "small")] + w,
                 {"group_size": gs, "bits": bits, "mode": mode, "transpose": tr}, name=f"{mode}_t{int(tr)}", tol=8,
                 ref="numpy", note="MLX 0.30.1's CPU quantized_matmul decodes this mode with the mxfp4 decoder")
    # gather_qmm
    for mode, gs, bits in [("affine", 64, 4), ("affine", 32, 8), ("mxfp4", 32, 4)]:
        w = qd([3, 8, 64], "float32", mode, gs, bits, seed=9)
        case("gather_qmm", [A([2, 1, 64], "float32", "small")] + w + [I([4], 2, "uint32"), I([4], 3, "uint32")],
             {"group_size": gs, "bits": bits, "mode": mode, "transpose": True}, name=f"{mode}_b{bits}", tol=8)
    w = qd([3, 64, 64], "float32", "affine", 64, 4, seed=10)
    case("gather_qmm", [A([2, 2, 64], "float16", "small", view="T")] + [A(s.shape, "float32" if s.dtype == "float32" else s.dtype, data=s.data) if False else s for s in w]
         + [I([2, 2], 2, "uint32"), I([2, 1], 3, "uint32")],
         {"group_size": 64, "bits": 4, "mode": "affine", "transpose": False}, name="affine_t0_T_bcast", tol=8)
    w = qd([3, 8, 64], "float32", "affine", 64, 4, seed=12)
    case("gather_qmm", [A([2, 1, 64], "float32", "small", view="S")] + w + [I([0], 2, "uint32"), I([0], 3, "uint32")],
         {"group_size": 64, "bits": 4, "mode": "affine", "transpose": True}, name="affine_empty_S", tol=8)
    case("gather_qmm", [A([2, 3, 64], "float32", "small", view="S")] + w + [I([3], 2, "uint32"), I([3], 3, "uint32")],
         {"group_size": 64, "bits": 4, "mode": "affine", "transpose": True}, name="affine_S", tol=8)
    for mode, gs, bits in [("mxfp8", 32, 8), ("nvfp4", 16, 4)]:
        w = qd([3, 8, 64], "float32", mode, gs, bits, seed=11)
        case("kiln.gather_qmm_numpy", [A([2, 1, 64], "float32", "small")] + w + [I([4], 2, "uint32"), I([4], 3, "uint32")],
             {"group_size": gs, "bits": bits, "mode": mode, "transpose": True}, name=f"{mode}", tol=8, ref="numpy",
             note="MLX 0.30.1's CPU gather_qmm decodes this mode with the mxfp4 decoder")


def _deq_np(x, p):
    aff = p["mode"] == "affine"
    w = mx.dequantize(x[1], x[2], x[3] if aff else None, p["group_size"], p["bits"], mode=p["mode"])
    return np.array(w.astype(mx.float32)).astype(np.float64)


def _qmm_numpy(x, p):
    w = _deq_np(x, p)
    a = np.array(x[0].astype(mx.float32)).astype(np.float64)
    out = a @ (np.swapaxes(w, -1, -2) if p["transpose"] else w)
    return mx.array(out.astype(np.float32)).astype(x[0].dtype)


def _gather_qmm_numpy(x, p):
    w = _deq_np(x, p)
    a = np.array(x[0].astype(mx.float32)).astype(np.float64)
    li, ri = np.array(x[-2]).astype(int), np.array(x[-1]).astype(int)
    outs = []
    for l, r in zip(li.reshape(-1), ri.reshape(-1)):
        wr = w[r]
        outs.append(a[l] @ (wr.T if p["transpose"] else wr))
    out = np.stack(outs).reshape(li.shape + outs[0].shape)
    return mx.array(out.astype(np.float32)).astype(x[0].dtype)


OPS["kiln.qmm_numpy"] = _qmm_numpy
OPS["kiln.gather_qmm_numpy"] = _gather_qmm_numpy


def gen_random():
    K = lambda s: A([2], "uint32", data=np.array(mx.random.key(s)))
    for w in [1, 2, 4]:
        for shape in [[3, 4], [5], [7], [3], [2, 3, 3], [0, 4], [1]]:
            case("random.bits", [K(w * 10 + len(shape))], {"shape": shape, "width": w},
                 name=f"w{w}_" + "x".join(map(str, shape)), ref="numpy")
    case("random.bits", [A([2], "uint32", data=np.array([0, 0]))], {"shape": [9], "width": 4}, name="zero_key",
         ref="numpy")
    case("random.bits", [A([2], "uint32", data=np.array([0xffffffff, 0x12345678]), view="S")],
         {"shape": [6], "width": 2}, name="key_S", ref="numpy")
    case("random.bits", [A([67], "uint32", data=np.arange(67) * 12345)], {"shape": [2, 67], "width": 4},
         name="long", ref="numpy") if False else None
    case("random.bits", [K(3)], {"shape": [2, 67], "width": 4}, name="long", ref="numpy")
    for n in [1, 2, 5]:
        case("random.split", [K(n)], {"num": n}, name=f"n{n}")
    case("random.split", [A([2], "uint32", data=np.array([7, 9]), view="S")], {"num": 3}, name="S")
    for d in ALL:
        case("random.uniform", [K(1), A([], "float32", data=np.array(-1.0)), A([], "float32", data=np.array(2.0))],
             {"shape": [3, 4], "dtype": d}, name=TAG[d])
        case("random.normal", [K(2)], {"shape": [3, 4], "dtype": d}, name=TAG[d], tol=8)
        case("random.randint", [K(3), A([], "int32", data=np.array(-5)), A([], "int32", data=np.array(20))],
             {"shape": [3, 4], "dtype": d}, name=TAG[d])
        case("random.gumbel", [K(4)], {"shape": [3, 4], "dtype": d}, name=TAG[d], tol=8)
        case("random.laplace", [K(5)], {"shape": [3, 4], "dtype": d}, name=TAG[d], tol=8)
        case("random.truncated_normal", [K(6), A([], "float32", data=np.array(-1.0)), A([], "float32", data=np.array(1.5))],
             {"shape": [3, 4], "dtype": d}, name=TAG[d], tol=8)
    case("random.uniform", [K(7), A([3, 1], "float32", data=np.array([[0], [1], [2]])), A([4], "float32", view="S")],
         {"shape": [3, 4], "dtype": "float32"}, name="bcast_bounds")
    case("random.uniform", [K(8), A([], "float32"), A([], "float32")], {"shape": [0, 3], "dtype": "float32"},
         name="empty")
    case("random.normal", [K(9)], {"shape": [5], "dtype": "float32", "loc": 2.0, "scale": 0.5}, name="loc_scale")
    case("random.randint", [K(10), A([2], "int32", data=np.array([0, 100])), A([], "int32", data=np.array(200))],
         {"shape": [3, 2], "dtype": "int32"}, name="bcast_bounds")
    case("random.bernoulli", [K(11), A([], "float32", data=np.array(0.3))], {"shape": [3, 4]}, name="scalar_p")
    case("random.bernoulli", [K(12), A([3, 4], "float32", "prob", view="T")], {"shape": None}, name="array_p_T")
    case("random.truncated_normal", [K(13), A([3], "float32", data=np.array([-2, 0, 1])),
                                     A([3], "float32", data=np.array([-1, 0.5, 3]))], {"shape": [2, 3], "dtype": "float32"},
         name="bcast_bounds", tol=8)
    case("random.categorical", [K(14), A([3, 5], "float32", view="T")], {"axis": -1}, name="T")
    case("random.categorical", [K(15), A([3, 5], "float32")], {"axis": 0, "num_samples": 4}, name="ax0_samples")
    case("random.laplace", [K(16)], {"shape": [4], "dtype": "float32", "loc": 1.0, "scale": 2.0}, name="loc_scale",
         tol=8)
    case("random.permutation", [K(17)], {"n": 10}, name="int")
    case("random.permutation", [K(18), A([4, 3], "float32", view="T")], {"axis": 0}, name="T")
    case("random.permutation", [K(19), A([4, 3], "int32")], {"axis": 1}, name="i32_ax1")
    case("random.multivariate_normal", [K(20), A([3], "float32"), A([3, 3], "float32", data=spd(3, seed=20))],
         {"shape": [4], "dtype": "float32"}, name="f32", tol=50)


def gen_fast():
    T = 4
    for d in FLOATS + ["complex64", "int32"]:
        case("fast.rms_norm", [A([2, 3, 8], d), A([8], d)], {"eps": 1e-5}, name=TAG[d], tol=T)
        case("fast.layer_norm", [A([2, 3, 8], d), A([8], d), A([8], d)], {"eps": 1e-5, "w": True, "b": True},
             name=TAG[d], tol=T)
    case("fast.rms_norm", [A([3, 8], "float32")], {"eps": 1e-3}, name="noweight", tol=T)
    case("fast.rms_norm", [A([3, 8], "float32", view="T"), A([8], "float32", view="S")], {"eps": 1e-5}, name="T_wS",
         tol=T)
    case("fast.rms_norm", [A([0, 8], "float32"), A([8], "float32")], {"eps": 1e-5}, name="empty", tol=T)
    case("fast.rms_norm", [A([2, 67], "float32"), A([67], "float32")], {"eps": 1e-5}, name="long", tol=T)
    case("fast.rms_norm", [A([2, 67], "bfloat16", view="B"), A([67], "bfloat16")], {"eps": 1e-5}, name="bf16_long_B",
         tol=T)
    for w, b in [(False, False), (True, False), (False, True)]:
        ins = [A([3, 8], "float32")] + ([A([8], "float32")] if w else []) + ([A([8], "float32")] if b else [])
        case("fast.layer_norm", ins, {"eps": 1e-5, "w": w, "b": b}, name=f"w{int(w)}b{int(b)}", tol=T)
    case("fast.layer_norm", [A([3, 8], "float32", view="T"), A([8], "float32", view="S"), A([8], "float32", view="R")],
         {"eps": 1e-4, "w": True, "b": True}, name="views", tol=T)
    case("fast.layer_norm", [A([0, 8], "float32"), A([8], "float32"), A([8], "float32")],
         {"eps": 1e-5, "w": True, "b": True}, name="empty", tol=T)
    case("fast.layer_norm", [A([2, 67], "float16"), A([67], "float16"), A([67], "float16")],
         {"eps": 1e-5, "w": True, "b": True}, name="f16_long", tol=T)
    base = {"dims": 8, "traditional": False, "base": 10000.0, "scale": 1.0, "offset": 0}
    for d in FLOATS:
        case("fast.rope", [A([1, 2, 5, 8], d)], base, name=TAG[d], tol=T)
    for nm, upd, shape, v in [("trad", {"traditional": True}, [1, 2, 5, 8], None),
                              ("partial", {"dims": 6}, [1, 2, 5, 8], None),
                              ("partial_trad", {"dims": 4, "traditional": True}, [1, 2, 5, 8], None),
                              ("scale_offset", {"scale": 0.5, "offset": 3}, [2, 5, 8], None),
                              ("T", {"offset": 2}, [1, 2, 5, 8], "T"), ("S", {}, [2, 1, 5, 8], "S"),
                              ("empty", {}, [0, 2, 5, 8], None), ("base", {"base": 500.0}, [1, 1, 3, 16], None)]:
        case("fast.rope", [A(shape, "float32", view=v)], dict(base, **upd), name=nm, tol=T)
    case("fast.rope", [A([2, 2, 5, 8], "float32"), A([2], "int32", data=np.array([1, 4]))],
         dict(base, offset_array=True), name="offset_array", tol=T)
    case("fast.rope", [A([1, 2, 5, 8], "float32"), A([4], "float32", "pos")], dict(base, freqs=True), name="freqs",
         tol=T)
    case("fast.rope", [A([1, 2, 5, 8], "float16"), A([4], "float32", "pos")],
         dict(base, freqs=True, traditional=True, offset=1), name="f16_freqs_trad", tol=T)
    case("kiln.rope_inverse", [A([1, 2, 5, 8], "float32"), A([1, 2, 5, 8], "float32")], dict(base, offset=2),
         name="f32", tol=T)
    case("kiln.rope_inverse", [A([1, 2, 5, 8], "float32"), A([1, 2, 5, 8], "float32")],
         dict(base, traditional=True, dims=6), name="trad_partial", tol=T)
    Q = lambda *s, d="float32", v=None: A(list(s), d, "small", view=v)
    for d in FLOATS:
        case("fast.scaled_dot_product_attention", [Q(1, 2, 3, 4, d=d), Q(1, 2, 5, 4, d=d), Q(1, 2, 5, 6, d=d)],
             {"scale": 0.5}, name=TAG[d], tol=T)
    for nm, ins, p in [
        ("causal", [Q(1, 2, 3, 4), Q(1, 2, 5, 4), Q(1, 2, 5, 4)], {"mask": "causal"}),
        ("causal_square", [Q(2, 1, 4, 4), Q(2, 1, 4, 4), Q(2, 1, 4, 4)], {"mask": "causal"}),
        ("bool_mask", [Q(1, 2, 3, 4), Q(1, 2, 5, 4), Q(1, 2, 5, 4), A([3, 5], "bool", data=np.eye(3, 5, 1) < 1)],
         {"mask": "array"}),
        ("add_mask", [Q(1, 2, 3, 4), Q(1, 2, 5, 4), Q(1, 2, 5, 4), Q(1, 1, 3, 5)], {"mask": "array"}),
        ("gqa", [Q(1, 4, 3, 4), Q(1, 2, 5, 4), Q(1, 2, 5, 4)], {}),
        ("sinks", [Q(1, 2, 3, 4), Q(1, 2, 5, 4), Q(1, 2, 5, 4), Q(2)], {"sinks": True}),
        ("views", [Q(1, 2, 3, 4, v="T"), Q(1, 2, 5, 4, v="S"), Q(1, 2, 5, 4, v="B")], {}),
        ("vector", [Q(2, 2, 1, 8), Q(2, 2, 9, 8), Q(2, 2, 9, 8)], {}),
        ("long", [Q(1, 1, 2, 16), Q(1, 1, 67, 16), Q(1, 1, 67, 16)], {}),
        ("empty_batch", [Q(0, 2, 3, 4), Q(0, 2, 5, 4), Q(0, 2, 5, 4)], {})]:
        case("fast.scaled_dot_product_attention", ins, dict({"scale": 0.5}, **p), name=nm, tol=T)
    case("kiln.sdpa_with_lse", [Q(1, 2, 3, 4), Q(1, 2, 5, 4), Q(1, 2, 5, 4)], {"scale": 0.5}, name="f32", tol=T)
    case("kiln.sdpa_with_lse", [Q(1, 4, 3, 4), Q(1, 2, 3, 4), Q(1, 2, 3, 4)], {"scale": 0.25, "mask": "causal"},
         name="gqa_causal", tol=T)
    for d in ["float32", "float16", "bfloat16", "float64"]:
        case("kiln.rms_norm_vjp", [A([3, 8], d), A([8], d), A([3, 8], d)], {"eps": 1e-5}, name=TAG[d], tol=8)
        case("kiln.layer_norm_vjp", [A([3, 8], d), A([8], d), A([8], d), A([3, 8], d)], {"eps": 1e-5}, name=TAG[d],
             tol=8)
    case("kiln.rms_norm_vjp", [A([2, 3, 8], "float32", view="T"), A([8], "float32"), A([2, 3, 8], "float32", view="S")],
         {"eps": 1e-5}, name="views", tol=8)
    case("kiln.layer_norm_vjp", [A([2, 3, 8], "float32", view="T"), A([8], "float32"), A([8], "float32"),
                                 A([2, 3, 8], "float32", view="S")], {"eps": 1e-5}, name="views", tol=8)
    case("kiln.rms_norm_vjp", [A([0, 8], "float32"), A([8], "float32"), A([0, 8], "float32")], {"eps": 1e-5},
         name="empty", tol=8)
    case("kiln.layer_norm_vjp", [A([0, 8], "float32"), A([8], "float32"), A([8], "float32"), A([0, 8], "float32")],
         {"eps": 1e-5}, name="empty", tol=8)


def gen_misc():
    for d in ALL:
        case("depends", [A([2, 3], d), A([3], "float32")], {"n": 1}, name=TAG[d])
    case("depends", [A([2, 3], "float32", view="T"), A([2], "int32", view="S"), A([3], "float32"), A([1], "bool")],
         {"n": 2}, name="two_views")
    case("depends", [A([0, 3], "float32"), A([3], "float32")], {"n": 1}, name="empty")
    for d in ALL:
        case("kiln.broadcast_axes", [A([3, 1, 2, 4], d), A([5, 1, 7], "float32")], {"ignore_axes": [-1]}, name=TAG[d])
    case("kiln.broadcast_axes", [A([1, 2, 3], "float32", view="T"), A([4, 1, 5, 6], "float32")],
         {"ignore_axes": [-2, -1]}, name="T_two")
    case("kiln.broadcast_axes", [A([0, 1, 3], "float32"), A([1, 4, 2], "float32")], {"ignore_axes": [-1]}, name="empty")
    for d in ["int32", "float32", "float16", "bfloat16", "int64", "uint32", "float64"]:
        case("kiln.number_of_elements", [A([2, 3, 4], "float32")], {"axes": [0, 2], "inverted": False, "dtype": d},
             name=TAG[d])
        case("kiln.number_of_elements", [A([2, 3, 4], "float32")], {"axes": [1], "inverted": True, "dtype": d},
             name=TAG[d] + "_inv", tol=1)
    case("kiln.number_of_elements", [A([3, 2, 5], "float32", view="T")], {"axes": [2], "inverted": True,
                                                                           "dtype": "float32"}, name="T")
    case("kiln.number_of_elements", [A([3, 0, 5], "float32", view="T")], {"axes": [0, 1], "inverted": False,
                                                                           "dtype": "int32"}, name="empty_T")


FAMILIES = [gen_unary, gen_binary, gen_reduce, gen_shape, gen_index, gen_sort, gen_products, gen_conv, gen_fft,
            gen_linalg, gen_quantized, gen_random, gen_fast, gen_misc]


def drive():
    """Run the generator in child processes; a case that kills MLX (signal) or fails inside MLX's
    evaluation is added to mlx_aborts.txt and the generator runs again without it."""
    import subprocess
    import tempfile
    for _ in range(500):
        trace = tempfile.mktemp()
        env = dict(os.environ, SWEEP_CHILD="1", SWEEP_TRACE=trace)
        rc = subprocess.run([sys.executable, os.path.abspath(__file__)], env=env).returncode
        names = open(trace).read().split() if os.path.exists(trace) else []
        if os.path.exists(trace):
            os.remove(trace)
        if rc == 0:
            return
        if rc < 0 and names:  # killed by a signal while evaluating the last traced case
            with open(ABORTS_FILE, "a") as f:
                f.write(names[-1] + "\n")
            print("MLX crashed on " + names[-1], file=sys.stderr)
        elif rc != 3:
            sys.exit(rc)
        else:
            print("MLX failed evaluating " + open(ABORTS_FILE).read().split()[-1] + " (added to mlx_aborts.txt)",
                  file=sys.stderr)
    sys.exit("too many restarts")


def main():
    if not os.environ.get("SWEEP_CHILD"):
        return drive()
    only = os.environ.get("SWEEP_ONLY")
    for g in FAMILIES:
        if not only or g.__name__ in only.split(","):
            g()
    if os.path.isdir(OUT):
        shutil.rmtree(OUT)
    os.makedirs(OUT)
    for name, b in written.items():
        with open(os.path.join(OUT, name + ".npy"), "wb") as f:
            f.write(b)
    with open(os.path.join(OUT, "manifest.json"), "w") as f:
        f.write('{"producer": "mlx %s", "generator": "tests/reference/gen_sweep.py", "cases": [\n' % mx.__version__)
        f.write(",\n".join(json.dumps(c, separators=(",", ":"), allow_nan=False) for c in CASES))
        f.write("\n]}\n")
    total = sum(len(b) for b in written.values())
    print(f"{len(CASES)} cases ({len(REJECTED)} must-fail, as MLX rejects them), {len(written)} files, {total / 1e6:.2f} MB",
          file=sys.stderr)


if __name__ == "__main__":
    main()
