#!/usr/bin/env python3
"""From PyTorch to outcore and back: the recommended path for a torch.nn.Module.

    import outcore_torch as oc
    path = oc.export(model, torch.randn(2, 3, 224, 224), "model.onnx")  # training semantics kept
    oc.run(path, "x.npy", "y.npy", batch=64, epochs=10, lr=0.1, momentum=0.9, weight_decay=1e-4,
           eval_data=("xe.npy", "ye.npy"), budget="16GiB", save="trained.onnx")
    oc.load_back(model, "trained.onnx")   # every parameter and BN statistic, by state-dict key

export() uses torch.onnx.export(dynamo=True, optimize=False) with a dynamic batch dim (the
exporter's default optimize=True folds BatchNormalization into the convolutions, which changes
the network: outcore says so if it meets such a file), or with exporter="legacy" the
TorchScript exporter in TrainingMode.TRAINING. Either way the file's BN statistics are the
module's as they were before export (tracing runs the module in train mode, which moves them).
run() plans (outcore-plan plan, when a budget is given) and trains (outcore-run) on NumPy
arrays; load_back() copies the trained tensors into the module.

outcore_order(n, seed, epoch) is the order outcore-run visits a data set in, so that a
PyTorch loop can see the same batches (tools/outcore_torch.py digits does).

    tools/outcore_torch.py textgpt [--epochs 6] [--out docs/textgpt]
        a small GPT (2 layers, d 64, T 64) trained from scratch on the GPL's text (Debian's
        base-files ships it), characters as tokens: the same initial weights, batch order,
        AdamW and clipping in PyTorch and outcore-run; both loss curves, CSV and a plot
        (docs/textgpt.md).

    tools/outcore_torch.py digits [--epochs 20] [--out docs/digits] [--precision bf16|fp16]
        scikit-learn's bundled digits (no download): the same small CNN, initial weights,
        batch order and hyper-parameters trained by PyTorch and by outcore-run; per-epoch
        held-out loss and accuracy of both, outcore's weights loaded back into PyTorch and
        evaluated there; a CSV and a plot (docs/digits.md shows them). --precision: both in
        mixed precision (PyTorch: torch.autocast on the cpu, GradScaler for fp16; outcore-run
        --precision), PyTorch float32 beside them for bf16's own spread
        (docs/mixed-precision.md).
"""
import argparse
import copy
import os
import subprocess
import sys
import tempfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.path.join(ROOT, os.environ.get("BUILD", "build"))
MASK = (1 << 64) - 1


def _mix64(z):
    z = ((z ^ (z >> 30)) * 0xbf58476d1ce4e5b9) & MASK
    z = ((z ^ (z >> 27)) * 0x94d049bb133111eb) & MASK
    return z ^ (z >> 31)


def _uniform(seed, stream, counter):
    """runtime/init.c rt_init_uniform."""
    z = _mix64((seed + 0x9e3779b97f4a7c15 * (stream + 1)) & MASK)
    z = _mix64(z ^ ((counter + 0x632be59bd9b4e019) & MASK))
    return (z >> 11) * (1.0 / 9007199254740992.0)


def outcore_order(n, seed, epoch):
    """runtime/dataset.c rt_dataset_order: the permutation outcore-run visits epoch in."""
    p = list(range(n))
    for i in range(n - 1, 0, -1):
        j = min(int(_uniform(seed ^ 0x0dea5e7, epoch, i) * (i + 1)), i)
        p[i], p[j] = p[j], p[i]
    return p


def restore_initializers(path, state):
    """Tracing ran the module in train mode, which moved its BN statistics: put back the
    state from before export, matched by name."""
    import onnx
    from onnx import numpy_helper
    m = onnx.load(path)
    for i, t in enumerate(m.graph.initializer):
        if t.name in state and state[t.name].shape == tuple(t.dims):
            m.graph.initializer[i].CopyFrom(numpy_helper.from_array(
                state[t.name].astype(numpy_helper.to_array(t).dtype), t.name))
    onnx.save(m, path)


