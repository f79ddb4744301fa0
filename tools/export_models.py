#!/usr/bin/python3
"""Export CNNs (and, with --models gpt2_small,bert_base,vit_b16, transformers) from PyTorch
to ONNX in training mode, for the outcore planner.

For every model and opset this writes
  <out>/<model>_op<opset>.onnx         the forward graph as torch.onnx.export produces it
                                       in TrainingMode.TRAINING (BatchNormalization in its
                                       training form, Dropout active), batch dim dynamic;
  <out>/<model>_op<opset>.shapes.json  the shapes PyTorch itself computed in one forward pass
                                       at the export batch, keyed by ONNX output tensor name.

Runs under Debian's /usr/bin/python3 (python3-torch 1.13, python3-torchvision, python3-onnx).
Weights are never downloaded: every model is built with weights=None and seeded.
"""

import argparse
import inspect
import io
import json
import os
import sys
import warnings

import onnx
import torch
import torch.nn as nn
import torchvision.models as tvm
from torch.overrides import TorchFunctionMode

# The only ONNX ops the planner's first op set accepts; anything else fails the export.
ALLOWED_OPS = {
    "Conv", "ConvTranspose", "BatchNormalization", "Relu", "Clip", "MaxPool",
    "AveragePool", "GlobalAveragePool", "Add", "Concat", "Flatten", "Gemm",
    "Dropout", "Pad", "Constant", "Reshape", "Shape", "Gather", "Unsqueeze",
}

# Models whose export needs more: pad_small's ReflectionPad2d / ReplicationPad2d, which the
# TorchScript exporter writes with the pads computed from constants (folded at load).
EXTRA_OPS = {"pad_small": {"Mul", "Sub", "Cast", "ConstantOfShape", "Slice", "Transpose"}}
# ... and SHAPED_OPS it writes as glue, not as a layer (pad_small's pads are a Concat).
UNSHAPED_OPS = {"pad_small": {"Concat"}}

# Node types whose first output gets a PyTorch-computed shape in .shapes.json (all must be mapped).
SHAPED_OPS = {
    "Conv", "ConvTranspose", "BatchNormalization", "MaxPool", "AveragePool",
    "GlobalAveragePool", "Gemm", "Relu", "Clip", "Concat",
}

# torch function name (as seen by a TorchFunctionMode) -> ONNX op types it may export to.
# adaptive_avg_pool2d exports as GlobalAveragePool for a 1x1 output, and as a fixed-size
# AveragePool otherwise (alexnet/vgg16: 6x6 / 7x7 output from an equal-sized input -> 1x1 kernel).
FUNC_TO_OPS = {
    "conv2d": {"Conv"},
    "conv_transpose2d": {"ConvTranspose"},
    "batch_norm": {"BatchNormalization"},
    "max_pool2d": {"MaxPool"},
    "avg_pool2d": {"AveragePool"},
    "adaptive_avg_pool2d": {"GlobalAveragePool", "AveragePool"},
    "linear": {"Gemm"},
    "relu": {"Relu"},
    "relu_": {"Relu"},
    "hardtanh": {"Clip"},                 # nn.ReLU6 (mobilenet_v2)
    "cat": {"Concat"},
}

DEFAULT_MODELS = ["resnet18", "resnet50", "resnet152", "googlenet", "alexnet", "vgg16",
                  "densenet121", "mobilenet_v2", "unet"]


# ---------------------------------------------------------------------------------------------
# Models
# ---------------------------------------------------------------------------------------------

