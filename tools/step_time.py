#!/usr/bin/env python3
"""Where the step time goes: per op class, from outcore-run traces or measured profiles.

    tools/step_time.py LABEL=TRACE.json [LABEL=PROFILE.json@TRAIN.onnx ...] [--by-op] [--nodes K]

A trace (outcore-run MODEL --steps K --trace-out T.json, on the cpu or the cuda backend) holds
steps 1.. op by op on every stream: the mean step time (first op's start to last op's end, per
step) and, per op class (or per op type with --by-op), the kernel time per step on the compute
stream. A measured profile (outcore-run --profile-out P.json, cuda) holds each node's median time;
its node names map to op types through the training graph they belong to (outcore-plan emit MODEL
--batch N [--no-fuse] -o TRAIN.onnx), and its step is the sum of the nodes' times. Several inputs
print side by side (e.g. --no-fuse and the default), so what fusion moved is visible, and what
remains. Markdown table on stdout: ms per step and the share of the step. --nodes K lists the
first input's K most expensive nodes after it, repeated blocks summed ("/blocks.3/" and
"/blocks.7/" count as one "/blocks.N/" row, with how many nodes it sums).
"""
import json
import re
import sys
from collections import defaultdict

# op type -> class (the rows of the table); unknown op types are their own class
CLASSES = {
    "Conv": "convolution", "ConvTranspose": "convolution", "ConvRelu": "convolution",
    "ConvBackwardData": "convolution backward", "ConvBackwardFilter": "convolution backward",
    "ConvTransposeBackwardData": "convolution backward",
    "ConvTransposeBackwardFilter": "convolution backward",
    "BatchNormalization": "BN, Add, Relu (forward)", "Relu": "BN, Add, Relu (forward)",
    "Add": "BN, Add, Relu (forward)", "BatchNormRelu": "BN, Add, Relu (forward)",
    "BatchNormalizationGrad": "BN, Relu (backward)", "ReluGrad": "BN, Relu (backward)",
    "BatchNormReluGrad": "BN, Relu (backward)", "Sum": "gradient sums",
    "MaxPool": "pooling", "AveragePool": "pooling", "GlobalAveragePool": "pooling",
    "MaxPoolGrad": "pooling", "AveragePoolGrad": "pooling", "GlobalAveragePoolGrad": "pooling",
    "Gemm": "GEMM / MatMul", "MatMul": "GEMM / MatMul", "MatMulGradA": "GEMM / MatMul",
    "MatMulGradB": "GEMM / MatMul", "Linear": "GEMM / MatMul", "FusedAttention": "attention",
    "FusedAttentionGrad": "attention", "ReduceSumTo": "bias / broadcast gradient sums",
    "SoftmaxCrossEntropyLoss": "loss", "SoftmaxCrossEntropyLossGrad": "loss",
    "SGDMomentum": "optimizer", "AdamW": "optimizer", "ClipGradNorm": "optimizer",
    "LayerNormalization": "LayerNorm", "LayerNormalizationGrad": "LayerNorm",
}


def load_profile(path, graph):
    import onnx  # only for profiles: the node names' op types
    op_of = {n.name: n.op_type for n in onnx.load(graph, load_external_data=False).graph.node}
    per_op, per_node = defaultdict(float), defaultdict(float)
    for r in json.load(open(path))["nodes"]:
        if r["name"] not in op_of:
            sys.exit(f"{path}: node '{r['name']}' is not in {graph} (another model or fusion level?)")
        per_op[op_of[r["name"]]] += r["time_s"] * 1e3
        per_node[(op_of[r["name"]], r["name"])] += r["time_s"] * 1e3
    return sum(per_op.values()), per_op, per_node


def load(path):
    if "@" in path:
        return load_profile(*path.split("@", 1))
    events = json.load(open(path))["traceEvents"]
    streams = {e["tid"]: e["args"]["name"] for e in events
               if e.get("ph") == "M" and e.get("name") == "thread_name"}
    span = defaultdict(lambda: [float("inf"), 0.0])  # step -> [first start, last end] in us
    kernel = defaultdict(float)                      # (step, op type) -> us on the compute stream
    node_us = defaultdict(float)                     # (op type, node) -> us, all steps
    for e in events:
        if e.get("ph") != "X":
            continue
        a = e.get("args", {})
        st = a.get("step", 0)
        s = span[st]
        s[0], s[1] = min(s[0], e["ts"]), max(s[1], e["ts"] + e["dur"])
        if streams.get(e["tid"]) == "compute" and e.get("cat") in ("compute", "recompute"):
            kernel[(st, a.get("op_type", e["name"]))] += e["dur"]
            node_us[(a.get("op_type", e["name"]), e["name"])] += e["dur"]
    if not span:
        sys.exit(f"{path}: no timed ops (run outcore-run with --steps >= 2 --trace-out)")
    n = len(span)
    step_ms = sum(b - a for a, b in span.values()) / n / 1e3
    per_op = defaultdict(float)
    for (_, op), us in kernel.items():
        per_op[op] += us / n / 1e3
    return step_ms, per_op, {k: us / n / 1e3 for k, us in node_us.items()}


def print_nodes(per_node, k):
    """The K most expensive nodes, repeated blocks ("/blocks.<i>/") summed into one row."""
    rows = defaultdict(lambda: [0.0, 0])
    for (op, name), ms in per_node.items():
        r = rows[(op, re.sub(r"([./_]blocks?[._/]?)\d+", r"\1N", name))]
        r[0] += ms
        r[1] += 1
    print(f"\nper node, the {k} largest (ms/step, blocks summed):")
    for (op, name), (ms, count) in sorted(rows.items(), key=lambda r: -r[1][0])[:k]:
        print(f"  {ms:9.3f} ms  x{count:3d}  {op:24s} {name}")


def main(argv):
    by_op = "--by-op" in argv
    argv = [a for a in argv if a != "--by-op"]
    nodes = 0
    if "--nodes" in argv:
        i = argv.index("--nodes")
        if i + 1 >= len(argv) or not argv[i + 1].isdigit():
            sys.exit("--nodes takes a count\n" + __doc__)
        nodes = int(argv[i + 1])
        del argv[i:i + 2]
    runs = [a.split("=", 1) for a in argv]
    if not runs or any(len(r) != 2 for r in runs):
        sys.exit(__doc__)
    data = [(label, *load(path)) for label, path in runs]
    rows = defaultdict(lambda: [0.0] * len(data))
    for i, (_, _, per_op, _) in enumerate(data):
        for op, ms in per_op.items():
            rows[op if by_op else CLASSES.get(op, op)][i] += ms
    order = sorted(rows, key=lambda r: -max(rows[r]))
    head = "| " + ("op type" if by_op else "op class") + " | " + " | ".join(
        f"{label}: ms/step (share)" for label, _, _, _ in data) + " |"
    print(head)
    print("|---|" + "---:|" * len(data))
    for r in order:
        print(f"| {r} | " + " | ".join(f"{rows[r][i]:.3f} ({rows[r][i] / d[1]:.1%})"
                                       for i, d in enumerate(data)) + " |")
    kern = [sum(per_op.values()) for _, _, per_op, _ in data]
    print("| compute-stream kernels | " + " | ".join(
        f"{k:.3f} ({k / d[1]:.1%})" for k, d in zip(kern, data)) + " |")
    print("| **step** | " + " | ".join(f"**{d[1]:.3f}**" for d in data) + " |")
    if nodes:
        print_nodes(data[0][3], nodes)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
