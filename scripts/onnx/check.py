#!/usr/bin/env python3
"""ONNX export checked by ONNX Runtime (scripts/onnx/run.sh runs it; README "kiln to-onnx").

Every case of the given manifests is converted with `kiln to-onnx` (each stored function), checked
with onnx.checker (full_check), run in ONNX Runtime on the case's .npy inputs and compared with the
expected outputs at the case's tolerances. Refused conversions (exit status 3) are listed with their
reason and compared with the expectations table (case -> reason substring): a refusal missing from
the table, or a table entry whose case is not refused, fails. Prints
`onnx: N passed, M failed, R refused`.
"""
import argparse
import json
import os
import subprocess
import sys

import numpy as np
import onnx
import onnxruntime as ort

BF16 = onnx.TensorProto.BFLOAT16


def load_npy(path, dtype):
    a = np.load(path, allow_pickle=False)
    if dtype == "bfloat16":
        # MLX writes bfloat16 as '<V2': the raw 16 bits. As float32 (exact) for ONNX Runtime.
        bits = np.frombuffer(a.tobytes(), dtype=np.uint16).reshape(a.shape).astype(np.uint32) << 16
        return bits.view(np.float32)
    return a


def float32_boundary(model):
    """bfloat16 graph inputs and outputs as float32 with a Cast (exact both ways): numpy has no bfloat16."""
    g = model.graph
    nodes = []
    for inp in g.input:
        if inp.type.tensor_type.elem_type == BF16:
            inner = inp.name
            inp.name = inner + "__f32"
            inp.type.tensor_type.elem_type = onnx.TensorProto.FLOAT
            nodes.append(onnx.helper.make_node("Cast", [inp.name], [inner], to=BF16))
    tail = []
    for out in g.output:
        if out.type.tensor_type.elem_type == BF16:
            inner = out.name
            out.name = inner + "__f32"
            out.type.tensor_type.elem_type = onnx.TensorProto.FLOAT
            tail.append(onnx.helper.make_node("Cast", [inner], [out.name], to=onnx.TensorProto.FLOAT))
    if nodes or tail:
        all_nodes = nodes + list(g.node) + tail
        del g.node[:]
        g.node.extend(all_nodes)
    return model


def compare(got, want, case, k):
    """None when equal at the case's tolerances, else a description."""
    if got.shape != want.shape:
        return f"output {k}: shape {got.shape}, expected {want.shape}"
    if want.dtype == np.bool_ or got.dtype == np.bool_:
        got, want = got.astype(np.bool_), want.astype(np.bool_)
    if k in case.get("abs_outputs", []):
        got, want = np.abs(got), np.abs(want)
    if case.get("exact"):
        if got.dtype != want.dtype:
            return f"output {k}: dtype {got.dtype}, expected {want.dtype}"
        if got.tobytes() == want.tobytes():
            return None
        if np.issubdtype(want.dtype, np.floating) and np.array_equal(got, want, equal_nan=True):
            return None
        bad = np.flatnonzero(got.reshape(-1) != want.reshape(-1))
        return f"output {k}: not bit-exact ({bad.size} of {want.size} differ, first at {bad[:3].tolist()})"
    if np.issubdtype(want.dtype, np.complexfloating) or np.issubdtype(want.dtype, np.floating) or \
            np.issubdtype(got.dtype, np.floating):
        g64 = got.astype(np.complex128 if np.iscomplexobj(got) else np.float64)
        w64 = want.astype(np.complex128 if np.iscomplexobj(want) else np.float64)
        if np.allclose(g64, w64, rtol=case["rtol"], atol=case["atol"], equal_nan=True):
            return None
        err = np.abs(g64 - w64)
        err[np.isnan(err)] = np.inf
        i = int(np.argmax(err))
        return f"output {k}: max error {err.reshape(-1)[i]:.3g} at {i} (got {g64.reshape(-1)[i]}, " \
               f"expected {w64.reshape(-1)[i]})"
    if np.array_equal(got, want):
        return None
    return f"output {k}: values differ ({int(np.sum(got != want))} of {want.size})"


def convert(kiln, mlxfn, out, function, opset, extra=()):
    cmd = [kiln, "to-onnx", mlxfn, out, "--function", str(function), *extra]
    if opset:
        cmd += ["--opset", str(opset)]
    p = subprocess.run(cmd, capture_output=True, text=True)
    return p.returncode, (p.stderr or p.stdout).strip()