def double_conv(cin, cout):
    """Two [Conv3x3 pad 1 -> BatchNorm -> ReLU] (one U-Net level)."""
    return nn.Sequential(
        nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(inplace=True),
        nn.Conv2d(cout, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(inplace=True),
    )


class UNet(nn.Module):
    """Classic Ronneberger U-Net shape, 4 down levels, base width 32, padded convs.

    The [N, C, H, W] segmentation logits go through GlobalAveragePool + Flatten so the
    output is [N, num_classes] and downstream keeps a single classification loss form.
    """

    def __init__(self, in_ch=3, num_classes=10, base=32, levels=4):
        super().__init__()
        widths = [base * 2 ** i for i in range(levels + 1)]        # 32 64 128 256 512
        self.down = nn.ModuleList()
        cin = in_ch
        for w in widths[:-1]:
            self.down.append(double_conv(cin, w))
            cin = w
        self.pool = nn.MaxPool2d(2, 2)
        self.bottleneck = double_conv(widths[-2], widths[-1])
        self.up = nn.ModuleList()
        self.dec = nn.ModuleList()
        for w in reversed(widths[:-1]):
            self.up.append(nn.ConvTranspose2d(2 * w, w, kernel_size=2, stride=2))
            self.dec.append(double_conv(2 * w, w))
        self.head = nn.Conv2d(widths[0], num_classes, 1)
        self.gap = nn.AdaptiveAvgPool2d(1)
        self.flatten = nn.Flatten(1)

    def forward(self, x):
        skips = []
        for block in self.down:
            x = block(x)
            skips.append(x)
            x = self.pool(x)
        x = self.bottleneck(x)
        for up, dec, skip in zip(self.up, self.dec, reversed(skips)):
            x = dec(torch.cat([skip, up(x)], dim=1))
        return self.flatten(self.gap(self.head(x)))


class SmallInception(nn.Module):
    """GoogLeNet-like inception block: 1x1 | 1x1->3x3 | 1x1->3x3 | maxpool->1x1, concatenated."""

    def __init__(self, cin, c1, c3r, c3, c5r, c5, cp):
        super().__init__()
        def conv(i, o, k):
            return nn.Sequential(nn.Conv2d(i, o, k, padding=k // 2, bias=False),
                                 nn.BatchNorm2d(o, eps=0.001), nn.ReLU(inplace=True))
        self.b1 = conv(cin, c1, 1)
        self.b2 = nn.Sequential(conv(cin, c3r, 1), conv(c3r, c3, 3))
        self.b3 = nn.Sequential(conv(cin, c5r, 1), conv(c5r, c5, 3))
        self.b4 = nn.Sequential(nn.MaxPool2d(3, stride=1, padding=1, ceil_mode=True), conv(cin, cp, 1))

    def forward(self, x):
        return torch.cat([self.b1(x), self.b2(x), self.b3(x), self.b4(x)], 1)


class GoogLeNetSmall(nn.Module):
    """A small GoogLeNet-like model (no Dropout, no aux heads): stem, 2 inception blocks."""

    def __init__(self, num_classes=10):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1, bias=False),
                                  nn.BatchNorm2d(16, eps=0.001), nn.ReLU(inplace=True),
                                  nn.MaxPool2d(3, stride=2, ceil_mode=True))
        self.inc1 = SmallInception(16, 8, 8, 12, 4, 6, 6)       # -> 32
        self.inc2 = SmallInception(32, 12, 8, 16, 4, 8, 8)      # -> 44
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(44, num_classes)

    def forward(self, x):
        x = self.inc2(self.inc1(self.stem(x)))
        return self.fc(torch.flatten(self.pool(x), 1))


class DenseLayer(nn.Module):
    def __init__(self, cin, growth):
        super().__init__()
        self.body = nn.Sequential(nn.BatchNorm2d(cin), nn.ReLU(inplace=True),
                                  nn.Conv2d(cin, 4 * growth, 1, bias=False),
                                  nn.BatchNorm2d(4 * growth), nn.ReLU(inplace=True),
                                  nn.Conv2d(4 * growth, growth, 3, padding=1, bias=False))

    def forward(self, feats):
        return self.body(torch.cat(feats, 1))


