"""The function transforms in Python: grad, value_and_grad, vjp, jvp, vmap, checkpoint,
custom_function and stop_gradient over Python functions of arrays and trees of arrays, imported
functions included; checked against analytic derivatives, finite differences, loops over the batch
and (where it is installed) real MLX."""

import numpy as np
import pytest

import kiln as mx


def npa(x):
    return np.array(x)


def close(a, b, rtol=1e-5, atol=1e-6):
    np.testing.assert_allclose(npa(a), np.asarray(b), rtol=rtol, atol=atol)


RNG = np.random.default_rng(7)


def rand(*shape):
    return mx.array(RNG.standard_normal(shape).astype(np.float32))


# ---- grad and value_and_grad ----


def test_grad_of_a_polynomial_and_of_math():
    x = rand(5)
    close(mx.grad(lambda x: mx.sum(x * x * x))(x), 3 * npa(x) ** 2)
    close(mx.grad(lambda x: mx.sum(mx.sin(x)))(x), np.cos(npa(x)))
    close(mx.grad(lambda x: mx.sum(mx.exp(x) / (1 + x * x)))(x),
          np.exp(npa(x)) / (1 + npa(x) ** 2) - np.exp(npa(x)) * 2 * npa(x) / (1 + npa(x) ** 2) ** 2, rtol=1e-4)


def test_grad_matches_finite_differences_for_a_small_network():
    w1, w2, x = rand(4, 3), rand(2, 4), rand(3)

    def loss(w1, w2):
        h = mx.tanh(w1 @ x)
        return mx.sum(mx.softmax(w2 @ h) * mx.array([1.0, -2.0]))

    g1, g2 = mx.grad(loss, argnums=(0, 1))(w1, w2)
    eps = 1e-3
    for w, g, idx in [(w1, g1, 0), (w2, g2, 1)]:
        wn = npa(w).astype(np.float64)
        fd = np.zeros_like(wn)
        for i in np.ndindex(wn.shape):
            up, dn = wn.copy(), wn.copy()
            up[i] += eps
            dn[i] -= eps
            args = [w1, w2]
            args[idx] = mx.array(up.astype(np.float32))
            fu = loss(*args).item()
            args[idx] = mx.array(dn.astype(np.float32))
            fdn = loss(*args).item()
            fd[i] = (fu - fdn) / (2 * eps)
        np.testing.assert_allclose(npa(g), fd, rtol=2e-2, atol=2e-3)


def test_argnums_and_argnames_shape_the_result():
    def f(x, y, z=None):
        return mx.sum(x * y + 2 * z)

    x, y, z = rand(3), rand(3), rand(3)
    close(mx.grad(f)(x, y, z=z), npa(y))  # argnums defaults to 0
    gx, gy = mx.grad(f, argnums=(1, 0))(x, y, z=z)  # sorted, as MLX
    close(gx, npa(y))
    close(gy, npa(x))
    pos, kw = mx.grad(f, argnums=1, argnames="z")(x, y, z=z)
    close(pos, npa(x))
    assert list(kw) == ["z"]
    close(kw["z"], np.full(3, 2.0))
    none, kw = mx.grad(f, argnames=["z"])(x, y, z=z)
    assert none is None
    close(kw["z"], np.full(3, 2.0))


def test_gradients_come_back_in_the_argument_trees():
    params = {"w": rand(3, 2), "b": [rand(2), (rand(2),)]}
    x = rand(3)

    def loss(p, x):
        return mx.sum((x @ p["w"] + p["b"][0] * p["b"][1][0]) ** 2)

    g = mx.grad(loss)(params, x)
    assert set(g) == {"w", "b"} and isinstance(g["b"], list) and isinstance(g["b"][1], tuple)
    out = npa(x) @ npa(params["w"]) + npa(params["b"][0]) * npa(params["b"][1][0])
    close(g["w"], np.outer(npa(x), 2 * out), rtol=1e-4)
    close(g["b"][0], 2 * out * npa(params["b"][1][0]), rtol=1e-4)


def test_value_and_grad_with_auxiliary_outputs():
    def f(x):
        return mx.sum(x * x), {"mean": mx.mean(x), "n": 3}

    x = rand(3)
    (loss, aux), g = mx.value_and_grad(f)(x)
    close(loss, np.sum(npa(x) ** 2), rtol=1e-5)
    close(aux["mean"], np.mean(npa(x)), rtol=1e-5)
    assert aux["n"] == 3
    close(g, 2 * npa(x))


