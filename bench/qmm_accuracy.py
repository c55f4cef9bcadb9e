"""The error of a decode-sized 4-bit product against float64, pip MLX's and kiln's, on the same inputs.

Issue 12 asks that where kiln uses integer dot products (its AVX-512 VNNI decode kernel puts x in byte
planes: src/backend/cpu/kernels/quantized/qmm_simd.h) the error against a float64 reference stays at most
MLX's own on the same inputs. This script measures both: MLX quantizes a random weight matrix (4-bit affine,
groups of 64), both engines multiply the same codes, scales and biases with the same x, and the reference is
the codes decoded and multiplied in float64 (NumPy). x comes in the kinds a decoder feeds its products:
Gaussian (after a norm), heavy-tailed (a product of Gaussians times a log-normal), one-signed, SiLU-gated,
and Gaussian with one outlier 1000 times the rest in every 64 elements.

Run it in the bench venv, which has both (bench/compare.py makes it):
    build-bench/venv/bin/python bench/qmm_accuracy.py [--markdown FILE]
It prints, per shape and kind of x, the root mean square and the largest |y - ref| of each engine, and
exits 1 if kiln's is above MLX's anywhere (rms or max).
"""
import argparse
import sys

import numpy as np


def decode(wq, scales, biases, n, k, gs):
    """The 4-bit codes of MLX's packing (8 per uint32, code i at bits 4i) as float64 weights."""
    words = np.asarray(wq, dtype=np.uint32).reshape(n, k // 8)
    codes = np.stack([(words >> (4 * i)) & 15 for i in range(8)], axis=-1).reshape(n, k).astype(np.float64)
    s = np.repeat(np.asarray(scales, dtype=np.float64).reshape(n, k // gs), gs, axis=1)
    b = np.repeat(np.asarray(biases, dtype=np.float64).reshape(n, k // gs), gs, axis=1)
    return codes * s + b


def x_kinds(k, rng):
    a, b, c = (rng.standard_normal(k) for _ in range(3))
    out = {
        "gaussian": a,
        "heavy-tailed": a * b * np.exp(c),
        "one-signed": np.abs(a),
        "silu-gated": a / (1 + np.exp(-a)) * b,
    }
    o = a.copy()
    o[5::64] *= 1000
    out["outliers"] = o
    return {name: v.astype(np.float32) for name, v in out.items()}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--markdown", help="also write the table to this file")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    import kiln
    import mlx.core as mx

    rng = np.random.default_rng(args.seed)
    gs, n = 64, 512
    rows = []
    worse = []
    for k in (1024, 2816):
        w = (rng.standard_normal((n, k)) * 0.02).astype(np.float32)
        wq, s, b = mx.quantize(mx.array(w), group_size=gs, bits=4)
        wq_np, s_np, b_np = np.asarray(wq), np.asarray(s), np.asarray(b)
        W = decode(wq_np, s_np, b_np, n, k, gs)
        kw, ks, kb = kiln.array(wq_np), kiln.array(s_np), kiln.array(b_np)
        for name, x in x_kinds(k, rng).items():
            ref = W @ x.astype(np.float64)
            y_mlx = np.asarray(mx.quantized_matmul(mx.array(x[None]), wq, s, b, transpose=True, group_size=gs,
                                                   bits=4)).astype(np.float64).ravel()
            y_kiln = np.asarray(kiln.quantized_matmul(kiln.array(x[None]), kw, ks, kb, transpose=True,
                                                      group_size=gs, bits=4)).astype(np.float64).ravel()
            e_m, e_k = np.abs(y_mlx - ref), np.abs(y_kiln - ref)
            r = dict(k=k, kind=name, mlx_rms=float(np.sqrt(np.mean(e_m ** 2))), mlx_max=float(e_m.max()),
                     kiln_rms=float(np.sqrt(np.mean(e_k ** 2))), kiln_max=float(e_k.max()),
                     scale=float(np.abs(ref).max()))
            rows.append(r)
            if r["kiln_rms"] > r["mlx_rms"] or r["kiln_max"] > r["mlx_max"]:
                worse.append(f"K={k} {name}")
    lines = ["| K | x | max abs(ref) | MLX rms | kiln rms | MLX max | kiln max |",
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['k']} | {r['kind']} | {r['scale']:.3g} | {r['mlx_rms']:.3g} | {r['kiln_rms']:.3g} | "
                     f"{r['mlx_max']:.3g} | {r['kiln_max']:.3g} |")
    text = "\n".join(lines)
    print(f"x · Wᵀ, W {n} x K 4-bit affine (groups of {gs}), one row of x; |y - ref| against float64 "
          f"(mlx {mx.__version__}, kiln {getattr(kiln, '__version__', '?')})")
    print(text)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(text + "\n")
    if worse:
        print("kiln's error is above MLX's for: " + ", ".join(worse))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
