#!/usr/bin/env python3
"""One SGD step of a PyTorch model and of outcore on its ONNX export, compared.

Needs a current PyTorch (2.x from PyPI, in a venv: see docs/torchvision.md); runs the
exporters, PyTorch's float64 and float32 reference steps, and outcore-run's cpu backend.

  tools/torch_roundtrip.py sweep [--models a,b] [--exporters dynamo,legacy] [--out DIR]
      every torchvision classification model (small images) x exporter: imports, trains,
      and one step's loss and weights against PyTorch float64; a Markdown table on stdout
      (docs/torchvision.md is its output).
  tools/torch_roundtrip.py fixtures --out tests/data/torch2 [--models tiny_gpt,..]
      the small models CI compares without torch 2.x (tools/tiny_models.py's CNNs,
      tools/tiny_transformers.py's transformers): each model's exports and its
      reference arrays (<model>.ref.npz: input, labels, loss, every weight and running
      statistic after one step in float64, and PyTorch float32's own distance to float64).

Exporters: 'dynamo' = torch.onnx.export(dynamo=True, optimize=False) -- the default exporter
with the settings that keep training semantics (optimize=True folds BatchNormalization into
the convolutions); 'legacy' = torch.onnx.export(dynamo=False,
training=TrainingMode.TRAINING) at its default opset. Dropout and stochastic depth are set
to p = 0 for the comparison (PyTorch's random masks cannot be reproduced); outcore's own
masks are tested elsewhere (tests/py/test_gradients.py, tests/py/test_torch2_exports.py).
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from outcore_torch import restore_initializers  # noqa: E402  (one copy, shared)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RUN = os.path.join(ROOT, os.environ.get("BUILD", "build"), "outcore-run")
LR, MOMENTUM, WD = 0.01, 0.9, 1e-4
TOL = 1e-4
# Fixtures whose step takes another learning rate (stored in the references as "lr"): one
# step at LR moves tiny_rnn's recurrent weights by 1e-5 of their size, which float32 barely
# holds; at 10 by 1e-2, so that their gradients show in the comparison.
FIXTURE_LR = {"tiny_rnn": 10.0, "tiny_rnn_packed": 10.0, "tiny_rnn_unsorted": 10.0}
DRAWS = 32  # float32 steps on last-bit copies of the weights (float32_spread)

CLASSIFIERS = [
    "alexnet", "convnext_tiny", "densenet121", "efficientnet_b0", "efficientnet_v2_s",
    "googlenet", "inception_v3", "maxvit_t", "mnasnet0_5", "mnasnet1_0", "mobilenet_v2",
    "mobilenet_v3_small", "mobilenet_v3_large", "regnet_x_400mf", "regnet_y_400mf",
    "resnet18", "resnet50", "resnext50_32x4d", "shufflenet_v2_x0_5", "shufflenet_v2_x1_0",
    "squeezenet1_0", "squeezenet1_1", "swin_t", "swin_v2_t", "vgg11", "vgg16_bn", "vit_b_16",
    "wide_resnet50_2",
]
SEGMENTATION = ["fcn_resnet50", "deeplabv3_resnet50"]
# torchvision.models.video: clips [N, 3, T, H, W] (`sweep --models video`)
VIDEO = ["r3d_18", "mc3_18", "r2plus1d_18", "s3d", "mvit_v1_b", "mvit_v2_s", "swin3d_t"]
# timm's architectures (`sweep --models timm`, names "timm/<name>"): one small variant of each
# family, the image size it is built for (64 unless its layers need more; the ViT family
# takes img_size, so its patch grid is made small)
TIMM = {
    # CNNs
    "resnet18d": 64, "resnest14d": 64, "res2net50_14w_8s": 64, "seresnext26d_32x4d": 64,
    "skresnet18": 64, "cspresnet50": 64, "dla34": 64, "dpn48b": 64, "hrnet_w18_small": 64,
    "tf_efficientnet_b0": 64, "mixnet_s": 64, "mobilenetv3_small_100": 64, "ghostnet_100": 64,
    "ghostnetv2_100": 64, "rexnet_100": 64, "regnety_002": 64, "nf_resnet26": 64,
    "convnext_atto": 64, "convnextv2_atto": 64, "repvgg_a0": 64, "mobileone_s0": 64,
    "lcnet_050": 64, "hgnetv2_b0": 64, "ese_vovnet19b_dw": 64, "selecsls42b": 64,
    "tresnet_m": 64, "inception_v4": 96, "xception41": 64, "gernet_s": 64,
    "eca_resnet33ts": 64, "gcresnet33ts": 64, "botnet26t_256": 256, "halonet26t": 256,
    "lambda_resnet26t": 256, "fbnetv3_b": 64, "tinynet_a": 64, "starnet_s1": 64,
    "fastvit_t8": 64, "inception_next_tiny": 64, "repvit_m1": 64, "mambaout_femto": 64,
    "efficientvit_b0": 64, "efficientvit_m0": 64, "edgenext_xx_small": 64,
    "poolformerv2_s12": 64, "mobilevit_xxs": 64, "mobilevitv2_050": 64,
    # transformers and hybrids
    "vit_tiny_patch16_224": 64, "deit_tiny_patch16_224": 64, "eva02_tiny_patch14_224": 56,
    "cait_xxs24_224": 64, "xcit_nano_12_p16_224": 64, "levit_128s": 224, "pit_ti_224": 224,
    "tnt_s_patch16_224": 64, "twins_pcpvt_small": 64, "twins_svt_small": 64,
    "visformer_tiny": 224, "convit_tiny": 64, "coat_lite_tiny": 224, "crossvit_tiny_240": 240,
    "swin_tiny_patch4_window7_224": 224, "maxvit_nano_rw_256": 256, "coatnet_nano_rw_224": 224,
    "efficientformer_l1": 224, "efficientformerv2_s0": 224, "mixer_s16_224": 64,
    "gmlp_ti16_224": 64, "resmlp_12_224": 64, "sequencer2d_s": 224, "nest_tiny_jx": 64,
    "davit_tiny": 64, "focalnet_tiny_srf": 64, "gcvit_xxtiny": 224, "tiny_vit_5m_224": 224,
    "hiera_tiny_224": 224, "pvt_v2_b0": 64, "volo_d1_224": 224, "mvitv2_tiny": 224,
}
IMG_SIZE_ARG = ("vit_", "deit_", "eva02_", "cait_", "xcit_", "tnt_", "convit_", "mixer_",
                "gmlp_", "resmlp_", "nest_")
TRANSFORMERS = {"swin_t": "issue 20", "swin_v2_t": "issue 20", "vit_b_16": "issue 20",
                "maxvit_t": "issue 20"}


def torch_imports():
    global torch, tvm
    import torch  # noqa: F401
    import torchvision.models as tvm  # noqa: F401
    warnings.filterwarnings("ignore")


def no_randomness(model):
    """Dropout and stochastic depth to p = 0: the step is then deterministic in both."""
    from torchvision.ops import StochasticDepth
    for m in model.modules():
        if isinstance(m, torch.nn.Dropout):
            m.p = 0.0
        if isinstance(m, StochasticDepth):
            m.p = 0.0
        if type(m).__name__ == "DropPath":  # timm's stochastic depth
            m.drop_prob = 0.0
    return model


def build_timm(name, num_classes=10):
    import timm
    arch = name[len("timm/"):]
    if arch not in TIMM:
        raise LookupError(f"not in tools/torch_roundtrip.py's TIMM list")
    kw = {"pretrained": False, "num_classes": num_classes, "drop_rate": 0.0,
          "drop_path_rate": 0.0}
    if arch.startswith(IMG_SIZE_ARG):
        kw["img_size"] = TIMM[arch]
    for drop in ("drop_path_rate", "drop_rate", None):  # not every family takes both
        try:
            torch.manual_seed(0)
            return no_randomness(timm.create_model(arch, **kw))
        except TypeError as e:
            if drop is None or f"'{drop}'" not in str(e):
                raise
            kw.pop(drop)


def build(name, num_classes=10):
    if name.startswith("timm/"):
        return build_timm(name, num_classes)
    if name in VIDEO:
        if not hasattr(tvm.video, name):
            raise LookupError(f"not in torchvision {__import__('torchvision').__version__}")
        torch.manual_seed(0)
        return no_randomness(getattr(tvm.video, name)(weights=None, num_classes=num_classes))
    if not hasattr(tvm, name) and not hasattr(tvm.segmentation, name):
        raise LookupError(f"not in torchvision {__import__('torchvision').__version__}")
    torch.manual_seed(0)
    kw = {"weights": None, "num_classes": num_classes}
    if name in ("googlenet", "inception_v3"):
        kw.update(aux_logits=False, init_weights=False)
    if name in SEGMENTATION:
        kw = {"weights": None, "weights_backbone": None, "num_classes": num_classes,
              "aux_loss": False}
        return no_randomness(tvm.segmentation.__dict__[name](**kw))
    return no_randomness(getattr(tvm, name)(**kw))


IMAGE_SIZE = 64
BATCH = 2


def clip_shape(name):
    """A video model's clip (T, H, W): MViT's positional embeddings fix 16x224x224, S3D's
    last pooling window needs it; the others take 8 frames of 64x64."""
    return (16, 224, 224) if name in ("s3d", "mvit_v1_b", "mvit_v2_s") else (8, 64, 64)


def input_shape(name):
    """The batch's shape: [N, 3, T, H, W] clips for VIDEO, [N, 3, S, S] images otherwise."""
    if name in VIDEO:
        return (BATCH, 3) + clip_shape(name)
    s = image_size(name)
    return (BATCH, 3, s, s)


