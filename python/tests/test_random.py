"""kiln.random against MLX 0.30.1: the same key gives the same numbers; the global state and seeding."""

import numpy as np
import pytest

import kiln
import kiln.random as kr


def test_key_and_state_without_mlx():
    k = kr.key(7)
    assert k.dtype == kiln.uint32 and k.shape == (2,)
    assert k.tolist() == [0, 7]
    assert isinstance(kr.state, list) and kr.state[0].shape == (2,)
    kr.seed(3)
    a = kr.uniform(shape=(4,))
    kr.seed(3)
    b = kr.uniform(shape=(4,))
    assert a.tolist() == b.tolist()
    c = kr.uniform(shape=(4,))
    assert a.tolist() != c.tolist()
    assert kr.split(k).shape == (2, 2)
    assert kr.split(k, 5).shape == (5, 2)


def test_shapes_and_dtypes():
    key = kr.key(0)
    assert kr.normal((2, 3), key=key).shape == (2, 3)
    assert kr.normal(key=key).shape == ()
    assert kr.uniform(0, 1, [3], kiln.float16, key).dtype == kiln.float16
    assert kr.randint(0, 10, (5,), key=key).dtype == kiln.int32
    assert kr.bernoulli(key=key).dtype == kiln.bool_
    assert kr.bernoulli(kiln.array([0.1, 0.9]), key=key).shape == (2,)
    assert kr.permutation(5, key=key).shape == (5,)
    assert sorted(kr.permutation(6, key=key).tolist()) == list(range(6))
    with pytest.raises(ValueError, match="categorical"):
        kr.categorical(kiln.zeros((2, 3)), shape=(2,), num_samples=2, key=key)


@pytest.fixture(scope="module")
def mr():
    m = pytest.importorskip("mlx.core")
    return m.random, m


def same(k, m, mlxm, rtol=1e-6, atol=1e-6):
    assert repr(k.dtype).split(".")[-1] == repr(m.dtype).split(".")[-1]
    assert k.shape == m.shape
    if m.dtype == mlxm.bfloat16:
        k, m = k.astype(kiln.float32), m.astype(mlxm.float32)
    np.testing.assert_allclose(np.array(k), np.array(m), rtol=rtol, atol=atol)


@pytest.mark.parametrize("seed", [0, 42, 2**33 + 5])
def test_same_numbers_as_mlx(mr, seed):
    mrand, m = mr
    kk, mk = kr.key(seed), mrand.key(seed)
    assert kk.tolist() == mk.tolist()
    same(kr.split(kk), mrand.split(mk), m)
    same(kr.split(kk, num=3), mrand.split(mk, num=3), m)
    same(kr.uniform(key=kk), mrand.uniform(key=mk), m)
    same(kr.uniform(-2, 3, (3, 4), key=kk), mrand.uniform(-2, 3, (3, 4), key=mk), m)
    same(kr.uniform(shape=(5,), dtype=kiln.float16, key=kk), mrand.uniform(shape=(5,), dtype=m.float16, key=mk), m)
    same(kr.uniform(kiln.array([0.0, 1.0]), 5.0, (2,), key=kk), mrand.uniform(m.array([0.0, 1.0]), 5.0, (2,), key=mk), m)
    same(kr.normal((4, 3), key=kk), mrand.normal((4, 3), key=mk), m, rtol=1e-5)
    same(kr.normal((4,), loc=1.0, scale=2.0, key=kk), mrand.normal((4,), loc=1.0, scale=2.0, key=mk), m, rtol=1e-5)
    same(kr.normal((3,), kiln.bfloat16, key=kk), mrand.normal((3,), m.bfloat16, key=mk), m, rtol=1e-2)
    same(kr.randint(0, 100, (10,), key=kk), mrand.randint(0, 100, (10,), key=mk), m)
    same(kr.randint(-5, 5, [3, 3], kiln.int16, key=kk), mrand.randint(-5, 5, [3, 3], m.int16, key=mk), m)
    same(kr.bernoulli(key=kk), mrand.bernoulli(key=mk), m)
    same(kr.bernoulli(0.3, (6,), key=kk), mrand.bernoulli(0.3, (6,), key=mk), m)
    same(kr.truncated_normal(-1, 1, (5,), key=kk), mrand.truncated_normal(-1, 1, (5,), key=mk), m, rtol=1e-4, atol=1e-5)
    same(kr.truncated_normal(kiln.array([-1.0, 0.0]), 2.0, key=kk),
         mrand.truncated_normal(m.array([-1.0, 0.0]), 2.0, key=mk), m, rtol=1e-4, atol=1e-5)
    same(kr.gumbel((4,), key=kk), mrand.gumbel((4,), key=mk), m, rtol=1e-5)
    logits = np.log(np.array([[0.1, 0.2, 0.7], [0.5, 0.25, 0.25]], np.float32))
    same(kr.categorical(kiln.array(logits), key=kk), mrand.categorical(m.array(logits), key=mk), m)
    same(kr.categorical(kiln.array(logits), num_samples=4, key=kk),
         mrand.categorical(m.array(logits), num_samples=4, key=mk), m)
    same(kr.categorical(kiln.array(logits.T), axis=0, shape=(5, 2), key=kk),
         mrand.categorical(m.array(logits.T), axis=0, shape=(5, 2), key=mk), m)
    same(kr.laplace((4,), key=kk), mrand.laplace((4,), key=mk), m, rtol=1e-5)
    same(kr.laplace((4,), loc=1.0, scale=0.5, key=kk), mrand.laplace((4,), loc=1.0, scale=0.5, key=mk), m, rtol=1e-5)
    same(kr.permutation(8, key=kk), mrand.permutation(8, key=mk), m)
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    same(kr.permutation(kiln.array(x), axis=1, key=kk), mrand.permutation(m.array(x), axis=1, key=mk), m)


def test_multivariate_normal(mr):
    mrand, m = mr
    mean = np.array([0.0, 1.0], np.float32)
    cov = np.array([[1.0, 0.5], [0.5, 2.0]], np.float32)
    k = kr.multivariate_normal(kiln.array(mean), kiln.array(cov), (3,), key=kr.key(1))
    mm = mrand.multivariate_normal(m.array(mean), m.array(cov), (3,), key=mrand.key(1), stream=m.cpu)
    same(k, mm, m, rtol=1e-4, atol=1e-4)


def test_global_seed_matches_mlx(mr):
    mrand, m = mr
    kr.seed(11)
    mrand.seed(11)
    same(kr.uniform(shape=(3,)), mrand.uniform(shape=(3,)), m)
    same(kr.normal((2,)), mrand.normal((2,)), m, rtol=1e-5)
    same(kr.state[0], mrand.state[0], m)
