#!/usr/bin/python3
"""--precision bf16 on outcore-run's cpu backend against PyTorch's CPU autocast (bfloat16).

For resnet18 (64x64, batch 8), googlenet_small and the U-Net (32x32, batch 2), and pad_small
(reflect and edge padding, 32x32, batch 8), exported with weights: PyTorch trains under torch.autocast("cpu", torch.bfloat16) (convolutions and linears in
bfloat16, cross-entropy in float32, BatchNorm on bfloat16 activations with float32 statistics,
float32 parameters and SGD), and once in float32; outcore-run with --precision bf16, on the same
batch for 10 steps. Relative errors |a - b| / |b| (norms for tensors). bfloat16 keeps 8 bits
(~4e-3 per rounding) and the two sides round different sums (oneDNN's and ours), so beyond the
first forward the reference for "equal" is how far PyTorch's own bf16 run lies from its fp32 run
("bf16's spread"); a test tolerance is the larger of a fixed bound and 1.5 x that spread:
  - loss of step 1 within 1e-3; loss of step 10 within max(1e-2, 1.5 x spread);
  - step-0 gradient of every parameter within max(5e-2, 1.5 x spread);
  - every float32 master weight's change over the 10 steps (w10 - w0) within max(5e-2, 1.5 x
    spread) of PyTorch's bf16 run;
  - bf16 is really computed: outcore's step-1 loss and its step-0 gradients (median over
    parameters) lie at least a quarter of bf16's spread from PyTorch's fp32 (an fp32 run lies
    within ~1e-6 of it and fails).
Prints one line per model and check with the worst error.
"""
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
import torch
from onnx import numpy_helper

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tools"))
import export_models  # noqa: E402

BUILD = os.environ.get("BUILD", "build")
RUN = os.path.join(ROOT, BUILD, "outcore-run")
LOSS1_TOL, LOSS_TOL, TENSOR_TOL, SPREAD = 1e-3, 1e-2, 5e-2, 1.5
LR, MOMENTUM, WD, STEPS = 0.001, 0.9, 1e-4, 10
MODELS = [("resnet18", 64, 8), ("googlenet_small", 32, 2), ("unet", 32, 2), ("pad_small", 32, 8)]
failures = []