def export(model, example, path, exporter="dynamo"):
    """The module in training mode to ONNX with its training semantics, batch dim dynamic."""
    import torch
    from torch.onnx import TrainingMode
    state = {k: v.detach().cpu().numpy().copy() for k, v in model.state_dict().items()}
    m = copy.deepcopy(model).train()
    if exporter == "dynamo":
        batch = torch.export.Dim("batch", min=2)
        torch.onnx.export(m, (example,), path, dynamo=True, optimize=False, external_data=False,
                          training=TrainingMode.TRAINING, input_names=["input"],
                          dynamic_shapes=({0: batch},))
    elif exporter == "legacy":
        torch.onnx.export(m, (example,), path, dynamo=False, training=TrainingMode.TRAINING,
                          do_constant_folding=False, input_names=["input"],
                          dynamic_axes={"input": {0: "batch"}})
    else:
        raise ValueError(f"exporter '{exporter}': dynamo or legacy")
    restore_initializers(path, state)
    return path


def run(model_path, data, labels, batch, epochs=1, lr=0.1, momentum=0.9, weight_decay=1e-4,
        seed=1, eval_data=None, budget=None, device="h100", save=None, backend="cpu",
        extra=()):
    """Plans (with a budget) and trains; returns outcore-run's stdout lines."""
    src = model_path
    with tempfile.TemporaryDirectory() as tmp:
        if budget:
            src = os.path.join(tmp, "plan.onnx")
            subprocess.run([os.path.join(BUILD, "outcore-plan"), "plan", model_path, "--batch",
                            str(batch), "--budget", str(budget), "--device", device, "--lr",
                            str(lr), "--momentum", str(momentum), "--weight-decay",
                            str(weight_decay), "-o", src], check=True)
        cmd = [os.path.join(BUILD, "outcore-run"), src, "--backend", backend, "--batch",
               str(batch), "--data", data, "--labels", labels, "--epochs", str(epochs), "--lr",
               str(lr), "--momentum", str(momentum), "--weight-decay", str(weight_decay),
               "--seed", str(seed), *extra]
        if eval_data:
            cmd += ["--eval-data", eval_data[0], "--eval-labels", eval_data[1]]
        if save:
            cmd += ["--save", save]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)}:\n{r.stderr}")
        sys.stderr.write(r.stderr)
        return r.stdout.splitlines()


def load_back(model, saved):
    """Every parameter and buffer of the module from the saved file, by state-dict key."""
    import onnx
    import torch
    from onnx import numpy_helper
    inits = {t.name: numpy_helper.to_array(t) for t in onnx.load(saved).graph.initializer}
    state = model.state_dict()
    missing = [k for k in state if k not in inits and "num_batches_tracked" not in k]
    if missing:
        raise KeyError(f"{saved} lacks {missing[:5]}")
    model.load_state_dict({k: torch.from_numpy(inits[k].copy()).to(v.dtype) if k in inits else v
                           for k, v in state.items()})
    return model


# ---------------------------------------------------------------------------------------------
# The digits experiment
# ---------------------------------------------------------------------------------------------

def digits_model():
    import torch.nn as nn
    return nn.Sequential(
        nn.Conv2d(1, 16, 3, padding=1, bias=False), nn.BatchNorm2d(16), nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1, bias=False), nn.BatchNorm2d(32), nn.ReLU(),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, 10))


def torch_eval(model, x, y, dtype=None):
    import torch
    model.eval()
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import torch_amp  # noqa: E402
    with torch.no_grad(), torch_amp.autocast("cpu", dtype):
        z = model(torch.from_numpy(x)).float()
        loss = torch.nn.functional.cross_entropy(z, torch.from_numpy(y)).item()
        acc = (z.argmax(1).numpy() == y).mean()
    model.train()
    return loss, float(acc)


