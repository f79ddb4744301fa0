#!/usr/bin/python3
"""oracle_table.py -- the planner's gap to the proven optimum on small graphs
(docs/planner.md): for every graph of graphs/small and each budget fraction,
`outcore-plan compare --oracle --json` at batch 64, and one markdown row with
the oracle's objective (optimal, or the proven bound and gap), the best
heuristic before the local search, and auto (the local search from it).

Budget = persistent bytes + f x (in-core peak - persistent bytes): f of the
activation memory above the fixed memory (parameters and optimizer state).

    tools/oracle_table.py [--plan build/outcore-plan] [--device h100]
                          [--fractions 0.45,0.6,0.8] [--seconds 120] [--json-dir DIR]
"""
import argparse
import glob
import json
import os
import subprocess
import sys


def compare(plan, model, device, budget, extra):
    cmd = [plan, "compare", model, "--batch", "64", "--device", device, "--json"] + extra
    if budget is not None:
        cmd += ["--budget", str(budget)]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode not in (0, 3):
        sys.exit(f"{' '.join(cmd)}: exit {p.returncode}: {p.stderr.strip()}")
    return json.loads(p.stdout)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--plan", default="build/outcore-plan")
    ap.add_argument("--device", default="h100")
    ap.add_argument("--fractions", default="0.45,0.6,0.8")
    ap.add_argument("--seconds", default="120")
    ap.add_argument("--json-dir")
    a = ap.parse_args()
    print(f"batch 64, {a.device} profile; times in ms; 'auto' = the local search from the best "
          f"heuristic; gaps against the oracle's objective under its model\n")
    print("| graph | nodes | budget | oracle objective | proven | best heuristic | auto | "
          "auto gap | auto simulated | oracle s |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for model in sorted(glob.glob("graphs/small/*.onnx")):
        name = os.path.basename(model)[:-5]
        base = compare(a.plan, model, a.device, None, [])
        per = base["persistent_bytes"]
        peak = next(s["peak_bytes"] for s in base["strategies"] if s["strategy"] == "incore")
        for f in [float(x) for x in a.fractions.split(",")]:
            budget = int(per + f * (peak - per))
            d = compare(a.plan, model, a.device, budget,
                        ["--oracle", "--max-seconds", a.seconds])
            if a.json_dir:
                os.makedirs(a.json_dir, exist_ok=True)
                with open(os.path.join(a.json_dir, f"{name}_{f}.json"), "w") as fh:
                    json.dump(d, fh, indent=1)
            o = d["oracle"]
            model_t = {g["strategy"]: g.get("model_time_s") for g in o["gaps"]}
            sims = {s["strategy"]: s for s in d["strategies"]}
            heur = [(t, s) for s, t in model_t.items() if t is not None and s != "local"]
            hb = min(heur) if heur else None
            auto = model_t.get("local")
            obj = o.get("objective_s")
            if obj is None:
                objs = "infeasible" if "bound_s" not in o else f"none (bound {o['bound_s']*1e3:.4f})"
                proven = "-"
            else:
                objs = f"{obj*1e3:.4f}"
                proven = "optimal" if o["optimal"] else \
                    f"bound {o['bound_s']*1e3:.4f} (gap {o['gap']*100:.1f}%)"
            hbs = f"{hb[0]*1e3:.4f} ({hb[1]})" if hb else "-"
            autos = f"{auto*1e3:.4f}" if auto is not None else "-"
            gap = f"{(auto/obj-1)*100:+.2f}%" if auto is not None and obj else "-"
            ls = sims.get("local")
            asim = f"{ls['iteration_time_s']*1e3:.4f}" if ls and ls["feasible"] else "-"
            print(f"| {name} | {base.get('n_nodes', '')} | {f} | {objs} | {proven} | {hbs} | "
                  f"{autos} | {gap} | {asim} | {o['solve_s']:.1f} |", flush=True)


if __name__ == "__main__":
    main()