def test_grad_of_grad_and_stop_gradient():
    x = mx.array([0.5, -1.5, 2.0])
    d2 = mx.grad(lambda x: mx.sum(mx.grad(lambda y: mx.sum(y ** 3))(x)))(x)
    close(d2, 6 * npa(x))
    close(mx.grad(lambda x: mx.sum(x * mx.stop_gradient(x)))(x), npa(x))


def test_grad_errors_say_what_is_wrong():
    x = rand(3)
    with pytest.raises(ValueError, match=r"\[grad\] Gradient wrt no argument requested"):
        mx.grad(lambda x: mx.sum(x), argnums=[])(x)
    with pytest.raises(ValueError, match="negative argument index -1"):
        mx.grad(lambda x: mx.sum(x), argnums=-1)
    with pytest.raises(ValueError, match="Duplicate argument index 0"):
        mx.grad(lambda x: mx.sum(x), argnums=(0, 0))
    with pytest.raises(ValueError, match="argument index 2 because the function is called with only 1"):
        mx.grad(lambda x: mx.sum(x), argnums=2)(x)
    with pytest.raises(ValueError, match="keyword argument 'w'"):
        mx.grad(lambda x, w=None: mx.sum(x), argnames="w")(x)
    with pytest.raises(ValueError, match="should be a scalar array; but tuple was returned"):
        mx.grad(lambda x: (mx.sum(x), 1))(x)
    with pytest.raises(ValueError, match="should contain only arrays"):
        mx.grad(lambda p: mx.sum(p[0]))([x, "text"])
    with pytest.raises(ValueError, match="argnums should be an int"):
        mx.grad(lambda x: mx.sum(x), argnums="0")


# ---- vjp and jvp ----


def test_vjp_and_jvp_of_a_product():
    x, y, c = rand(4), rand(4), rand(4)
    outs, vjps = mx.vjp(lambda a, b: a * b, [x, y], [c])
    close(outs[0], npa(x) * npa(y))
    close(vjps[0], npa(c) * npa(y))
    close(vjps[1], npa(c) * npa(x))
    outs, jvps = mx.jvp(lambda a, b: [a * b, a + b], [x, y], [c, mx.ones(4)])
    close(jvps[0], npa(c) * npa(y) + npa(x))
    close(jvps[1], npa(c) + 1)


def test_vjp_and_jvp_check_their_arguments():
    x = rand(2)
    with pytest.raises(ValueError, match=r"\[vjp\] The primals should be a list of arrays"):
        mx.vjp(lambda a: a, {"x": x}, [x])
    with pytest.raises(ValueError, match=r"\[jvp\] The function should return an array or a list/tuple"):
        mx.jvp(lambda a: {"y": a}, [x], [x])


# ---- vmap ----


def test_vmap_against_a_loop():
    m, xs = rand(3, 4), rand(5, 4)
    got = mx.vmap(lambda x: m @ x)(xs)
    close(got, np.stack([npa(m) @ npa(xs)[i] for i in range(5)]), rtol=1e-5)
    ys = rand(4, 5)
    got = mx.vmap(lambda a, b: mx.sum(a * b), in_axes=(0, 1))(xs, ys)
    close(got, np.sum(npa(xs) * npa(ys).T, axis=1), rtol=1e-5)
    got = mx.vmap(lambda a, b: a + b, in_axes=(0, None), out_axes=1)(xs, rand(4))
    assert got.shape == (4, 5)


def test_vmap_nested_and_over_trees():
    a = rand(2, 3, 4)
    got = mx.vmap(mx.vmap(lambda v: mx.sum(v * v)))(a)
    close(got, np.sum(npa(a) ** 2, axis=2), rtol=1e-5)
    tree = {"x": rand(6, 2), "y": rand(2)}
    got = mx.vmap(lambda t: t["x"] * t["y"], in_axes=({"x": 0, "y": None},))(tree)
    close(got, npa(tree["x"]) * npa(tree["y"]))


def test_vmap_errors():
    with pytest.raises(ValueError, match=r"\[vmap\]"):
        mx.vmap(lambda a, b: a + b, in_axes=(0,))(rand(2), rand(2))
    with pytest.raises(ValueError, match=r"\[vmap\] axis must be int or None"):
        mx.vmap(lambda a: a, in_axes="0")(rand(2))
    with pytest.raises(ValueError, match=r"\[vmap\] The output should contain only arrays"):
        mx.vmap(lambda a: "x")(rand(2))


