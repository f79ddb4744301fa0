#!/root/tvenv/bin/python
"""The float16 loss-scaling reference CI compares with (tests/py/test_grad_scaler.py).

Run with a torch 2.x interpreter (CPU autocast in float16 and torch.amp.GradScaler("cpu") need
torch >= 2.3; Debian's 1.13 has neither):
    /root/tvenv/bin/python tools/amp_fixture.py [--out tests/data/amp]
The model is the tiny ResNet of tests/data/torch2 (tiny_resnet_legacy.onnx: its weights, its
input and labels from tiny_resnet.ref.npz). PyTorch trains it under
torch.autocast("cpu", torch.float16) with GradScaler(init_scale=2**22, growth_interval=3) and
SGD (lr 0.01, momentum 0.9, weight decay 1e-4) for STEPS steps on that one batch: the scale
starts far too high, so the first steps overflow and are skipped while the scale halves; then
every third good step doubles it, which overflows again now and then. Written to
tiny_resnet_fp16.ref.npz: per step the scale used, whether the step was skipped, the loss; the
float32 weights after the last step; the weights of the same steps in float32 (no autocast, the
same steps skipped: float16's spread); the same again with gradient clipping at norm 0.5 of
the unscaled gradients (prefix clip/); with AdamW (lr 1e-3, weight decay 0.01; prefix adamw/,
its float32 spread too: AdamW counts only the steps it took, which skipped steps are not); and
the settings."""
import argparse
import os
import sys

import numpy as np
import onnx
import torch
from onnx import numpy_helper

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools"))
from tiny_models import TINY  # noqa: E402

STEPS, INIT_SCALE, INTERVAL = 20, 2.0 ** 22, 3
LR, MOMENTUM, WD, CLIP = 0.01, 0.9, 1e-4, 0.5
ADAMW = dict(lr=1e-3, weight_decay=0.01)  # betas (0.9, 0.999), eps 1e-8: torch's defaults


def optimizer(model, adamw):
    if adamw:
        return torch.optim.AdamW(model.parameters(), **ADAMW)
    return torch.optim.SGD(model.parameters(), lr=LR, momentum=MOMENTUM, weight_decay=WD)


def load(inits):
    model = TINY["tiny_resnet"]().train()
    state = model.state_dict()
    model.load_state_dict({k: torch.from_numpy(inits[k].copy()) if k in inits else v
                           for k, v in state.items()})
    return model


def weights(model):
    return {k: v.detach().numpy().copy() for k, v in model.state_dict().items()
            if "num_batches_tracked" not in k}


def float32_run(inits, x, y, skipped, adamw):
    """The same steps without autocast, the same ones skipped (BN statistics still move)."""
    model = load(inits)
    opt = optimizer(model, adamw)
    for skip in skipped:
        opt.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        if not skip:
            opt.step()
    return weights(model)


def amp_run(inits, x, y, clip, adamw):
    """PyTorch's float16 AMP steps; clip: clip_grad_norm_ of the unscaled gradients (the
    documented order: scaler.unscale_, clip, scaler.step). Per step the scale, skipped, loss."""
    model = load(inits)
    opt = optimizer(model, adamw)
    scaler = torch.amp.GradScaler("cpu", init_scale=INIT_SCALE, growth_interval=INTERVAL)
    scales, skipped, losses = [], [], []
    for _ in range(STEPS):
        opt.zero_grad()
        with torch.autocast("cpu", dtype=torch.float16):
            loss = torch.nn.functional.cross_entropy(model(x), y)
        before = scaler.get_scale()
        scaler.scale(loss).backward()
        if clip:
            scaler.unscale_(opt)
            torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
        scaler.step(opt)
        scaler.update()
        scales.append(before)
        skipped.append(scaler.get_scale() < before)
        losses.append(loss.item())
        print(f"{'clip ' if clip else ''}step {len(losses) - 1}: loss {loss.item():.6f} "
              f"scale {before:g}{' skipped' if skipped[-1] else ''}")
    return model, scales, skipped, losses


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(ROOT, "tests", "data", "amp"))
    args = ap.parse_args()
    src = os.path.join(ROOT, "tests", "data", "torch2")
    inits = {t.name: numpy_helper.to_array(t)
             for t in onnx.load(os.path.join(src, "tiny_resnet_legacy.onnx")).graph.initializer}
    ref = np.load(os.path.join(src, "tiny_resnet.ref.npz"))
    x, y = torch.from_numpy(ref["input"]), torch.from_numpy(ref["labels"])
    arrays = {"init_scale": np.float64(INIT_SCALE), "interval": np.int64(INTERVAL),
              "lr": np.float64(LR), "momentum": np.float64(MOMENTUM),
              "weight_decay": np.float64(WD), "clip_norm": np.float64(CLIP),
              "torch": np.array(torch.__version__)}
    arrays["adamw_lr"] = np.float64(ADAMW["lr"])
    arrays["adamw_weight_decay"] = np.float64(ADAMW["weight_decay"])
    for prefix, clip, adamw in (("", None, False), ("clip/", CLIP, False), ("adamw/", None, True)):
        model, scales, skipped, losses = amp_run(inits, x, y, clip, adamw)
        arrays[prefix + "scale"] = np.array(scales, np.float64)
        arrays[prefix + "skipped"] = np.array(skipped)
        arrays[prefix + "loss"] = np.array(losses, np.float64)
        for k, v in weights(model).items():
            arrays[prefix + "w/" + k] = v
        if not clip:
            for k, v in float32_run(inits, x, y, skipped, adamw).items():
                arrays[prefix + "w32/" + k] = v
        print(f"{sum(skipped)} of {STEPS} steps skipped{' (clipped)' if clip else ''}")
    os.makedirs(args.out, exist_ok=True)
    np.savez(os.path.join(args.out, "tiny_resnet_fp16.ref.npz"), **arrays)
    print(f"written to {args.out}")


if __name__ == "__main__":
    main()
