#!/usr/bin/env python3
"""Run every case of a manifest (the golden corpus format, tests/golden/README.md) through real MLX.

usage: mlx_check.py MANIFEST [--expect FILE] [--label TEXT]

For each case MLX imports the case's .mlxfn, calls it with the case's inputs and compares every
output with the expected .npy (shape, dtype, then bit-exact or allclose with the case's tolerances,
NaN equal to NaN, `abs_outputs` by absolute value). A case is
  passed    it imported, ran and matched;
  failed    anything else, unless
  skipped   the case carries "skip" (the writer could not produce it), or MLX raised an error that the
            expectations file (--expect) lists for this case and MLX version: its reason and MLX's
            message are printed, so the skip is checked against what MLX really says;
  known     MLX ran but disagrees for a listed, explained reason (an MLX bug).
An expectation that no longer happens (the case now passes, or fails differently) is a failure, so
the list stays true. Exit status: 0 when nothing failed, 1 otherwise.

The cases run in one worker process; if MLX crashes in a case, that case fails and a new worker
continues with the next one.
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import workers  # noqa: E402


def load_expectations(path, version):
    """The kiln_to_mlx entries for this MLX version: ({case: entry}, [entries for every case with a
    property, e.g. "when": "gpu_streams"]). An entry is {kind, reason, error, ...}."""
    if not path:
        return {}, []
    with open(path) as f:
        data = json.load(f)
    named, conditional = {}, []
    for entry in data.get("entries", []):
        if entry["side"] != "kiln_to_mlx":
            continue
        if version in entry["versions"] or "*" in entry["versions"]:
            if "when" in entry:
                conditional.append(entry)
            for name in entry.get("cases", []):
                named[name] = entry
    return named, conditional


# ---- worker: runs in the MLX venv ----

def worker(manifest_path, start):
    import mlx.core as mx
    import numpy as np

    root = os.path.dirname(os.path.abspath(manifest_path))
    with open(manifest_path) as f:
        cases = json.load(f)["cases"]

    def path(rel):
        return os.path.join(root, rel)

    def bits(a):
        a = mx.contiguous(a) if hasattr(mx, "contiguous") else a
        size = a.dtype.size
        if a.dtype == mx.complex64:
            a = mx.stack([mx.real(a), mx.imag(a)], axis=-1)
            size = 4
        u = {1: mx.uint8, 2: mx.uint16, 4: mx.uint32, 8: mx.uint64}[size]
        return np.array(a.view(u))

    def compare(got, want, case, abs_out):
        if tuple(got.shape) != tuple(want.shape):
            return "shape %s != expected %s" % (tuple(got.shape), tuple(want.shape))
        if got.dtype != want.dtype:
            return "dtype %s != expected %s" % (got.dtype, want.dtype)
        if case["exact"]:
            return "" if np.array_equal(bits(got), bits(want)) else "not bit-exact"
        if abs_out:
            got, want = mx.abs(got), mx.abs(want)
        rtol, atol = case["rtol"], case["atol"]
        if not mx.allclose(got, want, rtol=rtol, atol=atol, equal_nan=True).item():
            diff = mx.max(mx.abs(got.astype(mx.complex64) - want.astype(mx.complex64))).item()
            return "not allclose (rtol %g, atol %g), max abs diff %g" % (rtol, atol, diff)
        return ""

    def run_case(case):
        fn = mx.import_function(path(case["file"]))
        if "metadata" in case:  # the writer stored a header metadata string (0.32.1 on): MLX must read it
            _, meta = mx.import_function(path(case["file"]), return_metadata=True)
            if meta != case["metadata"]:
                return "metadata %r != expected %r" % (meta, case["metadata"])
        abs_outputs = set(case.get("abs_outputs", []))
        for k, call in enumerate(case["calls"]):
            args = [mx.load(path(a["file"])) for a in call["args"]]
            kwargs = {n: mx.load(path(v["file"])) for n, v in call["kwargs"].items()}
            outs = fn(*args, **kwargs)
            mx.eval(outs)
            if len(outs) != len(call["outputs"]):
                return "call %d: %d outputs, expected %d" % (k, len(outs), len(call["outputs"]))
            for i, (o, w) in enumerate(zip(outs, call["outputs"])):
                why = compare(o, mx.load(path(w["file"])), case, i in abs_outputs)
                if why:
                    return "call %d output %d: %s" % (k, i, why)
        return ""

    for i in range(start, len(cases)):
        case = cases[i]
        print(json.dumps({"start": i}), flush=True)
        if case.get("skip"):
            res = {"i": i, "status": "skip", "why": case["skip"]}
        elif case.get("error"):
            res = {"i": i, "status": "error", "why": case["error"]}
        else:
            try:
                why = run_case(case)
                res = {"i": i, "status": "mismatch" if why else "pass", "why": why}
            except Exception as e:  # noqa: BLE001 - every MLX error is reported with its text
                msg = " ".join(str(e).split())
                res = {"i": i, "status": "error", "why": "%s: %s" % (type(e).__name__, msg)}
        print(json.dumps(res), flush=True)
        if res["status"] == "error":
            # MLX's heap is not trusted after an exception in eval (a later valid case, or even the
            # interpreter's exit, crashed): leave at once; workers.py starts a fresh process.
            sys.stdout.flush()
            os._exit(0)


# ---- driver ----

def main():
    args = sys.argv[1:]
    if args and args[0] == "--worker":
        worker(args[1], int(args[2]))
        return 0
    manifest = args[0]
    expect_file, label = None, "mlx"
    i = 1
    while i < len(args):
        if args[i] == "--expect":
            expect_file = args[i + 1]
            i += 2
        elif args[i] == "--label":
            label = args[i + 1]
            i += 2
        else:
            sys.exit("mlx_check.py: unknown argument " + args[i])
    import mlx.core as mx

    version = mx.__version__
    expect, conditional = load_expectations(expect_file, version)
    with open(manifest) as f:
        cases = json.load(f)["cases"]

    results = workers.run(os.path.abspath(__file__), [manifest], len(cases))

    counts = {"passed": 0, "failed": 0, "skipped": 0, "known": 0}
    lines = {}  # (kind, reason) -> case names: a reason shared by many cases prints once
    for i, case in enumerate(cases):
        name = case["name"]
        r = results.get(i, {"status": "error", "why": "not run"})
        e = expect.get(name) or next((c for c in conditional if case.get(c["when"])), None)
        status, why = r["status"], r["why"]
        if status == "skip":
            kind, text = "skipped", why
        elif case.get("error"):
            kind, text = "failed", why
        elif e is None:
            kind, text = ("passed", "") if status == "pass" else ("failed", why)
        elif status == "pass":
            kind, text = "failed", "listed as '%s' (%s) but MLX now passes: update the expectations" % (
                e["kind"], e["reason"])
        elif e["kind"] == "skip" and status == "error" and e.get("error", "") in why:
            kind, text = "skipped", "%s; MLX says: %s" % (e["reason"], why)
        elif e["kind"] == "known" and (status == "mismatch" or e.get("error") and e["error"] in why):
            kind, text = "known", "%s; %s" % (e["reason"], why)
        else:
            kind, text = "failed", "%s (expected %s: %s)" % (why, e["kind"], e["reason"])
        counts[kind] += 1
        if kind != "passed":
            lines.setdefault((kind, text), []).append(name)
    print("%s (MLX %s): %d passed, %d failed, %d skipped, %d known differences (of %d cases)" % (
        label, version, counts["passed"], counts["failed"], counts["skipped"], counts["known"], len(cases)))
    for (kind, text), names in lines.items():
        shown = ", ".join(names[:4]) + (" and %d more cases" % (len(names) - 4) if len(names) > 4 else "")
        print("  %-8s %s: %s" % (kind.upper(), shown, text))
    if counts["passed"] == 0 and cases:
        print("no case passed")
        return 1
    return 1 if counts["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
