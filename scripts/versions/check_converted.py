#!/usr/bin/env python3
"""Load kiln-converted fixtures with a real MLX release and compare their outputs with the fixtures'.

    KILN=build/kiln /tmp/mlxv/0.32.1/bin/python scripts/versions/check_converted.py \
        tests/golden/versions/0.31.2 /tmp/converted

Every case of the source folder is converted with `kiln convert --to <this MLX's version>` (metadata is
kept when the target has it, dropped otherwise), imported by this MLX and called with the case's
inputs. Also tries the unconverted file, to show what the conversion fixes. Prints one line per case.
"""
import json
import os
import subprocess
import sys

import mlx.core as mx
import numpy as np

src, work = sys.argv[1], sys.argv[2]
kiln = os.environ.get("KILN", "build/kiln")
target = mx.__version__
os.makedirs(work, exist_ok=True)
manifest = json.load(open(os.path.join(src, "manifest.json")))
ok = failed = refused = 0


def run(path, case):
    f = mx.import_function(path)
    d = os.path.join(src, case["name"])
    for call in case["calls"]:
        args = [mx.array(np.load(os.path.join(d, a["file"]))) for a in call["args"]]
        kwargs = {k: mx.array(np.load(os.path.join(d, a["file"]))) for k, a in call["kwargs"].items()}
        outs = f(*args, **kwargs)
        for o, w in zip(outs, call["outputs"]):
            want = np.load(os.path.join(d, w["file"]))
            if not np.allclose(np.array(o), want, rtol=case["rtol"], atol=case["atol"], equal_nan=True):
                return "values differ"
    return "ok"


for case in manifest["cases"]:
    orig = os.path.join(src, case["file"])
    out = os.path.join(work, f"{case['name']}-{target}.mlxfn")
    cmd = [kiln, "convert", orig, out, "--to", target]
    if tuple(int(x) for x in target.split(".")[:3]) < (0, 32, 1):
        cmd += ["--metadata", ""]
    r = subprocess.run(cmd, capture_output=True, text=True)
    try:
        before = run(orig, case) if case["runs"] else "not run"
    except Exception as e:
        before = f"fails: {str(e)[:70]}"
    if r.returncode != 0:
        refused += 1
        print(f"{case['name']:22} refused by kiln: {r.stderr.strip()[:110]}  (unconverted: {before})")
        continue
    try:
        after = run(out, case) if case["runs"] else (mx.import_function(out) and "imports")
    except Exception as e:
        after = f"fails: {str(e)[:90]}"
    good = after in ("ok", "imports")
    ok += good
    failed += not good
    print(f"{case['name']:22} converted: {after:10}  unconverted: {before}")
print(f"MLX {target} on {manifest['version']} files converted by kiln: {ok} ok, {failed} failed, {refused} refused")
