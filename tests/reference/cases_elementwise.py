"""Reference sweep cases: element-wise ops, casts and views."""

import math

import numpy as np
import mlx.core as mx

from sweep_common import *  # noqa: F401,F403
from sweep_case import *  # noqa: F401,F403
from sweep_case import MIXED
from sweep_ops import UNARY, BINARY


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
