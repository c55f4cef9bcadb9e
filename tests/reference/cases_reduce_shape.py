"""Reference sweep cases: reductions, scans, shapes, slicing, joining and creation."""

import math

import numpy as np
import mlx.core as mx

from sweep_common import *  # noqa: F401,F403
from sweep_case import *  # noqa: F401,F403


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