class DenseNetSmall(nn.Module):
    """A small DenseNet-like model: 2 dense blocks of 3 layers (growth 8) with a
    BN-ReLU-Conv1x1-AvgPool transition, no Dropout."""

    def __init__(self, num_classes=10, growth=8):
        super().__init__()
        # Stem without BN: the gradient of a stem BN's scale cancels almost exactly here
        # (PyTorch's own fp32 and fp64 gradients differ by 2e-2), useless for a 1e-4 check.
        self.conv0 = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1, bias=False), nn.ReLU(inplace=True))
        c = 16
        self.block1 = nn.ModuleList()
        for _ in range(3):
            self.block1.append(DenseLayer(c, growth))
            c += growth
        self.trans = nn.Sequential(nn.BatchNorm2d(c), nn.ReLU(inplace=True),
                                   nn.Conv2d(c, c // 2, 1, bias=False), nn.AvgPool2d(2, 2))
        c //= 2
        self.block2 = nn.ModuleList()
        for _ in range(3):
            self.block2.append(DenseLayer(c, growth))
            c += growth
        self.norm = nn.BatchNorm2d(c)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(c, num_classes)

    @staticmethod
    def dense(block, x):
        feats = [x]
        for layer in block:
            feats.append(layer(feats))
        return torch.cat(feats, 1)

    def forward(self, x):
        x = self.dense(self.block1, self.conv0(x))
        x = self.dense(self.block2, self.trans(x))
        x = torch.relu(self.norm(x))
        return self.fc(torch.flatten(self.pool(x), 1))


class AlexNetSmall(nn.Module):
    """A small AlexNet-like model with two Dropout(0.5) layers (Dropout mask tests)."""

    def __init__(self, num_classes=10):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(inplace=True),
                                      nn.MaxPool2d(2), nn.Conv2d(16, 32, 3, padding=1),
                                      nn.ReLU(inplace=True), nn.MaxPool2d(2))
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.classifier = nn.Sequential(nn.Dropout(0.5), nn.Linear(32, 64), nn.ReLU(inplace=True),
                                        nn.Dropout(0.5), nn.Linear(64, num_classes))

    def forward(self, x):
        return self.classifier(torch.flatten(self.pool(self.features(x)), 1))


class VGGSmall(nn.Module):
    """A small VGG-like model: Conv -> ReLU chains with biases and no BatchNorm or Dropout
    (ConvRelu fusion against PyTorch)."""

    def __init__(self, num_classes=10):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(inplace=True),
                                      nn.Conv2d(8, 8, 3, padding=1), nn.ReLU(inplace=True),
                                      nn.MaxPool2d(2), nn.Conv2d(8, 16, 3, padding=1),
                                      nn.ReLU(inplace=True), nn.MaxPool2d(2))
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.classifier = nn.Sequential(nn.Linear(16, 32), nn.ReLU(inplace=True),
                                        nn.Linear(32, num_classes))

    def forward(self, x):
        return self.classifier(torch.flatten(self.pool(self.features(x)), 1))


class PadSmall(nn.Module):
    """A small CNN whose convolutions read reflect and edge padding (pix2pix / CycleGAN
    generators, TResNet's anti-aliasing): the Pad gradients' mirror and border sums, in
    float32 and under autocast (Pad runs in its input's type)."""

    def __init__(self, num_classes=10):
        super().__init__()
        self.features = nn.Sequential(
            nn.ReflectionPad2d(3), nn.Conv2d(3, 16, 7, bias=False), nn.BatchNorm2d(16),
            nn.ReLU(inplace=True), nn.ReplicationPad2d((1, 2, 2, 1)),
            nn.Conv2d(16, 32, 3, stride=2, bias=False), nn.BatchNorm2d(32), nn.ReLU(inplace=True),
            nn.ReflectionPad2d(1), nn.Conv2d(32, 32, 3), nn.ReLU(inplace=True))
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(32, num_classes)
        nn.init.normal_(self.fc.weight, std=1.0)  # logits far from uniform: a loss bf16 moves

    def forward(self, x):
        return self.fc(torch.flatten(self.pool(self.features(x)), 1))


def build_model(name, image_size):
    """A freshly initialised model (never downloaded weights)."""
    builders = {
        "resnet18": lambda: tvm.resnet18(weights=None),
        "resnet50": lambda: tvm.resnet50(weights=None),
        "resnet152": lambda: tvm.resnet152(weights=None),
        "googlenet": lambda: tvm.googlenet(weights=None, aux_logits=False, init_weights=False,
                                           transform_input=False),
        "alexnet": lambda: tvm.alexnet(weights=None),
        "vgg16": lambda: tvm.vgg16(weights=None),
        "densenet121": lambda: tvm.densenet121(weights=None),
        "mobilenet_v2": lambda: tvm.mobilenet_v2(weights=None),
        "unet": UNet,
        "googlenet_small": GoogLeNetSmall,
        "densenet_small": DenseNetSmall,
        "alexnet_small": AlexNetSmall,
        "vgg_small": VGGSmall,
        "pad_small": PadSmall,
    }
    if name not in builders:
        sys.exit(f"export_models: unknown model '{name}' (known: {', '.join(builders)})")
    if name == "unet" and image_size % 16:
        sys.exit("export_models: unet needs --image-size divisible by 16")
    # No module replacement is needed with torch 1.13: every torchvision model here exports
    # within ALLOWED_OPS as is (AdaptiveAvgPool2d -> GlobalAveragePool or a 1x1 AveragePool,
    # torch.flatten -> Flatten, ReLU6 -> Clip with Constant min/max). check_ops() enforces it.
    return builders[name]()


# ---------------------------------------------------------------------------------------------
# Shapes computed by PyTorch
# ---------------------------------------------------------------------------------------------

