"""Reference sweep cases: quantization, random numbers, fused ops and graph utilities."""

import math

import numpy as np
import mlx.core as mx

from sweep_common import *  # noqa: F401,F403
from sweep_case import *  # noqa: F401,F403


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
    case("quantize", [A([4, 64], "float32", view="T")], {"group_size": 32, "bits": 4, "mode": "affine"},
         name="affine_T")
    case("quantize", [A([4, 64], "float32", view="S")], {"group_size": 32, "bits": 4, "mode": "mxfp4"}, name="mxfp4_S")
    case("quantize", [A([0, 64], "float32")], {"group_size": 64, "bits": 4, "mode": "affine"}, name="affine_empty")
    case("quantize", [A([2, 3, 64], "float16")], {"group_size": 32, "bits": 8, "mode": "affine"}, name="affine_batch")
    # dequantize: inputs from MLX's quantize
    rng = np.random.default_rng(21)
    def qd(shape, dt, mode, gs, bits, view=None, seed=0):
        w = to_mx(np.round(np.random.default_rng(seed).uniform(-2, 2, shape), 3), dt)
        q = mx.quantize(w, gs, bits, mode=mode)
        ins = [A(list(q[0].shape), "uint32", data=np.array(q[0]), view=view)]
        for t in q[1:]:  # scales (and biases)
            v = np.array(t.astype(mx.float32) if t.dtype == mx.bfloat16 else t)
            ins.append(A(list(t.shape), DNAME[t.dtype], data=v))
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
    case("dequantize", qd([4, 64], "float32", "affine", 32, 4, view="S"),
         {"group_size": 32, "bits": 4, "mode": "affine"},
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
    case("gather_qmm", [A([2, 2, 64], "float16", "small", view="T")] + w
         + [I([2, 2], 2, "uint32"), I([2, 1], 3, "uint32")],
         {"group_size": 64, "bits": 4, "mode": "affine", "transpose": False}, name="affine_t0_T_bcast", tol=8)
    w = qd([3, 8, 64], "float32", "affine", 64, 4, seed=12)
    case("gather_qmm", [A([2, 1, 64], "float32", "small", view="S")] + w + [I([0], 2, "uint32"), I([0], 3, "uint32")],
         {"group_size": 64, "bits": 4, "mode": "affine", "transpose": True}, name="affine_empty_S", tol=8)
    case("gather_qmm", [A([2, 3, 64], "float32", "small", view="S")] + w + [I([3], 2, "uint32"), I([3], 3, "uint32")],
         {"group_size": 64, "bits": 4, "mode": "affine", "transpose": True}, name="affine_S", tol=8)
    for mode, gs, bits in [("mxfp8", 32, 8), ("nvfp4", 16, 4)]:
        w = qd([3, 8, 64], "float32", mode, gs, bits, seed=11)
        case("kiln.gather_qmm_numpy", [A([2, 1, 64], "float32", "small")] + w
             + [I([4], 2, "uint32"), I([4], 3, "uint32")],
             {"group_size": gs, "bits": bits, "mode": mode, "transpose": True}, name=f"{mode}", tol=8, ref="numpy",
             note="MLX 0.30.1's CPU gather_qmm decodes this mode with the mxfp4 decoder")


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
    case("random.bits", [K(3)], {"shape": [2, 67], "width": 4}, name="long", ref="numpy")
    keys = np.array([[1, 2], [7, 8], [0, 7]])
    for w in [1, 2, 4]:  # a batch of keys (as vmap makes): RandomBits built directly
        case("kiln.random_bits_keys", [A([3, 2], "uint32", data=keys)], {"shape": [3, 5], "width": w},
             name=f"w{w}", ref="numpy")
    case("kiln.random_bits_keys", [A([3, 2], "uint32", data=keys, view="T")], {"shape": [3, 2, 3], "width": 2},
         name="T", ref="numpy")
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
        case("random.truncated_normal",
             [K(6), A([], "float32", data=np.array(-1.0)), A([], "float32", data=np.array(1.5))],
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
                                     A([3], "float32", data=np.array([-1, 0.5, 3]))],
         {"shape": [2, 3], "dtype": "float32"},
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