def test_grad_of_vmap():
    xs = rand(4, 3)
    g = mx.grad(lambda xs: mx.sum(mx.vmap(lambda x: mx.sum(mx.sin(x)))(xs)))(xs)
    close(g, np.cos(npa(xs)), rtol=1e-5)


# ---- checkpoint and custom_function ----


def test_checkpoint_gives_the_same_gradient():
    w, x = rand(3, 3), rand(3)

    def block(w, x):
        return mx.tanh(w @ x)

    plain = mx.grad(lambda w: mx.sum(block(w, x) ** 2))(w)
    ck = mx.grad(lambda w: mx.sum(mx.checkpoint(block)(w, x) ** 2))(w)
    close(ck, npa(plain), rtol=1e-5)


def test_custom_function_rules_are_used():
    @mx.custom_function
    def f(x, y):
        return x * y

    @f.vjp
    def f_vjp(primals, cotangent, output):
        x, y = primals
        return 10 * cotangent, 100 * cotangent

    @f.jvp
    def f_jvp(primals, tangents):
        return [tangents[0] + tangents[1]]

    @f.vmap
    def f_vmap(inputs, axes):
        x, y = inputs
        return [x * y + 1000], [axes[0] if axes[0] is not None else axes[1]]

    x, y = rand(3), rand(3)
    close(f(x, y), npa(x) * npa(y))
    gx, gy = mx.grad(lambda x, y: mx.sum(f(x, y)), argnums=(0, 1))(x, y)
    close(gx, np.full(3, 10.0))
    close(gy, np.full(3, 100.0))
    _, t = mx.jvp(lambda a, b: f(a, b), [x, y], [mx.ones(3), mx.ones(3)])
    close(t[0], np.full(3, 2.0))
    out = mx.vmap(f)(rand(2, 3), rand(2, 3))
    assert float(mx.min(out).item()) > 900  # the rule ran


# ---- imported functions ----


def test_transforms_of_an_imported_function(tmp_path):
    w = rand(3, 3)

    def fn(x):
        return mx.tanh(x @ w)

    path = str(tmp_path / "f.mlxfn")
    mx.export_function(path, fn, rand(2, 3))
    imported = mx.import_function(path)
    x = rand(2, 3)
    g = mx.grad(lambda x: mx.sum(imported(x)[0]))(x)
    close(g, npa(mx.grad(lambda x: mx.sum(fn(x)))(x)), rtol=1e-5)
    xs = rand(4, 2, 3)
    got = mx.vmap(lambda x: imported(x)[0])(xs)
    close(got, np.stack([npa(fn(xs[i])) for i in range(4)]), rtol=1e-5)


def test_exporting_a_training_step(tmp_path):
    def step(w, x, y):
        loss, g = mx.value_and_grad(lambda w: mx.mean((x @ w - y) ** 2))(w)
        return w - 0.1 * g, loss

    w, x, y = rand(3, 1), rand(8, 3), rand(8, 1)
    path = str(tmp_path / "step.mlxfn")
    mx.export_function(path, step, w, x, y)
    new_w, loss = mx.import_function(path)(w, x, y)
    want_w, want_loss = step(w, x, y)
    close(new_w, npa(want_w), rtol=1e-5)
    close(loss, npa(want_loss), rtol=1e-5)


# ---- against real MLX ----


def test_gradients_match_mlx(mlx):
    rng = np.random.default_rng(3)
    w = rng.standard_normal((4, 3)).astype(np.float32)
    x = rng.standard_normal((5, 3)).astype(np.float32)

    def make(m):
        def loss(w, x):
            h = m.maximum(x @ m.transpose(w), 0.0)
            return m.mean(m.logsumexp(h, axis=-1) - m.max(h, axis=-1))

        return loss

    gk = mx.grad(make(mx))(mx.array(w), mx.array(x))
    gm = mlx.grad(make(mlx))(mlx.array(w), mlx.array(x))
    np.testing.assert_allclose(np.array(gk), np.array(gm), rtol=1e-5, atol=1e-6)
    vk = mx.vmap(lambda a: mx.softmax(a @ mx.array(w).T))(mx.array(x))
    vm = mlx.vmap(lambda a: mlx.softmax(a @ mlx.array(w).T))(mlx.array(x))
    np.testing.assert_allclose(np.array(vk), np.array(vm), rtol=1e-5, atol=1e-6)


