"""kiln.to_onnx: a function exported by kiln converted to ONNX and run in ONNX Runtime (when installed)."""

import io

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


# The fused rows: ONNX's own op where the opset has it and it expresses the case, else the
# decomposition. Each case runs in ONNX Runtime against kiln's result at both opsets.
def _fused_cases():
    rng = np.random.default_rng(7)

    def rnd(*shape, dtype=np.float32):
        return rng.standard_normal(shape).astype(dtype)

    fast = kiln.fast
    w8 = kiln.array(rnd(8))
    return [
        # (id, function, inputs, op at opset 23, op at opset 21 or None)
        ("rms_norm", lambda x: fast.rms_norm(x, w8, 1e-5), [rnd(3, 5, 8)], "RMSNormalization", None),
        ("rms_norm_no_weight", lambda x: fast.rms_norm(x, None, 1e-3), [rnd(4, 8)], "RMSNormalization", None),
        ("layer_norm", lambda x: fast.layer_norm(x, w8, w8, 1e-5), [rnd(2, 3, 8)], "LayerNormalization",
         "LayerNormalization"),
        ("layer_norm_no_weight_bias", lambda x: fast.layer_norm(x, None, None, 1e-4), [rnd(6, 8)],
         "LayerNormalization", "LayerNormalization"),
        ("layer_norm_f16", lambda x: fast.layer_norm(x, None, kiln.array(rnd(8, dtype=np.float16)), 1e-5),
         [rnd(2, 8, dtype=np.float16)], "LayerNormalization", "LayerNormalization"),
        ("rope_4d", lambda x: fast.rope(x, 16, traditional=False, base=10000.0, scale=1.0, offset=3),
         [rnd(2, 3, 5, 16)], "RotaryEmbedding", None),
        ("rope_3d_traditional_partial_scaled",
         lambda x: fast.rope(x, 8, traditional=True, base=500.0, scale=0.5, offset=2), [rnd(2, 6, 12)],
         "RotaryEmbedding", None),
        ("rope_5d_vector_offset",
         lambda x, o: fast.rope(x, 6, traditional=False, base=10000.0, scale=1.0, offset=o),
         [rnd(2, 2, 3, 4, 10), np.array([0, 7], np.int32)], "RotaryEmbedding", None),
        ("rope_freqs", lambda x: fast.rope(x, 8, traditional=False, base=None, scale=2.0, offset=1,
                                           freqs=kiln.array(np.linspace(1, 40, 4).astype(np.float32))),
         [rnd(1, 2, 4, 8)], "RotaryEmbedding", None),
        ("rope_vjp", lambda x, g: kiln.vjp(
            lambda a: fast.rope(a, 8, traditional=True, base=10000.0, scale=1.0, offset=4), [x], [g])[1][0],
         [rnd(1, 2, 5, 8), rnd(1, 2, 5, 8)], "RotaryEmbedding", None),
        ("sdpa_gqa_bool_mask", lambda q, k, v, m: fast.scaled_dot_product_attention(q, k, v, scale=0.3, mask=m),
         [rnd(2, 4, 3, 8), rnd(2, 2, 5, 8), rnd(2, 2, 5, 6), rng.random((2, 1, 3, 5)) > 0.2],
         "Attention", None),
        ("sdpa_additive_mask_f16",
         lambda q, k, v, m: fast.scaled_dot_product_attention(q, k, v, scale=0.25, mask=m),
         [rnd(1, 2, 4, 8, dtype=np.float16), rnd(1, 2, 4, 8, dtype=np.float16),
          rnd(1, 2, 4, 8, dtype=np.float16), rnd(4, 4, dtype=np.float16)], "Attention", None),
        ("sdpa_causal_square", lambda q, k, v: fast.scaled_dot_product_attention(q, k, v, scale=0.5, mask="causal"),
         [rnd(1, 4, 5, 8), rnd(1, 1, 5, 8), rnd(1, 1, 5, 8)], "Attention", None),
        ("sdpa_causal_fewer_queries",
         lambda q, k, v: fast.scaled_dot_product_attention(q, k, v, scale=0.5, mask="causal"),
         [rnd(1, 2, 2, 8), rnd(1, 2, 6, 8), rnd(1, 2, 6, 8)], "Attention", None),
        ("sdpa_causal_more_queries",
         lambda q, k, v: fast.scaled_dot_product_attention(q, k, v, scale=0.5, mask="causal"),
         [rnd(1, 2, 6, 8), rnd(1, 2, 4, 8), rnd(1, 2, 4, 8)], "Attention", None),
        # Rows masked everywhere: a boolean mask attends every key equally (the lowest finite score),
        # an additive -inf row is NaN, as kiln's kernel and MLX give them.
        ("sdpa_bool_mask_dead_row", lambda q, k, v, m: fast.scaled_dot_product_attention(q, k, v, scale=0.5, mask=m),
         [rnd(1, 2, 3, 8), rnd(1, 2, 4, 8), rnd(1, 2, 4, 8), np.array([[1, 0, 1, 0], [0, 0, 0, 0], [1, 1, 1, 1]], bool)],
         "Attention", None),
        ("sdpa_additive_mask_dead_row",
         lambda q, k, v, m: fast.scaled_dot_product_attention(q, k, v, scale=0.5, mask=m),
         [rnd(1, 2, 3, 8), rnd(1, 2, 4, 8), rnd(1, 2, 4, 8),
          np.array([[0, -np.inf, 1, 0], [-np.inf] * 4, [2, 1, 0, -1]], np.float32)], "Attention", None),
        # Decomposed at every opset: sinks.
        ("sdpa_sinks", lambda q, k, v: fast.scaled_dot_product_attention(
            q, k, v, scale=0.5, sinks=kiln.array(np.array([0.5, -1.0], np.float32))),
         [rnd(1, 2, 3, 8), rnd(1, 2, 3, 8), rnd(1, 2, 3, 8)], None, None),
    ]


