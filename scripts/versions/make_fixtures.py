#!/usr/bin/env python3
"""Write the version fixtures of tests/golden/versions/<version>/ with a real MLX wheel.

Run it with the python of a venv that has the MLX release to record (see make_all.sh):

    /tmp/mlxv/0.31.2/bin/python scripts/versions/make_fixtures.py tests/golden/versions

Each case is a small function touching a primitive whose layout changed between releases (spec
section 5): convolution, quantize / quantized_matmul / gather_qmm, gather_mm, slice_update, svd,
custom kernels, plus plain ops, keyword inputs, shapeless export and metadata. A case that the
installed MLX cannot export is skipped and listed under "skipped" with the reason. CPU builds never
write ScaledDotProductAttention nodes (MLX uses its unfused fallback on the CPU), so SDPA layouts are
covered by kiln-written files in the tests instead.
"""
import json
import os
import shutil
import sys

import mlx.core as mx
import numpy as np

VERSION = mx.__version__
ROOT = os.path.join(sys.argv[1] if len(sys.argv) > 1 else "tests/golden/versions", VERSION)


def vt(v):
    return tuple(int(p) for p in v.split(".")[:3])


V = vt(VERSION)
rng = np.random.default_rng(20260301)


def rnd(*shape, dtype=np.float32):
    return mx.array(rng.standard_normal(shape).astype(dtype))


def save(path, a):
    a = np.array(a)
    np.save(path, a)
    return {"file": os.path.basename(path), "dtype": str(a.dtype)}


CASES = []


def case(name, since=None, rtol=1e-5, atol=1e-5, runs=True):
    def deco(fn):
        CASES.append((name, fn, since, rtol, atol, runs))
        return fn

    return deco


# Each case returns (function, list of calls, options); a call is (args, kwargs). The first calls are
# exported; calls after `exported` only run (shapeless cases).


@case("plain_ops")
def _():
    c = rnd(4)
    mx.eval(c)

    def f(x, y):
        return [mx.exp(x) * y + c, mx.sum(x * y, axis=0)]

    return f, [([rnd(3, 4), rnd(3, 4)], {})], {}


@case("kwargs")
def _():
    def f(x, b):
        return [mx.maximum(x, b) - mx.minimum(x, b), mx.abs(x)]

    return f, [([rnd(2, 3)], {"b": rnd(2, 3)})], {}


@case("shapeless")
def _():
    def f(x):
        return [mx.tanh(x) * 2.0 + 1.0]

    return f, [([rnd(2, 3)], {}), ([rnd(5, 7)], {})], {"shapeless": True, "exported": 1}


@case("dtypes_bf16")
def _():
    c = mx.array([0.5, -2.0, 3.0], dtype=mx.bfloat16)
    mx.eval(c)

    def f(x):
        return [(x.astype(mx.bfloat16) * c).astype(mx.float32)]

    return f, [([rnd(2, 3)], {})], {}


@case("conv2d")
def _():
    w = rnd(4, 3, 3, 2)
    mx.eval(w)

    def f(x):
        return [mx.conv2d(x, w, stride=1, padding=1)]

    return f, [([rnd(1, 5, 6, 2)], {})], {"rtol": 1e-4, "atol": 1e-4}


@case("conv_general_asym")
def _():
    w = rnd(3, 3, 2)

    def f(x, w):
        # Low and high padding differ, with stride 2: old layouts keep only the low padding.
        return [mx.conv_general(x, w, stride=2, padding=([1], [2]), kernel_dilation=2)]

    return f, [([rnd(2, 9, 2), w], {})], {"rtol": 1e-4, "atol": 1e-4}


@case("conv_transpose")
def _():
    w = rnd(2, 3, 3)

    def f(x, w):
        return [mx.conv_transpose1d(x, w, stride=2, padding=1)]

    return f, [([rnd(1, 6, 3), w], {})], {"rtol": 1e-4, "atol": 1e-4}


@case("quantize")
def _():
    def f(w):
        q, s, b = mx.quantize(w, group_size=32, bits=4)
        return [q, s, b]

    return f, [([rnd(4, 64)], {})], {"rtol": 1e-5, "atol": 1e-5}


@case("quantized_matmul")
def _():
    wq, s, b = mx.quantize(rnd(16, 64), group_size=32, bits=4)
    mx.eval(wq, s, b)

    def f(x):
        return [mx.quantized_matmul(x, wq, s, b, transpose=True, group_size=32, bits=4)]

    return f, [([rnd(3, 64)], {})], {"rtol": 1e-4, "atol": 1e-4}


