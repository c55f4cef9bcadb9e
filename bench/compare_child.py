"""The child processes of bench/compare.py; they run inside the bench venv (MLX, mlx-lm, NumPy, gguf, kiln).

    python compare_child.py export  ARGS_JSON   MLX builds the case, writes fn.mlxfn, inputs, weights, reference outputs
    python compare_child.py mlx     ARGS_JSON   MLX rebuilds the case from the saved weights and times its eager calls
    python compare_child.py kiln    ARGS_JSON   kiln imports fn.mlxfn, times its calls, checks its outputs against MLX's
    python compare_child.py mlxfile ARGS_JSON   MLX imports fn.mlxfn and calls it once (MLX's import and cold start)
    python compare_child.py gguf    ARGS_JSON   writes a llama GGUF file of the case's shape with random weights

ARGS_JSON: {"case": name, "p": params, "dir": case directory, "min_time": s, "max_calls": n}. The last line a
child prints is "@@RESULT@@" followed by one JSON object. One engine per process, so that the import time and
the peak RSS (the parent reads it with wait4) are that engine's alone.
"""

import time

T_START = time.time()  # as early as possible: the interpreter's own start-up is part of "process start to ready"

import json  # noqa: E402
import os  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402

RESULT_TAG = "@@RESULT@@"


def emit(obj):
    sys.stdout.flush()
    print(RESULT_TAG + json.dumps(obj), flush=True)


# ---------------------------------------------------------------------------------------------------------
# The cases, in MLX. Each returns a dict:
#   fn(*arrays) -> list of arrays   the function (exported, and called eagerly by MLX)
#   inputs() -> list of arrays      fresh inputs (export mode only; the run modes load the saved ones)
#   module                          an nn.Module whose weights are saved/loaded, or None
#   min_bytes / flops, bound        what bounds the case: "bandwidth" (bytes it must read and write at least)
#                                   or "gemm" (its multiply-add flops)
#   tol                             max |kiln - MLX| / max |MLX| allowed, per output
#   expect                          primitive names the exported file must contain
# ---------------------------------------------------------------------------------------------------------


def ewise_chain(x, y, mx):
    """32 element-wise ops (unary and binary, with scalars), the kind MLX runs one kernel each when eager."""
    a = x * 1.5 + y  # 2
    b = mx.sin(a)  # 3
    c = mx.exp(-mx.abs(b))  # 6
    d = c * y - x  # 8
    e = mx.tanh(d)  # 9
    f = mx.sqrt(mx.abs(e) + 1.0)  # 12
    g = mx.log(f) * 0.5  # 14
    h = mx.maximum(g, d)  # 15
    i = mx.cos(h) + mx.square(x)  # 18
    j = mx.sigmoid(i)  # 19
    k = j * (1.0 - j)  # 21
    m = mx.where(x > 0, k, -k)  # 24 (the comparison, the negation and the select)
    n = mx.minimum(m, 0.25) + mx.erf(y)  # 27
    o = mx.rsqrt(mx.square(n) + 1.0)  # 30
    return o * a - b  # 32


EWISE_OPS = 32


class ArgCache:
    """A KV cache passed in and out as plain arrays (so the exported function is a pure function):
    update_and_fetch concatenates the new keys/values after the given ones and remembers the new ones."""

    def __init__(self, mx, k=None, v=None):
        self.mx, self.k, self.v = mx, k, v
        self.offset = 0 if k is None else k.shape[2]
        self.new = None

    def update_and_fetch(self, keys, values):
        self.new = (keys, values)
        if self.k is None:
            return keys, values
        return self.mx.concatenate([self.k, keys], axis=2), self.mx.concatenate([self.v, values], axis=2)


def quant_predicate(_path, m):
    w = getattr(m, "weight", None)
    return hasattr(m, "to_quantized") and w is not None and w.shape[-1] % 64 == 0


def nbytes_tree(tree):
    from mlx.utils import tree_flatten

    return sum(v.nbytes for _, v in tree_flatten(tree))