_FUSED = _fused_cases()


@pytest.mark.parametrize("case", _FUSED, ids=[c[0] for c in _FUSED])
def test_to_onnx_fused_rows_as_opset_ops(tmp_path, case):
    onnx = pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    name, fun, inputs, op23, op21 = case
    src = export(tmp_path, fun, *[kiln.array(a) for a in inputs])
    want = [np.array(o).astype(np.float32) for o in kiln.import_function(src)(*[kiln.array(a) for a in inputs])]
    tol = 2e-3 if any(a.dtype == np.float16 for a in inputs) else 2e-5
    fused = {"RMSNormalization", "LayerNormalization", "RotaryEmbedding", "Attention"}
    for opset, op in ((21, op21), (22, op21), (23, op23)):
        out = str(tmp_path / f"{name}_{opset}.onnx")
        kiln.to_onnx(src, out, opset=opset)
        model = onnx.load(out)
        onnx.checker.check_model(model, full_check=True)
        ops = {n.op_type for n in model.graph.node}
        assert ops & fused == ({op} if op else set()), (opset, sorted(ops))
        feeds = {f"arg{k}": a for k, a in enumerate(inputs)}
        got = ort.InferenceSession(out, providers=["CPUExecutionProvider"]).run(None, feeds)
        for g, w in zip(got, want):
            np.testing.assert_allclose(g.astype(np.float32), w, rtol=tol, atol=tol, err_msg=f"opset {opset}")


@pytest.mark.parametrize("bits", [2, 4, 8])
def test_to_onnx_affine_quantize_nan_and_inf_groups_match_kiln(tmp_path, bits):
    # Groups holding NaN (anywhere, or only NaN) and infinities: the codes, scales and biases ONNX
    # Runtime computes are kiln's byte for byte (and MLX 0.30.1's, checked when mlx is importable).
    ort = pytest.importorskip("onnxruntime")
    gs = 32
    base = np.linspace(-1, 1.5, gs).astype(np.float32)
    rows = [base.copy() for _ in range(9)]
    rows[1][3] = np.nan
    rows[2][0] = np.nan
    rows[3][:] = np.nan
    rows[4][5] = np.inf
    rows[5][5] = -np.inf
    rows[6][5], rows[6][6] = -np.inf, np.inf
    rows[7][5], rows[7][6] = np.nan, np.inf
    rows[8][:] = np.inf
    w = np.stack(rows)
    src = export(tmp_path, lambda a: kiln.quantize(a, group_size=gs, bits=bits), kiln.array(w))
    out = str(tmp_path / "quant.onnx")
    kiln.to_onnx(src, out)
    got = ort.InferenceSession(out, providers=["CPUExecutionProvider"]).run(None, {"arg0": w})
    want = [np.array(a) for a in kiln.quantize(kiln.array(w), group_size=gs, bits=bits)]
    references = [want]
    try:
        import mlx.core as mx
        references.append([np.array(a) for a in mx.quantize(mx.array(w), group_size=gs, bits=bits)])
    except ImportError:
        pass
    for ref in references:
        for k, (g, r) in enumerate(zip(got, ref)):
            assert g.dtype == r.dtype and g.tobytes() == r.tobytes(), (k, g, r)