def cmd_digits(args):
    import torch
    from sklearn.datasets import load_digits
    d = load_digits()
    x = (d.images / 16.0).astype(np.float32)[:, None]  # [1797, 1, 8, 8]
    y = d.target.astype(np.int64)
    perm = np.random.default_rng(0).permutation(len(y))
    split = int(0.8 * len(y))
    tr, te = perm[:split], perm[split:]
    os.makedirs(args.out, exist_ok=True)
    work = tempfile.mkdtemp(prefix="outcore-digits-")  # data, exports, the trained file
    files = {k: os.path.join(work, f"{k}.npy") for k in ("x", "y", "xe", "ye")}
    for k, v in (("x", x[tr]), ("y", y[tr]), ("xe", x[te]), ("ye", y[te])):
        np.save(files[k], v)
    torch.manual_seed(0)
    model = digits_model()
    onnx_path = export(model, torch.zeros(2, 1, 8, 8), os.path.join(work, "digits.onnx"))
    hp = dict(batch=args.batch, epochs=args.epochs, lr=args.lr, momentum=args.momentum,
              weight_decay=args.weight_decay, seed=args.seed)
    saved = os.path.join(work, "digits.trained.onnx")
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import torch_amp  # noqa: E402
    amp = torch_amp.dtype_of(args.precision)
    lines = run(onnx_path, files["x"], files["y"], eval_data=(files["xe"], files["ye"]),
                save=saved, extra=("--precision", args.precision), **hp)
    ours = [ln for ln in lines if ln.startswith("epoch ")]
    steps_oc = [float(ln.split()[3]) for ln in lines if ln.startswith("step ")]

    # PyTorch: the same module and weights, the same batches in the same order; in float32
    # and, to show how far float32 rounding alone carries two runs apart, in float64. With
    # --precision: under autocast (GradScaler for fp16), and in float32 for the spread.
    n, b = len(tr), args.batch
    rows, steps_pt, steps_64 = [], [], []
    ref = copy.deepcopy(model).train()
    ref64 = copy.deepcopy(model).train() if amp else copy.deepcopy(model).double().train()
    opts = [torch.optim.SGD(m.parameters(), lr=args.lr, momentum=args.momentum,
                            weight_decay=args.weight_decay) for m in (ref, ref64)]
    scaler = torch_amp.scaler_for(args.precision, "cpu")
    xt, yt = torch.from_numpy(x[tr]), torch.from_numpy(y[tr])
    for epoch in range(args.epochs):
        order = outcore_order(n, args.seed, epoch)
        for s in range(n // b):
            idx = order[s * b:(s + 1) * b]
            for m, opt, out in ((ref, opts[0], steps_pt), (ref64, opts[1], steps_64)):
                opt.zero_grad()
                xb = xt[idx].double() if m is ref64 and not amp else xt[idx]
                with torch_amp.autocast("cpu", amp if m is ref else None):
                    loss = torch.nn.functional.cross_entropy(m(xb), yt[idx])
                torch_amp.step(loss, opt, scaler if m is ref else None)
                out.append(loss.item())
        pl, pa = torch_eval(ref, x[te], y[te], amp)
        f = ours[epoch].replace(",", "").split()
        ol, oa = float(f[f.index("eval") + 2]), float(f[f.index("accuracy") + 1])
        rows.append((epoch, pl, pa, ol, oa))
    back = load_back(copy.deepcopy(model), saved)
    bl, ba = torch_eval(back, x[te], y[te], amp)
    wide = "float32" if amp else "float64"
    tag = f"PyTorch {args.precision}" if amp else "PyTorch"
    csv = os.path.join(args.out, "digits_curves.csv")
    with open(csv, "w") as fh:
        fh.write("epoch,torch_eval_loss,torch_eval_acc,outcore_eval_loss,outcore_eval_acc\n")
        for r in rows:
            fh.write(",".join(f"{v:.6f}" if isinstance(v, float) else str(v) for v in r) + "\n")
    steps_csv = os.path.join(args.out, "digits_steps.csv")
    with open(steps_csv, "w") as fh:
        fh.write(f"step,torch_loss,torch_{wide}_loss,outcore_loss\n")
        for i, (a, a64, c) in enumerate(zip(steps_pt, steps_64, steps_oc)):
            fh.write(f"{i},{a:.6f},{a64:.6f},{c:.6f}\n")
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, ax = plt.subplots(1, 2, figsize=(10, 3.6))
        ax[0].plot(steps_pt, label=tag, lw=1)
        ax[0].plot(steps_64, label=f"PyTorch {wide}", lw=1, ls=":")
        ax[0].plot(steps_oc, label=f"outcore-run (cpu{', ' + args.precision if amp else ''})",
                   lw=1, ls="--")
        ax[0].set_xlabel("step"), ax[0].set_ylabel("training loss"), ax[0].legend()
        e = [r[0] for r in rows]
        ax[1].plot(e, [r[2] for r in rows], "o-", label=tag)
        ax[1].plot(e, [r[4] for r in rows], "x--", label="outcore-run (cpu)")
        ax[1].set_xlabel("epoch"), ax[1].set_ylabel("held-out accuracy"), ax[1].legend()
        fig.tight_layout()
        fig.savefig(os.path.join(args.out, "digits.png"), dpi=110)
    except ImportError:
        pass
    print(f"torch {torch.__version__}; {len(tr)} train / {len(te)} held-out samples, batch {b}, "
          f"{args.epochs} epochs, lr {args.lr}, momentum {args.momentum}, weight decay "
          f"{args.weight_decay}, seed {args.seed}, precision {args.precision}")
    print("| epoch | PyTorch loss | PyTorch acc | outcore loss | outcore acc |")
    print("|---:|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r[0]} | {r[1]:.4f} | {r[2]:.4f} | {r[3]:.4f} | {r[4]:.4f} |")
    d_steps = max(abs(a - c) for a, c in zip(steps_pt, steps_oc))
    d_64 = max(abs(a - c) for a, c in zip(steps_pt, steps_64))
    first = next((i for i, (a, c) in enumerate(zip(steps_pt, steps_oc)) if abs(a - c) > 1e-4),
                 None)
    print(f"\nlargest per-step training-loss difference over {len(steps_oc)} steps: outcore vs "
          f"{tag} {d_steps:.2e} (first above 1e-4 at step {first}); {tag} vs PyTorch {wide} "
          f"{d_64:.2e}")
    print(f"final held-out accuracy: PyTorch {rows[-1][2]:.4f}, outcore-run {rows[-1][4]:.4f}; "
          f"outcore's weights loaded back into PyTorch: {ba:.4f} (loss {bl:.4f})")
    ok = abs(rows[-1][2] - rows[-1][4]) <= 0.01 and abs(ba - rows[-1][4]) <= 1e-4  # %.4f printed
    return 0 if ok else 1


# ---------------------------------------------------------------------------------------------
# A small GPT trained from scratch on a text Debian ships
# ---------------------------------------------------------------------------------------------

TEXT = "/usr/share/common-licenses/GPL-3"  # base-files: on every Debian system


def text_windows(path, t):
    """Characters of path as token ids (its own alphabet), cut into windows of t + 1:
    inputs [N, t] and next-character labels [N, t] (int64), and the alphabet."""
    text = open(path, encoding="utf-8").read()
    alphabet = sorted(set(text))
    ids = np.array([alphabet.index(c) for c in text], np.int64)
    n = (len(ids) - 1) // t
    x = ids[:n * t].reshape(n, t)
    y = ids[1:n * t + 1].reshape(n, t)
    return x, y, alphabet


def cmd_textgpt(args):
    """GPT (tools/tiny_transformers.py, 2 layers, d 64, T 64) on the GPL's text: the same
    initial weights, batches in the same order and AdamW settings in PyTorch and outcore."""
    import torch
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from tiny_transformers import TinyGPT
    x, y, alphabet = text_windows(args.text, args.t)
    split = int(0.9 * len(x))
    os.makedirs(args.out, exist_ok=True)
    work = tempfile.mkdtemp(prefix="outcore-textgpt-")
    files = {k: os.path.join(work, f"{k}.npy") for k in ("x", "y", "xe", "ye")}
    for k, v in (("x", x[:split]), ("y", y[:split]), ("xe", x[split:]), ("ye", y[split:])):
        np.save(files[k], v)
    torch.manual_seed(0)
    model = TinyGPT(vocab=len(alphabet), d=64, heads=4, layers=2, t=args.t)
    for m in model.modules():
        if isinstance(m, torch.nn.Dropout):
            m.p = 0.0
    onnx_path = export(model, torch.zeros(2, args.t, dtype=torch.long),
                       os.path.join(work, "textgpt.onnx"))
    adamw = ["--optimizer", "adamw", "--lr", str(args.lr), "--betas", "0.9,0.95", "--eps",
             "1e-8", "--weight-decay", str(args.weight_decay), "--clip-grad-norm", "1.0"]
    cmd = [os.path.join(BUILD, "outcore-run"), onnx_path, "--backend", "cpu", "--batch",
           str(args.batch), "--data", files["x"], "--labels", files["y"], "--epochs",
           str(args.epochs), "--seed", str(args.seed), "--eval-data", files["xe"],
           "--eval-labels", files["ye"], *adamw]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}:\n{r.stderr}")
    lines = r.stdout.splitlines()
    steps_oc = [float(ln.split()[3]) for ln in lines if ln.startswith("step ")]
    evals_oc = [ln for ln in lines if ln.startswith("epoch ")]

    ref = copy.deepcopy(model).train()
    opt = torch.optim.AdamW(ref.parameters(), lr=args.lr, betas=(0.9, 0.95), eps=1e-8,
                            weight_decay=args.weight_decay)
    xt, yt = torch.from_numpy(x[:split]), torch.from_numpy(y[:split])
    steps_pt, rows = [], []
    n, b = split, args.batch
    for epoch in range(args.epochs):
        order = outcore_order(n, args.seed, epoch)
        for s_ in range(n // b):
            idx = order[s_ * b:(s_ + 1) * b]
            opt.zero_grad()
            z = ref(xt[idx])
            loss = torch.nn.functional.cross_entropy(z.reshape(-1, z.shape[-1]),
                                                     yt[idx].reshape(-1))
            loss.backward()
            torch.nn.utils.clip_grad_norm_(ref.parameters(), 1.0)
            opt.step()
            steps_pt.append(loss.item())
        ref.eval()
        with torch.no_grad():
            z = ref(torch.from_numpy(x[split:]))
            el = torch.nn.functional.cross_entropy(z.reshape(-1, z.shape[-1]),
                                                   torch.from_numpy(y[split:]).reshape(-1)).item()
        ref.train()
        f = evals_oc[epoch].replace(",", "").split()
        rows.append((epoch, el, float(f[f.index("eval") + 2])))
    with open(os.path.join(args.out, "textgpt_steps.csv"), "w") as fh:
        fh.write("step,torch_loss,outcore_loss\n")
        for i, (a, c) in enumerate(zip(steps_pt, steps_oc)):
            fh.write(f"{i},{a:.6f},{c:.6f}\n")
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, ax = plt.subplots(1, 2, figsize=(10, 3.6))
        ax[0].plot(steps_pt, label="PyTorch", lw=1)
        ax[0].plot(steps_oc, label="outcore-run (cpu)", lw=1, ls="--")
        ax[0].set_xlabel("step"), ax[0].set_ylabel("training loss (nats/char)"), ax[0].legend()
        ax[1].plot([r[0] for r in rows], [r[1] for r in rows], "o-", label="PyTorch")
        ax[1].plot([r[0] for r in rows], [r[2] for r in rows], "x--", label="outcore-run (cpu)")
        ax[1].set_xlabel("epoch"), ax[1].set_ylabel("held-out loss"), ax[1].legend()
        fig.tight_layout()
        fig.savefig(os.path.join(args.out, "textgpt.png"), dpi=110)
    except ImportError:
        pass
    print(f"torch {torch.__version__}; {args.text}: {len(alphabet)} characters, "
          f"{split} train / {len(x) - split} held-out windows of {args.t}, batch {b}, "
          f"{args.epochs} epochs, AdamW lr {args.lr} betas (0.9, 0.95) weight decay "
          f"{args.weight_decay}, gradients clipped to norm 1, seed {args.seed}")
    print("| epoch | PyTorch held-out loss | outcore held-out loss |")
    print("|---:|---:|---:|")
    for r in rows:
        print(f"| {r[0]} | {r[1]:.4f} | {r[2]:.4f} |")
    d = [abs(a - c) for a, c in zip(steps_pt, steps_oc)]
    first = next((i for i, v in enumerate(d) if v > 1e-4), None)
    print(f"\ntraining loss: step 0 {steps_pt[0]:.4f} -> step {len(d) - 1} {steps_pt[-1]:.4f} "
          f"(PyTorch), {steps_oc[-1]:.4f} (outcore); largest per-step difference {max(d):.2e} "
          f"(first above 1e-4 at step {first})")
    ok = len(steps_oc) == len(steps_pt) and abs(rows[-1][1] - rows[-1][2]) <= 0.02
    return 0 if ok else 1


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    d = sub.add_parser("digits")
    d.add_argument("--epochs", type=int, default=20)
    d.add_argument("--batch", type=int, default=32)
    d.add_argument("--lr", type=float, default=0.05)
    d.add_argument("--momentum", type=float, default=0.9)
    d.add_argument("--weight-decay", type=float, default=5e-4)
    d.add_argument("--seed", type=int, default=1)
    d.add_argument("--out", default=os.path.join(ROOT, "docs", "digits"))
    d.add_argument("--precision", default="fp32", choices=("fp32", "bf16", "fp16"))
    t = sub.add_parser("textgpt")
    t.add_argument("--text", default=TEXT)
    t.add_argument("--t", type=int, default=64)
    t.add_argument("--epochs", type=int, default=6)
    t.add_argument("--batch", type=int, default=16)
    t.add_argument("--lr", type=float, default=3e-3)
    t.add_argument("--weight-decay", type=float, default=0.1)
    t.add_argument("--seed", type=int, default=1)
    t.add_argument("--out", default=os.path.join(ROOT, "docs", "textgpt"))
    args = p.parse_args()
    return {"digits": cmd_digits, "textgpt": cmd_textgpt}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