def build_lm(p, mx, nn):
    """An mlx-lm model with random weights: llama (float32 / bfloat16 / 4-bit) or mixtral (4-bit)."""
    arch = p["arch"]
    if arch == "llama":
        from mlx_lm.models import llama as lm

        args = lm.ModelArgs(model_type="llama", hidden_size=p["hidden"], num_hidden_layers=p["layers"],
                            intermediate_size=p["intermediate"], num_attention_heads=p["heads"],
                            num_key_value_heads=p["kv_heads"], head_dim=p["head_dim"], rms_norm_eps=1e-5,
                            vocab_size=p["vocab"], rope_theta=10000.0, tie_word_embeddings=False)
    else:
        from mlx_lm.models import mixtral as lm

        args = lm.ModelArgs(model_type="mixtral", vocab_size=p["vocab"], hidden_size=p["hidden"],
                            intermediate_size=p["intermediate"], num_hidden_layers=p["layers"],
                            num_attention_heads=p["heads"], num_key_value_heads=p["kv_heads"],
                            num_local_experts=p["experts"], num_experts_per_tok=p["top_k"], rope_theta=1e6)
    model = lm.Model(args)
    if p["dtype"] == "bfloat16":
        model.set_dtype(mx.bfloat16)
    if p.get("quant"):
        nn.quantize(model, group_size=p["quant"]["group_size"], bits=p["quant"]["bits"], class_predicate=quant_predicate)
    return model


def lm_case(p, mx, nn):
    model = build_lm(p, mx, nn)
    L, kvh, hd = p["layers"], p["kv_heads"], p["head_dim"]
    act = mx.bfloat16 if p["dtype"] == "bfloat16" else mx.float32
    mode = p["mode"]
    ctx = p.get("ctx", 0)
    prompt = p.get("prompt", 1)

    def fn(tokens, *kv):
        caches = [ArgCache(mx, kv[2 * i], kv[2 * i + 1]) if kv else ArgCache(mx) for i in range(L)]
        if mode == "decode":
            logits = model(tokens, cache=caches)
        else:  # prefill: the logits of the last position (what generation needs), and the filled cache
            h = model.model(tokens, cache=caches)
            logits = model.lm_head(h[:, -1:, :])
        outs = [logits]
        for c in caches:
            outs += [c.new[0], c.new[1]]
        return outs

    def inputs():
        n = 1 if mode == "decode" else prompt
        arrs = [mx.random.randint(0, p["vocab"], (1, n)).astype(mx.int32)]
        if mode == "decode":
            for _ in range(L):
                arrs.append((mx.random.normal((1, kvh, ctx, hd)) * 0.5).astype(act))
                arrs.append((mx.random.normal((1, kvh, ctx, hd)) * 0.5).astype(act))
        return arrs

    # What a call must read at least. Decode: every weight once (one embedding row; for a mixture of experts
    # only the top-k experts of each layer) and the KV cache. Prefill: bounded by its matrix products.
    from mlx.utils import tree_flatten

    params = dict(tree_flatten(model.parameters()))
    emb = sum(v.nbytes for k, v in params.items() if k.startswith("model.embed_tokens."))
    expert = sum(v.nbytes for k, v in params.items() if ".switch_mlp." in k)
    total = sum(v.nbytes for v in params.values())
    weight_bytes = total - emb + emb // p["vocab"]
    if expert:
        weight_bytes -= expert - expert * p["top_k"] // p["experts"]
    esize = 2 if p["dtype"] == "bfloat16" else 4
    kv_bytes = 2 * L * kvh * ctx * hd * esize
    n_params = sum(v.size for k, v in params.items())
    d, inter = p["hidden"], p["intermediate"]
    attn_params = d * p["heads"] * hd * 2 + d * kvh * hd * 2
    mlp_params = 3 * d * inter * (p["top_k"] if expert else 1)
    flops = 2 * prompt * L * (attn_params + mlp_params) + 2 * d * p["vocab"]
    flops += 2 * 2 * L * p["heads"] * hd * prompt * (prompt + 1) // 2  # causal attention, QK^T and AV
    meta = {"weight_bytes": weight_bytes, "kv_bytes": kv_bytes, "params_stored": n_params}
    if mode == "decode":
        meta.update(bound="bandwidth", min_bytes=weight_bytes + kv_bytes)
    else:
        meta.update(bound="gemm", flops=flops)
    tol = {"float32": 2e-3, "bfloat16": 5e-2}[p["dtype"]]
    expect = ["GatherQMM"] if p["arch"] == "mixtral" else (["QuantizedMatmul"] if p.get("quant") else [])
    return dict(fn=fn, inputs=inputs, module=model, tol=tol, expect=expect, **meta)