@case("gather_qmm")
def _():
    wq, s, b = mx.quantize(rnd(3, 8, 64), group_size=32, bits=4)
    mx.eval(wq, s, b)

    def f(x, li, ri):
        return [mx.gather_qmm(x, wq, s, b, li, ri, transpose=True, group_size=32, bits=4)]

    li = mx.array([0, 1], dtype=mx.uint32)
    ri = mx.array([2, 0], dtype=mx.uint32)
    return f, [([rnd(2, 1, 64), li, ri], {})], {"rtol": 1e-4, "atol": 1e-4}


@case("gather_qmm_sorted", since="0.25.0")
def _():
    wq, s, b = mx.quantize(rnd(3, 8, 64), group_size=32, bits=4)
    mx.eval(wq, s, b)

    def f(x, ri):
        return [mx.gather_qmm(x, wq, s, b, rhs_indices=ri, transpose=True, group_size=32, bits=4, sorted_indices=True)]

    ri = mx.array([0, 1, 1, 2], dtype=mx.uint32)
    return f, [([rnd(4, 1, 64), ri], {})], {"rtol": 1e-4, "atol": 1e-4}


@case("quantize_mxfp4", since="0.29.0")
def _():
    def f(x, w):
        wq, s = mx.quantize(w, group_size=32, bits=4, mode="mxfp4")
        return [mx.quantized_matmul(x, wq, s, transpose=True, group_size=32, bits=4, mode="mxfp4")]

    return f, [([rnd(2, 64), rnd(8, 64)], {})], {"rtol": 1e-3, "atol": 1e-3}


@case("gather_mm")
def _():
    def f(a, b, li, ri):
        return [mx.gather_mm(a, b, li, ri)]

    li = mx.array([1, 0], dtype=mx.uint32)
    ri = mx.array([0, 2], dtype=mx.uint32)
    return f, [([rnd(2, 2, 3), rnd(3, 3, 4), li, ri], {})], {"rtol": 1e-4, "atol": 1e-4}


@case("gather_mm_sorted", since="0.25.0")
def _():
    def f(a, b, ri):
        return [mx.gather_mm(a, b, rhs_indices=ri, sorted_indices=True)]

    ri = mx.array([0, 0, 2], dtype=mx.uint32)
    return f, [([rnd(3, 2, 3), rnd(3, 3, 4), ri], {})], {"rtol": 1e-4, "atol": 1e-4}


@case("slice_update")
def _():
    def f(x, y):
        z = x * 1.0
        z[1:3, ::2] = y
        return [z]

    return f, [([rnd(4, 5), rnd(2, 3)], {})], {}


@case("slice_update_add")
def _():
    def f(x, y):
        # From 0.31.2 a SliceUpdate with reduce type Sum; before, a Scatter.
        return [x.at[1:3].add(y)]

    return f, [([rnd(4, 5), rnd(2, 5)], {})], {}


@case("svd")
def _():
    def f(a):
        u, s, vt_ = mx.linalg.svd(a, stream=mx.cpu)
        return [s]

    return f, [([rnd(4, 3)], {})], {"rtol": 1e-4, "atol": 1e-4}


@case("take_along_axis", since="0.26.2")
def _():
    def f(x, i):
        return [mx.take_along_axis(x, i, axis=1)]

    return f, [([rnd(3, 4), mx.array([[0, 3], [1, 1], [2, 0]], dtype=mx.int32)], {})], {}


@case("custom_kernel", since="0.32.0", runs=False)
def _():
    k = mx.fast.metal_kernel(
        name="scale2",
        input_names=["a"],
        output_names=["out"],
        source="uint i = thread_position_in_grid.x; out[i] = 2.0 * a[i];",
    )

    def f(a):
        return k(inputs=[a], grid=(4, 1, 1), threadgroup=(4, 1, 1), output_shapes=[(4,)],
                 output_dtypes=[mx.float32], init_value=0.0)

    return f, [([rnd(4)], {})], {}


@case("searchsorted", since="0.32.1")
def _():
    def f(a, v):
        return [mx.searchsorted(a, v)]

    return f, [([mx.array([1.0, 2.0, 4.0, 8.0]), mx.array([0.5, 2.0, 5.0])], {})], {}


@case("metadata", since="0.32.1")
def _():
    def f(x):
        return [x * 3.0]

    return f, [([rnd(2)], {})], {"metadata": "kiln fixture: {\"model\": \"tiny\", \"step\": 7}"}


@case("divmod", since="0.32.1")
def _():
    # 0.32.2 changed DivMod's meaning (floored quotient, remainder with the divisor's sign) without
    # changing its layout: each release's outputs hold its own semantics.
    def f(a, b, x, y):
        return list(mx.divmod(a, b)) + list(mx.divmod(x, y))

    ints = (mx.array([-7, 7, -7, 7, 6, 0], dtype=mx.int32), mx.array([2, 2, -2, -2, 3, 5], dtype=mx.int32))
    flts = (mx.array([-7.5, 7.5, -7.5, 7.5, 1.0], dtype=mx.float32), mx.array([2.0, 2.0, -2.0, -2.0, 0.25]))
    return f, [([*ints, *flts], {})], {}