def unqualified(qualname):
    """The exporter's scope component for a module: its qualified name from the last
    non-numeric atom on (torch.onnx.utils._unqualified_variable_name): 'layer1.0.conv1' ->
    'conv1', 'layer1.0' -> 'layer1.0', 'features.0.2' -> 'features.0.2'."""
    atoms = qualname.split(".")
    for i in range(len(atoms) - 1, -1, -1):
        if not atoms[i].isnumeric():
            return ".".join(atoms[i:])
    return qualname


class ShapeRecorder(TorchFunctionMode):
    """Records (ONNX scope, torch function, output shape) for every function call of one forward.

    A stack of module calls (global forward pre/post hooks) gives each call the scope name the
    ONNX exporter gives its nodes: '/layer1/layer1.0/conv1'. A module called twice inside the
    same parent call gets '_1', '_2', ... as the exporter does (resnet's relu -> relu, relu_1).
    Catching functions rather than only leaf-module outputs also covers functional ops
    (torch.cat in densenet/googlenet/unet, F.relu / F.adaptive_avg_pool2d in densenet).
    """

    def __init__(self, model):
        super().__init__()
        self.names = {m: unqualified(n) for n, m in model.named_modules() if n}
        self.stack = [("", {})]           # (scope, uses of each child name in this call)
        self.events = []                  # (scope, func name, shape)
        self.handles = []

    def __enter__(self):
        self.handles = [nn.modules.module.register_module_forward_pre_hook(self._pre),
                        nn.modules.module.register_module_forward_hook(self._post)]
        return super().__enter__()

    def __exit__(self, *exc):
        for h in self.handles:
            h.remove()
        return super().__exit__(*exc)

    def _pre(self, module, inputs):
        if module not in self.names:      # the root model
            return
        scope, uses = self.stack[-1]
        name = self.names[module]
        k = uses.get(name, 0)
        uses[name] = k + 1
        self.stack.append((f"{scope}/{name}" + (f"_{k}" if k else ""), {}))

    def _post(self, module, inputs, output):
        if module in self.names:
            self.stack.pop()

    def __torch_function__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        name = getattr(func, "__name__", "")
        if name in FUNC_TO_OPS:
            first = out[0] if isinstance(out, tuple) else out   # max_pool2d may return indices
            self.events.append((self.stack[-1][0], name, list(first.shape)))
        return out


def record_shapes(model, x):
    """One forward at the export batch; the model's state is restored afterwards."""
    state = {k: v.clone() for k, v in model.state_dict().items()}
    rec = ShapeRecorder(model)
    with torch.no_grad(), rec:
        model(x)
    model.load_state_dict(state)
    return rec.events


def node_scope(node):
    """'/layer1/layer1.0/conv1/Conv_1' -> '/layer1/layer1.0/conv1'; '/Flatten' -> ''."""
    return node.name.rsplit("/", 1)[0]


def map_shapes(graph, events, model_name):
    """ONNX output tensor name -> PyTorch shape, for every node in SHAPED_OPS.

    Within each scope, the shaped nodes (graph order) and the recorded calls (call order) must
    pair up one to one with compatible op types; any unmapped node or call is an error.
    """
    calls = {}
    for scope, func, shape in events:
        calls.setdefault(scope, []).append((func, shape))
    nodes = {}
    shaped = SHAPED_OPS - UNSHAPED_OPS.get(model_name, set())
    for node in graph.node:
        if node.op_type in shaped:
            nodes.setdefault(node_scope(node), []).append(node)

    tensors, errors = {}, []
    for scope in sorted(set(nodes) | set(calls)):
        ns, cs = nodes.get(scope, []), calls.get(scope, [])
        for i in range(max(len(ns), len(cs))):
            node = ns[i] if i < len(ns) else None
            call = cs[i] if i < len(cs) else None
            if node is None or call is None or node.op_type not in FUNC_TO_OPS[call[0]]:
                errors.append(f"  scope '{scope or '/'}' #{i}: node "
                              f"{(node.name, node.op_type) if node else None} vs torch call "
                              f"{call[0] if call else None}")
                continue
            tensors[node.output[0]] = call[1]
    if errors:
        sys.exit(f"export_models: {model_name}: ONNX nodes not mapped to PyTorch shapes:\n"
                 + "\n".join(errors))
    return tensors


# ---------------------------------------------------------------------------------------------
# Export and post-processing
# ---------------------------------------------------------------------------------------------

