#!/usr/bin/python3
"""Saved bytes under --precision bf16 and fp16 are half of float32's, for every bundled model.

For each graphs/*.onnx and graphs/small/*.onnx, `outcore-plan inspect --training --json` at
--precision fp32, bf16 and fp16. With S the float32 step's saved activation bytes, and for a
half step H its saved bytes, F the part the autocast rules keep in float32 (losses, softmax,
LayerNorm inputs, ...) and C autocast's half copies of parameters and inputs (read in place in
float32, saved as the half operand of a convolution or GEMM in half) and of activations saved
in float32 too (attention's probabilities: float32 for SoftmaxGrad, half for the MatMul's
gradient, where the float32 step saves one tensor for both), asserts exactly
    H - C == S / 2 + F / 2
(every saved tensor is either half, half the bytes, or kept float32, the same bytes), that half
tensors appear at all (H - F > 0), and that float16 and bfloat16 give the same bytes.
"""
import glob
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PLAN = os.path.join(ROOT, os.environ.get("BUILD", "build"), "outcore-plan")
TRANSFORMERS = {"gpt2_small": 2, "bert_base": 2, "vit_b16": 2}


def inspect(path, batch, precision):
    r = subprocess.run([PLAN, "inspect", path, "--batch", str(batch), "--training", "--json",
                        "--precision", precision], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"inspect {path} --precision {precision}: {r.stderr}")
    return json.loads(r.stdout)["training"]


def main():
    failures = []
    models = sorted(glob.glob(os.path.join(ROOT, "graphs", "*.onnx")) +
                    glob.glob(os.path.join(ROOT, "graphs", "small", "*.onnx")))
    for path in models:
        name = os.path.splitext(os.path.basename(path))[0]
        batch = TRANSFORMERS.get(name, 8)
        full = inspect(path, batch, "fp32")
        s = full["saved_activation_bytes"]
        seen = []
        for precision, dtype in (("bf16", "bfloat16"), ("fp16", "float16")):
            t = inspect(path, batch, precision)
            h, f, c = t["saved_activation_bytes"], t["saved_bytes_by_dtype"]["float32"], t["saved_copy_bytes"]
            ok = h - c == s // 2 + f // 2 and t["saved_bytes_by_dtype"][dtype] > 0 and s % 2 == 0
            seen.append((h, f, c))
            print(f"{'ok  ' if ok else 'FAIL'} {name:22s} {precision}: saved {h / 2**20:9.1f} MiB of "
                  f"float32's {s / 2**20:9.1f} (kept float32 {f / 2**20:8.1f}, half copies "
                  f"{c / 2**20:7.1f}); H - C = S/2 + F/2: {h - c} vs {s // 2 + f // 2}")
            if not ok:
                failures.append(f"{name} {precision}: {h} - {c} != {s} / 2 + {f} / 2")
        if seen[0] != seen[1]:
            failures.append(f"{name}: bf16 and fp16 save different bytes {seen}")
    if not models:
        failures.append("no bundled models found")
    if failures:
        print("\n".join(["test_precision_bytes: FAILED"] + failures))
        sys.exit(1)
    print(f"test_precision_bytes: {len(models)} models passed")


if __name__ == "__main__":
    main()