def image_size(name):
    """Small images, except where the architecture needs more (inception_v3's stem, the
    transformers' fixed patch grids; alexnet and vgg's adaptive pooling to 6x6 / 7x7)."""
    if name.startswith("timm/"):
        return TIMM[name[len("timm/"):]]
    fixed = {"inception_v3": 75, "maxvit_t": 224, "vit_b_16": 224, "swin_t": 224,
             "swin_v2_t": 224, "alexnet": 224, "vgg11": 224, "vgg16_bn": 224}
    return fixed.get(name, IMAGE_SIZE)


def as_inputs(x):
    """A model's inputs as a tuple: x, or the tensors of a tuple x (token ids and an attention
    mask)."""
    return tuple(x) if isinstance(x, tuple) else (x,)


def input_names(x):
    """The exported inputs' names: "input", then "input_1", .. (the fixtures' arrays too)."""
    return ["input"] + [f"input_{i}" for i in range(1, len(as_inputs(x)))]


def export(model, x, exporter, path):
    """Exports a copy: exporting runs the model, which in train mode moves its BN statistics."""
    import copy
    from torch.onnx import TrainingMode
    state = {k: v.detach().cpu().numpy().copy() for k, v in model.state_dict().items()}
    model = copy.deepcopy(model).train()
    args = as_inputs(x)
    if exporter == "dynamo":
        torch.onnx.export(model, args, path, dynamo=True, optimize=False, external_data=False,
                          training=TrainingMode.TRAINING)
    elif exporter == "dynamo-optimized":  # the exporter's defaults: BN folded (outcore warns)
        torch.onnx.export(model, args, path, dynamo=True, external_data=False,
                          training=TrainingMode.TRAINING)
    elif exporter == "legacy":
        kw = {"dynamo": False} if int(torch.__version__.split(".")[0]) >= 2 else {}
        torch.onnx.export(model, args, path, training=TrainingMode.TRAINING,
                          do_constant_folding=False, input_names=input_names(x), **kw)
    else:
        raise ValueError(exporter)
    restore_initializers(path, state)



