#!/usr/bin/env python3
"""Gradients of outcore-run's cuda backend against its cpu backend (tools/gpu-check).

For each model (exported with weights at batch 2, tools/export_models.py), the same input and
labels go to `outcore-run --backend cpu` and `--backend cuda` (--dump-grads after step 0, then
--save after 3 SGD steps). Asserts ||cuda - cpu|| / ||cpu|| <= 1e-3 (TF32 convolutions) for the
loss, every parameter gradient, and every trained weight / BN statistic; Dropout masks bitwise
equal (same counter-based RNG). Prints one line per model and class; exit 1 on any failure.
Models come from $OC_MODELS_DIR/NAME_SIZE_op13.onnx when present (exported with Debian torch by
`tools/gpu-check --prepare`), else are exported here. A structure-only model gets its weights
here from PyTorch's initialisation of the same module (torch.manual_seed(0)), matched by
initializer name: outcore-run's own initialiser (Kaiming-uniform) gives ResNet-18 at batch 2
gradients so small and cancelling that fp32 summation order alone moves BN-bias gradients by 1e-2.
Context for the TF32 check: where PyTorch can build the same model (models without Dropout,
whose masks PyTorch draws differently), the same step-0 gradients are computed by PyTorch in
float64 on the CPU (the reference) and in float32 on the GPU with PyTorch's defaults (TF32
convolutions when NVIDIA_TF32_OVERRIDE is unset), and each of outcore-cpu, outcore-cuda and
PyTorch-GPU is compared with the reference: per tensor (worst) and over all gradients at once
(norm-wise). A tensor on which cuda and cpu differ by more than 1e-3 because its gradient is
cancellation-prone shows the same error in PyTorch's own TF32 run.
Usage: gpu_grad_compare.py BUILD_DIR model:image_size ...   (e.g. resnet18:64 alexnet_small:32;
resnet18 at 32x32 is ill-conditioned: its last BatchNormalization sees 2 values per channel)
"""
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import numpy_helper

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools"))
import export_models  # noqa: E402

TOL = 1e-3
failures = []


