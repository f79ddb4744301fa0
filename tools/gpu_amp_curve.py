#!/usr/bin/env python3
"""A mixed-precision loss curve: outcore-run --precision against PyTorch AMP, from the same
weights on the same batch (tools/gpu-check --precision; issue 23's "100-step loss curve").

    gpu_amp_curve.py MODEL SIZE BATCH STEPS --run build/outcore-run --out DIR
                     [--device cuda|cpu] [--precision bf16|fp16]

MODEL is exported with its weights (tools/export_models.py, opset 13) and loaded into PyTorch by
name; one random batch (seed 123) is trained on for STEPS SGD steps (lr 0.01, momentum 0.9,
weight decay 1e-4) three times: PyTorch under torch.autocast (GradScaler for fp16), PyTorch in
float32 (the spread mixed precision itself causes), and outcore-run --precision on the backend
matching --device. Writes DIR/amp_curve.csv; prints one line: the largest per-step loss
difference outcore vs PyTorch AMP, PyTorch AMP vs float32, and the last losses. Exit 0 when
outcore lies within max(1e-2, 1.5 x that spread) of PyTorch AMP at every step.
"""
import argparse
import os
import subprocess
import sys

import numpy as np
import onnx
import torch
from onnx import numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import export_models  # noqa: E402
import torch_amp  # noqa: E402

LR, MOMENTUM, WD = 0.01, 0.9, 1e-4


def torch_curve(model, x, y, steps, precision):
    opt = torch.optim.SGD(model.parameters(), lr=LR, momentum=MOMENTUM, weight_decay=WD)
    scaler = torch_amp.scaler_for(precision, x.device.type)
    out = []
    for _ in range(steps):
        opt.zero_grad(set_to_none=True)
        with torch_amp.autocast(x.device.type, torch_amp.dtype_of(precision)):
            loss = torch.nn.functional.cross_entropy(model(x), y)
        torch_amp.step(loss, opt, scaler)
        out.append(loss.item())
    return out


def main():
    p = argparse.ArgumentParser()
    p.add_argument("model")
    p.add_argument("size", type=int)
    p.add_argument("batch", type=int)
    p.add_argument("steps", type=int)
    p.add_argument("--run", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--device", default="cuda")
    p.add_argument("--precision", default="bf16", choices=("bf16", "fp16"))
    a = p.parse_args()
    os.makedirs(a.out, exist_ok=True)
    args = export_models.parse_args(["--models", a.model, "--opset", "13", "--image-size",
                                     str(a.size), "--batch", "2", "--out", a.out])
    export_models.export_one(a.model, 13, args)
    path = os.path.join(a.out, f"{a.model}_op13.onnx")
    inits = {t.name: numpy_helper.to_array(t) for t in onnx.load(path).graph.initializer}
    dev = torch.device(a.device)

    def fresh():
        torch.manual_seed(0)
        m = export_models.build_model(a.model, a.size).train()
        state = m.state_dict()
        m.load_state_dict({k: torch.from_numpy(inits[k].copy()) if k in inits else v
                           for k, v in state.items()})
        return m.to(dev)

    torch.backends.cudnn.allow_tf32 = True  # outcore-run's defaults
    torch.backends.cuda.matmul.allow_tf32 = False
    g = torch.Generator().manual_seed(123)
    x = torch.randn(a.batch, 3, a.size, a.size, generator=g)
    classes = fresh().eval()(x[:1].to(dev)).shape[1]
    y = torch.randint(0, classes, (a.batch,), generator=g)
    xp, yp = os.path.join(a.out, "x.pb"), os.path.join(a.out, "y.pb")
    onnx.save_tensor(numpy_helper.from_array(x.numpy(), "input"), xp)
    onnx.save_tensor(numpy_helper.from_array(y.numpy().astype(np.int64), "labels"), yp)
    t_amp = torch_curve(fresh(), x.to(dev), y.to(dev), a.steps, a.precision)
    t_32 = torch_curve(fresh(), x.to(dev), y.to(dev), a.steps, "fp32")
    r = subprocess.run([a.run, path, "--backend", "cuda" if dev.type == "cuda" else "cpu",
                        "--batch", str(a.batch), "--steps", str(a.steps), "--lr", str(LR),
                        "--momentum", str(MOMENTUM), "--weight-decay", str(WD), "--input", xp,
                        "--labels", yp, "--precision", a.precision],
                       capture_output=True, text=True)
    ours = [float(l.split()[3]) for l in r.stdout.splitlines() if l.startswith("step ")]
    if r.returncode != 0 or len(ours) != a.steps:
        print(f"outcore-run failed: {r.stderr[-400:]}")
        return 1
    with open(os.path.join(a.out, "amp_curve.csv"), "w") as f:
        f.write(f"step,outcore_{a.precision},torch_{a.precision},torch_float32\n")
        for i in range(a.steps):
            f.write(f"{i},{ours[i]:.6f},{t_amp[i]:.6f},{t_32[i]:.6f}\n")
    d = max(abs(o - t) for o, t in zip(ours, t_amp))
    spread = max(abs(t - u) for t, u in zip(t_amp, t_32))
    ok = d <= max(1e-2, 1.5 * spread)
    print(f"{a.steps} steps: max |outcore - torch {a.precision}| {d:.3e}, torch {a.precision} vs "
          f"float32 {spread:.3e}; last loss outcore {ours[-1]:.4f} torch {a.precision} "
          f"{t_amp[-1]:.4f} float32 {t_32[-1]:.4f}: {'within' if ok else 'NOT within'} "
          f"max(1e-2, 1.5 x spread)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