@pytest.mark.parametrize("opset", [21, 23])
def test_to_onnx_shapeless_norms_take_any_size(tmp_path, opset):
    onnx = pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    rng = np.random.default_rng(3)

    def f(x, w, b):
        return kiln.fast.rms_norm(x, w, 1e-5), kiln.fast.rms_norm(x, None, 1e-5), kiln.fast.layer_norm(x, w, b, 1e-5), \
            kiln.fast.layer_norm(x, None, None, 1e-4)

    src = str(tmp_path / "norms.mlxfn")
    kiln.export_function(src, f, *[kiln.array(rng.standard_normal(s).astype(np.float32)) for s in ((2, 8), (8,), (8,))],
                         shapeless=True)
    out = str(tmp_path / "norms.onnx")
    kiln.to_onnx(src, out, opset=opset)
    model = onnx.load(out)
    onnx.checker.check_model(model, full_check=True)
    for v in list(model.graph.input) + list(model.graph.output):
        assert all(d.dim_param and not d.dim_value for d in v.type.tensor_type.shape.dim), v
    sess = ort.InferenceSession(out, providers=["CPUExecutionProvider"])
    fn = kiln.import_function(src)
    for shape in ((2, 8), (5, 16), (1, 3)):  # the rank is fixed, the sizes are not
        args = [rng.standard_normal(s).astype(np.float32) for s in (shape, shape[-1:], shape[-1:])]
        got = sess.run(None, {f"arg{k}": a for k, a in enumerate(args)})
        want = fn(*[kiln.array(a) for a in args])
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, np.array(w), rtol=2e-5, atol=2e-5)


