"""kiln's array files (save / load / savez / savez_compressed / save_safetensors): round trips of every
dtype, interop with real MLX 0.30.1, NumPy and the `safetensors` package, and hostile files."""

import io
import json
import os
import pathlib
import struct
import warnings
import zipfile

import numpy as np
import pytest

import kiln

DTYPES = [
    "bool_", "uint8", "uint16", "uint32", "uint64", "int8", "int16", "int32", "int64",
    "float16", "float32", "float64", "bfloat16", "complex64",
]  # fmt: skip


def values_for(name, shape=(3, 4)):
    """NumPy values representable in the dtype `name` (bfloat16: float32 values exact in bfloat16)."""
    n = int(np.prod(shape))
    base = np.arange(n).reshape(shape)
    if name == "bool_":
        return (base % 3 == 0)
    if name == "complex64":
        return (base - 3.5 + 1j * (base % 5 - 2)).astype(np.complex64)
    if name in ("float16", "float32", "float64", "bfloat16"):
        return ((base - 5) * 0.25).astype(np.float32 if name == "bfloat16" else name)
    if name.startswith("u"):
        return (base * 7 + 250).astype(name) if name != "uint8" else (base * 20).astype(np.uint8)
    return (base * 9 - 50).astype(name)


def kiln_array(name, shape=(3, 4)):
    v = values_for(name, shape)
    return kiln.array(v).astype(getattr(kiln, name))  # (float64 NumPy input becomes float32, as in MLX)


def as_np(a, mod):
    if a.dtype == mod.bfloat16:
        a = a.astype(mod.float32)
    return np.array(a)


def assert_same(a, b_np, name):
    """kiln array `a` equals NumPy `b_np`, with the dtype `name`."""
    assert a.dtype == getattr(kiln, name), (a.dtype, name)
    got = as_np(a, kiln)
    assert got.shape == b_np.shape
    np.testing.assert_array_equal(got, b_np.astype(got.dtype))


def no_temp_files(d):
    return [p for p in os.listdir(d) if "kiln-tmp" in p] == []


# ---- round trips ----


@pytest.mark.parametrize("name", DTYPES)
def test_npy_round_trip_every_dtype(tmp_path, name):
    a = kiln_array(name)
    kiln.save(tmp_path / "a.npy", a)
    assert_same(kiln.load(tmp_path / "a.npy"), values_for(name), name)
    assert_same(kiln.load(str(tmp_path / "a.npy")), values_for(name), name)
    buf = io.BytesIO()
    kiln.save(buf, a)
    buf.seek(0)
    assert_same(kiln.load(buf, format="npy"), values_for(name), name)


@pytest.mark.parametrize("name", DTYPES)
def test_safetensors_round_trip_every_dtype(tmp_path, name):
    a = kiln_array(name)
    kiln.save_safetensors(tmp_path / "a.safetensors", {"x": a, "y": a.T}, metadata={"k": "v"})
    arrays, meta = kiln.load(tmp_path / "a.safetensors", return_metadata=True)
    assert meta == {"k": "v"}
    assert sorted(arrays) == ["x", "y"]
    assert_same(arrays["x"], values_for(name), name)
    assert_same(arrays["y"], values_for(name).T, name)
    buf = io.BytesIO()
    kiln.save_safetensors(buf, {"x": a})
    buf.seek(0)
    assert_same(kiln.load(buf, format="safetensors")["x"], values_for(name), name)


@pytest.mark.parametrize("compressed", [False, True])
def test_npz_round_trip(tmp_path, compressed):
    save = kiln.savez_compressed if compressed else kiln.savez
    arrays = {name: kiln_array(name) for name in DTYPES}
    save(tmp_path / "z", kiln_array("int32"), kiln_array("float32").T, **arrays)
    path = tmp_path / "z.npz"  # ".npz" appended, as MLX and NumPy do
    with zipfile.ZipFile(path) as zf:
        infos = zf.infolist()
        assert [i.filename for i in infos][:2] == ["arr_0.npy", "arr_1.npy"]
        want = zipfile.ZIP_DEFLATED if compressed else zipfile.ZIP_STORED
        assert {i.compress_type for i in infos} == {want}
    out = kiln.load(path)
    assert list(out)[:2] == ["arr_0", "arr_1"]
    assert_same(out["arr_0"], values_for("int32"), "int32")
    assert_same(out["arr_1"], values_for("float32").T, "float32")
    for name in DTYPES:
        assert_same(out[name], values_for(name), name)
    buf = io.BytesIO()
    save(buf, x=kiln_array("float16"))
    buf.seek(0)
    assert_same(kiln.load(buf, format="npz")["x"], values_for("float16"), "float16")
    with pytest.raises(ValueError, match=r"\[savez\] Cannot use un-named variables and keyword arr_0"):
        kiln.savez(tmp_path / "bad.npz", kiln_array("int8"), arr_0=kiln_array("int8"))


