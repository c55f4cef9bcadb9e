"""Threads and the GIL: one imported function called from many Python threads at once gives the
single-thread results; import, calls, writing and converting release the GIL (another Python thread
makes progress meanwhile); exporters in several threads at once (each trace re-takes the GIL to call
the Python function) neither deadlock nor mix their traces."""

import threading
import time

import numpy as np
import pytest

import kiln


def f32(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def test_one_function_many_threads(tmp_path):
    path = str(tmp_path / "mlp.mlxfn")
    w1, w2 = kiln.array(f32(16, 32, seed=1)), kiln.array(f32(32, 8, seed=2))

    def mlp(x, *, scale):
        h = x @ w1
        h = h * (h > 0)
        return h @ w2 * scale, h

    kiln.export_function(path, mlp, f32(4, 16), scale=f32(8))
    fn = kiln.import_function(path)
    inputs = [(f32(4, 16, seed=10 + i), f32(8, seed=20 + i)) for i in range(8)]
    want = [[np.array(o) for o in fn(x, scale=s)] for x, s in inputs]

    errors, results = [], {}

    def worker(t):
        try:
            out = []
            for i in range(100):
                x, s = inputs[(t + i) % len(inputs)]
                out.append(((t + i) % len(inputs), [np.array(o) for o in fn(x, scale=s)]))
            results[t] = out
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert len(results) == 8
    for out in results.values():
        for k, got in out:
            for g, w in zip(got, want[k]):
                np.testing.assert_array_equal(g, w)


def progress_during(run, min_seconds=0.05):
    """Runs `run` in a thread and counts the Python-level loop iterations the main thread makes while
    it runs (between timestamps taken inside the thread just before and after the call)."""
    span = {}

    def target():
        span["start"] = time.perf_counter()
        run()
        span["end"] = time.perf_counter()

    stamps = []
    t = threading.Thread(target=target)
    t.start()
    while t.is_alive():
        stamps.append(time.perf_counter())
    t.join()
    start, end = span["start"], span["end"]
    inside = sum(1 for s in stamps if start < s < end)
    return inside, end - start


def long_function(tmp_path, n=6):
    path = str(tmp_path / "long.mlxfn")

    def fun(a):
        for _ in range(n):
            a = (a @ a) * (1.0 / 512)
        return a

    kiln.export_function(path, fun, f32(512, 512))
    return path


def test_call_releases_the_gil(tmp_path):
    fn = kiln.import_function(long_function(tmp_path))
    x = f32(512, 512)
    inside, seconds = progress_during(lambda: fn(x))
    # With the GIL held for the whole call, the main thread could not run a single iteration.
    assert inside > 10, (inside, seconds)


def test_import_releases_the_gil(tmp_path):
    # A long chain makes import take a while (parsing and validating each node).
    path = str(tmp_path / "chain.mlxfn")

    def fun(a, b):
        for _ in range(100000):
            a = a + b
        return a

    kiln.export_function(path, fun, f32(2), f32(2))
    inside, seconds = progress_during(lambda: kiln.import_function(path))
    if seconds < 0.02:
        pytest.skip(f"import too fast to measure ({seconds:.3f} s)")
    assert inside > 10, (inside, seconds)


def test_write_and_convert_release_the_gil(tmp_path):
    big = kiln.array(np.ones((2048, 2048), np.float32))  # 16 MiB constant
    path = str(tmp_path / "big.mlxfn")
    inside, seconds = progress_during(lambda: kiln.export_function(path, lambda a: a + big, f32(2048, 2048)))
    # Tracing itself holds the GIL, but writing the constant does not.
    assert inside > 0, (inside, seconds)
    inside, seconds = progress_during(lambda: kiln.convert(path, str(tmp_path / "c.mlxfn"), version="0.31.0"))
    if seconds >= 0.02:
        assert inside > 0, (inside, seconds)


def test_exporters_in_parallel_threads(tmp_path):
    errors = []

    def worker(t):
        try:
            path = str(tmp_path / f"t{t}.mlxfn")
            c = kiln.array(np.full((3,), t, np.float32))
            with kiln.exporter(path, lambda *a: a[0] * c + len(a)) as e:
                for n in range(1, 4):
                    e(*[f32(3) for _ in range(n)])
            fn = kiln.import_function(path)
            for n in range(1, 4):
                out = np.array(fn(*[np.ones(3, np.float32)] * n)[0])
                np.testing.assert_allclose(out, np.full(3, t + n, np.float32))
        except Exception as e:  # pragma: no cover
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


def test_one_exporter_shared_by_threads(tmp_path):
    path = str(tmp_path / "shared.mlxfn")
    errors = []
    e = kiln.exporter(path, lambda *a: sum(a[1:], a[0]))

    def worker(n):
        try:
            e(*[f32(2) for _ in range(n)])
        except Exception as ex:  # pragma: no cover
            errors.append(ex)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(1, 7)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    e.close()
    assert not errors, errors
    fn = kiln.import_function(path)
    assert len(fn.info["functions"]) == 6
    for n in range(1, 7):
        np.testing.assert_allclose(np.array(fn(*[np.ones(2, np.float32)] * n)[0]), np.full(2, n))
