"""A 4-bit MLP (affine, group 64) exported to .mlxfn with kiln, converted to ONNX with kiln.to_onnx, run in
ONNX Runtime and compared with kiln's own output; the graph is drawn with `kiln dot`.

    PYTHONPATH=build/python python examples/onnx_q4_mlp.py OUT_DIR     (needs numpy, onnxruntime)
"""
import os
import subprocess
import sys

import numpy as np
import kiln as mx

out = sys.argv[1] if len(sys.argv) > 1 else "onnx_q4_mlp"
os.makedirs(out, exist_ok=True)
rng = np.random.default_rng(0)
# Weights of a 256 -> 512 -> 256 MLP with a SiLU gate, quantized to 4 bits (group 64) as mlx-lm does.
layers = []
for n_in, n_out in [(256, 512), (256, 512), (512, 256)]:
    w = mx.array(rng.standard_normal((n_out, n_in)).astype(np.float32) / np.sqrt(n_in))
    layers.append(mx.quantize(w, group_size=64, bits=4))
mx.eval(layers)  # the packed weights become constants of the file (not a Quantize node in the graph)


def mlp(x):
    (wg, sg, bg), (wu, su, bu), (wd, sd, bd) = layers
    g = mx.quantized_matmul(x, wg, sg, bg, transpose=True, group_size=64, bits=4)
    u = mx.quantized_matmul(x, wu, su, bu, transpose=True, group_size=64, bits=4)
    h = g * mx.sigmoid(g) * u
    return mx.quantized_matmul(h, wd, sd, bd, transpose=True, group_size=64, bits=4)


x = mx.array(rng.standard_normal((4, 256)).astype(np.float32))
fn_path, onnx_path = os.path.join(out, "mlp_q4.mlxfn"), os.path.join(out, "mlp_q4.onnx")
mx.export_function(fn_path, mlp, x)
mx.to_onnx(fn_path, onnx_path)
ours = np.array(mx.import_function(fn_path)(x)[0])

import onnxruntime as ort  # noqa: E402

sess = ort.InferenceSession(onnx_path, providers=["CPUExecutionProvider"])
theirs = sess.run(None, {"arg0": np.array(x)})[0]
print("ONNX ops:", sorted({n.op_type for n in __import__("onnx").load(onnx_path).graph.node}))
print("kiln        out[0, :4] =", np.round(ours[0, :4], 5))
print("onnxruntime out[0, :4] =", np.round(theirs[0, :4], 5))
print("max |kiln - onnxruntime| = %.2e over %d values" % (np.abs(ours - theirs).max(), ours.size))
kiln_cli = os.path.join(os.path.dirname(mx.__file__), "bin", "kiln")
if os.path.exists(kiln_cli):
    subprocess.run([kiln_cli, "dot", fn_path, "-o", os.path.join(out, "mlp_q4.svg")], check=True)
    print("graph:", os.path.join(out, "mlp_q4.svg"))
