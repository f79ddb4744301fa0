#!/usr/bin/python3
"""Models stored in half precision import and train (float32 master weights).

From the tiny ResNet of tests/data/torch2 (weights in the file), two stored-in-half copies are
written with onnx alone: every float initializer, the input and the output in float16, and
again in bfloat16 (round to nearest even, raw bits). Each is paired with a float32 model whose
weights are the half values widened. outcore-run trains both for 3 steps on the same batch and
--save's its weights, at --precision fp32 and at the stored precision; asserts that
  - the half-stored model trains (a notice says it is stored in half and trains with float32
    master weights),
  - its losses and saved weights are bitwise those of the float32 model with the same values
    (storage alone changes nothing: the masters are exact widenings),
  - the saved model declares float32 weights and input (the masters are what is saved).
"""
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, numpy_helper

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RUN = os.path.join(ROOT, os.environ.get("BUILD", "build"), "outcore-run")
SRC = os.path.join(ROOT, "tests", "data", "torch2", "tiny_resnet_legacy.onnx")
DATA = os.path.join(ROOT, "tests", "data", "torch2", "tiny_resnet.ref.npz")
failures = []


def check(ok, what):
    print(f"{'ok  ' if ok else 'FAIL'} {what}")
    if not ok:
        failures.append(what)


def bf16_bits(a):
    """float32 -> bfloat16 bits, round to nearest even (finite values)."""
    u = np.ascontiguousarray(a, np.float32).view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def half_pair(tmp, kind):
    """(half-stored model, float32 model with the same values) paths."""
    half, wide = onnx.load(SRC), onnx.load(SRC)
    del half.graph.value_info[:]
    dtype = TensorProto.FLOAT16 if kind == "fp16" else TensorProto.BFLOAT16
    for h, w in zip(half.graph.initializer, wide.graph.initializer):
        if h.data_type != TensorProto.FLOAT:
            continue
        a = numpy_helper.to_array(h)
        if kind == "fp16":
            bits = a.astype(np.float16).view(np.uint16)
            widened = a.astype(np.float16).astype(np.float32)
        else:
            bits = bf16_bits(a)
            widened = (bits.astype(np.uint32) << 16).view(np.float32)
        h.CopyFrom(onnx.helper.make_tensor(h.name, dtype, a.shape, bits.tobytes(), raw=True))
        w.CopyFrom(numpy_helper.from_array(widened.reshape(a.shape), w.name))
    for v in list(half.graph.input) + list(half.graph.output):
        v.type.tensor_type.elem_type = dtype
    paths = os.path.join(tmp, f"stored_{kind}.onnx"), os.path.join(tmp, f"wide_{kind}.onnx")
    onnx.save(half, paths[0])
    onnx.save(wide, paths[1])
    return paths


def train(model, tmp, tag, precision):
    saved = os.path.join(tmp, f"{tag}.save.onnx")
    r = subprocess.run([RUN, model, "--backend", "cpu", "--batch", "2", "--steps", "3",
                        "--lr", "0.01", "--input", os.path.join(tmp, "x.pb"),
                        "--labels", os.path.join(tmp, "y.pb"), "--precision", precision,
                        "--save", saved], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"{model} --precision {precision}: {r.stderr}")
    losses = [line for line in r.stdout.splitlines() if line.startswith("step ")]
    return losses, onnx.load(saved), r.stderr


def main():
    data = np.load(DATA)
    with tempfile.TemporaryDirectory() as tmp:
        onnx.save_tensor(numpy_helper.from_array(data["input"], "input"), os.path.join(tmp, "x.pb"))
        onnx.save_tensor(numpy_helper.from_array(data["labels"].astype(np.int64), "labels"),
                         os.path.join(tmp, "y.pb"))
        for kind in ("fp16", "bf16"):
            stored, wide = half_pair(tmp, kind)
            for precision in ("fp32", kind):
                tag = f"{kind} stored, --precision {precision}"
                l_half, m_half, err = train(stored, tmp, f"s{kind}{precision}", precision)
                l_wide, m_wide, _ = train(wide, tmp, f"w{kind}{precision}", precision)
                check("master weights" in err and len(l_half) == 3,
                      f"{tag}: trains, with the notice ({l_half[-1] if l_half else 'no steps'})")
                a = {t.name: numpy_helper.to_array(t).tobytes() for t in m_half.graph.initializer}
                b = {t.name: numpy_helper.to_array(t).tobytes() for t in m_wide.graph.initializer}
                check(l_half == l_wide and a == b,
                      f"{tag}: losses and {len(a)} saved weights bitwise those of the float32 "
                      f"model of the same values")
                types = {t.data_type for t in m_half.graph.initializer} | \
                        {m_half.graph.input[0].type.tensor_type.elem_type}
                check(TensorProto.FLOAT16 not in types and TensorProto.BFLOAT16 not in types,
                      f"{tag}: the saved model is float32 (the master weights)")
    if failures:
        print("\n".join(["test_half_models: FAILED"] + failures))
        sys.exit(1)
    print("test_half_models: all passed")


if __name__ == "__main__":
    main()