def test_empty_scalar_and_strided_arrays(tmp_path):
    empty = kiln.array(np.zeros((2, 0, 3), np.float32))
    scalar = kiln.array(np.array(1.5, np.float16))
    t = kiln.array(np.arange(12, dtype=np.int32).reshape(3, 4)).T
    kiln.save(tmp_path / "e.npy", empty)
    assert kiln.load(tmp_path / "e.npy").shape == (2, 0, 3)
    kiln.save_safetensors(tmp_path / "s.safetensors", {"e": empty, "s": scalar, "t": t})
    out = kiln.load(tmp_path / "s.safetensors")
    assert out["e"].shape == (2, 0, 3) and out["e"].dtype == kiln.float32
    assert out["s"].shape == () and out["s"].tolist() == 1.5
    np.testing.assert_array_equal(np.array(out["t"]), np.arange(12).reshape(3, 4).T)
    kiln.savez(tmp_path / "z.npz", e=empty, s=scalar, t=t)
    out = kiln.load(tmp_path / "z.npz")
    assert out["e"].shape == (2, 0, 3)
    np.testing.assert_array_equal(np.array(out["t"]), np.arange(12).reshape(3, 4).T)


def test_paths_suffixes_and_atomic_writes(tmp_path):
    a = kiln_array("float32")
    kiln.save(str(tmp_path / "a"), a)
    kiln.save_safetensors(tmp_path / "b", {"a": a})
    kiln.savez(pathlib.Path(tmp_path / "c"), a=a)
    assert sorted(os.listdir(tmp_path)) == ["a.npy", "b.safetensors", "c.npz"]
    before = (tmp_path / "b.safetensors").read_bytes()
    with pytest.raises(ValueError, match="reserved"):
        kiln.save_safetensors(tmp_path / "b.safetensors", {"__metadata__": a})
    with pytest.raises(TypeError, match=r"\[save_safetensors\] Expected the value of 'a' to be a kiln.array"):
        kiln.save_safetensors(tmp_path / "b.safetensors", {"a": [1, 2]})
    with pytest.raises(ValueError, match="Metadata must be a dictionary with string keys and values"):
        kiln.save_safetensors(tmp_path / "b.safetensors", {"a": a}, metadata={"k": 1})
    with pytest.raises(TypeError, match=r"\[savez\] Expected the keyword argument 'y'"):
        kiln.savez(tmp_path / "c.npz", a=a, y=np.ones(2))
    assert (tmp_path / "b.safetensors").read_bytes() == before
    assert sorted(kiln.load(tmp_path / "c.npz")) == ["a"]
    assert no_temp_files(tmp_path)
    with pytest.raises(RuntimeError, match=r"\[save\] Failed to open"):
        kiln.save(tmp_path / "no" / "dir.npy", a)


def test_load_dispatch_and_errors(tmp_path):
    a = kiln_array("int16")
    kiln.save(tmp_path / "a.npy", a)
    with open(tmp_path / "a.npy", "rb") as f:  # a named file object: the format from its name
        assert_same(kiln.load(f), values_for("int16"), "int16")
    (tmp_path / "a.bin").write_bytes((tmp_path / "a.npy").read_bytes())
    assert_same(kiln.load(tmp_path / "a.bin", format="npy"), values_for("int16"), "int16")
    with pytest.raises(ValueError, match=r"\[load\] Unknown file format bin"):
        kiln.load(tmp_path / "a.bin")
    with pytest.raises(ValueError, match="Could not infer file format from extension"):
        kiln.load(str(tmp_path / "noext").replace(".", "_"))
    with pytest.raises(ValueError, match="metadata not supported for format npy"):
        kiln.load(tmp_path / "a.npy", return_metadata=True)
    with pytest.raises(ValueError, match="without a name: pass format="):
        kiln.load(io.BytesIO(b""))
    with pytest.raises(ValueError, match=r"\[load_gguf\] Failed to open"):
        kiln.load(tmp_path / "m.gguf")
    with pytest.raises(TypeError, match="Expected a path"):
        kiln.save_gguf(io.BytesIO(), {"a": a})
    with pytest.raises(RuntimeError, match=r"\[load\] Failed to open"):
        kiln.load(tmp_path / "missing.npy")
    with pytest.raises(RuntimeError, match=r"\[load_safetensors\] Failed to open"):
        kiln.load(tmp_path / "missing.safetensors")
    with pytest.raises(FileNotFoundError):
        kiln.load(tmp_path / "missing.npz")


