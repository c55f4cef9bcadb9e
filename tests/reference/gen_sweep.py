#!/usr/bin/env python3
"""Reference sweep: one table of cases covering every kiln primitive, with outputs from real MLX 0.30.1.

Run with the python3 that has `mlx` 0.30.1 (CPU) and numpy:

    python3 tests/reference/gen_sweep.py            # rewrites tests/reference/sweep/

Primitives MLX 0.30.1 lacks (SearchSorted, FloorDivide, DivMod's flooring meaning) come from a newer
MLX, with cases_newer.py, into their own manifest (same format):

    SWEEP_NEWER=1 /path/to/venv-mlx-0.32.4/bin/python tests/reference/gen_sweep.py   # rewrites sweep_newer/

Each case names an op by its MLX python name (kiln-only ops have a `kiln.` prefix or are noted), its
array inputs (small, deterministic), its non-array parameters and, per input, an optional view: the
stored .npy is then the *base* array and the test builds the input from it (transpose, strided slice,
reversed slice or broadcast), so the kernel sees strides. Every dtype MLX accepts is tried (a dtype
MLX rejects is skipped: the case list is what MLX does). Outputs are written by MLX, except where the
case says `"ref": "numpy"` (an independent numpy computation, used where MLX has no python API for
the op or where MLX 0.30.1 is known to be wrong).

Files are named by the hash of their content, so equal arrays are stored once. The manifest
(sweep/manifest.json) lists, per case: name, op, params, inputs (a file name, or [file, view] with
view as view_code() writes it),
outputs (file names), exact (inexact outputs bit for bit) or tol (scales the per-dtype tolerances of
TOL in sweep_common.py, which test_sweep.cpp repeats), derive (a post-processing both sides apply before
comparing, for outputs defined only up to sign, order or permutation), ref and note (where the
reference is not MLX's output), or error (MLX rejects the call: kiln must throw). File names are
the first 12 hex digits of the file's SHA-1, without ".npy".
"""

import json
import os
import shutil
import sys

sys.dont_write_bytecode = True  # no __pycache__ next to the sweep modules

import mlx.core as mx

from sweep_common import OUT, written
from sweep_case import ABORTS_FILE, CASES, REJECTED
from cases_elementwise import gen_unary, gen_binary
from cases_reduce_shape import gen_reduce, gen_shape
from cases_index import gen_index, gen_sort
from cases_math import gen_products, gen_conv, gen_fft, gen_linalg
from cases_misc import gen_quantized, gen_random, gen_fast, gen_misc

FAMILIES = [gen_unary, gen_binary, gen_reduce, gen_shape, gen_index, gen_sort, gen_products, gen_conv, gen_fft,
            gen_linalg, gen_quantized, gen_random, gen_fast, gen_misc]


def drive():
    """Run the generator in child processes; a case that kills MLX (signal) or fails inside MLX's
    evaluation is added to mlx_aborts.txt and the generator runs again without it."""
    import subprocess
    import tempfile
    for _ in range(500):
        trace = tempfile.mktemp()
        env = dict(os.environ, SWEEP_CHILD="1", SWEEP_TRACE=trace)
        rc = subprocess.run([sys.executable, os.path.abspath(__file__)], env=env).returncode
        names = open(trace).read().split() if os.path.exists(trace) else []
        if os.path.exists(trace):
            os.remove(trace)
        if rc == 0:
            return
        if rc < 0 and names:  # killed by a signal while evaluating the last traced case
            with open(ABORTS_FILE, "a") as f:
                f.write(names[-1] + "\n")
            print("MLX crashed on " + names[-1], file=sys.stderr)
        elif rc != 3:
            sys.exit(rc)
        else:
            print("MLX failed evaluating " + open(ABORTS_FILE).read().split()[-1] + " (added to mlx_aborts.txt)",
                  file=sys.stderr)
    sys.exit("too many restarts")


def main():
    newer = bool(os.environ.get("SWEEP_NEWER"))
    if newer:
        from cases_newer import NEWEST, gen_newer
        have = tuple(int(p) for p in mx.__version__.split(".")[:3])
        if have < NEWEST:
            sys.exit(f"SWEEP_NEWER needs MLX {'.'.join(map(str, NEWEST))} or newer, this python has {mx.__version__}")
    if not os.environ.get("SWEEP_CHILD"):
        return drive()
    only = os.environ.get("SWEEP_ONLY")
    out = OUT + "_newer" if newer else OUT
    for g in [gen_newer] if newer else FAMILIES:
        if not only or g.__name__ in only.split(","):
            g()
    if os.path.isdir(out):
        shutil.rmtree(out)
    os.makedirs(out)
    for name, b in written.items():
        with open(os.path.join(out, name + ".npy"), "wb") as f:
            f.write(b)
    with open(os.path.join(out, "manifest.json"), "w") as f:
        f.write('{"producer": "mlx %s", "generator": "tests/reference/gen_sweep.py", "cases": [\n' % mx.__version__)
        f.write(",\n".join(json.dumps(c, separators=(",", ":"), allow_nan=False) for c in CASES))
        f.write("\n]}\n")
    total = sum(len(b) for b in written.values())
    print(f"{len(CASES)} cases ({len(REJECTED)} must-fail, as MLX rejects them), {len(written)} files, "
          f"{total / 1e6:.2f} MB",
          file=sys.stderr)


if __name__ == "__main__":
    main()
