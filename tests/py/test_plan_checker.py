#!/usr/bin/python3
"""onnx.checker.check_model accepts every plan.onnx written for the bundled models.

For each bundled model (graphs/*_op13.onnx and *_op15.onnx) at batch 4, and each of the strategies
swap-all, superneurons, chen and hybrid, at a budget of 97% of the in-core peak (the first of
97%, 99% at which the strategy plans), `outcore-plan plan -o` writes a plan; the checker must
accept it, the plan must declare the ai.outcore domain, and it must contain SwapOut/SwapIn or
recompute clones (metadata outcore.node_annotations). Planning only: nothing runs here
(tests/py/test_plan_invariance.py runs plans)."""
import glob
import os
import re
import subprocess
import sys
import tempfile

import onnx

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PLAN = os.path.join(ROOT, os.environ.get("BUILD", "build"), "outcore-plan")
STRATEGIES = ["swap-all", "superneurons", "chen", "hybrid"]
BATCH = 4


def main():
    failures, n_ok = [], 0
    models = sorted(glob.glob(os.path.join(ROOT, "graphs", "*_op1[35].onnx")))
    with tempfile.TemporaryDirectory() as tmp:
        for model in models:
            base = os.path.basename(model)[:-5]
            out = subprocess.run([PLAN, "plan", model, "--batch", str(BATCH), "--device", "v100",
                                  "--budget", "1TB", "--strategy", "incore", "--json"],
                                 capture_output=True, text=True).stdout
            peak = int(re.search(r'"peak_bytes": (\d+)', out).group(1))
            for s in STRATEGIES:
                path = os.path.join(tmp, f"{base}.{s}.onnx")
                written = False
                for f in (0.97, 0.99):
                    p = subprocess.run([PLAN, "plan", model, "--batch", str(BATCH), "--device",
                                        "v100", "--budget", str(int(peak * f)), "--strategy", s,
                                        "--max-leaves", "64", "-o", path],
                                       capture_output=True, text=True)
                    if p.returncode == 0:
                        written = True
                        break
                    if "no feasible plan" not in p.stderr:
                        failures.append(f"{base}/{s}: exit {p.returncode}: {p.stderr.strip()}")
                        break
                if not written:
                    print(f"skip {base:22s} {s:13s} no feasible plan at 97%/99% of the peak")
                    continue
                m = onnx.load(path)
                try:
                    onnx.checker.check_model(m)
                    md = {p.key: p.value for p in m.metadata_props}
                    assert any(o.domain == "ai.outcore" for o in m.opset_import), "no ai.outcore opset"
                    n_swap = sum(n.op_type == "SwapIn" for n in m.graph.node)
                    n_rc = sum(1 for line in md["outcore.node_annotations"].splitlines()
                               if len(line.split("\t")) > 3 and line.split("\t")[3])
                    assert n_swap + n_rc > 0, "neither swaps nor recomputes"
                    assert md["outcore.kind"] == "plan" and int(md["outcore.arena_bytes"]) <= int(peak * f)
                    n_ok += 1
                    print(f"ok   {base:22s} {s:13s} {len(m.graph.node):5d} nodes, {n_swap:3d} SwapIn, "
                          f"{n_rc:3d} recomputes, fragmentation {md['outcore.fragmentation']}")
                except Exception as e:  # noqa: BLE001
                    failures.append(f"{base}/{s}: {e}")
                    print(f"FAIL {base:22s} {s:13s} {e}")
    if n_ok < len(models) * 2:
        failures.append(f"only {n_ok} plans checked over {len(models)} models")
    for f in failures:
        print("FAIL:", f)
    print(f"{'ok' if not failures else 'not ok'} - onnx.checker accepts {n_ok} plans")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