# ---- interop with real MLX ----


@pytest.fixture(scope="module")
def mlx():
    return pytest.importorskip("mlx.core")


def mlx_array(mlx, name):
    return mlx.array(values_for(name)).astype(getattr(mlx, name))


@pytest.mark.parametrize("name", DTYPES)
def test_mlx_files_load_in_kiln(tmp_path, mlx, name):
    a = mlx_array(mlx, name)
    want = values_for(name)
    mlx.save(str(tmp_path / "a.npy"), a)
    assert_same(kiln.load(tmp_path / "a.npy"), want, name)
    mlx.savez(str(tmp_path / "z.npz"), a, named=a)
    z = kiln.load(tmp_path / "z.npz")
    assert sorted(z) == ["arr_0", "named"]
    assert_same(z["arr_0"], want, name)
    mlx.savez_compressed(str(tmp_path / "zc.npz"), x=a)
    assert_same(kiln.load(tmp_path / "zc.npz")["x"], want, name)
    if name != "float64":  # MLX 0.30.1 refuses to write float64 .safetensors
        mlx.save_safetensors(str(tmp_path / "a.safetensors"), {"x": a, "s": a[0]}, metadata={"who": "mlx"})
        arrays, meta = kiln.load(tmp_path / "a.safetensors", return_metadata=True)
        assert meta == {"who": "mlx"}
        assert_same(arrays["x"], want, name)
        assert_same(arrays["s"], want[0], name)
        mlx.save_safetensors(str(tmp_path / "n.safetensors"), {"x": a})  # "__metadata__": null
        assert kiln.load(tmp_path / "n.safetensors", return_metadata=True)[1] == {}


@pytest.mark.parametrize("name", DTYPES)
def test_kiln_files_load_in_mlx(tmp_path, mlx, name):
    a = kiln_array(name)
    want = values_for(name)

    def check(m):
        assert m.dtype == getattr(mlx, name)
        got = as_np(m, mlx)
        np.testing.assert_array_equal(got, want.astype(got.dtype))

    if name == "float64":
        pytest.skip("MLX 0.30.1 reads '<f8' .npy data (its own files too) as complex64, and no F64 .safetensors")
    kiln.save(tmp_path / "a.npy", a.T)
    m = mlx.load(str(tmp_path / "a.npy"))
    assert m.dtype == getattr(mlx, name)
    np.testing.assert_array_equal(as_np(m, mlx), want.T.astype(as_np(m, mlx).dtype))
    kiln.savez(tmp_path / "z.npz", a, y=a)
    z = mlx.load(str(tmp_path / "z.npz"))
    check(z["arr_0"])
    check(z["y"])
    kiln.savez_compressed(tmp_path / "zc.npz", x=a)
    check(mlx.load(str(tmp_path / "zc.npz"))["x"])
    kiln.save_safetensors(tmp_path / "a.safetensors", {"x": a, "e": kiln.array(np.zeros((0, 2), np.float32))},
                          metadata={"who": "kiln"})
    arrays, meta = mlx.load(str(tmp_path / "a.safetensors"), return_metadata=True)
    assert meta == {"who": "kiln"}
    check(arrays["x"])
    assert arrays["e"].shape == (0, 2)  # MLX refuses to write empty arrays but reads them


# ---- NumPy ----


NUMPY_DTYPES = [n for n in DTYPES if n != "bfloat16"]


@pytest.mark.parametrize("name", NUMPY_DTYPES)
def test_numpy_interop(tmp_path, name):
    want = values_for(name)
    np.save(tmp_path / "n.npy", want)
    assert_same(kiln.load(tmp_path / "n.npy"), want, name)
    np.save(tmp_path / "f.npy", np.asfortranarray(want))
    assert_same(kiln.load(tmp_path / "f.npy"), want, name)
    np.savez(tmp_path / "n.npz", want, w=want)
    z = kiln.load(tmp_path / "n.npz")
    assert_same(z["arr_0"], want, name)
    assert_same(z["w"], want, name)
    np.savez_compressed(tmp_path / "c.npz", w=want)
    assert_same(kiln.load(tmp_path / "c.npz")["w"], want, name)
    a = kiln_array(name)
    kiln.save(tmp_path / "k.npy", a)
    np.testing.assert_array_equal(np.load(tmp_path / "k.npy"), want)
    kiln.savez_compressed(tmp_path / "k.npz", a, v=a)
    with np.load(tmp_path / "k.npz") as z:
        np.testing.assert_array_equal(z["arr_0"], want)
        np.testing.assert_array_equal(z["v"], want)


