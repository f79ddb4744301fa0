#!/usr/bin/python3
"""--precision fp16 with dynamic loss scaling against torch.amp.GradScaler.

The reference (tests/data/amp/tiny_resnet_fp16.ref.npz, written by tools/amp_fixture.py with
torch 2.x: CPU autocast in float16, GradScaler(init_scale=2**22, growth_interval=3), SGD) trains
the tiny ResNet of tests/data/torch2 on one batch for 20 steps: the first five overflow and are
skipped while the scale halves, then every doubling after three good steps overflows again.
outcore-run --precision fp16 --loss-scale 4194304 --loss-scale-interval 3 on the same weights
and batch must give:
  - the same scale at every step and the same skipped steps, exactly;
  - losses within 1e-3 relative (float16 keeps 11 bits; the two sides round different sums);
  - every float32 master weight after the 20 steps within max(1e-2, 1.5 x float16's spread)
    of PyTorch's, the spread being how far PyTorch's float16 weights lie from its float32 ones
    after the same steps (BN biases start at 0: float16 moves them by a few percent);
and the scaler's state is checkpointed: 12 steps saved, then resumed for 8 more, give the same
scales, skips and losses, and bitwise the same weights, as the 20 steps in one run. Then with
--clip-grad-norm 0.5 against PyTorch's documented order (scaler.unscale_, clip_grad_norm_,
scaler.step): the same scales and skips, losses and weights as above (the spread of the run
without clipping). And with AdamW (lr 1e-3, weight decay 0.01): its bias correction counts the
updates it made, not the skipped steps (PyTorch's state['step']), so its weights after the 20
steps equal PyTorch's within the same tolerance (counting the skipped steps would miss them).
"""
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import numpy_helper

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RUN = os.path.join(ROOT, os.environ.get("BUILD", "build"), "outcore-run")
MODEL = os.path.join(ROOT, "tests", "data", "torch2", "tiny_resnet_legacy.onnx")
DATA = os.path.join(ROOT, "tests", "data", "torch2", "tiny_resnet.ref.npz")
REF = os.path.join(ROOT, "tests", "data", "amp", "tiny_resnet_fp16.ref.npz")
LOSS_TOL, WEIGHT_TOL, SPREAD = 1e-3, 1e-2, 1.5
failures = []


def rel(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    nb = np.linalg.norm(b)
    return float(np.linalg.norm(a - b) / (nb if nb > 0 else 1.0))


def check(ok, what):
    print(f"{'ok  ' if ok else 'FAIL'} {what}")
    if not ok:
        failures.append(what)


def run(tmp, ref, steps, extra, adamw=False):
    """(step, loss, scale, skipped) per step line."""
    opt = (["--optimizer", "adamw", "--lr", str(float(ref["adamw_lr"])), "--weight-decay",
            str(float(ref["adamw_weight_decay"]))] if adamw else
           ["--lr", str(float(ref["lr"])), "--momentum", str(float(ref["momentum"])),
            "--weight-decay", str(float(ref["weight_decay"]))])
    cmd = [RUN, MODEL, "--backend", "cpu", "--batch", "2", "--steps", str(steps), *opt,
           "--input", os.path.join(tmp, "x.pb"), "--labels", os.path.join(tmp, "y.pb"),
           "--precision", "fp16", "--loss-scale", str(int(ref["init_scale"])),
           "--loss-scale-interval", str(int(ref["interval"])), *extra]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{r.stdout}{r.stderr}")
    rows = []
    for line in r.stdout.splitlines():
        f = line.split()
        if len(f) >= 6 and f[0] == "step" and f[2] == "loss" and f[4] == "loss-scale":
            rows.append((int(f[1]), float(f[3]), float(f[5]), "skipped" in f))
    return rows


def weights(path):
    return {t.name: numpy_helper.to_array(t) for t in onnx.load(path).graph.initializer}


def compare(ref, prefix, rows, got, what, spread_prefix=""):
    """One run's steps and weights against the reference arrays under prefix (float16's
    spread: the float32 run under spread_prefix)."""
    n = len(ref[prefix + "loss"])
    check(len(rows) == n, f"{what}: {len(rows)} step lines with the loss scale, {n} expected")
    scales = [r[2] for r in rows]
    skips = [r[3] for r in rows]
    check(scales == list(ref[prefix + "scale"]) and skips == list(ref[prefix + "skipped"]),
          f"{what}: scale and skipped steps equal GradScaler's at all {n} steps "
          f"({sum(skips)} skipped: {[i for i, s in enumerate(skips) if s]}; "
          f"scales {sorted(set(scales))})")
    worst = max(rel(r[1], l) for r, l in zip(rows, ref[prefix + "loss"]))
    check(worst <= LOSS_TOL, f"{what}: losses within {LOSS_TOL} of PyTorch's (worst {worst:.1e})")
    keys = [k[len(prefix) + 2:] for k in ref.files if k.startswith(prefix + "w/")]
    sp = spread_prefix
    errs = [(k, rel(got[k], ref[prefix + "w/" + k]),
             max(WEIGHT_TOL, SPREAD * rel(ref[sp + "w32/" + k], ref[sp + "w/" + k])))
            for k in keys if k in got]
    name, w, t = max(errs, key=lambda e: e[1] / e[2])
    check(len(errs) == len(keys) and all(e <= tol for _, e, tol in errs),
          f"{what}: {len(errs)} float32 weights and statistics after {n} steps within "
          f"max({WEIGHT_TOL}, {SPREAD} x float16's spread) (worst {w:.1e} of {t:.1e}, {name})")


def main():
    ref = np.load(REF)
    data = np.load(DATA)
    n = len(ref["loss"])
    with tempfile.TemporaryDirectory() as tmp:
        onnx.save_tensor(numpy_helper.from_array(data["input"], "input"), os.path.join(tmp, "x.pb"))
        onnx.save_tensor(numpy_helper.from_array(data["labels"].astype(np.int64), "labels"),
                         os.path.join(tmp, "y.pb"))
        full = os.path.join(tmp, "full.onnx")
        rows = run(tmp, ref, n, ["--save", full])
        compare(ref, "", rows, weights(full), "fp16")
        clipped = os.path.join(tmp, "clipped.onnx")
        crow = run(tmp, ref, n, ["--clip-grad-norm", str(float(ref["clip_norm"])), "--save", clipped])
        compare(ref, "clip/", crow, weights(clipped), "fp16 + clip")
        adam = os.path.join(tmp, "adamw.onnx")
        arow = run(tmp, ref, n, ["--save", adam], adamw=True)
        compare(ref, "adamw/", arow, weights(adam), "fp16 + AdamW", "adamw/")
        part, rest = os.path.join(tmp, "part.onnx"), os.path.join(tmp, "rest.onnx")
        first = run(tmp, ref, 12, ["--save", part])
        second = run(tmp, ref, n, ["--resume", part, "--save", rest])
        check(first + second == rows,
              f"checkpoint at step 12 and resumed: the same {n} scales, skips and losses")
        a, b = weights(full), weights(rest)
        same = all(np.array_equal(a[k], b[k]) for k in a) and a.keys() == b.keys()
        check(same, f"resumed run's {len(a)} weights bitwise equal to the single run's")
    if failures:
        print("\n".join(["test_grad_scaler: FAILED"] + failures))
        sys.exit(1)
    print("test_grad_scaler: all passed")


if __name__ == "__main__":
    main()
