"""Smoke test of bench/compare.py's pure parts: the case list, the selection, the statistics and the tables.
Needs neither MLX nor the bench venv, and times nothing. Run: python3 -m pytest -q bench/test_compare.py"""

import json
import os
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare as C  # noqa: E402


def test_case_list_is_complete_and_unique():
    names = C.CASE_NAMES
    assert len(names) == len(set(names))
    for must in ("ewise_chain_1M", "ewise_chain_16M", "softmax_256x4096", "logsumexp_256x4096",
                 "layernorm_256x4096", "rmsnorm_256x4096", "decoder_4layer", "mlp", "convnet",
                 "llama_f32_decode", "llama_f32_prefill", "llama_bf16_decode", "llama_bf16_prefill",
                 "llama_q4_decode", "llama_q4_prefill", "moe_q4_decode"):
        assert must in names
    for name, desc, full, quick, gguf in C.CASES:
        assert desc and full["kind"] == quick["kind"]
        assert json.loads(json.dumps(full)) == full  # the parameters travel to the child as JSON
        if name.startswith("llama_"):
            assert gguf in ("F32", "BF16", "Q4_0")
            assert full["arch"] == "llama"
        if full["kind"] == "lm" and full["mode"] == "decode":
            assert full["ctx"] == 256
        if full["kind"] == "lm" and full["mode"] == "prefill":
            assert full["prompt"] == 128


def test_llama_shape_is_the_issue_s():
    p = dict(C.select_cases("llama_f32_decode")[0]["p"])
    assert (p["hidden"], p["layers"], p["intermediate"], p["heads"], p["kv_heads"], p["head_dim"], p["vocab"]) == \
        (1024, 8, 2816, 16, 4, 64, 32000)
    q4 = C.select_cases("llama_q4_decode")[0]["p"]
    assert q4["quant"] == {"group_size": 64, "bits": 4}


def test_select_cases():
    assert [c["name"] for c in C.select_cases("all")] == C.CASE_NAMES
    assert [c["name"] for c in C.select_cases("")] == C.CASE_NAMES
    got = [c["name"] for c in C.select_cases("mlp, llama_*_decode")]
    assert got == ["mlp", "llama_f32_decode", "llama_bf16_decode", "llama_q4_decode"]  # CASES order
    assert [c["name"] for c in C.select_cases("convnet,convnet")] == ["convnet"]
    with pytest.raises(ValueError, match="names no case"):
        C.select_cases("nope*")
    full = C.select_cases("ewise_chain_16M")[0]["p"]["n"]
    quick = C.select_cases("ewise_chain_16M", quick=True)[0]["p"]["n"]
    assert quick < full


def test_median_and_summary():
    assert C.median([3.0, 1.0, 2.0]) == 2.0
    assert C.median([4.0, 1.0, 2.0, 3.0]) == 2.5
    assert C.median([None, 5.0]) == 5.0
    assert C.median([]) is None
    s = C.summarize([0.010, 0.012, 0.011])
    assert s["median"] == 0.011 and s["min"] == 0.010 and s["max"] == 0.012 and s["n"] == 3
    assert abs(s["spread"] - 0.001 / 0.011) < 1e-12
    assert C.summarize([]) is None


def test_formatting():
    assert C.fmt_time(None) == "—"
    assert C.fmt_time(2.5) == "2.50 s"
    assert C.fmt_time(0.0123) == "12.3 ms"
    assert C.fmt_time(0.00123) == "1.23 ms"
    assert C.fmt_time(45e-6) == "45 µs"
    assert C.fmt_ratio(0.1, 0.04) == "2.50×"
    assert C.fmt_ratio(10.0, 0.2) == "50.0×"
    assert C.fmt_ratio(None, 1.0) == "—" and C.fmt_ratio(1.0, 0) == "—"
    assert C.fmt_bytes(3 << 20) == "3.0 MiB"
    assert C.fmt_pct(0.456) == "46%" and C.fmt_pct(0.0123) == "1.2%"
    assert C.fmt_stat(C.summarize([1.0, 1.1, 0.9])) == "1.00 s ±10%"
    assert C.fmt_stat(C.summarize([0.5])) == "500 ms"


def test_limit_fraction():
    limits = {"read_gbs": 10.0, "gemm_gflops": 100.0}
    assert C.limit_fraction({"bound": "bandwidth", "min_bytes": 1e9}, 0.2, limits) == pytest.approx(0.5)
    assert C.limit_fraction({"bound": "gemm", "flops": 50e9}, 1.0, limits) == pytest.approx(0.5)
    assert C.limit_fraction({"bound": "gemm", "flops": 1e9}, None, limits) is None
    assert C.limit_fraction({"bound": "gemm", "flops": 1e9}, 1.0, None) is None