def rel(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    nb = np.linalg.norm(b)
    return float(np.linalg.norm(a - b) / (nb if nb > 0 else 1.0))


def report(model, what, rows):
    """rows: (name, error, tolerance)."""
    name, worst, _ = max(rows, key=lambda r: r[1] / r[2])
    bad = [r for r in rows if not r[1] <= r[2]]
    print(f"{'ok  ' if not bad else 'FAIL'} {model:16s} {what:32s} {len(rows):4d} tensors, worst "
          f"{worst:.2e} ({name}), tolerances {min(r[2] for r in rows):.1e}..{max(r[2] for r in rows):.1e}")
    for n, e, t in bad:
        failures.append(f"{model}: {what} '{n}' {e:.3e} > {t:.3e}")


def torch_run(model, x, y, bf16):
    """Losses per step, step-0 gradients and the final state_dict (autocast when bf16)."""
    opt = torch.optim.SGD(model.parameters(), lr=LR, momentum=MOMENTUM, weight_decay=WD)
    losses, grads0 = [], None
    for _ in range(STEPS):
        opt.zero_grad()
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        if grads0 is None:
            grads0 = {n: p.grad.detach().numpy().copy() for n, p in model.named_parameters()}
        losses.append(loss.item())
        opt.step()
    return losses, grads0, {k: v.detach().numpy().copy() for k, v in model.state_dict().items()
                            if "num_batches_tracked" not in k}


def outcore_run(path, tmp, x, y):
    xp, yp = os.path.join(tmp, "x.pb"), os.path.join(tmp, "y.pb")
    onnx.save_tensor(numpy_helper.from_array(x, "input"), xp)
    onnx.save_tensor(numpy_helper.from_array(y, "labels"), yp)
    saved, dump = os.path.join(tmp, "trained.onnx"), os.path.join(tmp, "dump")
    cmd = [RUN, path, "--backend", "cpu", "--batch", str(x.shape[0]), "--steps", str(STEPS),
           "--lr", str(LR), "--momentum", str(MOMENTUM), "--weight-decay", str(WD),
           "--input", xp, "--labels", yp, "--precision", "bf16", "--save", saved,
           "--dump-grads", dump]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{r.stdout}{r.stderr}")
    losses = [float(line.split()[3]) for line in r.stdout.splitlines()
              if line.startswith("step ") and " loss " in line]
    grads = {}
    for f in os.listdir(os.path.join(dump, "grads")):
        t = onnx.load_tensor(os.path.join(dump, "grads", f))
        grads[t.name] = numpy_helper.to_array(t)
    trained = {t.name: numpy_helper.to_array(t) for t in onnx.load(saved).graph.initializer}
    return losses, grads, trained


def compare(name, image_size, batch, tmp):
    args = export_models.parse_args(["--models", name, "--opset", "13", "--image-size",
                                     str(image_size), "--batch", str(batch), "--out", tmp])
    export_models.export_one(name, 13, args)
    path = os.path.join(tmp, f"{name}_op13.onnx")
    inits = {t.name: numpy_helper.to_array(t) for t in onnx.load(path).graph.initializer}

    def fresh():
        torch.manual_seed(0)
        m = export_models.build_model(name, image_size).train()
        state = m.state_dict()
        m.load_state_dict({k: (torch.from_numpy(inits[k].copy()) if k in inits else v)
                           for k, v in state.items()})
        return m

    g = torch.Generator().manual_seed(123)
    x = torch.randn(batch, 3, image_size, image_size, generator=g)
    head = [m for m in fresh().modules() if isinstance(m, (torch.nn.Linear, torch.nn.Conv2d))][-1]
    c = head.out_features if isinstance(head, torch.nn.Linear) else head.out_channels
    y = torch.randint(0, c, (batch,), generator=g)
    params = [k for k, _ in fresh().named_parameters()]
    b_loss, b_grad, b_state = torch_run(fresh(), x, y, True)
    f_loss, f_grad, f_state = torch_run(fresh(), x, y, False)
    ours, grads, trained = outcore_run(path, tmp, x.numpy(), y.numpy().astype(np.int64))
    if os.environ.get("VERBOSE"):
        for i in range(len(ours)):
            print(f"  step {i + 1}: ours {ours[i]:.6f} torch bf16 {b_loss[i]:.6f} fp32 {f_loss[i]:.6f}")
    if len(ours) != STEPS or any(k not in grads or k not in trained for k in params):
        failures.append(f"{name}: outcore-run gave {len(ours)} losses, not {STEPS}, or lacks "
                        f"parameters: {[k for k in params if k not in grads or k not in trained][:5]}")
        return

    def tol(ours_err, spread):
        return ours_err, max(TENSOR_TOL, SPREAD * spread)

    report(name, "loss, step 1 / step 10",
           [("step 1", rel(ours[0], b_loss[0]), LOSS1_TOL),
            ("step 10", rel(ours[-1], b_loss[-1]),
             max(LOSS_TOL, SPREAD * rel(f_loss[-1], b_loss[-1])))])
    report(name, "gradients (step 0)",
           [(k, *tol(rel(grads[k], b_grad[k]), rel(f_grad[k], b_grad[k]))) for k in params])
    report(name, f"master weight change, {STEPS} steps",
           [(k, *tol(rel(trained[k] - inits[k], b_state[k] - inits[k]),
                     rel(f_state[k] - inits[k], b_state[k] - inits[k]))) for k in params])
    seen = [("loss", rel(ours[0], b_loss[0]), rel(f_loss[0], b_loss[0]),
             rel(ours[0], f_loss[0])),
            ("gradients", float(np.median([rel(grads[k], b_grad[k]) for k in params])),
             float(np.median([rel(f_grad[k], b_grad[k]) for k in params])),
             float(np.median([rel(grads[k], f_grad[k]) for k in params])))]
    for what, ours_err, fp32_err, off_fp32 in seen:
        # Told apart from a float32 run by its distance from PyTorch's fp32: at least a quarter
        # of bf16's spread (a float32 run lies within ~1e-6 of it: resnet18's loss 1.2e-7,
        # gradients 3.4e-6, broken on purpose). Nearness to PyTorch's bf16 is the checks
        # above: PyTorch's own bf16 moves with the CPU (oneDNN's AMX / AVX512-BF16 kernels on a
        # Xeon that has them), and on one resnet18's loss lay 2.63e-4 from ours, 2.22e-4 from
        # its fp32, while an fp32 run's "nearer" than fp32 is a tie at 2.22e-4.
        ok = off_fp32 >= 0.25 * fp32_err
        print(f"{'ok  ' if ok else 'FAIL'} {name:16s} {'bf16 computed: ' + what:32s} ours vs torch "
              f"fp32 {off_fp32:.2e} >= 1/4 of torch bf16 vs fp32 {fp32_err:.2e} (ours vs torch "
              f"bf16 {ours_err:.2e})")
        if not ok:
            failures.append(f"{name}: step-0 {what} not nearer PyTorch's bf16 than its fp32 is")


def main():
    if not os.access(RUN, os.X_OK):
        sys.exit(f"test_autocast: {RUN} not built (make)")
    torch.set_num_threads(2)
    for name, size, batch in MODELS:
        with tempfile.TemporaryDirectory() as tmp:
            compare(name, size, batch, tmp)
    if failures:
        print("\n".join(["test_autocast: FAILED"] + failures))
        sys.exit(1)
    print("test_autocast: all passed")


if __name__ == "__main__":
    main()