def reference_step(model, x, y, dtype, lr=LR):
    """Loss and state after one SGD step of a copy of model in dtype."""
    losses, state = reference_run(model, x, y, dtype, lr=lr)
    return losses[0], state


# AdamW with clipping, as the transformer fixtures' 3-step trajectories run it
ADAMW = {"lr": 1e-3, "betas": (0.9, 0.95), "eps": 1e-8, "weight_decay": 0.1}
CLIP = 1.0


def reference_run(model, x, y, dtype, steps=1, adamw=False, clip=None, lr=LR):
    """Losses of `steps` steps on the same batch and the state after them, of a copy of
    model in dtype: SGD (lr, MOMENTUM, WD) or AdamW (ADAMW), gradients clipped to a
    global norm of clip (torch.nn.utils.clip_grad_norm_) when given."""
    import copy
    m = copy.deepcopy(model).to(dtype).train()
    opt = (torch.optim.AdamW(m.parameters(), **ADAMW) if adamw else
           torch.optim.SGD(m.parameters(), lr=lr, momentum=MOMENTUM, weight_decay=WD))
    losses = []
    for _ in range(steps):
        out = m(*[t.to(dtype) if t.is_floating_point() else t for t in as_inputs(x)])
        if isinstance(out, dict):  # segmentation models
            out = out["out"]
        yy = y
        if out.dim() == 3 and y.dim() == 2:  # a language model: [N, T, V] logits, [N, T] labels
            out, yy = out.reshape(-1, out.shape[-1]), y.reshape(-1)
        loss = torch.nn.functional.cross_entropy(out, yy)
        opt.zero_grad()
        loss.backward()
        if clip:
            torch.nn.utils.clip_grad_norm_(m.parameters(), clip)
        opt.step()
        losses.append(float(loss))
    state = {k: v.detach().double().numpy() for k, v in m.state_dict().items()
             if "num_batches_tracked" not in k}
    return losses, state


def last_bit(model, seed):
    """A copy of model whose float32 weights moved in their last bit (relative noise of
    float32's unit roundoff, 6e-8, then rounded back to float32): the same model to float32."""
    import copy
    m = copy.deepcopy(model)
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in m.parameters():
            p.add_(p * 6e-8 * torch.randn(p.shape, generator=g))
    return m


def float32_spread(model, x, y, ref64, draws, lr=LR):
    """PyTorch float32's own distance to float64, per tensor: the worst (loss, state) of its
    float32 steps -- its two convolution paths (oneDNN and native) and, with draws > 0, that
    many more on copies whose weights moved in their last bit. A step with a ReLU or MaxPool
    decision within float32 rounding of a tie lands on either side; which side one float32
    implementation takes is luck, and these draws show the size of the other side."""
    loss64, s64 = ref64
    worst = None  # kept per tensor as the steps come (a step's state can be large: VGG)

    def take(step):
        nonlocal worst
        if worst is None:
            worst = step
            return
        loss = step[0] if rel(step[0], loss64) > rel(worst[0], loss64) else worst[0]
        worst = (loss, {k: (step[1][k] if rel(step[1][k], s64[k]) > rel(worst[1][k], s64[k])
                            else worst[1][k]) for k in s64})

    take(reference_step(model, x, y, torch.float32, lr))
    torch.backends.mkldnn.enabled = False
    try:
        take(reference_step(model, x, y, torch.float32, lr))
    finally:
        torch.backends.mkldnn.enabled = True
    for d in range(draws):
        take(reference_step(last_bit(model, 1000 + d), x, y, torch.float32, lr))
    return worst


def onnx_tensor_file(arr, name, path):
    import onnx
    from onnx import numpy_helper
    onnx.save_tensor(numpy_helper.from_array(arr, name), path)


def run_outcore(model_path, x, y, tmp):
    """outcore-run's cpu backend, one step; (loss, {initializer: array}) or raises."""
    import onnx
    from onnx import numpy_helper
    xp, yp = os.path.join(tmp, "x.pb"), os.path.join(tmp, "y.pb")
    onnx_tensor_file(x, "input", xp)
    onnx_tensor_file(y, "labels", yp)
    saved = os.path.join(tmp, "trained.onnx")
    cmd = [RUN, model_path, "--backend", "cpu", "--batch", str(x.shape[0]), "--steps", "1",
           "--lr", str(LR), "--momentum", str(MOMENTUM), "--weight-decay", str(WD),
           "--input", xp, "--labels", yp, "--save", saved]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError((r.stderr or r.stdout).strip().splitlines()[-1])
    loss = None
    for line in r.stdout.splitlines():
        if line.startswith("step 0 loss"):
            loss = float(line.split()[3])
    trained = {t.name: numpy_helper.to_array(t) for t in onnx.load(saved).graph.initializer}
    notices = [ln for ln in r.stderr.splitlines() if "notice:" in ln]
    return loss, trained, notices


