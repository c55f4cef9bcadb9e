"""Reference sweep: the MLX side of every op, fn(inputs, params) -> array(s). test_sweep.cpp mirrors it."""

import math

import numpy as np
import mlx.core as mx

from sweep_common import *  # noqa: F401,F403


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
    if x[0].dtype == mx.bfloat16:
        return mx.array(a.astype(np.float32)).astype(x[0].dtype)
    return mx.array(a, dtype=x[0].dtype)


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


# Ops whose float outputs must match bit for bit (they move, select or compare values, or round).
EXACT = set(["abs", "negative", "sign", "floor", "ceil", "round", "logical_not", "bitwise_invert", "conjugate",
             "real", "imag", "isnan", "isinf", "isfinite", "isposinf", "isneginf", "stop_gradient", "kiln.copy",
             "astype", "view", "nan_to_num", "maximum", "minimum", "equal", "not_equal", "greater",
             "greater_equal", "less", "less_equal", "logical_and", "logical_or", "bitwise_and", "bitwise_or",
             "bitwise_xor", "left_shift", "right_shift", "array_equal", "isclose", "allclose", "where", "clip",
             "all", "any", "max", "min", "argmin", "argmax", "cummax", "cummin",
             "sort", "argsort", "partition", "argpartition", "topk", "take", "take_along_axis", "put_along_axis",
             "gather", "scatter", "scatter_max", "scatter_min", "masked_scatter", "square"])
EXACT |= set(["reshape", "flatten", "unflatten", "squeeze", "expand_dims", "transpose", "swapaxes", "moveaxis",
              "broadcast_to", "broadcast_arrays", "as_strided", "contiguous", "atleast_1d", "atleast_2d",
              "atleast_3d", "slice", "slice_dynamic", "slice_update", "slice_update_dynamic", "split", "concatenate",
              "stack", "tile", "repeat", "roll", "pad", "meshgrid", "tril", "triu", "full", "zeros", "ones",
              "zeros_like", "ones_like", "eye", "identity", "tri", "depends", "kiln.broadcast_axes",
              "kiln.number_of_elements", "fft.fftshift", "fft.ifftshift", "random.bits", "kiln.random_bits_keys",
              "random.split", "random.permutation", "quantize"])
