"""Sweep cases for primitives that MLX 0.30.1 does not have (the main sweep's MLX), generated with a
newer MLX (0.32.4) into tests/reference/sweep_newer/: SearchSorted (0.32.1), FloorDivide (0.32.4, what
`//` records there) and DivMod's flooring meaning (0.32.2). See gen_sweep.py (SWEEP_NEWER=1)."""

import numpy as np
import mlx.core as mx

from sweep_common import *  # noqa: F401,F403
from sweep_case import *  # noqa: F401,F403
from sweep_case import MIXED
from sweep_ops import OPS, EXACT

NEWEST = (0, 32, 4)

OPS["searchsorted"] = lambda x, p: mx.searchsorted(x[0], x[1], side=p.get("side", "left"))
# kiln builds these nodes directly (its own floor_divide and divmod keep MLX 0.30.1's graphs).
OPS["kiln.floor_divide_node"] = lambda x, p: mx.floor_divide(x[0], x[1])
OPS["kiln.divmod_floor"] = lambda x, p: list(mx.divmod(x[0], x[1]))
EXACT.update(["searchsorted"])


def sorted_data(n, dtype, seed):
    """Ascending values with repeats, in the dtype's range (bools: falses then trues)."""
    rng = np.random.default_rng(seed)
    if dtype == "bool":
        return np.sort(rng.integers(0, 2, n)).astype(bool)
    hi = 3 if dtype.startswith("uint") else 6
    lo = 0 if dtype.startswith("uint") else -6
    v = np.sort(rng.integers(lo, hi, n))
    if is_float(dtype):
        return np.sort(v + rng.choice([0.0, 0.5], n))
    if dtype == "complex64":
        return v.astype(np.complex64)
    return v


def gen_newer():
    for side in ["left", "right"]:
        for d in ALL:
            s = sorted_data(9, d, 1)
            case("searchsorted", [A([9], d, data=s), A([3, 4], d, "small")], {"side": side},
                 name=f"{TAG[d]}_{side}")
        case("searchsorted", [A([9], "float32", data=sorted_data(9, "float32", 2), view="S"),
                              A([3, 4], "float32", "small", view="T")], {"side": side}, name=f"f32_ST_{side}")
        case("searchsorted", [A([9], "int32", data=sorted_data(9, "int32", 3)), A([4, 3], "int32", "small", view="R")],
             {"side": side}, name=f"i32_R_{side}")
        case("searchsorted", [A([0], "float32"), A([2, 3], "float32")], {"side": side}, name=f"f32_empty_seq_{side}")
        case("searchsorted", [A([9], "float32", data=sorted_data(9, "float32", 4)), A([0, 3], "float32")],
             {"side": side}, name=f"f32_empty_values_{side}")
        case("searchsorted", [A([12], "float32", data=np.sort(np.array(SPECIAL))[::-1][::-1]),
                              A([12], "float32", "special")], {"side": side}, name=f"f32_special_{side}")
    case("searchsorted", [A([9], "int32", data=sorted_data(9, "int32", 5)), A([], "int32", "small")],
         name="i32_scalar_value")
    case("searchsorted", [A([9], "int32", data=sorted_data(9, "int32", 5)), A([3], "float32", "small")],
         name="i32_f32")
    case("searchsorted", [A([3, 3], "float32"), A([3], "float32")], name="f32_2d_seq")
    for op in ["kiln.floor_divide_node", "kiln.divmod_floor"]:
        each_dtype(op, lambda d: [A([3, 4], d, "any"), A([3, 4], d, "nonzero")])
        for a, b in MIXED[:6]:
            case(op, [A([3, 4], a, "any"), A([3, 4], b, "nonzero")])
        case(op, [A([3, 1], "int32", "any"), A([1, 4], "int32", "nonzero")], name="i32_bcast")
        case(op, [A([], "int32", "any"), A([2, 3], "int32", "nonzero")], name="i32_scalar_left")
        for d, v in [("float32", "T"), ("int32", "S"), ("int64", "R"), ("float16", "B"), ("int8", "T")]:
            case(op, [A([3, 4], d, "any", view=v), A([3, 4], d, "nonzero")], name=f"{TAG[d]}_{v}a")
        case(op, [A([5, 6], "int16", "any", view="T"), A([5, 6], "int16", "nonzero", view="S")], name="i16_TS")
        case(op, [A([0, 4], "float32"), A([0, 4], "float32", "nonzero")], name="f32_empty")
        case(op, [A([0, 4], "int32"), A([1, 4], "int32", "nonzero")], name="i32_empty_bcast")
        for d in ["float32", "float16", "bfloat16"]:
            case(op, [A([35], d, "any"), A([35], d, "nonzero")], name=TAG[d] + "_long")
        s = np.array(SPECIAL)
        case(op, [A([12, 1], "float32", "special"), A([1, 12], "float32", data=s.reshape(1, 12))],
             name="f32_special")
