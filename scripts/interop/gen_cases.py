#!/usr/bin/env python3
"""Export a broad spread of functions with the installed MLX, for kiln to import and run.

usage: gen_cases.py OUTDIR [--only NAME,...]

Writes OUTDIR/manifest.json in the golden corpus format (tests/golden/README.md) and, per case,
OUTDIR/NAME/NAME.mlxfn with the .npy inputs and the outputs that MLX's *imported* function gives
(so randomness drawn at trace time is what the file holds). A case MLX cannot export, import or run
here is still listed, with "skip": the reason and MLX's message, so kiln's runner reports it as
skipped rather than dropping it silently. The cases run in one worker process that is restarted if
MLX crashes on one of them (workers.py).
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import workers  # noqa: E402

CASES = []


def case(name, group, rtol=1e-5, atol=1e-6, exact=False, abs_outputs=(), shapeless=False, needs=None):
    """Register a case. The builder returns (fn, traces, extra_calls[, metadata]) where traces are
    the (args, kwargs) exported (several: one exporter, several records) and extra_calls are more
    calls (other shapes for shapeless files). `needs` names an mx attribute the case requires."""

    def deco(builder):
        CASES.append(dict(name=name, group=group, rtol=rtol, atol=atol, exact=exact,
                          abs_outputs=list(abs_outputs), shapeless=shapeless, needs=needs,
                          builder=builder))
        return builder

    return deco


# ---- the cases (inputs from a seeded numpy generator; the builders run inside the worker) ----

def _np():
    import numpy as np
    return np


def _mx():
    import mlx.core as mx
    return mx


def rnd(seed, *shape, dtype="float32", lo=-1.0, hi=1.0):
    np, mx = _np(), _mx()
    r = np.random.RandomState(seed)
    a = mx.array(r.uniform(lo, hi, size=shape).astype(np.float32))
    return a.astype(getattr(mx, dtype))


def ints(seed, *shape, lo=0, hi=10, dtype="int32"):
    np, mx = _np(), _mx()
    r = np.random.RandomState(seed)
    return mx.array(r.randint(lo, hi, size=shape).astype(np.int64)).astype(getattr(mx, dtype))


def spd(seed, n, batch=()):
    mx = _mx()
    a = rnd(seed, *batch, n, n)
    return a @ mx.swapaxes(a, -1, -2) + n * mx.eye(n)


@case("math_mix", "elementwise")
def _():
    mx = _mx()
    f = lambda x, y: (mx.sin(x) * mx.exp(-y) + mx.sqrt(mx.abs(x)) / (1 + y * y),  # noqa: E731
                      mx.tanh(x) - mx.log1p(mx.abs(y)), mx.arctan2(x, y), mx.erf(x) * mx.sigmoid(y))
    return f, [((rnd(1, 4, 5), rnd(2, 4, 5)), {})], []


@case("math_half_precision", "elementwise", rtol=1e-2, atol=1e-2)
def _():
    mx = _mx()

    def f(h, b):
        return (mx.exp(h) * h + 1, mx.softmax(b, axis=-1), (h.astype(mx.float32) + b).astype(mx.bfloat16))

    return f, [((rnd(3, 3, 8, dtype="float16"), rnd(4, 3, 8, dtype="bfloat16")), {})], []


@case("integer_ops", "elementwise", exact=True)
def _():
    mx = _mx()

    def f(a, b):
        return (a // b, a % b, a & b, a | b, a ^ b, mx.left_shift(a, 2), mx.right_shift(a, 1),
                mx.minimum(a, b), a * b - 3, (a > b), mx.where(a > b, a, -b))

    return f, [((ints(5, 6, lo=-50, hi=50), ints(6, 6, lo=1, hi=9)), {})], []


@case("compare_clip_select", "elementwise")
def _():
    mx = _mx()

    def f(x, y):
        return (mx.clip(x, -0.5, 0.5), mx.where(x > y, x, 2 * y), mx.isclose(x, x + 1e-9),
                mx.logical_and(x > 0, y < 0), mx.isnan(x / (x * 0)), mx.maximum(x, y))

    return f, [((rnd(7, 3, 4), rnd(8, 3, 4)), {})], []


@case("complex_math", "elementwise")
def _():
    mx = _mx()

    def f(re, im):
        z = re + 1j * im
        return (z * mx.conjugate(z) + z, mx.abs(z), mx.real(z * z), mx.imag(mx.exp(z)))

    return f, [((rnd(9, 5), rnd(10, 5)), {})], []


@case("astype_view", "elementwise", exact=True)
def _():
    mx = _mx()

    def f(x):
        return (x.astype(mx.int16), x.astype(mx.float16), x.view(mx.uint32), (x > 0).astype(mx.uint8))

    return f, [((rnd(11, 2, 6, lo=-100, hi=100),), {})], []


@case("reductions", "reduce", rtol=1e-4, atol=1e-5)
def _():
    mx = _mx()

    def f(x):
        return (mx.sum(x, axis=1), mx.mean(x, axis=(0, 2), keepdims=True), mx.var(x, axis=-1, ddof=1),
                mx.std(x), mx.max(x, axis=0), mx.min(x, axis=2), mx.prod(x + 1.5, axis=1),
                mx.argmax(x, axis=1), mx.argmin(x, axis=-1, keepdims=True), mx.logsumexp(x, axis=2),
                mx.all(x > -0.9, axis=1), mx.any(x > 0.9))

    return f, [((rnd(12, 3, 4, 5),), {})], []


@case("scans_softmax", "reduce", rtol=1e-4, atol=1e-5)
def _():
    mx = _mx()

    def f(x):
        return (mx.cumsum(x, axis=1), mx.cumprod(x + 1, axis=0, reverse=True),
                mx.cummax(x, axis=1, inclusive=False), mx.cummin(x, axis=-1), mx.softmax(x, axis=1),
                mx.softmax(x, axis=0, precise=True))

    return f, [((rnd(13, 4, 6),), {})], []


@case("kwargs_only", "api")
def _():
    mx = _mx()
    f = lambda *, scale, bias: (scale * 2 + bias, mx.exp(bias))  # noqa: E731
    return f, [((), {"scale": rnd(14, 3), "bias": rnd(15, 3)})], []


@case("args_and_kwargs", "api")
def _():
    mx = _mx()

    def f(x, y, *, gamma, alpha):
        return (x @ y * gamma + alpha, x.sum() - alpha.sum())

    return f, [((rnd(16, 2, 3), rnd(17, 3, 4)), {"gamma": rnd(18, 4), "alpha": rnd(19, 1)})], []


@case("multi_trace", "api")
def _():
    mx = _mx()
    w = rnd(20, 4)
    mx.eval(w)

    def f(x, *rest, **kw):
        y = x * w
        for r in rest:
            y = y + r.astype(y.dtype)
        for k in sorted(kw):
            y = y - kw[k]
        return (y, y.sum(axis=-1))

    traces = [((rnd(21, 4),), {}), ((rnd(22, 3, 4),), {}), ((rnd(23, 2, 4), ints(24, 4)), {}),
              ((rnd(25, 4, dtype="float16"),), {}), ((rnd(26, 4),), {"b": rnd(27, 4)})]
    return f, traces, []


@case("no_inputs_constants", "api")
def _():
    mx = _mx()
    c = mx.arange(12).reshape(3, 4).astype(mx.float32)
    mx.eval(c)
    return (lambda: (c * 2, mx.ones((2, 2)), mx.linspace(0, 1, 5), mx.eye(3, k=1), mx.tri(3, 4))), [((), {})], []


@case("shapeless_elementwise", "shapeless", shapeless=True)
def _():
    mx = _mx()
    f = lambda x, y: (mx.exp(x) * y + 1.0, mx.maximum(x, 0) - y / 2)  # noqa: E731
    return f, [((rnd(28, 2, 3), rnd(29, 2, 3)), {})], [((rnd(30, 5, 7), rnd(31, 5, 7)), {})]


@case("shapeless_broadcast_reduce", "shapeless", shapeless=True, rtol=1e-4, atol=1e-5)
def _():
    mx = _mx()

    def f(x, b):
        y = x + b
        return (mx.sum(y, axis=1), mx.mean(y, axis=-1), mx.max(y, axis=0), mx.softmax(y, axis=-1), y.T)

    return f, [((rnd(32, 3, 4), rnd(33, 4)), {})], [((rnd(34, 6, 2), rnd(35, 2)), {})]


@case("shapeless_reshape_matmul", "shapeless", shapeless=True, rtol=1e-4, atol=1e-5)
def _():
    mx = _mx()

    def f(x, w):
        return (mx.reshape(x @ w, (-1,)), mx.expand_dims(x, 0) * 2)

    return f, [((rnd(36, 2, 3), rnd(37, 3, 4)), {})], [((rnd(38, 5, 3), rnd(39, 3, 4)), {})]


def _quant_case(name, mode, group_size, bits, transpose=True, in_graph=False, dims=(4, 64, 32)):
    """quantized_matmul + dequantize with the weights quantized by MLX beforehand and passed as
    inputs, or (in_graph) quantized inside the function, which exports a Quantize node (MLX cannot
    export that for mxfp8/nvfp4: their quantize uses the unserializable ToFP8)."""

    @case(name, "quantized", rtol=1e-3, atol=1e-3)
    def _():
        mx = _mx()
        m, k, n = dims

        def qmm(x, wq, scales, biases):
            y = mx.quantized_matmul(x, wq, scales, biases, transpose=transpose, group_size=group_size,
                                    bits=bits, mode=mode)
            if mode in ("mxfp8", "nvfp4"):  # their dequantize uses the unserializable FromFP8
                return (y,)
            return (y, mx.dequantize(wq, scales, biases, group_size=group_size, bits=bits, mode=mode))

        w = rnd(41, *((n, k) if transpose else (k, n)))
        x = rnd(40, m, k)
        if in_graph:
            def f(x, w):
                q = [a for a in mx.quantize(w, group_size=group_size, bits=bits, mode=mode) if a is not None]
                return qmm(x, q[0], q[1], q[2] if len(q) > 2 else None)

            return f, [((x, w), {})], []
        q = [a for a in mx.quantize(w, group_size=group_size, bits=bits, mode=mode) if a is not None]
        if len(q) > 2:
            return (lambda x, wq, s, b: qmm(x, wq, s, b)), [((x, *q), {})], []
        return (lambda x, wq, s: qmm(x, wq, s, None)), [((x, *q), {})], []


_quant_case("quantized_affine_4bit_in_graph", "affine", 64, 4, in_graph=True)
_quant_case("quantized_mxfp4_in_graph", "mxfp4", 32, 4, in_graph=True)
_quant_case("quantized_affine_4bit", "affine", 64, 4)
_quant_case("quantized_affine_8bit_notrans", "affine", 32, 8, transpose=False)
_quant_case("quantized_affine_2bit_g32", "affine", 32, 2)
_quant_case("quantized_affine_3bit", "affine", 64, 3)
_quant_case("quantized_affine_6bit_g128", "affine", 128, 6, dims=(3, 256, 16))
_quant_case("quantized_affine_5bit", "affine", 64, 5)
_quant_case("quantized_mxfp4", "mxfp4", 32, 4)
_quant_case("quantized_mxfp8", "mxfp8", 32, 8)
_quant_case("quantized_nvfp4", "nvfp4", 16, 4)


@case("quantized_constant_weights", "quantized", rtol=1e-3, atol=1e-3)
def _():
    mx = _mx()
    w, s, b = mx.quantize(rnd(42, 16, 64), group_size=32, bits=4)
    mx.eval(w, s, b)
    f = lambda x: (mx.quantized_matmul(x, w, s, b, transpose=True, group_size=32, bits=4),)  # noqa: E731
    return f, [((rnd(43, 3, 64),), {})], []


@case("random_with_keys", "random", rtol=1e-5, atol=1e-6)
def _():
    mx = _mx()

    def f(key, x):
        k1, k2, k3 = mx.random.split(key, 3)
        return (mx.random.normal((3, 4), key=k1), mx.random.uniform(-1, 2, (5,), key=k2),
                mx.random.bernoulli(0.3, (6,), key=k3), mx.random.randint(0, 10, (4,), key=k1),
                mx.random.categorical(x, key=k2), mx.random.gumbel((2, 3), key=k3),
                mx.random.truncated_normal(-1, 1, (4,), key=k1), mx.random.randint(-5, 5, (2, 2), key=key))

    return f, [((mx.random.key(7), rnd(44, 3, 5)), {})], [((mx.random.key(123), rnd(45, 3, 5)), {})]


@case("random_trace_time_key", "random")
def _():
    mx = _mx()
    mx.random.seed(3)
    f = lambda x: (x + mx.random.normal(x.shape), mx.random.permutation(6))  # noqa: E731
    return f, [((rnd(46, 2, 3),), {})], []


@case("conv1d", "conv", rtol=1e-4, atol=1e-4)
def _():
    mx = _mx()
    f = lambda x, w: (mx.conv1d(x, w, stride=2, padding=1), mx.conv1d(x, w, dilation=2))  # noqa: E731
    return f, [((rnd(47, 2, 16, 4), rnd(48, 6, 3, 4)), {})], []


@case("conv2d_groups_strided", "conv", rtol=1e-4, atol=1e-4)
def _():
    mx = _mx()

    def f(x, w, wg):
        return (mx.conv2d(x, w, stride=(2, 1), padding=(1, 2), dilation=(1, 2)),
                mx.conv2d(x, wg, groups=2))

    return f, [((rnd(49, 2, 9, 10, 4), rnd(50, 6, 3, 3, 4), rnd(51, 4, 2, 2, 2)), {})], []


@case("conv3d", "conv", rtol=1e-4, atol=1e-4)
def _():
    mx = _mx()
    f = lambda x, w: (mx.conv3d(x, w, padding=1),)  # noqa: E731
    return f, [((rnd(52, 1, 5, 6, 4, 3), rnd(53, 4, 3, 3, 2, 3)), {})], []


@case("conv_transpose", "conv", rtol=1e-4, atol=1e-4)
def _():
    mx = _mx()

    def f(x1, w1, x2, w2, x3, w3):
        return (mx.conv_transpose1d(x1, w1, stride=2, padding=1),
                mx.conv_transpose2d(x2, w2, stride=2, output_padding=1),
                mx.conv_transpose3d(x3, w3))

    return f, [((rnd(54, 1, 7, 3), rnd(55, 4, 3, 3), rnd(56, 1, 5, 5, 2), rnd(57, 3, 3, 3, 2),
                 rnd(58, 1, 3, 3, 3, 2), rnd(59, 2, 2, 2, 2, 2)), {})], []


@case("conv_general_flip", "conv", rtol=1e-4, atol=1e-4)
def _():
    mx = _mx()
    f = lambda x, w: (mx.conv_general(x, w, stride=1, padding=([1, 0], [0, 1]), flip=True),)  # noqa: E731
    return f, [((rnd(60, 1, 6, 6, 2), rnd(61, 3, 2, 3, 2)), {})], []


@case("linalg_qr_inv_cholesky", "linalg", rtol=1e-3, atol=1e-4, abs_outputs=(0, 1))
def _():
    mx = _mx()
    cpu = mx.cpu

    def f(a, s):
        q, r = mx.linalg.qr(a, stream=cpu)
        return (q, r, mx.linalg.inv(s, stream=cpu), mx.linalg.cholesky(s, stream=cpu),
                mx.linalg.cholesky(s, upper=True, stream=cpu),                 mx.linalg.norm(a, axis=-1), mx.linalg.tri_inv(mx.triu(s), upper=True, stream=cpu))

    return f, [((rnd(62, 2, 4, 4), spd(63, 4, (2,))), {})], []


@case("linalg_svd", "linalg", rtol=1e-3, atol=1e-4, abs_outputs=(0, 2))
def _():
    mx = _mx()

    def f(a):
        u, s, vt = mx.linalg.svd(a, stream=mx.cpu)
        return (u, s, vt, mx.linalg.svd(a, compute_uv=False, stream=mx.cpu))

    return f, [((rnd(64, 5, 3),), {})], []


@case("linalg_eigh", "linalg", rtol=1e-3, atol=1e-4, abs_outputs=(1,))
def _():
    mx = _mx()

    def f(s):
        w, v = mx.linalg.eigh(s, stream=mx.cpu)
        return (w, v, mx.linalg.eigvalsh(s, UPLO="U", stream=mx.cpu))

    return f, [((spd(65, 4),), {})], []


@case("linalg_pinv_eig", "linalg", rtol=1e-3, atol=1e-4)
def _():
    mx = _mx()

    def f(a, b):
        w = mx.linalg.eigvals(b, stream=mx.cpu)
        return (mx.linalg.pinv(a, stream=mx.cpu), mx.sort(mx.real(w)))

    return f, [((rnd(66, 4, 3), spd(67, 3)), {})], []


@case("sort_topk_partition", "sort", exact=True)
def _():
    mx = _mx()

    def f(x):
        return (mx.sort(x, axis=-1), mx.argsort(x, axis=0), mx.sort(mx.topk(x, 3, axis=1), axis=1),
                mx.sort(x.flatten()), mx.partition(x, 2, axis=1)[:, 2], mx.sort(mx.argpartition(x, 0, axis=0)[:1], axis=1) * 0)

    return f, [((rnd(68, 4, 7),), {})], []


@case("gather_scatter_take", "index", exact=True)
def _():
    mx = _mx()

    def f(x, idx, upd):
        y = x.at[idx].add(upd)
        z = x.at[idx, 1].maximum(5.0)
        return (mx.take(x, idx, axis=0), mx.take(x.flatten(), idx), x[idx, 1:3], mx.take_along_axis(x[:4], idx[:, None] % 3, axis=1),
                y, z, x.at[idx].multiply(2.0), mx.put_along_axis(x[:4], idx[:, None] % 3, upd[:, :1], axis=1))

    return f, [((rnd(69, 5, 3), mx.array([0, 3, 3, 1]), rnd(70, 4, 3)), {})], []


@case("slice_update", "index", exact=True)
def _():
    mx = _mx()

    def f(x, y):
        z = x + 0
        z[1:3, ::2] = y
        w = mx.slice_update(x, y[:1, :1] * 10, mx.array([2]), axes=(0,))
        return (z, w, mx.slice(x, mx.array([1, 1]), (0, 1), (2, 2)))

    return f, [((rnd(71, 4, 6), rnd(72, 2, 3)), {})], []


@case("shape_ops", "shape", exact=True)
def _():
    mx = _mx()

    def f(x, y):
        parts = mx.split(x, [1, 3], axis=1)
        return (mx.concatenate([x, y], axis=0), mx.stack([x, y], axis=1), mx.pad(x, ((1, 0), (2, 1)), constant_values=3),
                mx.pad(x, 1, mode="edge"), mx.tile(x, (2, 1)), mx.repeat(x, 2, axis=1), mx.roll(x, 2, axis=1),
                parts[0], parts[2], mx.moveaxis(mx.broadcast_to(x, (2, 3, 5)), 0, 2), mx.flatten(x),
                mx.unflatten(x.flatten(), 0, (5, 3)), mx.tril(y), mx.as_strided(x, (2, 2), (5, 1), 1))

    return f, [((rnd(73, 3, 5), rnd(74, 3, 5)), {})], []


@case("matmul_family", "matmul", rtol=1e-4, atol=1e-4)
def _():
    mx = _mx()

    def f(a, b, c, v):
        return (a @ b, mx.addmm(c, a, b, alpha=0.5, beta=2.0), mx.einsum("bij,bjk->bik", a, b),
                a @ v, mx.outer(v, v), mx.inner(v, v), mx.tensordot(a, b, axes=([2], [1])))

    return f, [((rnd(75, 2, 3, 4), rnd(76, 2, 4, 5), rnd(77, 2, 3, 5), rnd(78, 4)), {})], []


@case("gather_mm_block_masked", "matmul", rtol=1e-4, atol=1e-4)
def _():
    mx = _mx()

    def f(a, b, li, ri):
        return (mx.gather_mm(a, b, li, ri),)

    return f, [((rnd(79, 3, 2, 4), rnd(80, 2, 4, 5), mx.array([2, 0]), mx.array([1, 1])), {})], []


@case("fft_family", "fft", rtol=1e-4, atol=1e-4)
def _():
    mx = _mx()

    def f(x, z):
        return (mx.fft.fft(z), mx.fft.ifft(z, n=6), mx.fft.rfft(x, axis=0), mx.fft.irfft(mx.fft.rfft(x)),
                mx.fft.fft2(z.reshape(2, 4)), mx.fft.rfftn(x, axes=(0, 1)))

    z = rnd(81, 8) + 1j * rnd(82, 8)
    return f, [((rnd(83, 6, 5), z), {})], []


@case("fast_ops_cpu", "fast", rtol=1e-4, atol=1e-4)
def _():
    mx = _mx()

    def f(x, w, b, q, k, v):
        return (mx.fast.rms_norm(x, w, 1e-5), mx.fast.layer_norm(x, w, b, 1e-5),
                mx.fast.rope(q, 8, traditional=False, base=10000.0, scale=1.0, offset=2),
                mx.fast.scaled_dot_product_attention(q, k, v, scale=0.35, mask="causal"),
                mx.fast.scaled_dot_product_attention(q, k, v, scale=0.35))

    return f, [((rnd(84, 2, 8), rnd(85, 8), rnd(86, 8), rnd(87, 1, 2, 4, 8), rnd(88, 1, 2, 4, 8),
                 rnd(89, 1, 2, 4, 8)), {})], []


@case("hadamard_misc", "misc", rtol=1e-4, atol=1e-5)
def _():
    mx = _mx()

    def f(x):
        q, r = mx.divmod(x * 7, 2.0)
        return (mx.hadamard_transform(x, scale=0.5), q, r, mx.arange(x.shape[0]) * x.sum(),
                mx.stop_gradient(x) * 3, mx.nan_to_num(x / 0.0), mx.round(x * 10, 1))

    return f, [((rnd(90, 8, 4),), {})], []


@case("searchsorted", "misc", exact=True, needs="searchsorted")
def _():
    mx = _mx()
    f = lambda s, v: (mx.searchsorted(s, v), mx.searchsorted(s, v, side="right"))  # noqa: E731
    return f, [((mx.array([1.0, 2.0, 2.0, 5.0, 9.0]), mx.array([[0.0, 2.0], [5.5, 10.0]])), {})], []


@case("metadata", "api", needs="__metadata__")
def _():
    mx = _mx()
    return (lambda x: (x * 3,)), [((rnd(91, 3),), {})], [], "kiln interop: metadata string ✓"


@case("gather_qmm_block_masked", "matmul", rtol=1e-3, atol=1e-3)
def _():
    mx = _mx()
    wq, sc, bi = mx.quantize(rnd(97, 3, 16, 64), group_size=32, bits=4)
    mx.eval(wq, sc, bi)

    def f(x, li, ri, a, b, mask):
        return (mx.gather_qmm(x, wq, sc, bi, li, ri, transpose=True, group_size=32, bits=4),
                mx.block_masked_mm(a, b, block_size=32, mask_out=mask))

    return f, [((rnd(98, 2, 1, 64), mx.array([0, 0]), mx.array([2, 1]), rnd(99, 64, 64), rnd(100, 64, 32),
                 mx.array([[True], [False]])), {})], []


@case("masked_scatter_dynamic", "index", exact=True)
def _():
    mx = _mx()

    def f(x, m, v, i):
        y = x + 0
        y[m] = v[: 6]
        return (y, mx.slice(x, i, (0,), (2, 3)), mx.slice_update(x, v[:3].reshape(1, 3) * 0, i, axes=(0,)))

    m = mx.array([[True, False, True], [False, True, True], [True, True, False], [False, False, False]])
    return f, [((rnd(101, 4, 3), m, rnd(102, 12), mx.array([1])), {})], []


@case("dtypes_wide", "elementwise", exact=True)
def _():
    mx = _mx()

    def f(d, u, b, i8):
        return (d * 2 + 1, mx.sqrt(mx.abs(d)), u + u, u.astype(mx.float32), ~b, b | (u > 3),
                i8.astype(mx.int64) * 1000, mx.abs(i8), d.astype(mx.bfloat16))

    return f, [((rnd(103, 5, dtype="float64"), ints(104, 5, hi=200, dtype="uint8"), ints(105, 5, hi=2, dtype="bool_"),
                 ints(106, 5, lo=-100, hi=100, dtype="int8")), {})], []


@case("meshgrid_arange_shapes", "shape", exact=True)
def _():
    mx = _mx()

    def f(x, y):
        gx, gy = mx.meshgrid(x, y, indexing="ij")
        return (gx + gy, mx.arange(1, 10, 3), mx.full((2, 3), 7, dtype=mx.int32), mx.zeros_like(x), mx.diag(gx),
                mx.swapaxes(mx.atleast_3d(x), 0, 2), mx.squeeze(mx.expand_dims(y, (0, 2)), 0))

    return f, [((rnd(107, 4), rnd(108, 3)), {})], []


@case("transformer_block", "models", rtol=1e-4, atol=1e-4)
def _():
    mx = _mx()
    d, h = 32, 4
    wq, wk, wv, wo, w1, w2 = (rnd(110 + i, d, d) * 0.2 for i in range(6))
    g = rnd(120, d) + 1
    mx.eval(wq, wk, wv, wo, w1, w2, g)

    def f(x):
        b, t, _ = x.shape
        y = mx.fast.rms_norm(x, g, 1e-5)
        q, k, v = (mx.transpose((y @ w).reshape(b, t, h, d // h), (0, 2, 1, 3)) for w in (wq, wk, wv))
        q = mx.fast.rope(q, d // h, traditional=False, base=10000.0, scale=1.0, offset=0)
        k = mx.fast.rope(k, d // h, traditional=False, base=10000.0, scale=1.0, offset=0)
        a = mx.fast.scaled_dot_product_attention(q, k, v, scale=(d // h) ** -0.5, mask="causal")
        x = x + mx.transpose(a, (0, 2, 1, 3)).reshape(b, t, d) @ wo
        return (x + mx.maximum(mx.fast.layer_norm(x, g, None, 1e-5) @ w1, 0) @ w2,)

    return f, [((rnd(121, 2, 5, d),), {})], []


@case("mlp_model", "models", rtol=1e-4, atol=1e-5)
def _():
    mx = _mx()
    w1, b1, w2 = rnd(92, 8, 16), rnd(93, 16), rnd(94, 16, 3)
    mx.eval(w1, b1, w2)

    def f(x):
        h = mx.maximum(x @ w1 + b1, 0)
        h = mx.fast.layer_norm(h, None, None, 1e-5) if hasattr(mx, "fast") else h
        return (mx.softmax(h @ w2, axis=-1),)

    return f, [((rnd(95, 4, 8),), {}), ((rnd(96, 1, 8),), {})], []


# ---- worker ----

def has_metadata_api():
    import inspect
    mx = _mx()
    doc = mx.export_function.__doc__ or ""
    try:
        return "metadata" in str(inspect.signature(mx.export_function))
    except (TypeError, ValueError):
        return "metadata" in doc.split("\n")[0]


def generate(outdir, spec):
    mx = _mx()
    name = spec["name"]
    cdir = os.path.join(outdir, name)
    os.makedirs(cdir, exist_ok=True)
    entry = {k: spec[k] for k in ("name", "group", "rtol", "atol", "exact", "abs_outputs", "shapeless")}
    entry["file"] = "%s/%s.mlxfn" % (name, name)
    entry["calls"] = []
    need = spec["needs"]
    if need == "__metadata__" and not has_metadata_api():
        entry["skip"] = "MLX %s has no export metadata (added in 0.32.1)" % mx.__version__
        return entry
    if need and need != "__metadata__" and not hasattr(mx, need):
        entry["skip"] = "MLX %s has no mx.%s" % (mx.__version__, need)
        return entry
    try:
        built = spec["builder"]()
    except Exception as e:  # noqa: BLE001 - a bug in this script (or an API change): kiln's runner fails it
        entry["error"] = "building the case failed: %s: %s" % (type(e).__name__, e)
        return entry
    fn, traces, extra = built[0], built[1], built[2]
    metadata = built[3] if len(built) > 3 else None
    path = os.path.join(outdir, entry["file"])
    stage = "export"
    try:
        kw = {"shapeless": spec["shapeless"]}
        if metadata is not None:
            kw["metadata"] = metadata
        if len(traces) == 1:
            args, kwargs = traces[0]
            mx.export_function(path, fn, *args, **kw, **kwargs)
        else:
            with mx.exporter(path, fn, **kw) as ex:
                for args, kwargs in traces:
                    ex(*args, **kwargs)
        stage = "import"
        imported = mx.import_function(path)
        stage = "run"
        for k, (args, kwargs) in enumerate(traces + extra):
            outs = imported(*args, **kwargs)
            mx.eval(outs)
            call = {"args": [], "kwargs": {}, "outputs": []}
            for i, a in enumerate(args):
                f = "%s/call%d_arg%d.npy" % (name, k, i)
                mx.save(os.path.join(outdir, f), a)
                call["args"].append({"file": f, "dtype": str(a.dtype).split(".")[-1]})
            for kname, a in kwargs.items():
                f = "%s/call%d_kw_%s.npy" % (name, k, kname)
                mx.save(os.path.join(outdir, f), a)
                call["kwargs"][kname] = {"file": f, "dtype": str(a.dtype).split(".")[-1]}
            for i, o in enumerate(outs):
                f = "%s/call%d_out%d.npy" % (name, k, i)
                mx.save(os.path.join(outdir, f), o)
                call["outputs"].append({"file": f, "dtype": str(o.dtype).split(".")[-1]})
            entry["calls"].append(call)
    except Exception as e:  # noqa: BLE001 - MLX's own limits become skip reasons with MLX's text
        entry["skip"] = "MLX %s cannot %s this function: %s: %s" % (
            mx.__version__, stage, type(e).__name__, " ".join(str(e).split()))
        entry["calls"] = []
    if metadata is not None and "skip" not in entry:
        entry["metadata"] = metadata
    return entry


def worker(outdir, only, start):
    specs = select(only)
    for i in range(start, len(specs)):
        print(json.dumps({"start": i}), flush=True)
        entry = generate(outdir, specs[i])
        print(json.dumps({"i": i, "status": "ok", "entry": entry}), flush=True)


def select(only):
    if not only:
        return CASES
    names = set(only.split(","))
    return [c for c in CASES if c["name"] in names]


def main():
    args = sys.argv[1:]
    if args and args[0] == "--worker":
        worker(args[1], args[2], int(args[3]))
        return 0
    outdir = os.path.abspath(args[0])
    only = args[2] if len(args) > 2 and args[1] == "--only" else ""
    os.makedirs(outdir, exist_ok=True)
    import mlx.core as mx

    specs = select(only)
    results = workers.run(os.path.abspath(__file__), [outdir, only], len(specs))
    cases = []
    for i, spec in enumerate(specs):
        r = results.get(i)
        if r and r.get("status") == "ok":
            cases.append(r["entry"])
        else:
            why = r["why"] if r else "not run"
            cases.append({"name": spec["name"], "group": spec["group"], "file": "", "calls": [],
                          "shapeless": spec["shapeless"], "rtol": spec["rtol"], "atol": spec["atol"],
                          "exact": spec["exact"], "abs_outputs": spec["abs_outputs"],
                          "skip": "MLX %s cannot export this function: %s" % (mx.__version__, why)})
    with open(os.path.join(outdir, "manifest.json"), "w") as f:
        json.dump({"producer": "mlx %s" % mx.__version__, "cases": cases}, f, indent=1, sort_keys=True)
    skipped = [c for c in cases if c.get("skip")]
    errors = [c for c in cases if c.get("error")]
    print("generated %d cases with MLX %s (%d that MLX itself cannot export or run, %d generator errors)" % (
        len(cases), mx.__version__, len(skipped), len(errors)))
    for c in skipped + errors:
        print("  %s: %s" % (c["name"], c.get("skip") or c.get("error")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