def rel(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    nb = np.linalg.norm(b)
    return float(np.linalg.norm(a - b) / (nb if nb > 0 else 1.0))


def compare(ref64, ref32, loss, trained):
    """Rows (name, error vs float64, PyTorch float32's own error: float32_spread) of the loss
    and every state tensor, split into: within TOL; float32 ties (above TOL, within 3x PyTorch float32's own distance: its
    float32 step misses float64 there too); off; and tensors --save lacks."""
    loss64, s64 = ref64
    loss32, s32 = ref32
    rows = [("loss", rel(loss, loss64), rel(loss32, loss64))]
    missing = [k for k in s64 if k not in trained]
    for k, v in s64.items():
        if k in trained:
            rows.append((k, rel(trained[k], v), rel(s32[k], v)))
    strict = [r for r in rows if r[1] <= TOL]
    tie = [r for r in rows if r[1] > TOL and r[1] <= 3 * r[2]]
    bad = [r for r in rows if r[1] > TOL and r[1] > 3 * r[2]]
    return strict, tie, bad, missing


REFS = {}


def sweep_one(name, exporter, tmp):
    try:
        model = build(name)
    except LookupError as e:
        return "-", str(e)
    except Exception as e:  # noqa: BLE001 -- a library's model this version cannot build
        return "-", f"not built: {str(e).strip().splitlines()[0][:120]}"
    s = image_size(name)
    g = torch.Generator().manual_seed(123)
    x = torch.randn(*input_shape(name), generator=g)
    y = torch.randint(0, 10, (BATCH,) + ((s, s) if name in SEGMENTATION else ()), generator=g)
    path = os.path.join(tmp, f"{name.replace('/', '_')}_{exporter}.onnx")
    try:
        export(model, x, exporter, path)
    except Exception as e:  # noqa: BLE001
        return "export fails", str(e).strip().splitlines()[0][:120]
    if name not in REFS:  # the same model, input and references for every exporter
        ref64 = reference_step(model, x, y, torch.float64)
        REFS.clear()
        REFS[name] = ref64, float32_spread(model, x, y, ref64, DRAWS)
    ref64, ref32 = REFS[name]
    try:
        loss, trained, notices = run_outcore(path, x.numpy(), y.numpy().astype(np.int64), tmp)
    except RuntimeError as e:
        return "refused", str(e)[:200]
    shared = {}  # a module used in several places (CoaT's shared convolutional position
    for k, v in model.state_dict(keep_vars=True).items():  # encoding): one initializer
        shared.setdefault(v.data_ptr(), []).append(k)
    for names in shared.values():
        for k in names:
            if k not in trained:
                saved = [a for a in names if a in trained]
                if saved:
                    trained[k] = trained[saved[0]]
    strict, tie, bad, missing = compare(ref64, ref32, loss, trained)
    if missing:
        return "✗", f"--save lacks {len(missing)} tensors, e.g. {missing[0]}"
    worst = max(strict, key=lambda r: r[1]) if strict else ("-", 0.0, 0.0)
    detail = f"{len(strict)}/{len(strict) + len(tie) + len(bad)} within {TOL:g} (worst {worst[1]:.1e})"
    if tie:
        detail += f"; {len(tie)} float32 ties: " + ", ".join(
            f"{r[0]} {r[1]:.1e} (PyTorch fp32 {r[2]:.1e})" for r in tie[:3]) + (
            ", ..." if len(tie) > 3 else "")
    if bad:
        return "✗", detail + "; off: " + ", ".join(f"{r[0]} {r[1]:.1e} (PyTorch fp32 "
                                                   f"{r[2]:.1e})" for r in bad[:3])
    return "✓", detail


def cmd_sweep(args):
    global IMAGE_SIZE, BATCH, DRAWS
    IMAGE_SIZE, BATCH, DRAWS = args.image_size, args.batch, args.draws
    torch_imports()
    models = args.models.split(",") if args.models else CLASSIFIERS + SEGMENTATION
    if models == ["video"]:
        models = VIDEO
    if models == ["timm"]:
        models = ["timm/" + n for n in TIMM]
    exporters = args.exporters.split(",")
    out = open(args.table, "w") if args.table else sys.stdout
    out.write(f"torch {torch.__version__}; lr {LR}, momentum {MOMENTUM}, weight decay {WD}; "
              f"batch {BATCH}, 10 classes, {IMAGE_SIZE}x{IMAGE_SIZE} images (except where noted); "
              f"tolerance {TOL} relative to float64; float32 spread over 2 paths + {DRAWS} "
              f"last-bit weight draws\n\n")
    names = {"dynamo": "default exporter", "legacy": "legacy exporter"}
    if int(torch.__version__.split(".")[0]) < 2:
        names["legacy"] = f"torch {torch.__version__} (legacy exporter)"
    out.write("| model | " + " | ".join(names.get(e, e) for e in exporters) + " |\n")
    out.write("|---|" + "---|" * len(exporters) + "\n")
    for name in models:
        cells = []
        for ex in exporters:
            with tempfile.TemporaryDirectory(dir=args.out) as tmp:
                t0 = time.time()
                status, detail = sweep_one(name, ex, tmp)
                if status != "✓" and name in TRANSFORMERS:
                    detail = f"{TRANSFORMERS[name]} (transformers): {detail}"
                cells.append(f"{status} {detail} ({time.time() - t0:.0f} s)")
        size = image_size(name)
        label = name if size == IMAGE_SIZE else f"{name} ({size}x{size})"
        if name in VIDEO:
            label = f"{name} ({'x'.join(map(str, clip_shape(name)))})"
        out.write(f"| {label} | " + " | ".join(cells) + " |\n")
        out.flush()


# Node metadata the default exporter writes for people (where in the Python source each
# node came from), over half of a small model's file; outcore reads none of it but an
# embedding's fx_node, where its padding_idx is (onnx_import.c), kept.
PROVENANCE = {"namespace", "pkg.torch.onnx.class_hierarchy", "pkg.torch.onnx.fx_node",
              "pkg.torch.onnx.name_scopes", "pkg.torch.onnx.stack_trace"}


def strip_provenance(path):
    """Drops PROVENANCE from every node's metadata (a committed fixture's size)."""
    import onnx

    def strip(graph):
        for n in graph.node:
            keep = [p for p in n.metadata_props if p.key not in PROVENANCE or
                    "aten.embedding.default" in p.value]
            del n.metadata_props[:]
            n.metadata_props.extend(keep)
            for a in n.attribute:  # a Loop's body, an If's branches
                if a.type == onnx.AttributeProto.GRAPH:
                    strip(a.g)
    m = onnx.load(path)
    strip(m.graph)
    onnx.save(m, path)


def tied_keys(model):
    """Tied weights, one tensor under several state-dict keys, which an export names once:
    "tied/<key>" -> the other keys, per key of such a tensor."""
    groups, arrays = {}, {}
    for k, v in model.state_dict(keep_vars=True).items():
        groups.setdefault(id(v), []).append(k)
    for ks in groups.values():
        for k in ks:
            if len(ks) > 1:
                arrays["tied/" + k] = np.array([o for o in ks if o != k])
    return arrays


def fixture_exports_and_step(model, x, y, name, out, exporters=("dynamo", "legacy"),
                             strip=True):
    """A fixture's exports (<name>_dynamo.onnx, <name>_legacy.onnx; the default
    exporter's node provenance stripped unless strip is False) and its reference arrays:
    input, labels, the loss and every tensor after one SGD step in float64, and PyTorch
    float32's own distance to float64 per tensor."""
    for ex in exporters:
        export(model, x, ex, os.path.join(out, f"{name}_{ex}.onnx"))
    for ex in exporters:
        if ex.startswith("dynamo") and strip:
            strip_provenance(os.path.join(out, f"{name}_{ex}.onnx"))
    lr = FIXTURE_LR.get(name, LR)
    loss64, s64 = reference_step(model, x, y, torch.float64, lr)
    loss32, s32 = float32_spread(model, x, y, (loss64, s64), 0, lr)
    arrays = {"labels": y.numpy().astype(np.int64), "loss": np.float64(loss64),
              "loss_fp32": np.float64(loss32), "lr": np.float64(lr)}
    arrays.update({n: t.numpy() for n, t in zip(input_names(x), as_inputs(x))})
    for k, v in s64.items():
        arrays["w64/" + k] = v
        arrays["fp32_dist/" + k] = np.float64(rel(s32[k], v))
    arrays.update(tied_keys(model))
    return arrays


def cmd_fixtures(args):
    """Small models for CI: exports + float64 references (see tests/py/test_torch2_exports.py)."""
    torch_imports()
    sys.path.insert(0, os.path.join(ROOT, "tools"))
    from tiny_models import DYNAMO_ONLY, OPTIMIZED_TOO, SEGMENTATION as SEG, TINY, example_shape
    os.makedirs(args.out, exist_ok=True)
    only = set(args.models.split(",")) if args.models else None
    for name, make in TINY.items():
        if only and name not in only:
            continue
        torch.manual_seed(0)
        model = no_randomness(make())
        g = torch.Generator().manual_seed(123)
        x = torch.randn(*example_shape(name), generator=g)
        y = torch.randint(0, 10, (2, 32, 32) if name in SEG else (2,), generator=g)
        exporters = ("dynamo",) if name in DYNAMO_ONLY else ("dynamo", "legacy")
        exporters += ("dynamo-optimized",) if name in OPTIMIZED_TOO else ()
        arrays = fixture_exports_and_step(model, x, y, name, args.out, exporters)
        np.savez_compressed(os.path.join(args.out, f"{name}.ref.npz"), **arrays)
        print(f"{name}: {sum(p.numel() for p in model.parameters())} parameters")
    from tiny_transformers import PADDED, POOLED, SEQUENCE, TRANSFORMERS, VOCAB, T
    models = dict(TRANSFORMERS)
    try:  # Hugging Face's own modeling code, where the transformers package is installed
        import tiny_hf
        models.update(tiny_hf.HF)
    except ImportError:
        tiny_hf = None
        print("transformers is not installed: the tiny_hf_* fixtures are not written")
    for name, make in models.items():
        if only and name not in only:
            continue
        torch.manual_seed(0)
        model = no_randomness(make())
        g = torch.Generator().manual_seed(123)
        hf = name not in TRANSFORMERS
        if hf:
            x = tiny_hf.pad(name, torch.randint(2, tiny_hf.VOCAB, (2, tiny_hf.T), generator=g))
            y = (torch.randint(0, 10, (2,), generator=g) if tiny_hf.classifier(name) else
                 torch.randint(0, tiny_hf.VOCAB, (2, tiny_hf.T), generator=g))
        elif name in POOLED:  # lengths 20 and 27: content, the end-of-text token, zeros
            x = torch.randint(1, VOCAB - 1, (2, T), generator=g)
            for r, n in enumerate((20, 27)):
                x[r, n - 1], x[r, n:] = VOCAB - 1, 0
            y = torch.randint(0, 10, (2,), generator=g)
        elif name in SEQUENCE:
            x = torch.randint(0, VOCAB, (2, T), generator=g)
            y = torch.randint(0, VOCAB, (2, T), generator=g)
            if name == "tiny_bert":  # masked LM: a target at 15% of the positions
                y[torch.rand(2, T, generator=g) >= 0.15] = -100
            else:
                y[0, :3] = -100  # PyTorch's default ignore_index: count in no loss
            if name in PADDED:  # padding tokens, no targets there
                x[:, -5:], y[:, -5:] = PADDED[name], -100
        else:
            x = torch.randn(2, 3, 32, 32, generator=g)
            y = torch.randint(0, 10, (2,), generator=g)
        exporters = (("dynamo",) if (hf and name in tiny_hf.NO_LEGACY) or name in PADDED else
                     ("dynamo", "legacy"))
        arrays = fixture_exports_and_step(model, x, y, name, args.out, exporters)
        if hf and name in tiny_hf.EXTERNAL_DATA:  # every initializer in <file>.data
            import onnx
            path = os.path.join(args.out, f"{name}_dynamo.onnx")
            onnx.save(onnx.load(path), path, save_as_external_data=True,
                      all_tensors_to_one_file=True, location=f"{name}_dynamo.onnx.data",
                      size_threshold=0)
        # 3-step trajectories on the same batch: SGD; AdamW with clipping
        arrays["sgd3/losses"] = np.array(reference_run(model, x, y, torch.float64, 3)[0])
        losses, st = reference_run(model, x, y, torch.float64, 3, adamw=True, clip=CLIP)
        arrays["adamw3/losses"] = np.array(losses)
        # AdamW turns a gradient that is zero in exact arithmetic (a key bias: softmax
        # ignores a shift shared by every key) into +-lr steps of rounding noise: PyTorch
        # float32's own distance, over its two convolution paths, is the yardstick there
        st32 = [reference_run(model, x, y, torch.float32, 3, adamw=True, clip=CLIP)[1]]
        torch.backends.mkldnn.enabled = False
        try:
            st32.append(reference_run(model, x, y, torch.float32, 3, adamw=True, clip=CLIP)[1])
        finally:
            torch.backends.mkldnn.enabled = True
        for k, v in st.items():
            arrays["adamw3/w64/" + k] = v
            arrays["adamw3/fp32_dist/" + k] = np.float64(max(rel(s[k], v) for s in st32))
        arrays.update(tied_keys(model))
        np.savez_compressed(os.path.join(args.out, f"{name}.ref.npz"), **arrays)
        print(f"{name}: {sum(p.numel() for p in model.parameters())} parameters")
    if not only or "tiny_rnn_packed" in only:  # two inputs, the legacy exporter alone
        from tiny_models import TinyRnnPacked
        torch.manual_seed(0)
        model = no_randomness(TinyRnnPacked())
        g = torch.Generator().manual_seed(123)
        x = (torch.randn(2, 6, 4, generator=g), torch.tensor([6, 3]))
        y = torch.randint(0, 10, (2,), generator=g)
        arrays = fixture_exports_and_step(model, x, y, "tiny_rnn_packed", args.out, ("legacy",))
        np.savez_compressed(os.path.join(args.out, "tiny_rnn_packed.ref.npz"), **arrays)
        print(f"tiny_rnn_packed: {sum(p.numel() for p in model.parameters())} parameters")
    if not only or "tiny_gather_pick" in only:  # two inputs: run-time int64 indices
        from tiny_models import TinyGatherPick
        torch.manual_seed(0)
        model = no_randomness(TinyGatherPick())
        g = torch.Generator().manual_seed(125)
        x = (torch.randn(4, 8, generator=g),
             torch.tensor([[1, 9, 1], [0, 9, 3], [5, 5, 2], [7, 7, 0]]))
        y = torch.randint(0, 10, (4,), generator=g)
        arrays = fixture_exports_and_step(model, x, y, "tiny_gather_pick", args.out)
        np.savez_compressed(os.path.join(args.out, "tiny_gather_pick.ref.npz"), **arrays)
        print(f"tiny_gather_pick: {sum(p.numel() for p in model.parameters())} parameters")
    if not only or "tiny_embedding_bag" in only:  # ids as a second, integer input
        from tiny_models import TinyEmbeddingBag
        torch.manual_seed(0)
        model = no_randomness(TinyEmbeddingBag())
        g = torch.Generator().manual_seed(127)
        ids = torch.tensor([[1, 3, 3, 11, 0], [7, 2, 9, 2, 2], [4, 4, 4, 4, 4], [10, 6, 5, 8, 1]])
        x = (torch.randn(4, 8, generator=g), ids)
        y = torch.randint(0, 10, (4,), generator=g)
        arrays = fixture_exports_and_step(model, x, y, "tiny_embedding_bag", args.out)
        np.savez_compressed(os.path.join(args.out, "tiny_embedding_bag.ref.npz"), **arrays)
        print(f"tiny_embedding_bag: {sum(p.numel() for p in model.parameters())} parameters")
    if not only or "tiny_embedding_bag_many" in only:  # ids the only input
        from tiny_models import TinyEmbeddingBagMany
        torch.manual_seed(0)
        model = no_randomness(TinyEmbeddingBagMany())
        g = torch.Generator().manual_seed(129)
        x = torch.randint(0, 12, (130, 3), generator=g)
        y = torch.randint(0, 10, (130,), generator=g)
        arrays = fixture_exports_and_step(model, x, y, "tiny_embedding_bag_many", args.out)
        np.savez_compressed(os.path.join(args.out, "tiny_embedding_bag_many.ref.npz"), **arrays)
        print(f"tiny_embedding_bag_many: {sum(p.numel() for p in model.parameters())} parameters")
    if not only or "tiny_embedding_bag_offsets" in only:  # ids and offsets: integer inputs
        from tiny_models import TinyEmbeddingBagOffsets
        torch.manual_seed(0)
        model = no_randomness(TinyEmbeddingBagOffsets())
        g = torch.Generator().manual_seed(131)
        ids = torch.tensor([1, 3, 3, 11, 0, 7, 2, 9, 2, 2, 4])
        y = torch.randint(0, 10, (4,), generator=g)
        # two batches of one plan: the same shapes, other offsets (empty bags at the start,
        # inside, at the end); torch.export's form as written by default (optimized) too
        for tag, offsets in (("", [0, 3, 3, 7]), ("_b", [0, 0, 10, 11])):
            x = (torch.randn(4, 8, generator=g), ids, torch.tensor(offsets))
            arrays = fixture_exports_and_step(model, x, y, "tiny_embedding_bag_offsets", args.out,
                                              ("legacy", "dynamo", "dynamo-optimized"))
            np.savez_compressed(os.path.join(args.out, f"tiny_embedding_bag_offsets{tag}.ref.npz"),
                                **arrays)
        # max bags (SegmentMax), the same batches: ties of a repeated id, empty bags
        from tiny_models import TinyEmbeddingBagOffsetsMax
        torch.manual_seed(0)
        model_max = no_randomness(TinyEmbeddingBagOffsetsMax())
        g = torch.Generator().manual_seed(135)
        for tag, offsets in (("", [0, 3, 3, 7]), ("_b", [0, 0, 10, 11])):
            x = (torch.randn(4, 8, generator=g), ids, torch.tensor(offsets))
            arrays = fixture_exports_and_step(model_max, x, y, "tiny_embedding_bag_offsets_max",
                                              args.out, ("legacy", "dynamo", "dynamo-optimized"))
            np.savez_compressed(
                os.path.join(args.out, f"tiny_embedding_bag_offsets_max{tag}.ref.npz"), **arrays)
        print(f"tiny_embedding_bag_offsets: {sum(p.numel() for p in model.parameters())} parameters")
    if not only or "tiny_embedding_bag_weighted" in only:  # ids, offsets, per-id weights
        from tiny_models import TinyEmbeddingBagWeighted
        torch.manual_seed(0)
        model = no_randomness(TinyEmbeddingBagWeighted())
        g = torch.Generator().manual_seed(133)
        x = (torch.randint(0, 50, (40,), generator=g), torch.tensor([0, 3, 3, 10, 22, 30, 31, 40]),
             torch.rand(40, generator=g))
        y = torch.randint(0, 10, (8,), generator=g)
        arrays = fixture_exports_and_step(model, x, y, "tiny_embedding_bag_weighted", args.out,
                                          ("dynamo", "dynamo-optimized"))
        np.savez_compressed(os.path.join(args.out, "tiny_embedding_bag_weighted.ref.npz"),
                            **arrays)
        export(model, x, "legacy", os.path.join(args.out, "tiny_embedding_bag_weighted_legacy.onnx"))
        print(f"tiny_embedding_bag_weighted: {sum(p.numel() for p in model.parameters())} parameters")
    if not only or "tiny_embedding_bag_batch" in only:  # 5000 bags: more than outcore unrolls
        from tiny_models import TinyEmbeddingBagBatch
        torch.manual_seed(0)
        model = TinyEmbeddingBagBatch()
        g = torch.Generator().manual_seed(134)
        n = 5000
        cuts = torch.sort(torch.randint(0, 3 * n + 1, (n - 1,), generator=g)).values
        x = (torch.randint(0, 12, (3 * n,), generator=g),
             torch.cat([torch.zeros(1, dtype=torch.long), cuts]))
        y = torch.randint(0, 10, (n,), generator=g)
        arrays = fixture_exports_and_step(model, x, y, "tiny_embedding_bag_batch", args.out,
                                          ("legacy", "dynamo", "dynamo-optimized"))
        np.savez_compressed(os.path.join(args.out, "tiny_embedding_bag_batch.ref.npz"), **arrays)
        print(f"tiny_embedding_bag_batch: {sum(p.numel() for p in model.parameters())} parameters")
    if not only or "tiny_dlrm" in only:  # a recommender: three bags' ids and offsets
        from tiny_models import TinyDLRM
        torch.manual_seed(0)
        model = no_randomness(TinyDLRM())
        g = torch.Generator().manual_seed(132)
        x = [torch.randn(8, 13, generator=g)]
        for _ in range(3):  # 24 ids in 8 bags of random sizes, empty ones among them
            cuts = torch.sort(torch.randint(0, 25, (7,), generator=g)).values
            x += [torch.randint(0, 20, (24,), generator=g),
                  torch.cat([torch.zeros(1, dtype=torch.long), cuts])]
        y = torch.randint(0, 2, (8,), generator=g)
        arrays = fixture_exports_and_step(model, tuple(x), y, "tiny_dlrm", args.out,
                                          ("legacy", "dynamo", "dynamo-optimized"))
        np.savez_compressed(os.path.join(args.out, "tiny_dlrm.ref.npz"), **arrays)
        print(f"tiny_dlrm: {sum(p.numel() for p in model.parameters())} parameters")
    if not only or "tiny_merged" in only:  # what optimize=True merged, folded, removed
        from tiny_models import TinyMerged
        torch.manual_seed(0)
        model = TinyMerged()
        g = torch.Generator().manual_seed(133)
        x, y = torch.randn(2, 3, 8, generator=g), torch.randint(0, 4, (2,), generator=g)
        arrays = fixture_exports_and_step(model, x, y, "tiny_merged", args.out,
                                          ("dynamo-optimized",), strip=False)
        np.savez_compressed(os.path.join(args.out, "tiny_merged.ref.npz"), **arrays)
        print(f"tiny_merged: {sum(p.numel() for p in model.parameters())} parameters")
        from tiny_models import TinyTiedLM  # ... and a tie it broke by folding a transpose
        torch.manual_seed(0)
        model = TinyTiedLM()
        x, y = torch.randint(0, 10, (2, 5), generator=g), torch.randint(0, 10, (2, 5), generator=g)
        arrays = fixture_exports_and_step(model, x, y, "tiny_tied_lm", args.out,
                                          ("dynamo-optimized",), strip=False)
        np.savez_compressed(os.path.join(args.out, "tiny_tied_lm.ref.npz"), **arrays)
    if not only or "tiny_scatter_add" in only:  # edges as a second, integer input
        from tiny_models import TinyScatterAdd
        torch.manual_seed(0)
        model = no_randomness(TinyScatterAdd())
        g = torch.Generator().manual_seed(126)
        edges = torch.stack([torch.randint(0, 5, (3, 7), generator=g),
                             torch.tensor([[0, 0, 3, 4, 4, 4, 2]] * 3)], 1)  # (3, 2, 7)
        x = (torch.randn(3, 5, 4, generator=g), edges)
        y = torch.randint(0, 10, (3,), generator=g)
        arrays = fixture_exports_and_step(model, x, y, "tiny_scatter_add", args.out)
        np.savez_compressed(os.path.join(args.out, "tiny_scatter_add.ref.npz"), **arrays)
        print(f"tiny_scatter_add: {sum(p.numel() for p in model.parameters())} parameters")
    from tiny_models import TinyNllLoss, TinySoftCe
    for name, cls in (("tiny_nll_loss", TinyNllLoss), ("tiny_soft_ce", TinySoftCe)):
        if only and name not in only:  # the model's own loss: one SGD step, lr 0.1
            continue
        torch.manual_seed(0)
        model = cls()
        g = torch.Generator().manual_seed(127)
        x = torch.randn(2, 3, 6, 6, generator=g)
        if name == "tiny_nll_loss":
            t = torch.randint(0, 5, (2, 6, 6), generator=g)
            t[0, :2] = 255  # ignored pixels
        else:  # class probabilities
            t = torch.softmax(2 * torch.randn(2, 5, 6, 6, generator=g), 1)
        for ex in ("dynamo", "legacy"):
            export(model, (x, t), ex, os.path.join(args.out, f"{name}_{ex}.onnx"))
        strip_provenance(os.path.join(args.out, f"{name}_dynamo.onnx"))
        m64 = cls().double()
        m64.load_state_dict({k: v.double() for k, v in model.state_dict().items()})
        loss = m64(x.double(), t.double() if t.is_floating_point() else t)
        loss.backward()
        arrays = {"input": x.numpy(), "input_1": t.numpy(), "loss": np.float64(loss.item()),
                  "lr": np.float64(0.1)}
        with torch.no_grad():
            for k, p in m64.named_parameters():
                arrays["w64/" + k] = (p - 0.1 * p.grad).numpy()
        np.savez_compressed(os.path.join(args.out, f"{name}.ref.npz"), **arrays)
        print(f"{name}: loss {loss.item():.6f}")
    if not only or "tiny_rnn_unsorted" in only:  # lengths in any order: TopK, gathers
        from tiny_models import TinyRnnUnsorted
        torch.manual_seed(0)
        model = no_randomness(TinyRnnUnsorted())
        g = torch.Generator().manual_seed(124)
        x = (torch.randn(3, 6, 4, generator=g), torch.tensor([3, 6, 2]))
        y = torch.randint(0, 10, (3,), generator=g)
        arrays = fixture_exports_and_step(model, x, y, "tiny_rnn_unsorted", args.out, ("legacy",))
        np.savez_compressed(os.path.join(args.out, "tiny_rnn_unsorted.ref.npz"), **arrays)
        print(f"tiny_rnn_unsorted: {sum(p.numel() for p in model.parameters())} parameters")
    if only:  # the extra fixtures below come with a full run
        return
    # Dropout 0.2 and stochastic depth 0.2 left on: the exporter's RandomUniformLike
    # patterns, for the mask and recompute-replay tests (no PyTorch reference).
    torch.manual_seed(0)
    model = TINY["tiny_efficientnet"]()
    export(model, torch.randn(2, 3, 32, 32), "dynamo",
           os.path.join(args.out, "tiny_efficientnet_dropout_dynamo.onnx"))
    # The exporter's own defaults (optimize=True): BatchNormalization folded away, which
    # outcore must point out.
    torch.manual_seed(0)
    export(no_randomness(TINY["tiny_resnet"]()), torch.randn(2, 3, 32, 32), "dynamo-optimized",
           os.path.join(args.out, "tiny_resnet_dynamo_optimized.onnx"))
    # ... a parameter folded away with what reads it (a transposed Linear weight), and
    # parameters still there whose expression was folded (GeM's 1 / p): named too.
    for name in ("tiny_gather", "tiny_gem"):
        torch.manual_seed(0)
        export(no_randomness(TINY[name]()), torch.randn(2, 3, 32, 32), "dynamo-optimized",
               os.path.join(args.out, f"{name}_dynamo_optimized.onnx"))
    # A tied weight (one initializer for two names, no aten call reading the second): not
    # folded; the optimized export's transposed copy is (the tie broken). Both with their
    # FX metadata (not stripped), which tells the two apart.
    from tiny_models import TinyTied
    for ex in ("dynamo", "dynamo-optimized"):
        torch.manual_seed(0)
        export(TinyTied(), torch.randint(0, 10, (2, 5)), ex,
               os.path.join(args.out, f"tiny_tied_{ex.replace('-', '_')}.onnx"))
    with open(os.path.join(args.out, "VERSION"), "w") as f:
        f.write(f"torch {torch.__version__}\n")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("sweep")
    s.add_argument("--models")
    s.add_argument("--exporters", default="dynamo,legacy")
    s.add_argument("--out", default=None, help="scratch folder")
    s.add_argument("--image-size", type=int, default=IMAGE_SIZE)
    s.add_argument("--batch", type=int, default=BATCH)
    s.add_argument("--draws", type=int, default=DRAWS,
                   help="float32 steps on last-bit copies of the weights (ties' yardstick)")
    s.add_argument("--table", help="write the Markdown table here (the exporters print to stdout)")
    f = sub.add_parser("fixtures")
    f.add_argument("--out", default=os.path.join(ROOT, "tests", "data", "torch2"))
    f.add_argument("--models", help="only these fixtures (comma-separated), e.g. tiny_gpt")
    args = p.parse_args()
    {"sweep": cmd_sweep, "fixtures": cmd_fixtures}[args.cmd](args)


if __name__ == "__main__":
    main()