def legacy_exporter():
    """torch.onnx.export's keyword for the TorchScript exporter where it has one (torch 2.x)."""
    return {"dynamo": False} if "dynamo" in inspect.signature(torch.onnx.export).parameters else {}


def export_onnx(model, x, opset):
    """torch.onnx.export in training mode, batch dim dynamic; returns the ModelProto. The
    TorchScript (legacy) exporter on every torch: the scopes write_shapes maps and ALLOWED_OPS are
    its (torch >= 2.9 defaults to the dynamo exporter, whose opset-13 down-conversion of
    ResNet-18's ReduceMean failed under torch 2.11)."""
    buf = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # the exporter warns once per in-place op
        torch.onnx.export(model.train(), x, buf, training=torch.onnx.TrainingMode.TRAINING,
                          do_constant_folding=False, opset_version=opset,
                          input_names=["input"], output_names=["output"],
                          dynamic_axes={"input": {0: "batch"}, "output": {0: "batch"}},
                          **legacy_exporter())
    return onnx.load_model_from_string(buf.getvalue())


def check_ops(graph, model_name, opset):
    """Fail loudly, naming the nodes, if any op outside ALLOWED_OPS (and the model's
    EXTRA_OPS) appears."""
    allowed = ALLOWED_OPS | EXTRA_OPS.get(model_name, set())
    bad = [(n.name, n.op_type) for n in graph.node if n.op_type not in allowed]
    if bad:
        sys.exit(f"export_models: {model_name} opset {opset}: unsupported ops:\n"
                 + "\n".join(f"  {name}: {op}" for name, op in bad))


FLOAT_TYPES = {onnx.TensorProto.FLOAT, onnx.TensorProto.FLOAT16, onnx.TensorProto.DOUBLE,
               onnx.TensorProto.BFLOAT16}


def strip_weights(model):
    """Structure-only: drop the data of float initializers with >= 2 elements.

    Everything else stays: names, dims, data types, and the data of scalars and of integer
    tensors (shape constants, Dropout ratio / training_mode, Clip min/max if ever initializers).
    Returns the number of tensors stripped.
    """
    stripped = 0
    for t in model.graph.initializer:
        numel = 1
        for d in t.dims:
            numel *= d
        if t.data_type in FLOAT_TYPES and numel >= 2:
            for field in ("raw_data", "float_data", "double_data", "int32_data", "int64_data",
                          "uint64_data", "string_data", "external_data"):
                t.ClearField(field)
            t.data_location = onnx.TensorProto.DEFAULT
            stripped += 1
    onnx.helper.set_model_props(model, {"outcore.structure_only": "1"})
    return stripped


def save_model(model, path, external_data):
    if external_data:
        data = os.path.basename(path) + ".data"
        if os.path.exists(os.path.join(os.path.dirname(path), data)):
            os.remove(os.path.join(os.path.dirname(path), data))   # the saver appends
        onnx.save_model(model, path, save_as_external_data=True, all_tensors_to_one_file=True,
                        location=data)
    else:
        onnx.save_model(model, path)


