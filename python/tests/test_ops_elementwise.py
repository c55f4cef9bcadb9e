"""kiln's element-wise ops against MLX 0.30.1: values, dtypes (weak Python scalars), keywords, errors."""

import numpy as np
import pytest

import kiln

mlx = pytest.importorskip("mlx.core")


def conv(lib, x):
    if isinstance(x, np.ndarray):
        return lib.array(x)
    if isinstance(x, (list, tuple)) and x and any(isinstance(e, np.ndarray) for e in x):
        return type(x)(conv(lib, e) for e in x)
    if isinstance(x, str) and x.startswith("dtype:"):
        return getattr(lib, x[6:])
    return x


def call(lib, name, args, kwargs):
    fn = lib
    for part in name.split("."):
        fn = getattr(fn, part)
    return fn(*[conv(lib, a) for a in args], **{k: conv(lib, v) for k, v in kwargs.items()})


def same(k, m, rtol=1e-5, atol=1e-6):
    if isinstance(m, (list, tuple)):
        assert isinstance(k, (list, tuple)) and len(k) == len(m)
        for a, b in zip(k, m):
            same(a, b, rtol, atol)
        return
    assert isinstance(k, kiln.array), type(k)
    assert repr(k.dtype).split(".")[-1] == repr(m.dtype).split(".")[-1], (k.dtype, m.dtype)
    assert k.shape == m.shape
    if m.dtype == mlx.bfloat16:
        k, m = k.astype(kiln.float32), m.astype(mlx.float32)
    np.testing.assert_allclose(np.array(k), np.array(m), rtol=rtol, atol=atol, equal_nan=True)


def both(name, *args, rtol=1e-5, atol=1e-6, **kwargs):
    same(call(kiln, name, args, kwargs), call(mlx, name, args, kwargs), rtol, atol)


rng = np.random.default_rng(0)
F = rng.standard_normal((3, 4)).astype(np.float32)
P = (rng.random((3, 4)) + 0.5).astype(np.float32)   # positive
U = (rng.random((3, 4)) * 1.8 - 0.9).astype(np.float32)  # in (-1, 1)
I = rng.integers(-5, 6, (3, 4)).astype(np.int32)
B = rng.random((3, 4)) > 0.5
H = F.astype(np.float16)
C = (F + 1j * P).astype(np.complex64)

UNARY_F = ["abs", "sign", "negative", "square", "exp", "expm1", "erf", "sin", "cos", "tan", "arctan",
           "sinh", "cosh", "tanh", "arcsinh", "degrees", "radians", "sigmoid", "floor", "ceil",
           "isnan", "isinf", "isfinite", "isposinf", "isneginf", "stop_gradient", "zeros_like",
           "ones_like", "conj", "conjugate", "real", "imag"]
UNARY_POS = ["sqrt", "rsqrt", "reciprocal", "log", "log2", "log10", "log1p", "arccosh"]
UNARY_UNIT = ["arcsin", "arccos", "arctanh", "erfinv"]


@pytest.mark.parametrize("name", UNARY_F)
@pytest.mark.parametrize("x", [F, H], ids=["f32", "f16"])
def test_unary_float(name, x):
    if name == "arccosh":
        x = x + 2
    both(name, x, rtol=2e-3 if x.dtype == np.float16 else 1e-5, atol=1e-3 if x.dtype == np.float16 else 1e-6)


@pytest.mark.parametrize("name", UNARY_POS)
def test_unary_positive(name):
    both(name, P + (1 if name == "arccosh" else 0))