def test_numpy_reads_kiln_bfloat16_as_void(tmp_path):
    kiln.save(tmp_path / "b.npy", kiln_array("bfloat16"))
    raw = np.load(tmp_path / "b.npy")
    assert raw.dtype == np.dtype("V2")
    bits = raw.view(np.uint16).astype(np.uint32) << 16
    np.testing.assert_array_equal(bits.view(np.float32), values_for("bfloat16"))


# ---- the safetensors package ----


def test_safetensors_package_interop(tmp_path):
    st = pytest.importorskip("safetensors.numpy")
    from safetensors import safe_open

    names = [n for n in NUMPY_DTYPES if n != "complex64"]
    tensors = {n: values_for(n) for n in names}
    st.save_file(tensors, str(tmp_path / "p.safetensors"), metadata={"from": "safetensors"})
    arrays, meta = kiln.load(tmp_path / "p.safetensors", return_metadata=True)
    assert meta == {"from": "safetensors"}
    for n in names:
        assert_same(arrays[n], tensors[n], n)
    kiln.save_safetensors(tmp_path / "k.safetensors", {n: kiln_array(n) for n in names}, metadata={"from": "kiln"})
    back = st.load_file(str(tmp_path / "k.safetensors"))
    for n in names:
        np.testing.assert_array_equal(back[n], tensors[n])
        assert back[n].dtype == tensors[n].dtype
    with safe_open(str(tmp_path / "k.safetensors"), framework="numpy") as f:
        assert f.metadata() == {"from": "kiln"}


# ---- hostile files ----


def st_bytes(header, data=b""):
    h = header if isinstance(header, bytes) else json.dumps(header).encode()
    return struct.pack("<Q", len(h)) + h + data


def load_st(tmp_path, raw):
    (tmp_path / "h.safetensors").write_bytes(raw)
    return kiln.load(tmp_path / "h.safetensors")


