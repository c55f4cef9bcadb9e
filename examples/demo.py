"""kiln's Python demo (scripts/demo.sh): MLX code run with `import kiln as mx`, exported, imported and
compared with real MLX where it is installed.

    python examples/demo.py OUT_DIR
"""

import os
import sys

import numpy as np

import kiln as mx  # the MLX API on kiln


def mlp(params):
    def f(x):
        h = mx.maximum(x @ params["w1"] + params["b1"], 0.0)
        return mx.softmax(h @ params["w2"] + params["b2"], axis=-1)
    return f


def main(out_dir):
    os.makedirs(out_dir, exist_ok=True)
    rng = np.random.default_rng(0)
    params = {
        "w1": mx.array(rng.standard_normal((8, 16)).astype(np.float32)),
        "b1": mx.zeros((16,)),
        "w2": mx.array(rng.standard_normal((16, 4)).astype(np.float32)),
        "b2": mx.zeros((4,)),
    }
    x = mx.array(rng.standard_normal((2, 8)).astype(np.float32))

    # 1. Weights as safetensors, the function as an .mlxfn file (shapeless: any batch size).
    weights = os.path.join(out_dir, "mlp.safetensors")
    mx.save_safetensors(weights, params, metadata={"model": "demo-mlp"})
    path = os.path.join(out_dir, "mlp_py.mlxfn")
    mx.export_function(path, mlp(mx.load(weights)), x, shapeless=True)
    info = mx.inspect(path)
    fn = info["functions"][0]
    print(f"kiln exported {path}: MLX {info['version']} layout, shapeless={info['shapeless']}, "
          f"{fn['primitives']} primitives {dict(fn['primitive_histogram'])}, {info['constants']} constants")

    # 2. Import and run it at two batch sizes.
    f = mx.import_function(path)
    (y,) = f(x)
    print("kiln:", y)
    (y5,) = f(np.ones((5, 8), np.float32))
    print("kiln, batch of 5:", y5.shape)
    assert np.allclose(np.array(y).sum(axis=-1), 1.0, atol=1e-5)

    # 3. Real MLX, when it is installed: it runs kiln's file, and kiln runs MLX's.
    try:
        import mlx.core as mlx
    except ImportError:
        print("(mlx is not installed here: skipping the comparison with real MLX)")
        return
    (y_mlx,) = mlx.import_function(path)(mlx.array(np.array(x)))
    print("MLX", mlx.__version__, "runs kiln's file: max |diff| =", float(np.abs(np.array(y_mlx) - np.array(y)).max()))
    mlx_path = os.path.join(out_dir, "mlp_mlx.mlxfn")
    p = {k: mlx.array(np.array(v)) for k, v in params.items()}
    mlx.export_function(mlx_path, lambda a: mlx.softmax(mlx.maximum(a @ p["w1"] + p["b1"], 0.0) @ p["w2"] + p["b2"],
                                                        axis=-1), mlx.array(np.array(x)))
    (y_k,) = mx.import_function(mlx_path)(x)
    print("kiln runs MLX's file: max |diff| =", float(np.abs(np.array(y_k) - np.array(y)).max()))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "demo-out")
