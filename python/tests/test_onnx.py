"""kiln.to_onnx: a function exported by kiln converted to ONNX and run in ONNX Runtime (when installed)."""

import numpy as np
import pytest

import kiln


def export(tmp_path, fun, *args, name="f.mlxfn"):
    path = str(tmp_path / name)
    kiln.export_function(path, fun, *args)
    return path


def test_to_onnx_runs_in_onnxruntime(tmp_path):
    ort = pytest.importorskip("onnxruntime")
    x = np.linspace(-2, 2, 12, dtype=np.float32).reshape(3, 4)
    src = export(tmp_path, lambda a, b: (kiln.exp(a) * b + 1, kiln.sum(a, axis=1)), kiln.array(x), kiln.array(x))
    out = str(tmp_path / "f.onnx")
    kiln.to_onnx(src, out)
    sess = ort.InferenceSession(out, providers=["CPUExecutionProvider"])
    assert [i.name for i in sess.get_inputs()] == ["arg0", "arg1"]
    got = sess.run(None, {"arg0": x, "arg1": x})
    np.testing.assert_allclose(got[0], np.exp(x) * x + 1, rtol=1e-5)
    np.testing.assert_allclose(got[1], x.sum(axis=1), rtol=1e-5)


def test_to_onnx_external_data_loads(tmp_path):
    ort = pytest.importorskip("onnxruntime")
    w = np.arange(2048, dtype=np.float32)
    src = export(tmp_path, lambda a: a + kiln.array(w), kiln.array(np.zeros(2048, np.float32)))
    out = tmp_path / "ext.onnx"
    kiln.to_onnx(src, out, external_data=True)
    assert (tmp_path / "ext.onnx.data").stat().st_size >= w.nbytes
    sess = ort.InferenceSession(str(out), providers=["CPUExecutionProvider"])
    np.testing.assert_array_equal(sess.run(None, {"arg0": np.ones(2048, np.float32)})[0], w + 1)


def test_to_onnx_refusal_names_the_primitive(tmp_path):
    src = export(tmp_path, lambda a: kiln.view(a, kiln.int32), kiln.array(np.zeros(3, np.float32)))
    out = tmp_path / "v.onnx"
    with pytest.raises(RuntimeError, match="View"):
        kiln.to_onnx(src, out)
    assert not out.exists()


def test_to_onnx_bad_arguments(tmp_path):
    src = export(tmp_path, lambda a: kiln.exp(a), kiln.array(np.zeros(3, np.float32)))
    with pytest.raises(IndexError, match="function 2 does not exist"):
        kiln.to_onnx(src, tmp_path / "x.onnx", function=1)
    with pytest.raises(RuntimeError, match="Opset 17 is not supported"):
        kiln.to_onnx(src, tmp_path / "x.onnx", opset=17)
    with pytest.raises(TypeError):
        kiln.to_onnx(3, tmp_path / "x.onnx")


@pytest.mark.parametrize("bits", [4, 8])
def test_to_onnx_affine_weights_as_blockwise_dequantize_linear(tmp_path, bits):
    onnx = pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    rng = np.random.default_rng(bits)
    w, s, b = kiln.quantize(kiln.array(rng.standard_normal((32, 128)).astype(np.float32)), group_size=64, bits=bits)
    kiln.eval(w, s, b)
    x = rng.standard_normal((2, 128)).astype(np.float32)

    def f(a):
        return kiln.quantized_matmul(a, w, s, b, transpose=True, group_size=64, bits=bits)

    src = export(tmp_path, f, kiln.array(x))
    out = str(tmp_path / "q.onnx")
    kiln.to_onnx(src, out)
    model = onnx.load(out)
    onnx.checker.check_model(model, full_check=True)
    assert "DequantizeLinear" in {n.op_type for n in model.graph.node}
    # The codes are stored once, as UINT4 / UINT8 (the uint32 words are not kept beside them).
    types = {t.data_type for t in model.graph.initializer}
    assert (21 if bits == 4 else 2) in types and onnx.TensorProto.UINT32 not in types
    want = np.array(kiln.import_function(src)(kiln.array(x))[0])
    got = ort.InferenceSession(out, providers=["CPUExecutionProvider"]).run(None, {"arg0": x})[0]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    # Opset 20 has no blockwise DequantizeLinear: the codes are unpacked with integer ops instead.
    kiln.to_onnx(src, str(tmp_path / "q20.onnx"), opset=20)
    assert "DequantizeLinear" not in {n.op_type for n in onnx.load(str(tmp_path / "q20.onnx")).graph.node}
