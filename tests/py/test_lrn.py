#!/usr/bin/python3
"""LRN (local response normalization: AlexNet's, GoogLeNet v1's, Caffe models') trained by
outcore-run against PyTorch autograd in float64. outcore rewrites the ONNX LRN node at load
into Mul, an AveragePool over a window of channels, Add, Pow and Div (ir/ops/op_space.c);
PyTorch's exporters write nn.LocalResponseNorm as their own decomposition, so the model here
is built with onnx.helper: Conv -> LRN(size 5, odd: PyTorch's and ONNX's windows agree) ->
Relu -> GlobalAveragePool -> Flatten -> Gemm, weights from a seed. One SGD step (lr 0.5, no
momentum or decay) on both sides; the loss and every updated weight within 1e-4 relative of
PyTorch's float64 step, and the weights moved (by more than 1e-3 relative: the check can
fail). Debian's torch (python3-torch) is enough."""
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
import torch
import torch.nn.functional as F
from onnx import TensorProto, helper, numpy_helper

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RUN = os.path.join(ROOT, os.environ.get("BUILD", "build"), "outcore-run")
SIZE, ALPHA, BETA, BIAS, LR = 5, 0.02, 0.75, 1.5, 0.5


def main():
    rng = np.random.default_rng(3)
    w = {"conv.w": rng.standard_normal([8, 3, 3, 3]) * 0.5, "conv.b": rng.standard_normal(8) * 0.1,
         "fc.w": rng.standard_normal([10, 8]) * 0.5, "fc.b": rng.standard_normal(10) * 0.1}
    w = {k: v.astype(np.float32) for k, v in w.items()}
    x = rng.standard_normal([4, 3, 9, 9]).astype(np.float32)
    y = rng.integers(0, 10, 4).astype(np.int64)
    nodes = [helper.make_node("Conv", ["input", "conv.w", "conv.b"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("LRN", ["c"], ["n"], size=SIZE, alpha=ALPHA, beta=BETA, bias=BIAS),
             helper.make_node("Relu", ["n"], ["r"]),
             helper.make_node("GlobalAveragePool", ["r"], ["p"]),
             helper.make_node("Flatten", ["p"], ["f"]),
             helper.make_node("Gemm", ["f", "fc.w", "fc.b"], ["logits"], transB=1)]
    graph = helper.make_graph(
        nodes, "lrn", [helper.make_tensor_value_info("input", TensorProto.FLOAT, [4, 3, 9, 9])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [4, 10])],
        [numpy_helper.from_array(v, k) for k, v in w.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 7
    with tempfile.TemporaryDirectory() as tmp:
        path, xp, yp, saved = (os.path.join(tmp, f) for f in
                               ("lrn.onnx", "x.pb", "y.pb", "trained.onnx"))
        onnx.save(model, path)
        onnx.save_tensor(numpy_helper.from_array(x, "input"), xp)
        onnx.save_tensor(numpy_helper.from_array(y, "labels"), yp)
        r = subprocess.run([RUN, path, "--backend", "cpu", "--batch", "4", "--steps", "1",
                            "--lr", str(LR), "--momentum", "0", "--weight-decay", "0",
                            "--input", xp, "--labels", yp, "--save", saved],
                           capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit(f"test_lrn: outcore-run failed:\n{r.stderr}")
        loss = float([ln for ln in r.stdout.splitlines() if ln.startswith("step 0 loss")][0]
                     .split()[3])
        got = {t.name: numpy_helper.to_array(t) for t in onnx.load(saved).graph.initializer}
    t = {k: torch.tensor(v, dtype=torch.float64, requires_grad=True) for k, v in w.items()}
    h = F.conv2d(torch.tensor(x, dtype=torch.float64), t["conv.w"], t["conv.b"], padding=1)
    h = F.relu(F.local_response_norm(h, SIZE, ALPHA, BETA, BIAS))
    logits = h.mean((2, 3)) @ t["fc.w"].T + t["fc.b"]
    ref = F.cross_entropy(logits, torch.tensor(y))
    ref.backward()
    failures = []
    rel = lambda a, b: float(np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-30))
    err = abs(loss - ref.item()) / abs(ref.item())
    print(f"{'ok  ' if err < 1e-4 else 'FAIL'} LRN loss {loss:.6f} vs PyTorch float64 "
          f"{ref.item():.6f} ({err:.1e})")
    if not err < 1e-4:
        failures.append("loss")
    for k in w:
        want = (t[k] - LR * t[k].grad).detach().numpy()
        e, moved = rel(got[k], want), rel(want, w[k].astype(np.float64))
        ok = e < 1e-4 and moved > 1e-3
        print(f"{'ok  ' if ok else 'FAIL'} LRN {k:7s} after one step within {e:.1e} of PyTorch "
              f"float64 (moved {moved:.1e})")
        if not ok:
            failures.append(k)
    if failures:
        sys.exit(f"test_lrn: FAILED: {failures}")
    print("test_lrn: all passed")


if __name__ == "__main__":
    main()