def test_hostile_safetensors(tmp_path):
    good = {"x": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}}
    assert load_st(tmp_path, st_bytes(good, bytes(8)))["x"].shape == (2,)
    cases = [
        (b"\x01\x02", "Truncated file: expected 8 bytes of header length but found 2"),
        (st_bytes(good, bytes(8))[:20], "Truncated file: expected a JSON header of"),
        (st_bytes(good, bytes(7)), "expected data_offsets within the data section of 7 bytes but found \\[0, 8\\]"),
        (struct.pack("<Q", 1 << 60) + b"{}", "Invalid header length: expected 1 to 100000000 bytes but found 1152921504606846976"),
        (st_bytes(b"{not json"), "Invalid JSON header"),
        (st_bytes({"x": {"dtype": "F4", "shape": [2], "data_offsets": [0, 8]}}, bytes(8)), "expected a dtype among .* but found 'F4'"),
        (st_bytes({"x": {"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}}, bytes(8)),
         "expected data_offsets spanning 12 bytes for the shape \\[3\\] of F32 but found \\[0, 8\\]"),
        (st_bytes({"x": {"dtype": "F32", "shape": [-1], "data_offsets": [0, 8]}}, bytes(8)), "expected a non-negative integer"),
        (st_bytes({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
                   "b": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}}, bytes(8)), "overlaps the tensor 'a'"),
        (st_bytes({"a": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}}, bytes(8)), "a hole of 4 bytes"),
        (st_bytes(good, bytes(12)), "4 trailing bytes"),
        (st_bytes(b'{"x":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"x":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}}',
                  b"ab"), "expected unique keys but found 'x' twice"),
        (st_bytes({"__metadata__": {"k": 5}}), "expected a string value for the key 'k' but found an integer"),
    ]
    for raw, msg in cases:
        with pytest.raises(RuntimeError, match=r"^\[load_safetensors\] .*" + msg):
            load_st(tmp_path, raw)
        with pytest.raises(RuntimeError, match=msg):
            kiln.load(io.BytesIO(raw), format="safetensors")


def test_hostile_npy(tmp_path):
    buf = io.BytesIO()
    kiln.save(buf, kiln_array("float32"))
    raw = buf.getvalue()
    (tmp_path / "t.npy").write_bytes(raw[:-3])
    with pytest.raises(RuntimeError, match=r"\[load\] Truncated file: expected 48 bytes of data but found 45"):
        kiln.load(tmp_path / "t.npy")
    with pytest.raises(RuntimeError, match="magic string"):
        kiln.load(io.BytesIO(b"PK" + raw[2:]), format="npy")


def zip_with(members, compression=zipfile.ZIP_STORED):
    buf = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # duplicate names
        with zipfile.ZipFile(buf, "w", compression=compression) as zf:
            for name, data in members:
                zf.writestr(name, data)
    return bytearray(buf.getvalue())


def npy_bytes(a):
    b = io.BytesIO()
    kiln.save(b, a)
    return b.getvalue()


def patch_central_sizes(raw, compressed=None, uncompressed=None):
    """Set the sizes of the (single) member in the central directory and its local header."""
    for sig, off_c, off_u in ((b"PK\x01\x02", 20, 24), (b"PK\x03\x04", 18, 22)):
        i = raw.find(sig)
        if compressed is not None:
            raw[i + off_c : i + off_c + 4] = struct.pack("<I", compressed)
        if uncompressed is not None:
            raw[i + off_u : i + off_u + 4] = struct.pack("<I", uncompressed)
    return bytes(raw)


def load_npz(tmp_path, raw):
    (tmp_path / "h.npz").write_bytes(bytes(raw))
    return kiln.load(tmp_path / "h.npz")


def test_hostile_npz(tmp_path, monkeypatch):
    data = npy_bytes(kiln_array("float32"))
    assert sorted(load_npz(tmp_path, zip_with([("x.npy", data)]))) == ["x"]
    with pytest.raises(ValueError, match=r"\[load\] Invalid .npz file .*expected a zip archive"):
        load_npz(tmp_path, b"not a zip at all")
    with pytest.raises(ValueError, match="expected unique names but found the member 'x.npy' twice"):
        load_npz(tmp_path, zip_with([("x.npy", data), ("x.npy", data)]))
    # A member whose npy bytes are truncated: the C++ reader's message, naming the member.
    with pytest.raises(RuntimeError, match=r"\[load\] Truncated file: .* \(in the member 'x.npy' of the .npz file"):
        load_npz(tmp_path, zip_with([("x.npy", data[:-4])]))
    with pytest.raises(RuntimeError, match="in the member 'notes.txt'"):
        load_npz(tmp_path, zip_with([("x.npy", data), ("notes.txt", b"hello")]))
    # Declared sizes: above the limit, disagreeing with the stored size, impossible for deflate.
    monkeypatch.setattr(kiln._io, "NPZ_MAX_MEMBER_BYTES", 100)
    with pytest.raises(ValueError, match="expected the member 'x.npy' to hold at most NPZ_MAX_MEMBER_BYTES = 100 bytes but it declares 176"):
        load_npz(tmp_path, zip_with([("x.npy", data)]))
    monkeypatch.undo()
    with pytest.raises(ValueError, match="expected the stored member 'x.npy' to be as large compressed as uncompressed"):
        load_npz(tmp_path, patch_central_sizes(zip_with([("x.npy", data)]), uncompressed=len(data) + 1))
    with pytest.raises(ValueError, match="expected the deflated member 'x.npy' to expand at most 1032-fold"):
        load_npz(tmp_path, patch_central_sizes(zip_with([("x.npy", data)], zipfile.ZIP_DEFLATED), uncompressed=1 << 31))
    raw = zip_with([("x.npy", data)], zipfile.ZIP_DEFLATED)
    i = raw.find(b"PK\x01\x02")
    csize = struct.unpack("<I", raw[i + 20 : i + 24])[0]
    with pytest.raises(ValueError, match="expected the member 'x.npy' to hold .* bytes but found|could not read"):
        load_npz(tmp_path, patch_central_sizes(raw, uncompressed=len(data) + 50))
    # A corrupted byte in a stored member fails its CRC.
    raw = zip_with([("x.npy", data)])
    raw[raw.find(b"NUMPY") + 100] ^= 0xFF
    with pytest.raises(ValueError, match="could not read the member 'x.npy': Bad CRC-32"):
        load_npz(tmp_path, raw)
    assert csize > 0
    with pytest.raises(ValueError, match="expected the member 'x.npy' to be stored or deflated"):
        load_npz(tmp_path, zip_with([("x.npy", data)], zipfile.ZIP_BZIP2))


def test_gguf_round_trip_and_mlx_interop(tmp_path):
    w = {"f": kiln.array(np.arange(6, dtype=np.float32).reshape(2, 3)), "h": kiln.array(np.array([0.5, -1], np.float16)),
         "i": kiln.array(np.array([[1, -2]], np.int32)), "b": kiln.array(np.array([-5, 5], np.int8))}
    meta = {"name": "kiln", "toks": ["a", "bc"], "n": kiln.array(np.uint32(7)), "v": kiln.array(np.array([1.5, 2.5], np.float32))}
    kiln.save_gguf(tmp_path / "k", w, meta)
    arrays, got = kiln.load(tmp_path / "k.gguf", return_metadata=True)
    assert sorted(arrays) == sorted(w)
    for k in w:
        assert np.array_equal(np.array(arrays[k]), np.array(w[k])) and arrays[k].dtype == w[k].dtype
    assert got["name"] == "kiln" and got["toks"] == ["a", "bc"]
    assert got["n"].shape == () and got["n"].item() == 7
    assert np.array_equal(np.array(got["v"]), [1.5, 2.5])
    with pytest.raises(ValueError, match="GGUF tensors are written as"):
        kiln.save_gguf(tmp_path / "bad.gguf", {"x": kiln.array(np.zeros(2, np.uint8))})
    with pytest.raises(TypeError, match="a str, a list of str or a kiln.array"):
        kiln.save_gguf(tmp_path / "bad.gguf", w, {"x": 3})
    assert not (tmp_path / "bad.gguf").exists()
    mx = pytest.importorskip("mlx.core")
    # kiln's file read by MLX, and MLX's by kiln.
    theirs, tmeta = mx.load(str(tmp_path / "k.gguf"), return_metadata=True)
    for k in w:
        assert np.array_equal(np.array(theirs[k]), np.array(w[k]))
    assert tmeta["name"] == "kiln" and tmeta["toks"] == ["a", "bc"] and tmeta["n"].item() == 7
    mx.save_gguf(str(tmp_path / "m.gguf"), {"x": mx.array([1.0, 2.0]), "y": mx.array([[3, 4]], dtype=mx.int16)},
                 {"s": "text", "a": mx.array([1, 2, 3])})
    mine, mmeta = kiln.load(tmp_path / "m.gguf", return_metadata=True)
    assert np.array_equal(np.array(mine["x"]), [1.0, 2.0]) and mine["y"].dtype == kiln.int16
    assert mmeta["s"] == "text" and np.array_equal(np.array(mmeta["a"]), [1, 2, 3])


def test_gguf_block_quantized_tensors_match_llama_cpps_reference(tmp_path):
    # Files written by the gguf package (llama.cpp's own Python writer), read as MLX's affine quantization:
    # dequantized, they equal gguf's reference dequantization up to the float16 rounding of the scales'
    # dtype. MLX 0.30.1 reads Q4_0 and Q8_0 to the same arrays; its Q4_1 codes are wrong (error ~5 here).
    gguf = pytest.importorskip("gguf")
    rng = np.random.default_rng(0)
    w = rng.standard_normal((4, 64)).astype(np.float32)
    path = str(tmp_path / "q.gguf")
    writer = gguf.GGUFWriter(path, "llama")
    kinds = {"q4_0": gguf.GGMLQuantizationType.Q4_0, "q4_1": gguf.GGMLQuantizationType.Q4_1,
             "q8_0": gguf.GGMLQuantizationType.Q8_0}
    for name, t in kinds.items():
        q = gguf.quants.quantize(w, t)
        writer.add_tensor(name, q, raw_shape=q.shape, raw_dtype=t)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    mine = kiln.load(path)
    reader = gguf.GGUFReader(path)
    for t in reader.tensors:
        ref = gguf.quants.dequantize(t.data, t.tensor_type).reshape(w.shape)
        bits = 8 if t.name == "q8_0" else 4
        deq = kiln.dequantize(mine[t.name], mine[t.name + ".scales"], mine[t.name + ".biases"], group_size=32, bits=bits)
        np.testing.assert_allclose(np.array(deq).astype(np.float32), ref, rtol=1e-3, atol=1e-3, err_msg=t.name)
    try:
        import mlx.core as mx
    except ImportError:
        return
    theirs = mx.load(path)
    for name in ("q4_0", "q8_0"):
        for k in (name, name + ".scales", name + ".biases"):
            assert np.array_equal(np.array(theirs[k]), np.array(mine[k])), k
