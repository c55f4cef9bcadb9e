"""Reference sweep: independent references (numpy) and the cases whose reference is not MLX 0.30.1."""

import numpy as np
import mlx.core as mx

from sweep_common import *  # noqa: F401,F403
from sweep_ops import OPS


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


def _bits_keys(x, p):
    """A RandomBits node with a batch of keys (k, 2): the output splits evenly, each key's share being
    what that key alone gives for the per-key shape."""
    keys = np.array(x[0])
    outs = [random_bits(k, [int(np.prod(p["shape"])) // len(keys)], p["width"]) for k in keys]
    return mx.array(np.concatenate(outs).reshape(p["shape"]))


OPS["kiln.random_bits_keys"] = _bits_keys


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
    out = np.stack([a[i] @ b[j] for i, j in zip(li.reshape(-1), ri.reshape(-1))])
    out = out.reshape(li.shape + (a.shape[-2], b.shape[-1]))
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