def _shapeless_cases():
    """(id, function, [argument lists]): the first list is traced (shapeless), every list is then run in
    ONNX Runtime and by kiln's own shapeless replay; each exercises one row whose lowering reads its sizes
    at run time. Integer arguments are int32 index or offset arrays."""
    rng = np.random.default_rng(21)

    def f32(*s):
        return rng.standard_normal(s).astype(np.float32)

    def idx(hi, *s):
        return rng.integers(-hi, hi, size=s).astype(np.int32)

    w4, s4, b4 = kiln.quantize(kiln.array(f32(24, 128)), group_size=64, bits=4)
    w3, s3, b3 = kiln.quantize(kiln.array(f32(24, 128)), group_size=64, bits=3)
    kiln.eval(w4, s4, b4, w3, s3, b3)
    wconv = kiln.array(f32(4, 3, 2))
    wt = kiln.array(f32(4, 3, 2))

    def quantized_inputs(n, k, bits):
        return [np.array(a) for a in kiln.quantize(kiln.array(f32(n, k)), group_size=64, bits=bits)]

    def masked_scatter(x, m, v):
        x[m] = v
        return x

    def slice_update(x, u):
        x[1:3] = u  # fixed positions (the state), any number of rows
        return x

    return [
        ("MaskedScatter", masked_scatter,
         [[f32(3, 4), rng.random((3, 4)) > 0.5, f32(12)], [f32(5, 4), rng.random((5, 4)) > 0.5, f32(20)],
          [f32(2, 4), np.zeros((2, 4), np.bool_), f32(0)]]),
        ("SliceUpdate", slice_update, [[f32(4, 3), f32(2, 3)], [f32(6, 3), f32(2, 3)]]),
        ("Flatten", lambda x: kiln.flatten(x, 1, 2), [[f32(2, 3, 4)], [f32(3, 5, 2)], [f32(1, 1, 7)]]),
        ("Unflatten", lambda x: kiln.unflatten(x, 1, (3, 4)), [[f32(2, 12)], [f32(5, 12)]]),
        ("Gather", lambda x, i: kiln.take(x, i, axis=0), [[f32(5, 3), idx(5, 4)], [f32(9, 3), idx(9, 2, 3)[0]]]),
        ("GatherAxis", lambda x, i: kiln.take_along_axis(x, i, axis=1),
         [[f32(4, 5), idx(5, 4, 2)], [f32(3, 7), idx(7, 3, 4)]]),
        ("ScatterAxis", lambda x, i, v: kiln.put_along_axis(x, i, v, axis=1),
         [[f32(4, 5), idx(5, 4, 1), f32(4, 1)], [f32(3, 8), idx(8, 3, 1), f32(3, 1)]]),
        ("Sort", lambda x: (kiln.sort(x, axis=-1), kiln.argsort(x, axis=0)), [[f32(3, 6)], [f32(5, 9)]]),
        ("Convolution", lambda x: (kiln.conv1d(x, wconv, stride=1, padding=1),
                                   kiln.conv_transpose1d(x, wt, stride=2, padding=1)),
         [[f32(1, 8, 2)], [f32(2, 11, 2)], [f32(1, 1, 2)]]),
        ("QuantizedMatmul", lambda x: (kiln.quantized_matmul(x, w4, s4, b4, transpose=True, group_size=64, bits=4),
                                       kiln.quantized_matmul(x, w3, s3, b3, transpose=True, group_size=64, bits=3)),
         [[f32(2, 128)], [f32(5, 128)]]),
        # Weights that are inputs: their word counts are read at run time (3 bits straddle words).
        ("QuantizedMatmulInputs",
         lambda x, w, s, b: kiln.quantized_matmul(x, w, s, b, transpose=True, group_size=64, bits=3),
         [[f32(2, 64)] + quantized_inputs(8, 64, 3), [f32(3, 128)] + quantized_inputs(5, 128, 3)]),
        ("Quantize", lambda x: kiln.quantize(x, group_size=64, bits=4), [[f32(4, 64)], [f32(6, 192)]]),
        ("DynamicSlice", lambda x, i: kiln.slice(x, i, [0], (2, 5)),
         [[f32(6, 5), np.array([1], np.int32)], [f32(9, 5), np.array([8], np.int32)]]),
        ("DynamicSliceUpdate", lambda x, u, i: kiln.slice_update(x, u, i, [0]),
         [[f32(6, 5), f32(2, 5), np.array([1], np.int32)], [f32(9, 4), f32(3, 4), np.array([7], np.int32)]]),
        ("RoPE", lambda x, o: (kiln.fast.rope(x, 16, traditional=False, base=10000.0, scale=1.0, offset=o),
                               kiln.fast.rope(x, 8, traditional=True, base=500.0, scale=0.5, offset=o)),
         # the head size grows past the rotated dims at run time: the rest is carried
         [[f32(1, 4, 6, 16), np.array(3, np.int32)], [f32(2, 4, 9, 32), np.array(0, np.int32)]]),
        ("ScaledDotProductAttention",
         lambda q, k, v: (kiln.fast.scaled_dot_product_attention(q, k, v, scale=0.35, mask="causal"),
                          kiln.fast.scaled_dot_product_attention(q, k, v, scale=0.35)),
         # grouped-query heads; more keys than queries, then more queries than keys
         [[f32(1, 4, 5, 8), f32(1, 2, 7, 8), f32(1, 2, 7, 8)], [f32(2, 4, 6, 8), f32(2, 2, 4, 8), f32(2, 2, 4, 8)]]),
        ("ScaledDotProductAttentionMask",
         lambda q, k, v, m: kiln.fast.scaled_dot_product_attention(q, k, v, scale=0.5, mask=m),
         # a mask of the scores' full shape (a smaller one is broadcast to the traced shape, as in MLX)
         [[f32(1, 2, 3, 8), f32(1, 2, 5, 8), f32(1, 2, 5, 8), rng.random((1, 2, 3, 5)) > 0.3],
          [f32(1, 2, 4, 8), f32(1, 2, 2, 8), f32(1, 2, 2, 8), rng.random((1, 2, 4, 2)) > 0.3]]),
        ("ScaledDotProductAttentionSinks",
         lambda q, k, v, s: kiln.fast.scaled_dot_product_attention(q, k, v, scale=0.5, mask="causal", sinks=s),
         [[f32(1, 4, 3, 8), f32(1, 2, 5, 8), f32(1, 2, 5, 8), f32(4)],
          [f32(2, 4, 6, 8), f32(2, 2, 6, 8), f32(2, 2, 6, 8), f32(4)]]),
    ]


_SHAPELESS = _shapeless_cases()


