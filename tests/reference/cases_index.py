"""Reference sweep cases: indexing, scatters and sorting."""

import math

import numpy as np
import mlx.core as mx

from sweep_common import *  # noqa: F401,F403
from sweep_case import *  # noqa: F401,F403


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
    case("take_along_axis", [A([3, 4], "float32", view="S"), I([3, 4], 12, view="T")], {"axis": None},
         name="f32_S_flat")
    case("take_along_axis", [A([3, 4], "float32", view="S"), I([5], 12, view="R")], {"axis": None}, name="f32_S_flat1d")
    case("take_along_axis", [A([3, 4], "float32"), I([3, 0], 4)], {"axis": 1}, name="f32_empty")
    each_dtype("put_along_axis", lambda d: [A([3, 4], d), I([3, 1], 4, unique=True), A([3, 1], d)], {"axis": 1})
    case("put_along_axis", [A([3, 4], "float32", view="T"), I([1, 4], 3, neg=True), A([], "float32")],
         {"axis": -2}, name="f32_T_neg_scalarval")
    case("put_along_axis", [A([3, 4], "float32"), I([3, 0], 4), A([3, 0], "float32")], {"axis": 1}, name="f32_empty")
    case("put_along_axis", [A([3, 4], "int32", view="S"), I([3, 2], 4, "uint16", unique=True),
                            A([3, 2], "int32", view="B")],
         {"axis": 1}, name="i32_S_u16idx")
    each_dtype("kiln.scatter_add_axis", lambda d: [A([3, 4], d), I([3, 5], 4), A([3, 5], d)], {"axis": 1},
               ref="numpy", dtypes=[d for d in ALL if d not in ("bool", "complex64")])
    case("kiln.scatter_add_axis", [A([3, 4], "float32", view="T"), I([4, 4], 3, neg=True),
                                   A([4, 4], "float32", view="S")],
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
        # (no complex special case: MLX's complex comparison is not an ordering once NaNs appear)
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
