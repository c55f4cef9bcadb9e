#!/usr/bin/env python3
"""Side-by-side benchmark: each case in pip MLX and in kiln (and llama.cpp for the llama cases), in one run.

    python3 bench/compare.py                      # every case, 3 processes per engine
    python3 bench/compare.py --quick --cases 'ewise*,softmax*'
    python3 bench/compare.py --repeat 5 --json out.json --markdown out.md

Standard library only at this level (Python >= 3.9). It creates or reuses a venv (build-bench/venv) with
mlx[cpu]==0.30.1, mlx-lm, NumPy, gguf and kiln built from this repository; builds a small C program that
measures this machine's read bandwidth and float32 GEMM rate (through the OpenBLAS kiln links); builds
llama.cpp's llama-bench from the source the PyPI package llama-cpp-python ships; then runs every case in
child processes, one engine per process (bench/compare_child.py). See bench/README.md.
"""

import argparse
import fnmatch
import hashlib
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tarfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
CHILD = os.path.join(HERE, "compare_child.py")
RESULT_TAG = "@@RESULT@@"

MLX_VERSION = "0.30.1"
# The newest mlx-lm whose requirements accept MLX 0.30.1 (0.30.3 and later ask for mlx>=0.30.3).
MLX_LM_VERSION = "0.30.2"
LLAMA_CPP_PYTHON_VERSION = "0.3.36"
VENV_PACKAGES = [f"mlx[cpu]=={MLX_VERSION}", f"mlx-lm=={MLX_LM_VERSION}", "numpy", "gguf",
                 "scikit-build-core>=0.10", "nanobind>=2.4"]

# ---------------------------------------------------------------------------------------------------------
# The cases: name, what it is, full-size parameters and --quick parameters. The child builds them in MLX.
# ---------------------------------------------------------------------------------------------------------

LLAMA = dict(arch="llama", hidden=1024, layers=8, intermediate=2816, heads=16, kv_heads=4, head_dim=64,
             vocab=32000)
LLAMA_QUICK = dict(arch="llama", hidden=256, layers=2, intermediate=704, heads=4, kv_heads=2, head_dim=64,
                   vocab=4096)
MOE = dict(arch="mixtral", hidden=1024, layers=4, intermediate=1408, heads=16, kv_heads=4, head_dim=64,
           vocab=32000, experts=8, top_k=2)
MOE_QUICK = dict(arch="mixtral", hidden=256, layers=2, intermediate=512, heads=4, kv_heads=2, head_dim=64,
                 vocab=4096, experts=4, top_k=2)
Q4 = {"group_size": 64, "bits": 4}


def _rows(kind, rows, cols, qrows, qcols):
    return (dict(kind=kind, rows=rows, cols=cols), dict(kind=kind, rows=qrows, cols=qcols))


def _lm(base, quick, dtype, mode, quant=None, ctx=256, prompt=128, qctx=32, qprompt=16):
    full = dict(base, kind="lm", dtype=dtype, mode=mode)
    small = dict(quick, kind="lm", dtype=dtype, mode=mode)
    if quant:
        full["quant"] = small["quant"] = quant
    if mode == "decode":
        full["ctx"], small["ctx"] = ctx, qctx
    else:
        full["prompt"], small["prompt"] = prompt, qprompt
    return full, small


# (name, description, full params, quick params, llama.cpp GGUF type or None)
CASES = [
    ("ewise_chain_1M", "32 element-wise ops, 1M float32", dict(kind="ewise_chain", n=1 << 20),
     dict(kind="ewise_chain", n=1 << 16), None),
    ("ewise_chain_16M", "32 element-wise ops, 16M float32", dict(kind="ewise_chain", n=1 << 24),
     dict(kind="ewise_chain", n=1 << 18), None),
    ("softmax_256x4096", "softmax over rows, (256, 4096)", *_rows("softmax", 256, 4096, 64, 1024), None),
    ("softmax_4096x4096", "softmax over rows, (4096, 4096)", *_rows("softmax", 4096, 4096, 256, 1024), None),
    ("logsumexp_256x4096", "logsumexp over rows, (256, 4096)", *_rows("logsumexp", 256, 4096, 64, 1024), None),
    ("logsumexp_4096x4096", "logsumexp over rows, (4096, 4096)", *_rows("logsumexp", 4096, 4096, 256, 1024),
     None),
    ("layernorm_256x4096", "fast.layer_norm rows, (256, 4096)", *_rows("layernorm", 256, 4096, 64, 1024), None),
    ("layernorm_4096x4096", "fast.layer_norm rows, (4096, 4096)", *_rows("layernorm", 4096, 4096, 256, 1024),
     None),
    ("rmsnorm_256x4096", "fast.rms_norm rows, (256, 4096)", *_rows("rmsnorm", 256, 4096, 64, 1024), None),
    ("rmsnorm_4096x4096", "fast.rms_norm rows, (4096, 4096)", *_rows("rmsnorm", 4096, 4096, 256, 1024), None),
    ("decoder_4layer", "nn.TransformerEncoder, 4 layers, causal, (1, 256, 512), 8 heads, MLP 2048",
     dict(kind="decoder", batch=1, seq=256, dims=512, heads=8, mlp=2048, layers=4),
     dict(kind="decoder", batch=1, seq=32, dims=128, heads=4, mlp=256, layers=4), None),
    ("mlp", "MLP 1024-4096-4096-1024, GELU, batch 256",
     dict(kind="mlp", batch=256, dims=[1024, 4096, 4096, 1024]),
     dict(kind="mlp", batch=16, dims=[256, 512, 512, 256]), None),
    ("convnet", "3 conv 3x3 (32, 64, 128 ch; 2 stride-2) + mean + linear, (8, 64, 64, 3) NHWC",
     dict(kind="convnet", batch=8, size=64, channels=[32, 64, 128]),
     dict(kind="convnet", batch=2, size=16, channels=[8, 16, 32]), None),
    ("llama_f32_decode", "llama ~170M float32, 1 token, KV cache 256", *_lm(LLAMA, LLAMA_QUICK, "float32", "decode"),
     "F32"),
    ("llama_f32_prefill", "llama ~170M float32, prefill 128 tokens", *_lm(LLAMA, LLAMA_QUICK, "float32", "prefill"),
     "F32"),
    ("llama_bf16_decode", "llama ~170M bfloat16, 1 token, KV cache 256",
     *_lm(LLAMA, LLAMA_QUICK, "bfloat16", "decode"), "BF16"),
    ("llama_bf16_prefill", "llama ~170M bfloat16, prefill 128 tokens",
     *_lm(LLAMA, LLAMA_QUICK, "bfloat16", "prefill"), "BF16"),
    ("llama_q4_decode", "llama ~170M 4-bit affine g64 (f32 scales), 1 token, KV cache 256",
     *_lm(LLAMA, LLAMA_QUICK, "float32", "decode", Q4), "Q4_0"),
    ("llama_q4_prefill", "llama ~170M 4-bit affine g64 (f32 scales), prefill 128 tokens",
     *_lm(LLAMA, LLAMA_QUICK, "float32", "prefill", Q4), "Q4_0"),
    ("moe_q4_decode", "mixtral MoE 8 experts top-2, 4 layers, 4-bit g64 (GatherQMM), 1 token, KV cache 256",
     *_lm(MOE, MOE_QUICK, "float32", "decode", Q4), None),
]
CASE_NAMES = [c[0] for c in CASES]


