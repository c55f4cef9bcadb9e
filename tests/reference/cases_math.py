"""Reference sweep cases: products, convolutions, FFTs and linear algebra."""

import math

import numpy as np
import mlx.core as mx

from sweep_common import *  # noqa: F401,F403
from sweep_case import *  # noqa: F401,F403


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
    case("block_masked_mm", [M(0, 8), M(8, 6), A([0, 1], "bool")], {"block_size": 32, "masks": "o"}, name="empty",
         tol=8)
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
    for nm, s, v in [("batch_T", [2, 4, 4], "T"), ("S", [3, 3], "S"), ("empty", [0, 3, 3], None),
                     ("one", [1, 1], None)]:
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