# ---- compile ----


def test_compile_equals_the_function_and_retraces_by_signature():
    calls = []

    def f(x, y, scale=2.0):
        calls.append(1)
        return {"s": mx.sum(mx.exp(x) * y) * scale, "p": x * y}

    cf = mx.compile(f)
    x, y = rand(3, 4), rand(3, 4)
    for _ in range(3):
        got, want = cf(x, y), f(x, y)
        close(got["s"], npa(want["s"]), rtol=1e-5)
        close(got["p"], npa(want["p"]))
    traced = len(calls) - 3  # the direct calls of f above
    assert traced == 1  # one trace for three calls
    got = cf(rand(2, 5), rand(2, 5))  # a new shape: a new trace
    assert got["p"].shape == (2, 5)
    close(cf(x, y, scale=3.0)["s"], npa(f(x, y, scale=3.0)["s"]), rtol=1e-5)  # a new constant: a new trace


def test_compile_shapeless_reuses_one_trace():
    calls = []

    def f(x):
        calls.append(1)
        return mx.tanh(x) + 1

    cf = mx.compile(f, shapeless=True)
    for shape in [(3,), (7,), (2, 9)]:
        x = rand(*shape)
        close(cf(x), np.tanh(npa(x)) + 1, rtol=1e-5)
    x2 = rand(4)
    cf(x2)
    assert len(calls) <= 2  # one trace per rank at most, not one per shape


def test_compile_implicit_inputs_and_errors():
    state = {"w": rand(4)}
    cf = mx.compile(lambda x: x * state["w"], inputs=state)
    x = rand(4)
    close(cf(x), npa(x) * npa(state["w"]))
    with pytest.raises(ValueError, match="Function arguments must be trees of arrays or constants"):
        mx.compile(lambda x, o: x)(x, object())


def test_compile_implicit_outputs_are_written_back():
    # An SGD-like step: the state is read (inputs=) and replaced (outputs=) by the function.
    state = {"w": mx.array([1.0, 2.0, 3.0]), "steps": [mx.array(0)]}
    calls = []

    def step(g):
        calls.append(1)
        state["w"] = state["w"] - 0.5 * g
        state["steps"][0] = state["steps"][0] + 1
        return mx.sum(state["w"])

    cf = mx.compile(step, inputs=state, outputs=state)
    g = mx.array([1.0, 1.0, 2.0])
    w = np.array([1.0, 2.0, 3.0], dtype=np.float32)
    for i in range(3):
        total = cf(g)
        w = w - 0.5 * npa(g)
        close(total, w.sum())
        close(state["w"], w)
        assert state["steps"][0].item() == i + 1
        assert not isinstance(state["w"], list)
    assert len(calls) == 1  # traced once, replayed after; the state still moved every call
    # Outputs alone: a separate container receives the values.
    log = {"last": mx.array(0.0)}

    def f(x):
        log["last"] = x * 2
        return x + 1

    cf2 = mx.compile(f, outputs=log)
    close(cf2(mx.array(3.0)), 4.0)
    close(log["last"], 6.0)
    close(cf2(mx.array(5.0)), 6.0)
    close(log["last"], 10.0)


def test_compile_can_be_disabled_and_composes_with_grad():
    f = mx.compile(lambda x: mx.sum(mx.sin(x) ** 2))
    x = rand(5)
    mx.disable_compile()
    try:
        close(f(x), np.sum(np.sin(npa(x)) ** 2), rtol=1e-5)
    finally:
        mx.enable_compile()
    close(mx.grad(f)(x), 2 * np.sin(npa(x)) * np.cos(npa(x)), rtol=1e-4, atol=1e-6)


def test_memory_functions():
    a = mx.ones((1024, 1024))
    mx.eval(a)
    assert mx.get_active_memory() >= 4 * 1024 * 1024
    assert mx.get_peak_memory() >= mx.get_active_memory()
    old = mx.set_cache_limit(0)
    mx.set_cache_limit(old)
    mx.clear_cache()
    assert mx.get_cache_memory() == 0
    assert mx.set_wired_limit(0) == 0