@pytest.mark.parametrize("name", UNARY_UNIT)
def test_unary_unit(name):
    both(name, U, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("name", ["abs", "sign", "negative", "square", "exp", "sin", "floor", "isnan", "zeros_like"])
def test_unary_int(name):
    both(name, I)


@pytest.mark.parametrize("name", ["abs", "negative", "exp", "sqrt", "conj", "real", "imag", "square", "isnan"])
def test_unary_complex(name):
    both(name, C, rtol=1e-5, atol=1e-5)


def test_unary_logical_and_bitwise():
    both("logical_not", B)
    both("bitwise_invert", I)
    both("bitwise_invert", I.astype(np.uint8))


def test_unary_python_scalars_and_numpy():
    both("exp", 1.0)
    both("exp", 2)
    both("sqrt", np.float32(4.0))
    both("abs", np.array([-1.5, 2.0]))   # float64 NumPy input becomes float32


def test_unary_stream_keyword():
    same(kiln.exp(F, stream=kiln.cpu), mlx.exp(mlx.array(F), stream=mlx.cpu))
    with pytest.raises(TypeError):
        kiln.exp(kiln.array(F), kiln.cpu)  # stream is keyword-only


BINARY = ["add", "subtract", "multiply", "divide", "floor_divide", "remainder", "equal", "not_equal",
          "less", "less_equal", "greater", "greater_equal", "maximum", "minimum", "power", "logaddexp",
          "arctan2"]


@pytest.mark.parametrize("name", BINARY)
def test_binary_float(name):
    x = P if name == "power" else F
    both(name, x, P)
    both(name, x, P[0])  # broadcasting


@pytest.mark.parametrize("name", ["add", "subtract", "multiply", "divide", "floor_divide", "remainder",
                                  "maximum", "minimum", "equal", "less"])
def test_binary_int(name):
    y = np.where(I == 0, 1, I).astype(np.int32)
    both(name, I, y)


@pytest.mark.parametrize("name", ["add", "multiply", "subtract", "maximum", "power", "divide", "less"])
@pytest.mark.parametrize("scalar", [2, 2.5, True])
@pytest.mark.parametrize("x", [P.astype(np.float16), I, P], ids=["f16", "i32", "f32"])
def test_binary_weak_scalars(name, scalar, x):
    # A Python scalar takes the array's dtype when it is of the same or lower kind.
    if name == "power" and x.dtype == np.int32 and not isinstance(scalar, float):
        x = np.abs(x)
    tol = dict(rtol=2e-3, atol=1e-3) if x.dtype == np.float16 else {}
    both(name, x, scalar, **tol)
    both(name, scalar, x, **tol) if name != "power" else None


def test_binary_scalar_scalar_and_dtypes():
    both("add", 1, 2)
    both("add", 1, 2.5)
    both("multiply", I.astype(np.int8), I.astype(np.int16))
    both("add", I.astype(np.uint32), I)
    both("add", H, F)
    both("add", np.ones(3, np.float32), 1)
    k = kiln.add(kiln.array([1.0, 2.0], kiln.bfloat16), 1.5)
    assert k.dtype == kiln.bfloat16


@pytest.mark.parametrize("name", ["bitwise_and", "bitwise_or", "bitwise_xor", "left_shift", "right_shift"])
def test_bitwise(name):
    x = np.abs(I).astype(np.uint16)
    both(name, x, np.full((3, 4), 2, np.uint16))
    both(name, x, 1)
    if name in ("bitwise_and", "bitwise_or"):
        both(name, B, B[::-1])
    if name == "bitwise_xor":
        # MLX 0.30.1 computes bool xor as or (mx.bitwise_xor(True, True) is True); kiln follows NumPy.
        np.testing.assert_array_equal(np.array(kiln.bitwise_xor(B, B[::-1])), B ^ B[::-1])


def test_logical_binary():
    both("logical_and", B, ~B[0])
    both("logical_or", B, True)


def test_divmod():
    y = np.where(I == 0, 3, I).astype(np.int32)
    k, m = kiln.divmod(kiln.array(I), kiln.array(y)), mlx.divmod(mlx.array(I), mlx.array(y))
    assert isinstance(k, tuple) and len(k) == 2
    same(list(k), list(m))
    same(list(kiln.divmod(F, 0.7)), list(mlx.divmod(mlx.array(F), 0.7)))


def test_where():
    both("where", B, F, P)
    both("where", B, F.astype(np.float16), 0.0)
    both("where", B, 1, 2)
    both("where", B, I, 2.5)


def test_clip():
    both("clip", F, -0.5, 0.5)
    both("clip", F, None, 0.5)
    both("clip", F, -0.5, None)
    both("clip", I, -1, 2)
    both("clip", H, -0.5, 0.5, rtol=1e-3)
    both("clip", F, P * -1, P)
    with pytest.raises(ValueError, match="a_min and a_max"):
        kiln.clip(kiln.array(F), None, None)


def test_isclose_allclose_array_equal():
    G = F + 1e-6
    both("isclose", F, G)
    both("isclose", F, G, rtol=0.0, atol=1e-9)
    both("isclose", np.array([np.nan, 1.0], np.float32), np.array([np.nan, 1.0], np.float32), equal_nan=True)
    both("allclose", F, G)
    both("allclose", F, G + 1, atol=2.0)
    both("array_equal", F, F)
    both("array_equal", I, I.astype(np.float32))
    both("array_equal", F, F[:2])
    both("array_equal", np.array([np.nan], np.float32), np.array([np.nan], np.float32), equal_nan=True)
    with pytest.raises(TypeError):
        kiln.isclose(F, G, 1e-5, 1e-8, True)  # equal_nan is keyword-only


def test_nan_to_num():
    x = np.array([np.nan, np.inf, -np.inf, 1.5], np.float32)
    both("nan_to_num", x)
    both("nan_to_num", x, nan=7.0, posinf=100.0, neginf=-100.0)
    both("nan_to_num", x.astype(np.float16), posinf=1000.0, neginf=-1000.0, rtol=1e-3)
    # Default infinities of a float16 array: MLX 0.30.1 gives 0 (float32's max overflows), kiln gives
    # float16's largest finite value.
    assert kiln.nan_to_num(kiln.array(x.astype(np.float16))).tolist()[1:3] == [65504.0, -65504.0]


def test_round():
    x = np.array([0.5, 1.5, 2.5, -0.5, 1.234567, -3.14159], np.float32)
    both("round", x)
    both("round", x, 2)
    both("round", x, decimals=3)
    both("round", I)


def test_view():
    both("view", F, "dtype:int32")
    both("view", F, "dtype:uint8")
    both("view", I, "dtype:int16")


def test_matmul_inner_outer_kron():
    A = rng.standard_normal((2, 3, 4)).astype(np.float32)
    Bm = rng.standard_normal((4, 5)).astype(np.float32)
    both("matmul", A, Bm, rtol=1e-4, atol=1e-5)
    both("matmul", Bm[:, 0], Bm, rtol=1e-4, atol=1e-5)
    both("inner", F, P, rtol=1e-4, atol=1e-5)
    both("outer", F[0], P[1])
    both("kron", F[:2, :2], P[:2, :3])
    with pytest.raises(ValueError):
        kiln.matmul(kiln.array(F), kiln.array(P))


def test_errors():
    with pytest.raises(ValueError, match=r"\[add\]"):
        kiln.add(kiln.array(F), "x")
    with pytest.raises(ValueError):
        kiln.add(kiln.array(F), kiln.array(F[:, :2]))  # shapes do not broadcast
    with pytest.raises(ValueError):
        kiln.bitwise_and(kiln.array(F), kiln.array(F))
    with pytest.raises(ValueError, match="overflow"):
        kiln.add(kiln.array([1], kiln.uint8), 300)
    with pytest.raises(ValueError):
        mlx.add(mlx.array([1], mlx.uint8), 300)