@pytest.mark.parametrize("opset", [21, 23])
@pytest.mark.parametrize("case", _SHAPELESS, ids=[c[0] for c in _SHAPELESS])
def test_to_onnx_shapeless_rows_take_any_size(tmp_path, case, opset):
    onnx = pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    name, fun, calls = case
    # The case's graph has its row (the id up to a variant suffix), as kiln.export_to_dot names it.
    row = name.removesuffix("Inputs").removesuffix("Mask").removesuffix("Sinks")
    dot = io.StringIO()
    outs = fun(*[kiln.array(a) for a in calls[0]])
    kiln.export_to_dot(dot, *(outs if isinstance(outs, (tuple, list)) else [outs]))
    assert row in dot.getvalue(), (row, dot.getvalue()[:2000])
    src = str(tmp_path / "f.mlxfn")
    kiln.export_function(src, fun, *[kiln.array(a) for a in calls[0]], shapeless=True)
    out = str(tmp_path / "f.onnx")
    kiln.to_onnx(src, out, opset=opset)
    model = onnx.load(out)
    onnx.checker.check_model(model, full_check=True)
    for v in list(model.graph.input) + list(model.graph.output):
        assert all(not d.dim_value for d in v.type.tensor_type.shape.dim), v
    sess = ort.InferenceSession(out, providers=["CPUExecutionProvider"])
    fn = kiln.import_function(src)
    for args in calls:
        got = sess.run(None, {f"arg{k}": a for k, a in enumerate(args)})
        want = fn(*[kiln.array(a) for a in args])
        assert len(got) == len(want)
        for g, w in zip(got, want):
            w = np.array(w)
            assert g.shape == w.shape and g.dtype == w.dtype, (g.shape, w.shape, g.dtype, w.dtype)
            np.testing.assert_allclose(g, w, rtol=2e-5, atol=2e-5)


def test_to_onnx_shapeless_refusals_say_why(tmp_path):
    # Slice has no shape rule in MLX's shapeless replay: the file itself leaves its output open.
    src = str(tmp_path / "slice.mlxfn")
    kiln.export_function(src, lambda x: x[1:3], kiln.array(np.zeros((4, 2), np.float32)), shapeless=True)
    with pytest.raises(RuntimeError, match="Slice cannot be lowered in a shapeless function: MLX has no shape rule"):
        kiln.to_onnx(src, str(tmp_path / "slice.onnx"))
    src = str(tmp_path / "hadamard.mlxfn")
    kiln.export_function(src, lambda x: kiln.hadamard_transform(x), kiln.array(np.ones((2, 8), np.float32)),
                         shapeless=True)
    with pytest.raises(RuntimeError, match="Hadamard cannot be lowered in a shapeless function: its"):
        kiln.to_onnx(src, str(tmp_path / "hadamard.onnx"))
    assert not (tmp_path / "hadamard.onnx").exists()


def test_to_onnx_matmul_nbits_option(tmp_path):
    onnx = pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    rng = np.random.default_rng(11)
    w, s, b = kiln.quantize(kiln.array(rng.standard_normal((48, 256)).astype(np.float32)), group_size=64, bits=4)
    w8, s8, b8 = kiln.quantize(kiln.array(rng.standard_normal((16, 256)).astype(np.float32)), group_size=64, bits=8)
    kiln.eval(w, s, b, w8, s8, b8)
    x = rng.standard_normal((3, 5, 256)).astype(np.float32)

    def f(a):
        y = kiln.quantized_matmul(a, w, s, b, transpose=True, group_size=64, bits=4)
        # 8 bits: not MatMulNBits (the option is for 4-bit weights), DequantizeLinear as without it.
        return y, kiln.quantized_matmul(a, w8, s8, b8, transpose=True, group_size=64, bits=8)

    src = export(tmp_path, f, kiln.array(x))
    want = [np.array(o) for o in kiln.import_function(src)(kiln.array(x))]
    for nbits in (False, True):
        out = str(tmp_path / f"nbits{int(nbits)}.onnx")
        kiln.to_onnx(src, out, matmul_nbits=nbits)
        model = onnx.load(out)
        onnx.checker.check_model(model, full_check=True)
        ops = [(n.domain, n.op_type) for n in model.graph.node]
        assert (("com.microsoft", "MatMulNBits") in ops) == nbits
        assert ops.count(("", "DequantizeLinear")) == (1 if nbits else 2)
        assert ("com.microsoft" in {i.domain for i in model.opset_import}) == nbits
        got = ort.InferenceSession(out, providers=["CPUExecutionProvider"]).run(None, {"arg0": x})
        for g, r in zip(got, want):
            np.testing.assert_allclose(g, r, rtol=1e-4, atol=1e-4)