def fake_results():
    def eng(ms, **kw):
        return dict(runs=[{}], stat=C.summarize(ms), **kw)

    return dict(
        machine=dict(cpu="Test CPU", cores=2, mem_bytes=8 << 30, flags="avx2", os="Linux", load_start="0.1 0.1 0.1",
                     load_end="0.2 0.2 0.2", versions={"mlx": "0.30.1"}),
        limits=dict(read_gbs=40.0, read_gbs_mean=39.0, read_gbs_1thread=20.0, threads=2, read_bytes=1 << 30,
                    passes=8, gemm_gflops=100.0, gemm_n=2048, openblas_config="OpenBLAS 0.3.21", openblas_threads=2),
        repeat=3, command="python3 bench/compare.py", date="2025-01-01", total_s=12.0, notes=["a note"],
        cases=[
            dict(name="llama_q4_decode", gguf="Q4_0",
                 meta=dict(bound="bandwidth", min_bytes=80e6, tol=2e-3, file_bytes=100 << 20),
                 mlx=eng([0.1, 0.11, 0.09], ready_s=3.0, import_s=1.0, peak_rss=900 << 20),
                 kiln=eng([0.03, 0.031], ready_s=0.4, import_s=0.1, import_function_s=0.05, peak_rss=300 << 20,
                          max_rel_err=1e-6),
                 llamacpp=dict(stat=C.summarize([0.0033]), type="Q4_0", threads=2, peak_rss=200 << 20)),
            dict(name="mlp", gguf=None, meta=dict(bound="gemm", flops=12.9e9, tol=1e-3),
                 mlx=eng([0.2]), kiln=eng([0.15], max_rel_err=0.5)),
        ])


def test_tables_and_markdown():
    res = fake_results()
    timing, process = C.results_tables(res)
    lines = timing.splitlines()
    assert lines[0].startswith("| case") and set(lines[1]) <= set("|-")
    assert len(lines) == 4 and all(len(x) == len(lines[0]) for x in lines)  # padded columns
    row = lines[2]
    assert "100 ms ±10%" in row and "30.5 ms" in row and "3.28×" in row and "3.30 ms (Q4_0, t2)" in row
    assert "ok (1e-06)" in row
    assert "MISMATCH" in lines[3] and "n/a" in lines[3]
    # fractions: 80 MB / 30.5 ms = 2.6 GB/s of 40 GB/s
    assert "6.6%" in row
    assert "900 MiB" in process and "300 MiB" in process and "100 MiB" in process
    md = C.render_markdown(res)
    assert "Test CPU" in md and "40.0 GB/s" in md and "100.0 GFLOP/s" in md and "a note" in md
    assert "## Calls" in md and "## Processes" in md


def test_cli_list_runs_without_mlx():
    here = os.path.dirname(os.path.abspath(__file__))
    r = subprocess.run([sys.executable, os.path.join(here, "compare.py"), "--list", "--cases", "llama_*"],
                       capture_output=True, text=True, check=True)
    assert r.stdout.count("\n") == 6 and "llama_q4_prefill" in r.stdout
    r = subprocess.run([sys.executable, os.path.join(here, "compare.py"), "--list", "--cases", "zzz"],
                       capture_output=True, text=True)
    assert r.returncode == 2 and "names no case" in r.stderr


def test_combine_limits_takes_the_best_of_each():
    a = dict(read_gbs=10.0, gemm_gflops=90.0, gemm_n=2048, when="start")
    b = dict(read_gbs=12.0, gemm_gflops=80.0, gemm_n=2048, when="end")
    c = C.combine_limits([a, b])
    assert c["read_gbs"] == 12.0 and c["gemm_gflops"] == 90.0
    assert [r["when"] for r in c["runs"]] == ["start", "end"]


def test_merge_llama_runs_pools_samples_per_thread_count():
    def run(t2, t1, rss):
        return dict(cmd="llama-bench", stat=None, threads=2, peak_rss=rss, type="Q4_0",
                    by_threads=[dict(threads=2, samples_s=t2, stat=C.summarize(t2)),
                                dict(threads=1, samples_s=t1, stat=C.summarize(t1))])
    m = C.merge_llama_runs([run([4.0, 5.0], [9.0, 9.5], 100), run([3.0, 4.5], [8.0, 8.5], 120)])
    assert m["processes"] == 2 and m["peak_rss"] == 120 and m["threads"] == 2
    by = {t["threads"]: t for t in m["by_threads"]}
    assert sorted(by[2]["samples_s"]) == [3.0, 4.0, 4.5, 5.0] and by[2]["stat"]["median"] == 4.25
    assert by[1]["stat"]["n"] == 4 and m["stat"] == by[2]["stat"]
    # One thread faster overall: it is the one shown.
    m1 = C.merge_llama_runs([run([9.0], [2.0], 1)])
    assert m1["threads"] == 1 and m1["stat"]["median"] == 2.0
