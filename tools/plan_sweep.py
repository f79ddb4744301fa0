#!/usr/bin/python3
"""plan_sweep.py — every committed torch 2.x fixture (tests/data/torch2, each exporter's file)
planned under budgets below its in-core peak and run: the plan must load in outcore-run and two
of its steps must equal the in-core step's bit for bit (losses, and every tensor --save writes).

    BUILD=build tools/plan_sweep.py [--fractions 0.85,0.7] [--table FILE]   (make sweep-plans)

For each file: `outcore-plan plan --strategy incore` gives the in-core peak P; then for each
fraction f, `outcore-plan plan` (strategy auto, --max-seconds 5) under f * P. A fraction with no
feasible plan is a "no plan" row (the planner's limit, said in its own words), not a failure; a
plan that does not load, fails a step or differs from the in-core run by a single bit is.
Attention is planned unfused, as outcore-run builds the model's own step. Models whose loss is
their own output (tiny_nll_loss, tiny_soft_ce) need labels of another shape and are skipped.
Exits 1 when any plan fails. Debian's python3 with onnx and numpy suffices (the fixtures and
their inputs are committed)."""
import argparse
import glob
import os
import re
import subprocess
import sys
import tempfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "py"))
import test_torch2_exports as T  # noqa: E402

OWN_LOSS = {"tiny_nll_loss", "tiny_soft_ce"}
UNITS = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}


def plan(path, batch, budget, out, extra=()):
    """outcore-plan plan's exit status, stdout and stderr."""
    r = subprocess.run([os.path.join(ROOT, T.BUILD, "outcore-plan"), "plan", path, "--batch",
                        str(batch), "--device", "h100", "--budget", budget, "--attention",
                        "unfused", "-o", out, *extra], capture_output=True, text=True)
    return r.returncode, r.stdout, r.stderr


def sweep_file(name, path, ref, fractions, tmp):
    """Rows (fraction, verdict, detail) for one file."""
    x, y = T.inputs_of(ref), ref["labels"]
    batch = (x[0] if isinstance(x, list) else x).shape[0]
    incore = os.path.join(tmp, "incore.onnx")
    rc, out, err = plan(path, batch, "1TB", incore, ("--strategy", "incore"))
    m = re.search(r"^peak\s+([\d.]+) (\w+)", out, re.M)
    if rc or not m:
        return [("-", "FAIL", f"in-core plan: {err.strip()[-160:]}")]
    peak = float(m.group(1)) * UNITS[m.group(2)]
    try:
        want_loss, want, _ = T.outcore_step(incore, x, y, tmp, steps=2)
    except RuntimeError as e:
        return [("-", "FAIL", f"in-core run: {str(e).strip().splitlines()[-1][:160]}")]
    rows = []
    for f in fractions:
        p = os.path.join(tmp, "plan.onnx")
        rc, out, err = plan(path, batch, f"{int(peak * f)}B", p, ("--max-seconds", "5"))
        if rc:
            last = err.strip().splitlines()[-1] if err.strip() else "no plan"
            rows.append((f, "no plan", last.replace("outcore-plan plan: ", "")[:120]))
            continue
        what = re.search(r"(\d+) SwapOut, \d+ SwapIn, (\d+) recompute", out + err)
        what = f"{what.group(1)} swapped, {what.group(2)} recomputed" if what else ""
        try:
            loss, got, _ = T.outcore_step(p, x, y, tmp, steps=2)
        except RuntimeError as e:
            rows.append((f, "FAIL", f"{what}; {str(e).strip().splitlines()[-1][:160]}"))
            continue
        diff = [k for k in want if k not in got or not np.array_equal(got[k], want[k])]
        same = loss == want_loss and not diff and sorted(got) == sorted(want)
        rows.append((f, "ok" if same else "FAIL",
                     f"{what}; bitwise the in-core run's" if same else
                     f"{what}; losses {loss} vs {want_loss}, differ: {diff[:3]}"))
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fractions", default="0.85,0.7")
    ap.add_argument("--table", help="write the rows as a markdown table here too")
    a = ap.parse_args()
    T.BUILD = os.environ.get("BUILD", "build")
    T.RUN = os.path.join(ROOT, T.BUILD, "outcore-run")
    T.BACKEND = "cpu"
    fractions = [float(v) for v in a.fractions.split(",")]
    table, fails, counts = [], 0, {}
    for path in sorted(glob.glob(os.path.join(T.DATA, "tiny_*.onnx"))):
        base = os.path.basename(path)[:-len(".onnx")]
        name, _, exporter = base.rpartition("_")  # dynamo, legacy, dynamo-optimized
        ref_path = os.path.join(T.DATA, f"{name}.ref.npz")
        if name in OWN_LOSS or not os.path.exists(ref_path):
            continue
        with tempfile.TemporaryDirectory() as tmp:
            rows = sweep_file(name, path, np.load(ref_path), fractions, tmp)
        for f, verdict, detail in rows:
            counts[verdict] = counts.get(verdict, 0) + 1
            fails += verdict == "FAIL"
            line = f"| {name} | {exporter} | {f} | {verdict} | {detail} |"
            table.append(line)
            print(line, flush=True)
    summary = ", ".join(f"{v} {k}" for k, v in sorted(counts.items()))
    print(f"plan sweep: {summary}")
    if a.table:
        with open(a.table, "w") as fh:
            fh.write("| model | exporter | budget / in-core peak | verdict | detail |\n"
                     "|---|---|---|---|---|\n" + "\n".join(table) + f"\n\n{summary}\n")
    sys.exit(1 if fails else 0)


if __name__ == "__main__":
    main()
