#!/usr/bin/python3
"""docs/planner.md's tables: every strategy's predicted slowdown, the lower bound and the
planning time, per bundled model x budget (outcore-plan compare --json), batch 640.

  tools/planner_table.py [--device h100] [--budgets 8GiB,12GiB,16GiB] [--models a,b]
                         [--plan build/outcore-plan] > table.md

Slowdown = predicted iteration time / ideal (in-core, infinite memory); "bound" is the
lower bound on any plan's time at that budget (planner/sim/sim_bound.h) over the ideal;
"best/bound" how far the best plan is from it. Planning time is compare's wall time for
each strategy; "auto (local search)" is the joint local search from the best of them, which
`plan --strategy auto` returns (its wall time on all CPUs is the last column)."""
import argparse
import json
import os
import subprocess
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODELS = ["resnet18", "resnet50", "resnet152", "densenet121", "vgg16", "googlenet", "unet"]
SHOWN = ["swap-all", "superneurons", "hybrid", "chen", "dp", "dp-swap", "local"]
HEAD = {"local": "auto (local search)"}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="h100")
    ap.add_argument("--budgets", default="8GiB,12GiB,16GiB")
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--batch", type=int, default=640)
    ap.add_argument("--plan", default=os.path.join(ROOT, "build", "outcore-plan"))
    a = ap.parse_args()
    print(f"batch {a.batch}, {a.device} profile (analytic); slowdown = time / ideal; "
          f"'-' = no feasible plan\n")
    print("| model | budget | " + " | ".join(HEAD.get(s, s) for s in SHOWN) +
          " | bound | best/bound | auto s |")
    print("|---|---|" + "---|" * (len(SHOWN) + 3))
    for m in a.models.split(","):
        for b in a.budgets.split(","):
            model = os.path.join(ROOT, "graphs", f"{m}_op13.onnx")
            r = subprocess.run([a.plan, "compare", model, "--batch", str(a.batch), "--device",
                                a.device, "--budget", b, "--json"], capture_output=True,
                               text=True)
            d = json.loads(r.stdout)
            t0 = time.time()
            # the step compare plans (nchw, fuse all), not plan's auto layout and fusion
            subprocess.run([a.plan, "plan", model, "--batch", str(a.batch), "--device",
                            a.device, "--budget", b, "--strategy", "auto", "--layout", "nchw",
                            "--fuse", "all"],
                           capture_output=True)
            auto_s = time.time() - t0
            ideal, lb = d["ideal_time_s"], d["lower_bound_s"]
            rows = {x["strategy"]: x for x in d["strategies"]}
            cells = []
            for s in SHOWN:
                x = rows.get(s)
                if x is None:  # "local" runs only when some strategy found a plan
                    cells.append("-")
                    continue
                cells.append(f"{x['slowdown']:.3f} ({x['plan_seconds']:.1f} s)"
                             if x["feasible"] else f"- ({x['plan_seconds']:.1f} s)")
            best = min((x["iteration_time_s"] for x in rows.values() if x["feasible"]),
                       default=None)
            bound = f"{lb / ideal:.3f}" if lb else "none fits"
            ratio = f"{best / lb:.3f} ({d['best']})" if best and lb else "-"
            print(f"| {m} | {b} | " + " | ".join(cells) + f" | {bound} | {ratio} | "
                  f"{auto_s:.1f} |", flush=True)


if __name__ == "__main__":
    main()