@case("floor_divide", since="0.32.1")
def _():
    # From 0.32.4 a FloorDivide node; before, Divide (0.32.3: plus the integer floor correction).
    def f(a, b, x, y):
        return [a // b, x // y]

    return f, [([mx.array([-7, 7, -7, 7], dtype=mx.int32), mx.array([2, 2, -2, -2], dtype=mx.int32),
                 mx.array([-7.5, 7.5, 1.0]), mx.array([2.0, -2.0, 0.3])], {})], {}


@case("irfft_odd", since="0.32.1")
def _():
    # From 0.32.4 FFT stores odd_out (true for an odd inverse real length).
    def f(x):
        return [mx.fft.irfft(x, n=5), mx.fft.irfft(x, n=4), mx.fft.fft(x)]

    x = (rnd(2, 3) + 1j * rnd(2, 3)).astype(mx.complex64)
    return f, [([x], {})], {"rtol": 1e-4, "atol": 1e-4}


def run(name, fn, since, rtol, atol, runs):
    if since and V < vt(since):
        return None, f"needs MLX {since}"
    try:
        f, calls, opt = fn()
    except Exception as e:  # an op this MLX does not have
        return None, f"{type(e).__name__}: {e}"
    d = os.path.join(ROOT, name)
    os.makedirs(d, exist_ok=True)
    path = os.path.join(d, name + ".mlxfn")
    exported = opt.get("exported", len(calls))
    shapeless = opt.get("shapeless", False)

    def wrap(*args, **kwargs):
        out = f(*args, **kwargs)
        return out

    try:
        kw = {"shapeless": shapeless}
        if "metadata" in opt:
            kw["metadata"] = opt["metadata"]
        with mx.exporter(path, wrap, **kw) as ex:
            for args, kwargs in calls[:exported]:
                ex(*args, **kwargs)
    except Exception as e:
        shutil.rmtree(d)
        return None, f"export failed: {type(e).__name__}: {e}"
    entry = {"name": name, "file": f"{name}/{name}.mlxfn", "shapeless": shapeless,
             "rtol": opt.get("rtol", rtol), "atol": opt.get("atol", atol), "runs": runs, "calls": []}
    if "metadata" in opt:
        entry["metadata"] = opt["metadata"]
    for ci, (args, kwargs) in enumerate(calls):
        call = {"args": [], "kwargs": {}, "outputs": []}
        for ai, a in enumerate(args):
            call["args"].append(save(os.path.join(d, f"call{ci}_arg{ai}.npy"), a))
        for k, a in sorted(kwargs.items()):
            call["kwargs"][k] = save(os.path.join(d, f"call{ci}_kw_{k}.npy"), a)
        if runs:
            outs = f(*args, **kwargs)
            mx.eval(outs)
            for oi, o in enumerate(outs):
                call["outputs"].append(save(os.path.join(d, f"call{ci}_out{oi}.npy"), o))
        entry["calls"].append(call)
    return entry, None


def isolated(f, name, *args):
    """Run one case in a child process: some releases crash while exporting (0.29.4 on svd)."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        try:
            res = f(name, *args)
        except Exception as e:
            res = (None, f"{type(e).__name__}: {e}")
        with os.fdopen(w, "w") as fh:
            json.dump(res, fh)
        os._exit(0)
    os.close(w)
    with os.fdopen(r) as fh:
        data = fh.read()
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        d = os.path.join(ROOT, name)
        if os.path.isdir(d):
            shutil.rmtree(d)
        return None, f"MLX {VERSION} crashed (signal {os.WTERMSIG(status)}) while exporting"
    return tuple(json.loads(data))


def main():
    if os.path.isdir(ROOT):
        shutil.rmtree(ROOT)
    os.makedirs(ROOT)
    manifest = {"producer": f"mlx {VERSION} (PyPI wheel, CPU)", "version": VERSION, "cases": [], "skipped": {}}
    for name, fn, since, rtol, atol, runs in CASES:
        entry, why = isolated(run, name, fn, since, rtol, atol, runs)
        if entry:
            manifest["cases"].append(entry)
        else:
            manifest["skipped"][name] = why
    with open(os.path.join(ROOT, "manifest.json"), "w") as fh:
        json.dump(manifest, fh, indent=1)
        fh.write("\n")
    print(VERSION, "cases:", [c["name"] for c in manifest["cases"]], "skipped:", manifest["skipped"])


if __name__ == "__main__":
    main()