def select_cases(spec, quick=False):
    """The cases named by spec (comma list of names or globs; '' or 'all': every case), in CASES order.
    Returns [{name, desc, p, gguf}]. Unknown names raise ValueError."""
    pats = [s.strip() for s in (spec or "all").split(",") if s.strip()]
    if not pats or pats == ["all"]:
        pats = ["*"]
    chosen = set()
    for pat in pats:
        hits = [n for n in CASE_NAMES if fnmatch.fnmatchcase(n, pat)]
        if not hits:
            raise ValueError(f"--cases: {pat!r} names no case (cases: {', '.join(CASE_NAMES)})")
        chosen.update(hits)
    return [dict(name=n, desc=d, p=(q if quick else f), gguf=g) for n, d, f, q, g in CASES if n in chosen]


# ---------------------------------------------------------------------------------------------------------
# Statistics and formatting (pure; bench/test_compare.py tests them)
# ---------------------------------------------------------------------------------------------------------


def median(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def summarize(medians):
    """Per-process medians -> {median, min, max, spread}: spread is half the range over the median."""
    xs = [x for x in medians if x is not None]
    if not xs:
        return None
    m = statistics.median(xs)
    return dict(median=m, min=min(xs), max=max(xs), n=len(xs), spread=(max(xs) - min(xs)) / 2 / m if m else 0.0)


def fmt_time(s):
    if s is None:
        return "—"
    if s >= 1.0:
        return f"{s:.2f} s"
    if s >= 1e-3:
        v = s * 1e3
        return f"{v:.0f} ms" if v >= 100 else (f"{v:.1f} ms" if v >= 10 else f"{v:.2f} ms")
    v = s * 1e6
    return f"{v:.0f} µs" if v >= 10 else f"{v:.1f} µs"


def fmt_stat(st):
    if not st:
        return "—"
    txt = fmt_time(st["median"])
    if st["n"] > 1 and st["spread"] >= 0.005:
        txt += f" ±{st['spread'] * 100:.0f}%"
    return txt


def fmt_ratio(a, b):
    if a is None or b is None or b <= 0:
        return "—"
    r = a / b
    return f"{r:.1f}×" if r >= 10 else f"{r:.2f}×"


def fmt_bytes(n):
    if n is None:
        return "—"
    for unit, div in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= div:
            return f"{n / div:.1f} {unit}" if n / div < 100 else f"{n / div:.0f} {unit}"
    return f"{n} B"


def fmt_pct(x):
    if x is None:
        return "—"
    return f"{x * 100:.0f}%" if x >= 0.1 else f"{x * 100:.1f}%"


def limit_fraction(meta, seconds, limits):
    """The fraction of this machine's limit a call of `seconds` reaches: bandwidth-bound cases by the bytes
    they must move at least, GEMM-bound cases by their flops."""
    if not meta or not seconds or not limits:
        return None
    if meta.get("bound") == "bandwidth" and meta.get("min_bytes") and limits.get("read_gbs"):
        return meta["min_bytes"] / seconds / (limits["read_gbs"] * 1e9)
    if meta.get("bound") == "gemm" and meta.get("flops") and limits.get("gemm_gflops"):
        return meta["flops"] / seconds / (limits["gemm_gflops"] * 1e9)
    return None


def md_table(header, rows):
    """A Markdown table with its columns padded to a common width (readable as plain text too)."""
    cells = [list(map(str, header))] + [[str(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    line = lambda r: "| " + " | ".join(c.ljust(w) for c, w in zip(r, widths)) + " |"  # noqa: E731
    out = [line(cells[0]), "|" + "|".join("-" * (w + 2) for w in widths) + "|"]
    out += [line(r) for r in cells[1:]]
    return "\n".join(out)


def match_cell(case):
    k = case.get("kiln") or {}
    if case.get("error"):
        return "ERROR"
    if not k.get("runs"):
        return "—"
    err, tol = k.get("max_rel_err"), (case.get("meta") or {}).get("tol")
    if err is None or tol is None:
        return "?"
    word = "ok" if err <= tol else "MISMATCH"
    return f"{word} ({err:.0e})"


def results_tables(results):
    """The two tables: timing (with the limit fractions) and process (start-up, imports, peak RSS)."""
    limits = results.get("limits") or {}
    t_rows, p_rows = [], []
    for c in results["cases"]:
        meta = c.get("meta") or {}
        m, k, l = c.get("mlx") or {}, c.get("kiln") or {}, c.get("llamacpp") or {}
        mf = c.get("mlxfile") or {}
        ms, ks, ls = m.get("stat"), k.get("stat"), l.get("stat")
        mt = ms["median"] if ms else None
        kt = ks["median"] if ks else None
        lt = ls["median"] if ls else None
        bound = {"bandwidth": "read BW", "gemm": "GEMM"}.get(meta.get("bound"), "—")
        lcell = fmt_stat(ls) if ls else ("n/a" if not c.get("gguf") else (l.get("error_short") or "—"))
        if ls and l.get("type"):
            lcell += f" ({l['type']}" + (f", t{l['threads']})" if l.get("threads") else ")")
        t_rows.append([c["name"], fmt_stat(ms), fmt_stat(ks), fmt_ratio(mt, kt), lcell,
                       fmt_ratio(kt, lt) if lt else "—", bound,
                       fmt_pct(limit_fraction(meta, mt, limits)), fmt_pct(limit_fraction(meta, kt, limits)),
                       fmt_pct(limit_fraction(meta, lt, limits)) if lt else "—", match_cell(c)])
        imp = fmt_time(m.get("import_s"))
        if m.get("lm_import_s") is not None:
            imp += f" + mlx_lm {fmt_time(m['lm_import_s'])}"
        p_rows.append([c["name"], fmt_time(m.get("ready_s")), imp,
                       fmt_time(k.get("ready_s")), fmt_time(k.get("import_s")), fmt_time(mf.get("import_function_s")),
                       fmt_time(k.get("import_function_s")), fmt_time(mf.get("cold_s")), fmt_time(k.get("cold_s")),
                       fmt_bytes(m.get("peak_rss")), fmt_bytes(k.get("peak_rss")),
                       fmt_bytes(l.get("peak_rss")) if ls else "—", fmt_bytes(meta.get("file_bytes"))])
    timing = md_table(["case", "MLX call", "kiln call", "MLX/kiln", "llama.cpp", "kiln/llama.cpp", "bound",
                       "MLX % of limit", "kiln % of limit", "llama.cpp % of limit", "kiln vs MLX"], t_rows)
    process = md_table(["case", "MLX start→ready", "import mlx", "kiln start→ready", "import kiln",
                        "MLX import_function", "kiln import_function", "MLX cold start", "kiln cold start",
                        "MLX peak RSS", "kiln peak RSS", "llama.cpp peak RSS", ".mlxfn size"],
                       p_rows)
    return timing, process


def machine_lines(machine, limits):
    lines = [f"- CPU: {machine.get('cpu', '?')}, {machine.get('cores', '?')} cores"
             f" ({machine.get('flags', '')}); memory {fmt_bytes(machine.get('mem_bytes'))};"
             f" {machine.get('os', '')}",
             f"- Load average (1, 5, 15 min) at start {machine.get('load_start', '?')}"
             + (f", at end {machine['load_end']}" if machine.get("load_end") else "")
             + " (other processes share the cores when this is well above 0)"]
    if limits:
        lines.append(f"- Read bandwidth: {limits['read_gbs']:.1f} GB/s ({limits['threads']} threads, streaming"
                     f" {fmt_bytes(limits['read_bytes'])}, best of {limits['passes']} passes; one thread"
                     f" {limits['read_gbs_1thread']:.1f} GB/s)")
        lines.append(f"- float32 GEMM: {limits['gemm_gflops']:.1f} GFLOP/s (cblas_sgemm {limits['gemm_n']}³,"
                     f" {limits['openblas_config']}, {limits['openblas_threads']} threads;"
                     f" OPENBLAS_CORETYPE={machine.get('openblas_coretype') or '(unset)'})")
        runs = limits.get("runs") or []
        if len(runs) > 1:
            lines.append("- The limits are the best of " + str(len(runs)) + " measurements in this run ("
                         + "; ".join(f"{r['when']}: {r['read_gbs']:.1f} GB/s, {r['gemm_gflops']:.1f} GFLOP/s"
                                     for r in runs) + ")")
    else:
        lines.append("- Machine limits: not measured")
    v = machine.get("versions") or {}
    if v:
        lines.append("- " + ", ".join(f"{k} {val}" for k, val in v.items()))
    return lines


def render_markdown(results):
    timing, process = results_tables(results)
    out = ["## Machine", ""] + machine_lines(results.get("machine", {}), results.get("limits")) + [""]
    out += [f"Measured {results.get('date', '?')} with `{results.get('command', '?')}`"
            f" ({results.get('repeat', '?')} processes per engine and case; total {results.get('total_s', 0):.0f} s).",
            ""]
    out += ["## Calls", "", timing, "", "## Processes", "", process, ""]
    notes = results.get("notes") or []
    if notes:
        out += ["## Notes", ""] + [f"- {n}" for n in notes] + [""]
    return "\n".join(out)


# ---------------------------------------------------------------------------------------------------------
# The machine
# ---------------------------------------------------------------------------------------------------------


def read_machine():
    info = {"cores": os.cpu_count(), "os": f"{platform.system()} {platform.release()}",
            "python": platform.python_version(), "openblas_coretype": os.environ.get("OPENBLAS_CORETYPE")}
    try:
        with open("/proc/cpuinfo") as f:
            txt = f.read()
        for line in txt.splitlines():
            if line.startswith("model name") and "cpu" not in info:
                info["cpu"] = line.split(":", 1)[1].strip()
            if line.startswith("flags") and "flags" not in info:
                fl = set(line.split(":", 1)[1].split())
                info["flags"] = " ".join(x for x in ("avx2", "fma", "avx512f", "avx512_bf16", "amx_tile") if x in fl)
    except OSError:
        pass
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    info["mem_bytes"] = int(line.split()[1]) * 1024
    except OSError:
        pass
    info["load_start"] = load_avg()
    return info


def load_avg():
    try:
        return " ".join(f"{x:.1f}" for x in os.getloadavg())
    except OSError:
        return "?"


# ---------------------------------------------------------------------------------------------------------
# Processes
# ---------------------------------------------------------------------------------------------------------


def log(msg):
    print(msg, flush=True)


def run_logged(cmd, logfile, env=None, cwd=None, nice=None):
    """Run a setup command (build, install) with its output in logfile; raise with the tail on failure."""
    if nice:
        cmd = ["nice", "-n", str(nice)] + cmd
    with open(logfile, "a") as f:
        f.write(f"\n$ {' '.join(cmd)}\n")
        f.flush()
        r = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT, env=env, cwd=cwd)
    if r.returncode != 0:
        with open(logfile) as f:
            tail = f.read()[-3000:]
        raise RuntimeError(f"{' '.join(cmd[:6])} ... failed (exit {r.returncode}); log {logfile}:\n{tail}")


def run_child(venv_py, mode, args, timeout):
    """One child (compare_child.py MODE); returns (result dict or None, stderr tail, peak RSS bytes)."""
    env = dict(os.environ)
    env["KILN_BENCH_SPAWN"] = repr(time.time())
    env.setdefault("PYTHONDONTWRITEBYTECODE", "1")
    cmd = [venv_py, CHILD, mode, json.dumps(args)]
    t = time.time()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=HERE, text=True)
    out, err = _communicate_wait4(p, timeout)
    res = None
    for line in out.splitlines():
        if line.startswith(RESULT_TAG):
            res = json.loads(line[len(RESULT_TAG):])
    if res is not None:
        res["peak_rss"] = p.peak_rss
        res.update(p.cpu)  # the whole process's CPU seconds and page faults (start-up included)
        res["wall_s"] = time.time() - t
    tail = (err or "")[-2500:]
    if p.returncode != 0 and res is None:
        tail = f"exit {p.returncode}: {tail}"
    return res, tail


def _communicate_wait4(p, timeout):
    """Read p's output, then reap it with os.wait4 so that its own peak RSS is known (p.peak_rss, bytes)."""
    import threading

    chunks = {"out": [], "err": []}

    def pump(stream, key):
        for line in stream:
            chunks[key].append(line)

    ts = [threading.Thread(target=pump, args=(p.stdout, "out")), threading.Thread(target=pump, args=(p.stderr, "err"))]
    for t in ts:
        t.start()
    deadline = time.time() + timeout if timeout else None
    status, ru = None, None
    while True:
        pid, status, ru = os.wait4(p.pid, os.WNOHANG)
        if pid == p.pid:
            break
        if deadline and time.time() > deadline:
            p.kill()
            pid, status, ru = os.wait4(p.pid, 0)
            chunks["err"].append(f"\n[compare] killed after {timeout} s\n")
            break
        time.sleep(0.01)
    for t in ts:
        t.join()
    p.returncode = os.waitstatus_to_exitcode(status) if hasattr(os, "waitstatus_to_exitcode") else status
    p.peak_rss = ru.ru_maxrss * 1024 if ru else None  # Linux: kilobytes
    p.cpu = dict(user_s=ru.ru_utime, sys_s=ru.ru_stime, minor_faults=ru.ru_minflt) if ru else {}
    return "".join(chunks["out"]), "".join(chunks["err"])


# ---------------------------------------------------------------------------------------------------------
# Setup: venv, kiln, machine limits, llama.cpp
# ---------------------------------------------------------------------------------------------------------


def tree_hash(paths):
    """A hash of kiln's sources (what `pip install .` builds from), to skip the reinstall when unchanged."""
    h = hashlib.sha256()
    files = []
    try:
        r = subprocess.run(["git", "-C", ROOT, "ls-files", "-co", "--exclude-standard", "--"] + paths,
                           capture_output=True, text=True, check=True)
        files = sorted(r.stdout.split())
    except (OSError, subprocess.CalledProcessError):
        for p in paths:
            full = os.path.join(ROOT, p)
            if os.path.isfile(full):
                files.append(p)
            for dp, _, fs in os.walk(full):
                files += [os.path.relpath(os.path.join(dp, f), ROOT) for f in fs]
        files.sort()
    for rel in files:
        full = os.path.join(ROOT, rel)
        if os.path.isfile(full):
            h.update(rel.encode() + b"\0")
            with open(full, "rb") as f:
                h.update(hashlib.sha256(f.read()).digest())
    return h.hexdigest()


KILN_SOURCES = ["src", "include", "python", "tools", "cmake", "examples", "CMakeLists.txt", "pyproject.toml"]


def ensure_venv(args, logfile):
    venv = args.venv
    py = os.path.join(venv, "bin", "python")
    stamp = os.path.join(venv, ".kiln-bench-packages")
    want = "\n".join(VENV_PACKAGES)
    if not os.path.exists(py):
        log(f"[setup] creating {venv}")
        run_logged([sys.executable, "-m", "venv", venv], logfile)
    have = open(stamp).read() if os.path.exists(stamp) else ""
    if have != want:
        log(f"[setup] pip install {' '.join(VENV_PACKAGES)}")
        run_logged([py, "-m", "pip", "install", "-q", "--upgrade", "pip"], logfile)
        run_logged([py, "-m", "pip", "install", "-q"] + VENV_PACKAGES, logfile, nice=args.build_nice)
        with open(stamp, "w") as f:
            f.write(want)
    # kiln from this repository, its CMake build kept under build-bench/ (so a rerun rebuilds only changes).
    kstamp = os.path.join(venv, ".kiln-bench-kiln")
    h = tree_hash(KILN_SOURCES)
    if args.reinstall or not os.path.exists(kstamp) or open(kstamp).read() != h:
        log(f"[setup] pip install {ROOT} (kiln; CMake build in {args.kiln_build})")
        env = dict(os.environ, CCACHE_BASEDIR=ROOT, CMAKE_BUILD_PARALLEL_LEVEL=str(args.jobs))
        t = time.time()
        run_logged([py, "-m", "pip", "install", "-q", "--no-build-isolation", "--no-deps", "--force-reinstall",
                    f"-Cbuild-dir={args.kiln_build}", ROOT], logfile, env=env, nice=args.build_nice)
        log(f"[setup] kiln installed in {time.time() - t:.0f} s")
        with open(kstamp, "w") as f:
            f.write(h)
    return py


def venv_versions(py):
    code = ("import json, importlib.metadata as m\n"
            "print(json.dumps({k: m.version(k) for k in ('mlx', 'mlx-lm', 'numpy', 'gguf', 'kiln')}))")
    try:
        r = subprocess.run([py, "-c", code], capture_output=True, text=True, check=True)
        return json.loads(r.stdout)
    except (OSError, subprocess.CalledProcessError, ValueError):
        return {}


def measure_limits(args, logfile):
    exe = os.path.join(args.work, "machine_limits")
    src = os.path.join(HERE, "machine_limits.c")
    if not os.path.exists(exe) or os.path.getmtime(exe) < os.path.getmtime(src):
        flags = subprocess.run(["pkg-config", "--cflags", "--libs", "openblas"], capture_output=True,
                               text=True).stdout.split() or ["-lopenblas"]
        cc = os.environ.get("CC", "cc")
        run_logged([cc, "-O3", "-march=native", "-pthread", src, "-o", exe] + flags, logfile)
    cmd = [exe, "--mib", str(args.bw_mib), "--gemm", str(args.gemm_n)]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"machine_limits failed: {r.stderr.strip()}")
    return json.loads(r.stdout)


def combine_limits(runs):
    """The best read bandwidth and GEMM rate over several measurements; each one is kept under "runs"."""
    best = dict(max(runs, key=lambda r: r["read_gbs"]))
    g = max(runs, key=lambda r: r["gemm_gflops"])
    best.update(gemm_gflops=g["gemm_gflops"], gemm_n=g["gemm_n"])
    best["runs"] = [{k: v for k, v in r.items() if k != "runs"} for r in runs]
    return best


def cpu_has_amx():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return "amx_int8" in line.split(":", 1)[1].split()
    except OSError:
        pass
    return False


# Why llama.cpp is built without its AMX kernels on CPUs that have AMX: in the llama.cpp of
# llama-cpp-python 0.3.36, the AMX matmul (ggml_backend_amx_mul_mat, chosen for Q4_0 weights when the
# build has AMX) crashes (SIGSEGV) at a context depth (`-d 256`) and in a 128-token prefill, the cases
# this suite measures; it runs only a depth-0 decode. Without AMX, llama.cpp uses its AVX-512 VNNI kernels.
LLAMA_AMX_NOTE = ("llama.cpp built without AMX (-march=native -mno-amx-*): its AMX Q4_0 matmul crashes "
                  "(SIGSEGV in ggml_backend_amx_mul_mat) at -d 256 and in prefill on this CPU")


def ensure_llama_bench(args, py, logfile):
    """llama-bench from the llama.cpp source inside the llama-cpp-python sdist (vendor/llama.cpp), built once."""
    d = os.path.join(args.work, "llamacpp")
    amx = cpu_has_amx()
    build = os.path.join(d, "build-noamx" if amx else "build")
    exe = os.path.join(build, "bin", "llama-bench")
    if os.path.exists(exe):
        return exe
    os.makedirs(d, exist_ok=True)
    name = f"llama_cpp_python-{LLAMA_CPP_PYTHON_VERSION}"
    tgz = os.path.join(d, name + ".tar.gz")
    if not os.path.exists(tgz):
        log(f"[setup] pip download llama-cpp-python=={LLAMA_CPP_PYTHON_VERSION} (sdist)")
        run_logged([py, "-m", "pip", "download", "-q", "--no-deps", "--no-binary", ":all:",
                    f"llama-cpp-python=={LLAMA_CPP_PYTHON_VERSION}", "-d", d], logfile)
    src = os.path.join(d, name, "vendor", "llama.cpp")
    if not os.path.isdir(src):
        with tarfile.open(tgz) as t:
            if hasattr(tarfile, "data_filter"):  # Python 3.12+ (and the 3.8-3.11 security releases)
                t.extractall(d, filter="data")
            else:
                t.extractall(d)
    log("[setup] building llama-bench (cmake, Release, native" + (" without AMX" if amx else "") + "; once)")
    gen = ["-G", "Ninja"] if shutil.which("ninja") else []
    isa = ["-DGGML_NATIVE=ON"]
    if amx:
        fl = "-march=native -mno-amx-tile -mno-amx-int8 -mno-amx-bf16"
        isa = ["-DGGML_NATIVE=OFF", f"-DCMAKE_C_FLAGS={fl}", f"-DCMAKE_CXX_FLAGS={fl}"]
    run_logged(["cmake", "-S", src, "-B", build, *gen, "-DCMAKE_BUILD_TYPE=Release", *isa,
                "-DBUILD_SHARED_LIBS=OFF", "-DLLAMA_BUILD_TESTS=OFF", "-DLLAMA_BUILD_EXAMPLES=OFF",
                "-DLLAMA_BUILD_SERVER=OFF", "-DLLAMA_BUILD_APP=OFF", "-DLLAMA_BUILD_UI=OFF",
                "-DLLAMA_USE_PREBUILT_UI=OFF", "-DLLAMA_OPENSSL=OFF", "-DLLAMA_CURL=OFF"], logfile,
               nice=args.build_nice)
    run_logged(["cmake", "--build", build, "--target", "llama-bench", f"-j{args.jobs}"], logfile,
               nice=args.build_nice)
    if not os.path.exists(exe):
        raise RuntimeError(f"the build finished without {exe}")
    return exe


def params_key(name, p):
    with open(CHILD, "rb") as f:
        child = hashlib.sha256(f.read()).hexdigest()[:16]
    blob = json.dumps({"name": name, "p": p, "mlx": MLX_VERSION, "child": child}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def ensure_export(args, py, case):
    """MLX builds the case and exports it (once; cached under build-bench/cases/NAME-KEY)."""
    key = params_key(case["name"], case["p"])
    d = os.path.join(args.work, "cases", f"{case['name']}-{key}")
    meta_path = os.path.join(d, "meta.json")
    if os.path.exists(meta_path):
        with open(meta_path) as f:
            meta = json.load(f)
        if meta.get("key") == key:
            return d, meta, True
    res, tail = run_child(py, "export", dict(case=case["name"], p=case["p"], dir=d, key=key), args.timeout)
    if res is None:
        raise RuntimeError(f"export failed: {tail}")
    return d, res, False


def ensure_gguf(args, py, case):
    p = case["p"]
    key = hashlib.sha256(json.dumps({k: p[k] for k in ("hidden", "layers", "intermediate", "heads", "kv_heads",
                                                       "head_dim", "vocab")}, sort_keys=True).encode()).hexdigest()[:12]
    path = os.path.join(args.work, "gguf", f"llama-{key}-{case['gguf']}.gguf")
    if os.path.exists(path):
        return path
    os.makedirs(os.path.dirname(path), exist_ok=True)
    res, tail = run_child(py, "gguf", dict(case=case["name"], p=p, path=path, type=case["gguf"]), args.timeout)
    if res is None:
        raise RuntimeError(f"writing the GGUF file failed: {tail}")
    return path


def run_llama_bench(args, exe, gguf, case, reps=None):
    """llama-bench on the GGUF file, with every core and with one thread (-t N,1): its worker threads spin
    at their barriers, so on a machine shared with other jobs one thread can beat all of them. The table
    shows the faster; the JSON keeps both. `reps` repetitions inside the process (default --repeat)."""
    p = case["p"]
    n = os.cpu_count() or 1
    threads = ",".join(str(t) for t in sorted({n, 1}, reverse=True))
    if p["mode"] == "decode":
        flags = ["-p", "0", "-n", str(args.llama_gen), "-d", str(p["ctx"])]
    else:
        flags = ["-p", str(p["prompt"]), "-n", "0"]
    cmd = [exe, "-m", gguf, *flags, "-t", threads, "-r", str(reps or args.repeat), "-o", "json"]
    p_ = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out, err = _communicate_wait4(p_, args.timeout)
    if p_.returncode != 0:
        raise RuntimeError(f"llama-bench exit {p_.returncode}: {err[-1500:]}")
    per_thread = []
    for row in json.loads(out):
        samples = row.get("samples_ns") or [row["avg_ns"]]
        per = row["n_gen"] if p["mode"] == "decode" else 1  # decode: per token; prefill: the whole prompt
        per_call = [s / 1e9 / per for s in samples]
        per_thread.append(dict(threads=row.get("n_threads"), samples_s=per_call, stat=summarize(per_call),
                               n_prompt=row.get("n_prompt"), n_gen=row.get("n_gen"), n_depth=row.get("n_depth"),
                               avg_ts=row.get("avg_ts"), build_commit=row.get("build_commit")))
    if not per_thread:
        raise RuntimeError("llama-bench printed no result")
    best = min(per_thread, key=lambda r: r["stat"]["median"])
    return dict(cmd=" ".join(cmd), stat=best["stat"], threads=best["threads"], by_threads=per_thread,
                peak_rss=p_.peak_rss, type=case["gguf"], **p_.cpu)


def merge_llama_runs(runs):
    """One llama.cpp result from several llama-bench processes: the samples of each thread count pooled,
    the faster thread count's summary shown, the largest peak RSS."""
    pooled = {}
    for r in runs:
        for t in r["by_threads"]:
            q = pooled.setdefault(t["threads"], dict(t, samples_s=[]))
            q["samples_s"] = q["samples_s"] + list(t["samples_s"])
    per_thread = []
    for q in pooled.values():
        q["stat"] = summarize(q["samples_s"])
        per_thread.append(q)
    best = min(per_thread, key=lambda r: r["stat"]["median"])
    out = dict(runs[-1])
    out.update(cmd=" ; ".join(r["cmd"] for r in runs), stat=best["stat"], threads=best["threads"],
               by_threads=per_thread, peak_rss=max((r["peak_rss"] or 0) for r in runs) or None,
               processes=len(runs))
    return out


# ---------------------------------------------------------------------------------------------------------
# The run
# ---------------------------------------------------------------------------------------------------------


def run_case(args, py, case, limits, llama_exe, llama_err, notes):
    name = case["name"]
    c = dict(name=name, desc=case["desc"], p=case["p"], gguf=case["gguf"])
    t0 = time.time()
    try:
        d, meta, cached = ensure_export(args, py, case)
    except RuntimeError as e:
        c["error"] = str(e)
        log(f"[{name}] {e}")
        notes.append(f"{name}: MLX could not build/export the case: {str(e).splitlines()[0][:300]}")
        return c
    c["meta"] = meta
    log(f"[{name}] {'cached' if cached else 'exported'} {fmt_bytes(meta.get('file_bytes'))} .mlxfn"
        f" ({meta['n_inputs']} inputs, {meta['n_outputs']} outputs)")
    if meta.get("missing_primitives"):
        msg = f"{name}: the exported file lacks {', '.join(meta['missing_primitives'])}"
        log(f"[{name}] WARNING {msg}")
        notes.append(msg)
    runs = {"mlx": [], "kiln": [], "mlxfile": []}
    errors = {"mlx": [], "kiln": [], "mlxfile": []}
    child_args = dict(case=name, p=case["p"], dir=d, min_time=args.min_time, max_calls=args.max_calls)
    # llama.cpp runs in the same rounds, one llama-bench process next to each kiln process (this machine's
    # speed drifts by 1.5x over minutes: a llama-bench run after all of kiln's had compared different phases).
    llama = case["gguf"] and "llamacpp" not in args.skip_engine and llama_exe
    llama_runs, llama_errs, gguf = [], [], None
    if llama:
        try:
            gguf = ensure_gguf(args, py, case)
        except (RuntimeError, ValueError, KeyError, IndexError) as e:
            llama_errs.append(str(e))
    for r in range(args.repeat):
        # mlxfile: MLX imports the same .mlxfn and calls it once (import and cold start, side by side with kiln's)
        order = ["mlx", "kiln", "llamacpp", "mlxfile"] if r % 2 == 0 else ["llamacpp", "kiln", "mlx", "mlxfile"]
        for eng in order:
            if eng == "llamacpp":
                if gguf:
                    try:
                        llama_runs.append(run_llama_bench(args, llama_exe, gguf, case, reps=2))
                    except (RuntimeError, ValueError, KeyError, IndexError) as e:
                        llama_errs.append(str(e))
                        log(f"[{name}] llama.cpp run {r + 1} FAILED: {str(e)[:300]}")
                continue
            if eng in args.skip_engine or (eng == "mlxfile" and "mlx" in args.skip_engine):
                continue
            res, tail = run_child(py, eng, child_args, args.timeout)
            if res is None:
                errors[eng].append(tail)
                log(f"[{name}] {eng} run {r + 1} FAILED: {tail.strip().splitlines()[-1] if tail.strip() else '?'}")
            else:
                runs[eng].append(res)
    for eng in ("mlx", "kiln", "mlxfile"):
        rs = runs[eng]
        e = dict(runs=rs, errors=errors[eng], stat=summarize([x["median_s"] for x in rs]))
        for k in ("ready_s", "import_s", "lm_import_s", "import_function_s", "build_s", "first_call_s", "cold_s",
                  "peak_rss", "interp_s"):
            vals = [x.get(k) for x in rs if x.get(k) is not None]
            e[k] = median(vals) if k != "peak_rss" else (max(vals) if vals else None)
        c[eng] = e
        if errors[eng] and not rs:
            notes.append(f"{name}: every {eng} run failed: {errors[eng][-1].strip().splitlines()[-1][:300]}")
    k = c["kiln"]
    if k["runs"]:
        k["max_rel_err"] = max(x["max_rel_err"] for x in k["runs"])
        k["primitives"] = k["runs"][-1].get("primitives")
        knotes = k["runs"][-1].get("notes")
        if knotes:
            notes.append(f"{name}: {'; '.join(knotes)}")
        if k["max_rel_err"] > meta["tol"]:
            msg = (f"MISMATCH {name}: kiln's outputs differ from MLX's: max |kiln - MLX| / max |MLX| ="
                   f" {k['max_rel_err']:.3g} > {meta['tol']:g} (per output: "
                   f"{', '.join(f'{x:.2g}' for x in k['runs'][-1]['errs'][:6])})")
            log("!" * 100 + f"\n!!! {msg}\n" + "!" * 100)
            notes.append(msg)
    m = c["mlx"]
    if m["runs"] and max(x["self_check_err"] for x in m["runs"]) > meta["tol"]:
        notes.append(f"{name}: MLX's own rebuilt function differs from the exported reference"
                     f" ({max(x['self_check_err'] for x in m['runs']):.2g})")
    if case["gguf"] and "llamacpp" not in args.skip_engine:
        if llama_exe:
            if llama_runs:
                c["llamacpp"] = merge_llama_runs(llama_runs)
                c["llamacpp"]["gguf_bytes"] = os.path.getsize(gguf)
            else:
                e = llama_errs[-1] if llama_errs else "no run"
                c["llamacpp"] = dict(error=e, error_short="failed")
                log(f"[{name}] llama.cpp FAILED: {e[:500]}")
                notes.append(f"{name}: llama.cpp failed: {e.splitlines()[0][:300]}")
        else:
            c["llamacpp"] = dict(error=llama_err, error_short="not built")
    ms, ks = (c["mlx"].get("stat") or {}), (c["kiln"].get("stat") or {})
    ls = (c.get("llamacpp") or {}).get("stat") or {}
    log(f"[{name}] MLX {fmt_stat(ms or None)}  kiln {fmt_stat(ks or None)}  MLX/kiln"
        f" {fmt_ratio(ms.get('median'), ks.get('median'))}"
        + (f"  llama.cpp {fmt_stat(ls)}" if ls else "")
        + f"  kiln vs MLX: {match_cell(c)}  ({time.time() - t0:.0f} s)")
    return c


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="Cases: " + ", ".join(CASE_NAMES))
    ap.add_argument("--cases", default="all", help="comma list of case names or globs (default: all)")
    ap.add_argument("--repeat", type=int, default=3, help="processes per engine and case (default 3)")
    ap.add_argument("--quick", action="store_true", help="small sizes, for a smoke run")
    ap.add_argument("--json", help="write every figure to this JSON file")
    ap.add_argument("--markdown", help="write the machine and the tables to this Markdown file")
    ap.add_argument("--work", default=os.path.join(ROOT, "build-bench"),
                    help="the work directory: exports, GGUF files, builds (default build-bench/)")
    ap.add_argument("--venv", help="the bench venv (default WORK/venv; created or reused)")
    ap.add_argument("--kiln-build", default=os.path.join(ROOT, "build-kiln-bench"),
                    help="kiln's CMake build directory, kept between runs (default build-kiln-bench/: one level "
                         "below the root, so that ccache shares objects with build/ and build-py/)")
    ap.add_argument("--reinstall", action="store_true", help="reinstall kiln into the venv even if unchanged")
    ap.add_argument("--min-time", type=float, default=1.0,
                    help="timed seconds per process, after one warm-up call (default 1.0; at least 3 calls, "
                         "1 when a call takes over 2 s)")
    ap.add_argument("--max-calls", type=int, default=200, help="at most this many timed calls per process")
    ap.add_argument("--timeout", type=float, default=900, help="seconds before a child process is killed")
    ap.add_argument("--llama-gen", type=int, default=16, help="llama-bench -n for the decode cases (default 16)")
    ap.add_argument("--skip-engine", default="", help="comma list of mlx, kiln, llamacpp to leave out")
    ap.add_argument("--bw-mib", type=int, default=1024, help="MiB streamed by the bandwidth measurement")
    ap.add_argument("--gemm-n", type=int, default=2048, help="n of the n³ float32 GEMM measurement")
    ap.add_argument("--build-nice", type=int, default=19, help="nice level of the setup builds (default 19)")
    ap.add_argument("--jobs", type=int, default=2, help="parallel jobs of the kiln and llama.cpp builds (default 2)")
    ap.add_argument("--list", action="store_true", help="print the cases and exit")
    a = ap.parse_args(argv)
    a.work = os.path.abspath(a.work)
    a.venv = os.path.abspath(a.venv or os.path.join(a.work, "venv"))
    a.kiln_build = os.path.abspath(a.kiln_build)
    a.skip_engine = {s.strip() for s in a.skip_engine.split(",") if s.strip()}
    if a.repeat < 1:
        ap.error("--repeat must be at least 1")
    return a


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    try:
        cases = select_cases(args.cases, args.quick)
    except ValueError as e:
        print(e, file=sys.stderr)
        return 2
    if args.list:
        for c in cases:
            print(f"{c['name']:22s} {c['desc']}")
        return 0
    t_start = time.time()
    os.makedirs(args.work, exist_ok=True)
    logfile = os.path.join(args.work, "setup.log")
    machine = read_machine()
    notes = []
    if args.quick:
        notes.append("--quick: small sizes (a smoke run); the figures are not the benchmark's")
    py = ensure_venv(args, logfile)
    machine["versions"] = venv_versions(py)
    log("[setup] measuring the machine's limits (read bandwidth, float32 GEMM)")
    try:
        limits = combine_limits([dict(measure_limits(args, logfile), when="start")])
    except (RuntimeError, OSError, ValueError) as e:
        limits = None
        notes.append(f"machine limits not measured: {e}")
        log(f"[setup] {e}")
    for line in machine_lines(machine, limits):
        log(line)
    llama_exe, llama_err = None, None
    if any(c["gguf"] for c in cases) and "llamacpp" not in args.skip_engine:
        try:
            llama_exe = ensure_llama_bench(args, py, logfile)
            machine["versions"]["llama.cpp"] = f"llama-cpp-python {LLAMA_CPP_PYTHON_VERSION} sdist's vendor/llama.cpp"
            if cpu_has_amx():
                machine["versions"]["llama.cpp"] += " (without AMX)"
                notes.append(LLAMA_AMX_NOTE)
        except (RuntimeError, OSError, tarfile.TarError) as e:
            llama_err = str(e)
            log(f"[setup] llama.cpp could not be built; its column stays empty. Why: {e}")
            notes.append(f"llama.cpp could not be built: {str(e).splitlines()[0][:300]}")
    results = dict(machine=machine, limits=limits, repeat=args.repeat, quick=args.quick,
                   command="python3 bench/compare.py " + " ".join(sys.argv[1:] if argv is None else argv),
                   date=time.strftime("%Y-%m-%d %H:%M %Z"), cases=[], notes=notes)
    for case in cases:
        results["cases"].append(run_case(args, py, case, limits, llama_exe, llama_err, notes))
    if limits and len(cases) > 1:
        try:  # again at the end: the limits are the best of both (the machine is shared at times)
            limits = combine_limits([dict(limits["runs"][0]), dict(measure_limits(args, logfile), when="end")])
            results["limits"] = limits
        except (RuntimeError, OSError, ValueError) as e:
            notes.append(f"machine limits not measured again at the end: {e}")
    machine["load_end"] = load_avg()
    results["total_s"] = time.time() - t_start
    md = render_markdown(results)
    print("\n" + md)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(md)
    bad = [c["name"] for c in results["cases"] if match_cell(c).startswith(("MISMATCH", "ERROR"))]
    if bad:
        print(f"\n!!! kiln's outputs did not match MLX's (or the case failed) in: {', '.join(bad)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