def kiln_outputs(kiln, mlxfn, call, path, work):
    """The outputs `kiln run` computes for a call (the documented semantics), as numpy arrays."""
    cmd = [kiln, "run", mlxfn, "--out", work]
    for a in call["args"]:
        cmd += ["--arg", path(a["file"])]
    for kw, a in call.get("kwargs", {}).items():
        cmd += ["--kwarg", f"{kw}={path(a['file'])}"]
    subprocess.run(cmd, check=True, capture_output=True)
    return [np.load(os.path.join(work, f"out{k}.npy")) for k in range(len(call["outputs"]))]


def primitives_of(kiln, mlxfn):
    """The primitives a file's functions use (`kiln inspect --json`)."""
    p = subprocess.run([kiln, "inspect", mlxfn, "--json"], capture_output=True, text=True, check=True)
    return {name for f in json.loads(p.stdout)["functions"] for name in f["primitive_histogram"]}


def run_case(kiln, root, case, work, opset, kiln_reference=False, extra=()):
    """('passed'|'failed'|'refused', detail). With kiln_reference, the expected outputs are kiln's own
    (`kiln run`), for cases whose golden outputs are a known bug of the writing MLX's CPU backend."""
    def path(f):
        p = os.path.join(root, f)
        return p if os.path.exists(p) else os.path.join(root, os.path.dirname(case["file"]), f)

    mlxfn = os.path.join(root, case["file"])
    os.makedirs(work, exist_ok=True)
    models = []  # (session, [input names and dtypes], [output names])
    for function in range(1, 1000):
        out = os.path.join(work, f"f{function}.onnx")
        rc, msg = convert(kiln, mlxfn, out, function, opset, extra)
        if rc == 3:
            return "refused", msg.replace("kiln to-onnx: refused: ", "")
        if rc != 0:
            if "does not exist" in msg and function > 1:
                break
            return "failed", f"kiln to-onnx (function {function}): {msg}"
        try:
            onnx.checker.check_model(out, full_check=True)
        except Exception as e:  # noqa: BLE001 - every checker error is a failure of the case
            return "failed", f"onnx.checker (function {function}): {str(e).splitlines()[0]}"
        model = float32_boundary(onnx.load(out))
        if case.get("shapeless"):
            # A shapeless function's graph fixes no size of its inputs and outputs.
            for v in list(model.graph.input) + list(model.graph.output):
                fixed = [d.dim_value for d in v.type.tensor_type.shape.dim if not d.dim_param]
                if fixed:
                    return "failed", f"function {function}: {v.name} of a shapeless function has fixed dims {fixed}"
        try:
            opts = ort.SessionOptions()
            opts.intra_op_num_threads = 1
            opts.log_severity_level = 3
            sess = ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])
        except Exception as e:  # noqa: BLE001
            return "failed", f"onnxruntime session (function {function}): {str(e).splitlines()[0][:300]}"
        models.append((sess, model))
    for ci, call in enumerate(case["calls"]):
        feeds = {}
        for k, a in enumerate(call["args"]):
            feeds[f"arg{k}"] = load_npy(path(a["file"]), a["dtype"])
        for kw, a in call.get("kwargs", {}).items():
            feeds[kw] = load_npy(path(a["file"]), a["dtype"])
        sess = None
        for s, _ in models:
            names = [i.name.replace("__f32", "") for i in s.get_inputs()]
            if sorted(names) != sorted(feeds):
                continue
            def fits(dims, shape):  # symbolic dims (shapeless functions) take any size
                return len(dims) == len(shape) and all(not isinstance(d, int) or d == n for d, n in zip(dims, shape))
            ok = all(fits(list(i.shape), feeds[i.name.replace("__f32", "")].shape) for i in s.get_inputs())
            if ok:
                sess = s
                break
        if sess is None:
            return "failed", f"call {ci}: no converted function has this signature"
        feed = {i.name: feeds[i.name.replace("__f32", "")] for i in sess.get_inputs()}
        try:
            got = sess.run(None, feed)
        except Exception as e:  # noqa: BLE001
            return "failed", f"call {ci}: onnxruntime: {str(e).splitlines()[0][:300]}"
        if len(got) != len(call["outputs"]):
            return "failed", f"call {ci}: {len(got)} outputs, expected {len(call['outputs'])}"
        reference = kiln_outputs(kiln, mlxfn, call, path, os.path.join(work, f"kiln{ci}")) if kiln_reference else None
        for k, o in enumerate(call["outputs"]):
            want = reference[k] if reference else load_npy(path(o["file"]), o["dtype"])
            d = compare(np.asarray(got[k]), want, case, k)
            if d:
                return "failed", f"call {ci}: {d}"
    return "passed", ""