def rel(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    nb = np.linalg.norm(b)
    return float(np.linalg.norm(a - b) / (nb if nb > 0 else 1.0))


def read_dir(d):
    return {onnx.load_tensor(os.path.join(d, f)).name: numpy_helper.to_array(onnx.load_tensor(os.path.join(d, f)))
            for f in sorted(os.listdir(d))} if os.path.isdir(d) else {}


def weights(path):
    """A saved model's initializers by name (weights and BN statistics)."""
    return {t.name: numpy_helper.to_array(t) for t in onnx.load(path).graph.initializer}


def loss_of(d):
    return numpy_helper.to_array(onnx.load_tensor(os.path.join(d, "loss.pb")))


def run(build, backend, model, tmp, xp, yp, tag=""):
    d = os.path.join(tmp, backend + tag)
    cmd = [os.path.join(build, "outcore-run"), model, "--backend", backend, "--batch", "2", "--steps", "3",
           "--lr", "0.001", "--seed", "1", "--input", xp, "--labels", yp, "--dump-grads", d,
           "--save", os.path.join(tmp, backend + tag + ".onnx")]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode:
        raise RuntimeError(f"{' '.join(cmd)}:\n{r.stdout}{r.stderr}")
    return d


def fill_weights(path, name, size, tmp):
    """The structure-only model at path with PyTorch's initial weights (see the docstring)."""
    m = onnx.load(path)
    if dict((p.key, p.value) for p in m.metadata_props).get("outcore.structure_only") != "1":
        return path
    import torch  # noqa: E402
    torch.manual_seed(0)
    sd = {k: v.detach().cpu().numpy() for k, v in export_models.build_model(name, size).state_dict().items()}
    for t in m.graph.initializer:
        if t.name in sd and tuple(t.dims) == sd[t.name].shape and t.data_type == onnx.TensorProto.FLOAT:
            t.CopyFrom(numpy_helper.from_array(sd[t.name].astype(np.float32), t.name))
    out = os.path.join(tmp, f"{name}_{size}_weights.onnx")
    onnx.save(m, out)
    return out


def torch_grads(name, size, x, y, device, dtype, steps=0):
    """PyTorch's model (the weights fill_weights used): the step-0 loss and parameter
    gradients; with steps > 0, the weights and BN statistics after that many SGD steps with
    outcore-run's settings here (lr 0.001, momentum 0.9, weight decay 1e-4)."""
    import torch  # noqa: E402
    torch.manual_seed(0)
    m = export_models.build_model(name, size).to(device=device, dtype=dtype).train()
    xt = torch.from_numpy(x).to(device=device, dtype=dtype)
    yt = torch.from_numpy(y).to(device)
    if steps:
        opt = torch.optim.SGD(m.parameters(), lr=0.001, momentum=0.9, weight_decay=1e-4)
        for _ in range(steps):
            opt.zero_grad()
            torch.nn.functional.cross_entropy(m(xt), yt).backward()
            opt.step()
        return {k: v.detach().cpu().double().numpy() for k, v in m.state_dict().items()
                if v.is_floating_point()}
    loss = torch.nn.functional.cross_entropy(m(xt), yt)
    loss.backward()
    g = {k: p.grad.detach().cpu().double().numpy() for k, p in m.named_parameters() if p.grad is not None}
    g["loss"] = np.array(loss.item())
    return g


def vs_reference(name, size, x, y, outcore, steps=0):
    """Errors of outcore-cpu / outcore-cuda / PyTorch-GPU vs PyTorch float64: step-0 gradients
    (steps 0) or the weights after `steps` SGD steps. Also: on how many tensors outcore-cuda's
    error exceeds max(1e-3, 2 x PyTorch-GPU's) -- worse than PyTorch at the same precision."""
    try:
        import torch  # noqa: E402
    except ImportError:
        return
    ref = torch_grads(name, size, x, y, "cpu", torch.float64, steps)
    runs = dict(outcore)
    if torch.cuda.is_available():
        runs["pytorch-gpu"] = torch_grads(name, size, x, y, "cuda", torch.float32, steps)
    keys = [k for k in ref if k != "loss" and all(k in r for r in runs.values())]
    if len(keys) < len(ref) - (0 if steps else 1):
        print(f"note {name:16s} reference: {len(ref) - len(keys)} tensors not matched by name")
    what = f"after {steps} steps" if steps else "gradients"
    errs = {}
    for who, r in runs.items():
        per = {k: rel(r[k], ref[k]) for k in keys}
        errs[who] = per
        worst = max(per, key=per.get)
        allv = rel(np.concatenate([np.ravel(r[k]) for k in keys]), np.concatenate([np.ravel(ref[k]) for k in keys]))
        loss = f"loss {rel(r['loss'], ref['loss']):.1e}, " if "loss" in r and "loss" in ref else ""
        print(f"ref  {name:16s} {who:12s} vs float64 ({what}): {loss}all at once {allv:.1e}, worst tensor "
              f"{per[worst]:.1e} ({worst}), {sum(e > TOL for e in per.values())} of {len(per)} tensors above {TOL:g}")
    if "pytorch-gpu" in errs and "outcore-cuda" in errs:
        worse = [k for k in keys if errs["outcore-cuda"][k] > max(TOL, 2 * errs["pytorch-gpu"][k])]
        print(f"{'ok  ' if not worse else 'WORSE'} {name:16s} outcore-cuda vs pytorch-gpu ({what}): "
              f"{len(worse)} of {len(keys)} tensors less accurate than max(1e-3, 2 x PyTorch's)"
              + (f", e.g. {worse[0]} {errs['outcore-cuda'][worse[0]]:.1e} vs {errs['pytorch-gpu'][worse[0]]:.1e}" if worse else ""))


def compare(build, name, size, tmp):
    model = os.path.join(os.environ.get("OC_MODELS_DIR", "/nonexistent"), f"{name}_{size}_op13.onnx")
    if not os.path.exists(model):  # not pre-exported (tools/gpu-check --prepare): export here
        args = export_models.parse_args(["--models", name, "--opset", "13", "--image-size", str(size),
                                         "--batch", "2", "--out", tmp])
        export_models.export_one(name, 13, args)
        model = os.path.join(tmp, f"{name}_op13.onnx")
    model = fill_weights(model, name, size, tmp)
    g = onnx.load(model).graph
    classes = None
    rng = np.random.default_rng(123)
    x = rng.standard_normal((2, 3, size, size)).astype(np.float32)
    for init in g.initializer:  # the last 2-D initializer is the classifier (out, in)
        if len(init.dims) == 2:
            classes = init.dims[0]
    y = rng.integers(0, classes or 10, size=(2,)).astype(np.int64)
    xp, yp = os.path.join(tmp, "x.pb"), os.path.join(tmp, "y.pb")
    onnx.save_tensor(numpy_helper.from_array(x, "input"), xp)
    onnx.save_tensor(numpy_helper.from_array(y, "labels"), yp)
    other = os.environ.get("OC_GRAD_OTHER", "cuda")  # "cpu": a smoke test of this script without a GPU
    dc, dg = run(build, "cpu", model, tmp, xp, yp), run(build, other, model, tmp, xp, yp)
    if os.environ.get("OC_GRAD_REPEAT") == "1":  # run-to-run: the same bits twice?
        d2 = run(build, other, model, tmp, xp, yp, "-again")
        g1, g2 = read_dir(os.path.join(dg, "grads")), read_dir(os.path.join(d2, "grads"))
        same = g1.keys() == g2.keys() and all(np.array_equal(g1[k], g2[k]) for k in g1)
        wa, wb = weights(os.path.join(tmp, other + ".onnx")), weights(os.path.join(tmp, other + "-again.onnx"))
        same_w = all(np.array_equal(wa[k], wb[k]) for k in wa)
        print(f"{'ok  ' if same and same_w else 'DIFF'} {name:16s} {other} run twice: step-0 gradients "
              f"{'bitwise equal' if same else 'DIFFER'}, weights after 3 steps {'bitwise equal' if same_w else 'DIFFER'}")
    if not any(n.op_type == "Dropout" for n in g.node):
        named = lambda d: {**read_dir(os.path.join(d, "grads")), "loss": loss_of(d)}
        vs_reference(name, size, x, y, {"outcore-cpu": named(dc), "outcore-" + other: named(dg)})
        floats = lambda p: {k: v for k, v in weights(p).items() if v.dtype == np.float32}
        vs_reference(name, size, x, y, {"outcore-cpu": floats(os.path.join(tmp, "cpu.onnx")),
                                        "outcore-" + other: floats(os.path.join(tmp, other + ".onnx"))}, steps=3)
    for cls, sub in (("loss", ""), ("gradients", "grads"), ("dropout tensors", "tensors")):
        a = read_dir(os.path.join(dc, sub)) if sub else {"loss": loss_of(dc)}
        b = read_dir(os.path.join(dg, sub)) if sub else {"loss": loss_of(dg)}
        if not a:
            continue
        errs = [(k, rel(b[k], a[k]) if a[k].dtype != np.bool_ else float((a[k] != b[k]).any())) for k in a]
        worst = max(errs, key=lambda e: e[1])
        bad = [e for e in errs if not e[1] <= TOL]
        print(f"{'ok  ' if not bad else 'FAIL'} {name:16s} {cls:16s} {len(errs):4d} tensors, worst rel err {worst[1]:.2e} ({worst[0]})")
        failures.extend(f"{name}: {cls} {k} {e:.3e}" for k, e in bad)
    wa, wb = weights(os.path.join(tmp, "cpu.onnx")), weights(os.path.join(tmp, other + ".onnx"))
    errs = [(k, rel(wb[k], wa[k])) for k in wa if wa[k].dtype == np.float32]
    worst = max(errs, key=lambda e: e[1])
    bad = [e for e in errs if not e[1] <= TOL]
    print(f"{'ok  ' if not bad else 'FAIL'} {name:16s} {'after 3 steps':16s} {len(errs):4d} tensors, worst rel err {worst[1]:.2e} ({worst[0]})")
    failures.extend(f"{name}: weights {k} {e:.3e}" for k, e in bad)


def main():
    build = sys.argv[1]
    for spec in sys.argv[2:]:
        name, size = spec.split(":")
        with tempfile.TemporaryDirectory() as tmp:
            try:
                compare(build, name, int(size), tmp)
            except Exception as e:  # one model's failure does not hide the others
                failures.append(f"{name}: {e}")
                print(f"FAIL {name}: {e}")
    print(f"gradients cuda vs cpu: {len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