def build_case(name, p, mx, nn):
    kind = p["kind"]
    if kind == "ewise_chain":
        n = p["n"]
        return dict(fn=lambda x, y: [ewise_chain(x, y, mx)],
                    inputs=lambda: [mx.random.uniform(-2, 2, (n,)), mx.random.uniform(-2, 2, (n,))],
                    module=None, bound="bandwidth", min_bytes=3 * 4 * n, tol=1e-4, expect=[], ops=EWISE_OPS)
    if kind in ("softmax", "logsumexp", "layernorm", "rmsnorm"):
        r, c = p["rows"], p["cols"]
        x = lambda: [mx.random.normal((r, c))]  # noqa: E731
        if kind == "softmax":
            return dict(fn=lambda a: [mx.softmax(a, axis=-1)], inputs=x, module=None, bound="bandwidth",
                        min_bytes=2 * 4 * r * c, tol=1e-5, expect=[])
        if kind == "logsumexp":
            return dict(fn=lambda a: [mx.logsumexp(a, axis=-1)], inputs=x, module=None, bound="bandwidth",
                        min_bytes=4 * r * c + 4 * r, tol=1e-5, expect=[])
        if kind == "layernorm":
            return dict(fn=lambda a, w, b: [mx.fast.layer_norm(a, w, b, 1e-5)],
                        inputs=lambda: x() + [mx.random.uniform(0.5, 1.5, (c,)), mx.random.normal((c,))],
                        module=None, bound="bandwidth", min_bytes=2 * 4 * r * c, tol=1e-4, expect=[])
        return dict(fn=lambda a, w: [mx.fast.rms_norm(a, w, 1e-5)],
                    inputs=lambda: x() + [mx.random.uniform(0.5, 1.5, (c,))],
                    module=None, bound="bandwidth", min_bytes=2 * 4 * r * c, tol=1e-4, expect=[])
    if kind == "decoder":
        B, T, D, H, M, L = p["batch"], p["seq"], p["dims"], p["heads"], p["mlp"], p["layers"]
        model = nn.TransformerEncoder(num_layers=L, dims=D, num_heads=H, mlp_dims=M, norm_first=True)

        def fn(x):
            mask = nn.MultiHeadAttention.create_additive_causal_mask(T).astype(x.dtype)
            return [model(x, mask)]

        flops = L * (2 * B * T * (4 * D * D + 2 * D * M) + 2 * 2 * B * T * T * D)
        return dict(fn=fn, inputs=lambda: [mx.random.normal((B, T, D))], module=model, bound="gemm",
                    flops=flops, tol=1e-3, expect=[])
    if kind == "mlp":
        dims, B = p["dims"], p["batch"]
        layers = []
        for i in range(len(dims) - 1):
            layers.append(nn.Linear(dims[i], dims[i + 1]))
            if i < len(dims) - 2:
                layers.append(nn.GELU())
        model = nn.Sequential(*layers)
        flops = sum(2 * B * dims[i] * dims[i + 1] for i in range(len(dims) - 1))
        return dict(fn=lambda x: [model(x)], inputs=lambda: [mx.random.normal((B, dims[0]))], module=model,
                    bound="gemm", flops=flops, tol=1e-3, expect=[])
    if kind == "convnet":
        B, S, C = p["batch"], p["size"], p["channels"]

        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.c1 = nn.Conv2d(3, C[0], 3, padding=1)
                self.c2 = nn.Conv2d(C[0], C[1], 3, stride=2, padding=1)
                self.c3 = nn.Conv2d(C[1], C[2], 3, stride=2, padding=1)
                self.fc = nn.Linear(C[2], 10)

            def __call__(self, x):
                x = nn.relu(self.c1(x))
                x = nn.relu(self.c2(x))
                x = nn.relu(self.c3(x))
                return self.fc(mx.mean(x, axis=(1, 2)))

        model = Net()
        flops = 2 * B * 9 * (S * S * 3 * C[0] + (S // 2) ** 2 * C[0] * C[1] + (S // 4) ** 2 * C[1] * C[2])
        return dict(fn=lambda x: [model(x)], inputs=lambda: [mx.random.normal((B, S, S, 3))], module=model,
                    bound="gemm", flops=flops, tol=1e-3, expect=[])
    if kind == "lm":
        return lm_case(p, mx, nn)
    raise SystemExit(f"compare_child: unknown case kind {kind!r}")


# ---------------------------------------------------------------------------------------------------------
# Timing
# ---------------------------------------------------------------------------------------------------------


def time_calls(call, min_time, max_calls):
    """One warm-up call (kiln reads an imported file's constants on the first call; MLX warms its caches),
    then calls until min_time seconds have been spent (at least 3; 1 when one call takes over 2 s), at most
    max_calls. Returns (warm-up seconds, list of call seconds)."""
    t = time.perf_counter()
    call()
    first = time.perf_counter() - t
    min_calls = 1 if first > 2.0 else 3
    times = []
    while len(times) < max_calls and (len(times) < min_calls or sum(times) < min_time):
        t = time.perf_counter()
        call()
        times.append(time.perf_counter() - t)
    return first, times


def spawn_time():
    return float(os.environ.get("KILN_BENCH_SPAWN", T_START))


def rel_error(got, want):
    import numpy as np

    got = np.asarray(got, dtype=np.float64)
    want = np.asarray(want, dtype=np.float64)
    if got.shape != want.shape:
        return float("inf"), f"shape {got.shape} != {want.shape}"
    fin = np.isfinite(want)
    if not np.array_equal(np.isfinite(got), fin):
        return float("inf"), "non-finite values where MLX has finite ones (or the reverse)"
    if not np.all(fin):
        got, want = got[fin], want[fin]
    scale = float(np.max(np.abs(want))) if want.size else 0.0
    err = float(np.max(np.abs(got - want))) if want.size else 0.0
    return (err / scale if scale > 0 else err), ""


def case_paths(d):
    return {k: os.path.join(d, v) for k, v in dict(fn="fn.mlxfn", inputs="inputs.safetensors",
                                                    weights="weights.safetensors", ref="ref.safetensors",
                                                    meta="meta.json").items()}


def mode_export(a):
    import mlx.core as mx
    import mlx.nn as nn

    d = a["dir"]
    os.makedirs(d, exist_ok=True)
    paths = case_paths(d)
    mx.random.seed(a.get("seed", 0))
    c = build_case(a["case"], a["p"], mx, nn)
    if c["module"] is not None:
        mx.eval(c["module"].parameters())
        c["module"].save_weights(paths["weights"])
    inputs = c["inputs"]()
    mx.eval(inputs)
    t = time.perf_counter()
    mx.export_function(paths["fn"], c["fn"], *inputs)
    export_s = time.perf_counter() - t
    outs = c["fn"](*inputs)
    mx.eval(outs)
    mx.save_safetensors(paths["inputs"], {f"a{i}": v for i, v in enumerate(inputs)})
    mx.save_safetensors(paths["ref"], {f"o{i}": v for i, v in enumerate(outs)})
    with open(paths["fn"], "rb") as f:
        blob = f.read()
    missing = [e for e in c["expect"] if e.encode() not in blob]
    meta = {k: c[k] for k in ("bound", "min_bytes", "flops", "tol", "expect", "ops", "weight_bytes", "kv_bytes",
                              "params_stored") if k in c}
    meta.update(key=a["key"], n_inputs=len(inputs), n_outputs=len(outs), export_s=export_s,
                file_bytes=len(blob), missing_primitives=missing,
                input_shapes=[list(x.shape) for x in inputs], input_dtypes=[str(x.dtype) for x in inputs],
                output_shapes=[list(x.shape) for x in outs])
    with open(paths["meta"], "w") as f:
        json.dump(meta, f, indent=1)
    emit(meta)


def mode_mlx(a):
    t0 = time.time()
    import mlx.core as mx
    import mlx.nn as nn

    import_s = time.time() - t0
    lm_import_s = None
    if a["p"]["kind"] == "lm":
        t = time.time()
        import mlx_lm.models.llama  # noqa: F401  (the mlx_lm package imports transformers)
        lm_import_s = time.time() - t
    paths = case_paths(a["dir"])
    t1 = time.time()
    c = build_case(a["case"], a["p"], mx, nn)
    if c["module"] is not None:
        c["module"].load_weights(paths["weights"])
        mx.eval(c["module"].parameters())
    saved = mx.load(paths["inputs"])
    inputs = [saved[f"a{i}"] for i in range(len(saved))]
    mx.eval(inputs)
    build_s = time.time() - t1
    ready = time.time()
    fn = c["fn"]
    last = {}

    def call():
        outs = fn(*inputs)
        mx.eval(outs)
        last["o"] = outs

    first, times = time_calls(call, a["min_time"], a["max_calls"])
    ref = mx.load(paths["ref"])
    errs = [rel_error(o.astype(mx.float32), ref[f"o{i}"].astype(mx.float32))[0] for i, o in enumerate(last["o"])]
    emit(dict(engine="mlx", interp_s=T_START - spawn_time(), import_s=import_s, lm_import_s=lm_import_s,
              build_s=build_s,
              ready_s=ready - spawn_time(), first_call_s=first, calls_s=times, median_s=statistics.median(times),
              self_check_err=max(errs) if errs else 0.0, mlx_version=mx.__version__))


def mode_kiln(a):
    t0 = time.time()
    import kiln

    import_s = time.time() - t0
    paths = case_paths(a["dir"])
    t1 = time.time()
    fn = kiln.import_function(paths["fn"])
    import_fn_s = time.time() - t1
    saved = kiln.load(paths["inputs"])
    inputs = [saved[f"a{i}"] for i in range(len(saved))]
    kiln.eval(*inputs)
    ready = time.time()
    last = {}

    def call():
        last["o"] = fn(*inputs)  # evaluated inside the call

    first, times = time_calls(call, a["min_time"], a["max_calls"])
    import numpy as np  # after the timing: kiln itself does not need NumPy, and its import is not kiln's start-up

    ref = kiln.load(paths["ref"])
    errs, notes = [], []
    for i, o in enumerate(last["o"]):
        want = ref[f"o{i}"]
        e, note = rel_error(np.asarray(o.astype(kiln.float32)), np.asarray(want.astype(kiln.float32)))
        errs.append(e)
        if note:
            notes.append(f"output {i}: {note}")
    if len(last["o"]) != len(ref):
        notes.append(f"{len(last['o'])} outputs, MLX gave {len(ref)}")
        errs.append(float("inf"))
    prims = {}
    try:
        for fnc in fn.info.get("functions", []):
            for name, n in fnc.get("primitive_histogram", {}).items():
                prims[name] = prims.get(name, 0) + n
    except Exception as e:  # the file's structure is informational only
        notes.append(f"info: {e}")
    emit(dict(engine="kiln", interp_s=T_START - spawn_time(), import_s=import_s, import_function_s=import_fn_s,
              ready_s=ready - spawn_time(), first_call_s=first, cold_s=ready - spawn_time() + first, calls_s=times, median_s=statistics.median(times),
              max_rel_err=max(errs) if errs else 0.0, errs=errs, notes=notes, primitives=prims,
              kiln_version=getattr(kiln, "__version__", "?")))


def mode_mlxfile(a):
    """MLX runs the exported file as kiln does: mx.import_function, then one evaluated call (its cold start)."""
    t0 = time.time()
    import mlx.core as mx

    import_s = time.time() - t0
    paths = case_paths(a["dir"])
    t1 = time.time()
    fn = mx.import_function(paths["fn"])
    import_fn_s = time.time() - t1
    saved = mx.load(paths["inputs"])
    inputs = [saved[f"a{i}"] for i in range(len(saved))]
    mx.eval(inputs)
    ready = time.time()
    outs = fn(*inputs)
    mx.eval(outs)
    first = time.time() - ready
    emit(dict(engine="mlxfile", interp_s=T_START - spawn_time(), import_s=import_s, import_function_s=import_fn_s,
              ready_s=ready - spawn_time(), first_call_s=first, cold_s=ready - spawn_time() + first,
              median_s=first, mlx_version=mx.__version__))


# ---------------------------------------------------------------------------------------------------------
# GGUF files for llama.cpp: the same llama shape, random weights
# ---------------------------------------------------------------------------------------------------------


def mode_gguf(a):
    import numpy as np
    import gguf

    p, path, qtype = a["p"], a["path"], a["type"]
    rng = np.random.default_rng(0)
    d, L, inter, H, KV, hd, V = (p["hidden"], p["layers"], p["intermediate"], p["heads"], p["kv_heads"],
                                 p["head_dim"], p["vocab"])
    w = gguf.GGUFWriter(path + ".tmp", "llama")
    w.add_context_length(max(2048, p.get("ctx", 0) + 64))
    w.add_embedding_length(d)
    w.add_block_count(L)
    w.add_feed_forward_length(inter)
    w.add_head_count(H)
    w.add_head_count_kv(KV)
    w.add_key_length(hd)
    w.add_value_length(hd)
    w.add_rope_dimension_count(hd)
    w.add_rope_freq_base(10000.0)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_vocab_size(V)
    ftype = {"F32": gguf.LlamaFileType.ALL_F32, "BF16": gguf.LlamaFileType.MOSTLY_BF16,
             "Q4_0": gguf.LlamaFileType.MOSTLY_Q4_0}[qtype]
    w.add_file_type(ftype)
    # A SentencePiece-style vocabulary: <unk> <s> </s>, the 256 byte tokens, then placeholders.
    toks = ["<unk>", "<s>", "</s>"] + [f"<0x{b:02X}>" for b in range(256)]
    types = [gguf.TokenType.UNKNOWN, gguf.TokenType.CONTROL, gguf.TokenType.CONTROL] + [gguf.TokenType.BYTE] * 256
    toks += [f"\u2581t{i}" for i in range(V - len(toks))]
    types += [gguf.TokenType.NORMAL] * (V - len(types))
    w.add_tokenizer_model("llama")
    w.add_token_list(toks)
    w.add_token_scores([-float(i) for i in range(V)])
    w.add_token_types(types)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    w.add_unk_token_id(0)

    def mat(rows, cols):
        return (rng.standard_normal((rows, cols), dtype=np.float32) * (1.0 / np.sqrt(cols))).astype(np.float32)

    def add(name, x):
        if x.ndim == 1 or qtype == "F32":
            w.add_tensor(name, x)
        elif qtype == "BF16":
            q = gguf.quants.quantize(x, gguf.GGMLQuantizationType.BF16)
            w.add_tensor(name, q, raw_dtype=gguf.GGMLQuantizationType.BF16)
        else:
            q = gguf.quants.quantize(x, gguf.GGMLQuantizationType.Q4_0)
            w.add_tensor(name, q, raw_dtype=gguf.GGMLQuantizationType.Q4_0)

    add("token_embd.weight", mat(V, d))
    for i in range(L):
        add(f"blk.{i}.attn_norm.weight", np.ones(d, np.float32))
        add(f"blk.{i}.attn_q.weight", mat(H * hd, d))
        add(f"blk.{i}.attn_k.weight", mat(KV * hd, d))
        add(f"blk.{i}.attn_v.weight", mat(KV * hd, d))
        add(f"blk.{i}.attn_output.weight", mat(d, H * hd))
        add(f"blk.{i}.ffn_norm.weight", np.ones(d, np.float32))
        add(f"blk.{i}.ffn_gate.weight", mat(inter, d))
        add(f"blk.{i}.ffn_up.weight", mat(inter, d))
        add(f"blk.{i}.ffn_down.weight", mat(d, inter))
    add("output_norm.weight", np.ones(d, np.float32))
    add("output.weight", mat(V, d))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    os.replace(path + ".tmp", path)
    emit(dict(path=path, type=qtype, bytes=os.path.getsize(path), gguf_version=getattr(gguf, "__version__", "?")))


def main():
    mode, a = sys.argv[1], json.loads(sys.argv[2])
    {"export": mode_export, "mlx": mode_mlx, "kiln": mode_kiln, "mlxfile": mode_mlxfile, "gguf": mode_gguf}[mode](a)


if __name__ == "__main__":
    main()