def uses_op(work, op):
    """Whether a converted function in `work` has a node of type `op`."""
    for name in sorted(os.listdir(work)):
        if name.endswith(".onnx") and any(n.op_type == op for n in onnx.load(os.path.join(work, name)).graph.node):
            return True
    return False


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kiln", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--expect", required=True)
    ap.add_argument("--opset", type=int, default=0)
    ap.add_argument("--only", default="", help="run only cases whose key contains this")
    ap.add_argument("--primitives", default="",
                    help="run only cases whose file uses one of these primitives (comma-separated row names)")
    ap.add_argument("--matmul-nbits", action="store_true",
                    help="convert with --matmul-nbits (affine 4-bit QuantizedMatmul as com.microsoft.MatMulNBits)")
    ap.add_argument("--expect-op", default="",
                    help="fail unless some passing case's converted graph has a node of this op type")
    ap.add_argument("manifests", nargs="+", help="LABEL=path/to/manifest.json")
    a = ap.parse_args()
    with open(a.expect) as f:
        table = json.load(f)
    expected = table["refusals"]
    wanted = set(p for p in a.primitives.split(",") if p)
    # Runs at different opsets (parallel ctests) convert into different directories.
    work = os.path.join(a.work, f"opset{a.opset}") if a.opset else a.work
    extra = ["--matmul-nbits"] if a.matmul_nbits else []
    if a.matmul_nbits:
        work = os.path.join(work, "nbits")
    kiln_ref = table.get("kiln_reference", {})
    results = {}
    with_op = []  # passing cases whose graphs have a node of --expect-op
    for spec in a.manifests:
        label, mpath = spec.split("=", 1)
        root = os.path.dirname(os.path.abspath(mpath))
        with open(mpath) as f:
            manifest = json.load(f)
        for case in manifest["cases"]:
            key = case["name"] if not label else f"{label}/{case['name']}"
            if a.only and a.only not in key:
                continue
            if case.get("runs") is False:
                continue
            if wanted and not wanted & primitives_of(a.kiln, os.path.join(root, case["file"])):
                continue
            try:
                results[key] = run_case(a.kiln, root, case, os.path.join(work, key), a.opset, key in kiln_ref, extra)
                if a.expect_op and results[key][0] == "passed" and uses_op(os.path.join(work, key), a.expect_op):
                    with_op.append(key)
            except Exception as e:  # noqa: BLE001 - a crash of the harness on one case fails that case
                results[key] = ("failed", f"check.py: {type(e).__name__}: {e}")
    counts = {"passed": 0, "failed": 0, "refused": 0}
    for key, (status, detail) in results.items():
        counts[status] += 1
        if status == "failed":
            print(f"FAILED {key}: {detail}")
    for key, (status, detail) in results.items():
        if status == "refused":
            print(f"refused {key}: {detail}")
    stale = []
    for key, (status, detail) in results.items():
        if status == "refused":
            want = expected.get(key)
            if want is None:
                stale.append(f"{key} is refused but not in {os.path.basename(a.expect)}: {detail}")
            elif want not in detail:
                stale.append(f"{key} is refused for another reason than '{want}': {detail}")
    for key, want in expected.items():
        if key in results and results[key][0] != "refused":
            stale.append(f"{key} is in {os.path.basename(a.expect)} but {results[key][0]}")
    for s in stale:
        print(f"STALE {s}")
    if wanted and not results:
        print(f"no case uses {a.primitives}")
        return 1
    print(f"onnx: {counts['passed']} passed, {counts['failed']} failed, {counts['refused']} refused")
    # The golden corpus (the manifest without a label) apart from the version fixtures, in a full run.
    golden = [st for key, (st, _) in results.items() if "/" not in key]
    if golden and not (a.only or wanted):
        n = sum(st == "passed" for st in golden)
        print(f"golden corpus: {n} of {len(golden)} passed ({100.0 * n / len(golden):.1f}%)")
    if a.expect_op:
        print(f"{len(with_op)} passing case(s) use {a.expect_op}: {', '.join(with_op)}")
        if not with_op:
            return 1
    return 1 if counts["failed"] or stale else 0


if __name__ == "__main__":
    sys.exit(main())