def write_shapes(path, model_name, opset, batch, image_size, tensors):
    doc = {"model": model_name, "opset": opset, "batch": batch, "image_size": image_size,
           "tensors": tensors}
    with open(path, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")


def export_one(name, opset, args):
    """Build, record shapes, export, check, post-process and write one model at one opset."""
    torch.manual_seed(args.seed)
    model = build_model(name, args.image_size).train()
    x = torch.randn(args.batch, 3, args.image_size, args.image_size)
    events = record_shapes(model, x)
    onnx_model = export_onnx(model, x, opset)
    check_ops(onnx_model.graph, name, opset)
    tensors = map_shapes(onnx_model.graph, events, name)

    stem = os.path.join(args.out, f"{name}_op{opset}")
    if args.structure_only:
        strip_weights(onnx_model)
    save_model(onnx_model, stem + ".onnx", args.external_data)
    write_shapes(stem + ".shapes.json", name, opset, args.batch, args.image_size, tensors)

    per_op = {}
    for n in onnx_model.graph.node:
        if n.output and n.output[0] in tensors:
            per_op[n.op_type] = per_op.get(n.op_type, 0) + 1
    ops = sorted({n.op_type for n in onnx_model.graph.node})
    print(f"{stem}.onnx: {len(onnx_model.graph.node)} nodes, "
          f"{os.path.getsize(stem + '.onnx')} bytes, {len(tensors)} shapes mapped "
          f"({', '.join(f'{k} {v}' for k, v in sorted(per_op.items()))})\n"
          f"  ops: {' '.join(ops)}")


def export_transformer(name, args):
    """GPT-2 small, BERT-base or ViT-B/16 (tools/tiny_transformers.py FULL; also the tiny
    stand-ins tiny_gpt_range and tiny_vit): exported by
    the legacy exporter in training mode at opset 17 (LayerNormalization), batch dynamic,
    structure-only; dropout is 0 as the tiny fixtures run it. No shapes file (no
    PyTorch-side shape recording for these)."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from tiny_transformers import FULL
    make, sample = FULL[name]
    torch.manual_seed(args.seed)
    model = make().train()
    x = (torch.zeros((args.batch,) + sample, dtype=torch.long) if len(sample) == 1
         else torch.randn((args.batch,) + sample))
    buf = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        kw = legacy_exporter()
        torch.onnx.export(model, x, buf, training=torch.onnx.TrainingMode.TRAINING,
                          do_constant_folding=False, opset_version=17, input_names=["input"],
                          output_names=["output"],
                          dynamic_axes={"input": {0: "batch"}, "output": {0: "batch"}}, **kw)
    m = onnx.load_model_from_string(buf.getvalue())
    strip_weights(m)
    path = os.path.join(args.out, f"{name}.onnx")
    save_model(m, path, False)
    params = sum(p.numel() for p in model.parameters())
    print(f"{path}: {len(m.graph.node)} nodes, {os.path.getsize(path)} bytes, "
          f"{params / 1e6:.1f}M parameters\n  ops: {' '.join(sorted({n.op_type for n in m.graph.node}))}")


TRANSFORMER_MODELS = ["gpt2_small", "bert_base", "vit_b16", "tiny_gpt_range", "tiny_vit"]


# ---------------------------------------------------------------------------------------------
# Command line
# ---------------------------------------------------------------------------------------------

def parse_args(argv):
    p = argparse.ArgumentParser(
        description="Export CNNs (training mode) from PyTorch to ONNX, with PyTorch-computed "
                    "tensor shapes, for the outcore planner.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Outputs per model and opset: <out>/<model>_op<opset>.onnx and "
               "<out>/<model>_op<opset>.shapes.json\n"
               "(output tensor name of every Conv, ConvTranspose, BatchNormalization (Y), "
               "MaxPool, AveragePool,\n GlobalAveragePool, Gemm, Relu, Clip and Concat node -> shape "
               "from the PyTorch forward at --batch).\n\n"
               "--structure-only rule: the data of every float initializer with >= 2 elements "
               "is dropped;\nnames, dims and data types stay, and so does the data of every "
               "other initializer (scalars,\ninteger tensors such as shape constants). The "
               "model gets metadata_props outcore.structure_only=1.\n\n"
               "Allowed ONNX ops (anything else fails the export): "
               + " ".join(sorted(ALLOWED_OPS)))
    p.add_argument("--models", default=",".join(DEFAULT_MODELS),
                   help="comma-separated models (default: %(default)s); the transformers "
                        + ", ".join(TRANSFORMER_MODELS) + " are written as <model>.onnx "
                        "(opset 17, structure-only)")
    p.add_argument("--opset", type=int, action="append", choices=range(13, 18), metavar="N",
                   help="ONNX opset; repeat for several (default: 13 and 15)")
    p.add_argument("--out", default=os.path.join(os.path.dirname(os.path.dirname(
                   os.path.abspath(__file__))), "graphs"),
                   help="output directory (default: the repository's graphs/)")
    p.add_argument("--image-size", type=int, default=224, help="input H = W (default 224)")
    p.add_argument("--batch", type=int, default=2,
                   help="export batch (the batch dim is dynamic in the graph; default 2)")
    p.add_argument("--seed", type=int, default=0, help="torch.manual_seed (default 0)")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--structure-only", action="store_true",
                   help="drop weight data (see the rule below): 5-220 KB files")
    g.add_argument("--external-data", action="store_true",
                   help="store weights as ONNX external data in <model>_op<opset>.onnx.data")
    args = p.parse_args(argv)
    args.opset = sorted(set(args.opset or [13, 15]))
    args.models = [m for m in args.models.split(",") if m]
    return args


def main(argv=None):
    args = parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    for name in args.models:
        if name in TRANSFORMER_MODELS:
            export_transformer(name, args)
            continue
        for opset in args.opset:
            export_one(name, opset, args)


if __name__ == "__main__":
    main()
