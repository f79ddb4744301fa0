#!/usr/bin/python3
"""oracle_table.py -- the planner's gap to the proven optimum on small graphs
(docs/planner.md): for every graph of graphs/small and each budget fraction,
`outcore-plan compare --oracle --json` at batch 64, and one markdown row with
the oracle's objective (optimal, or the proven bound and gap) and its plan
simulated, the best heuristic before the local search, and auto (the local
search from it): simulated, its gap to the objective, and its cost under the
oracle's model.

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
    ap.add_argument("--json-dir", help="keep each compare's JSON here")
    ap.add_argument("--from-json", action="store_true",
                    help="print the table from --json-dir's files without planning again")
    a = ap.parse_args()
    print(f"batch 64, {a.device} profile; times in ms; 'auto' = the local search from the best "
          f"heuristic; gaps against the oracle's objective under its model\n")
    print("| graph | nodes | budget | oracle objective | proven | oracle plan simulated | "
          "best heuristic simulated | auto simulated | auto gap | auto under the model | oracle s |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for model in sorted(glob.glob("graphs/small/*.onnx")):
        name = os.path.basename(model)[:-5]
        base = compare(a.plan, model, a.device, None, []) if not a.from_json else None
        if a.from_json:
            per, peak = 0, 0
        else:
            per = base["persistent_bytes"]
            peak = next(s["peak_bytes"] for s in base["strategies"] if s["strategy"] == "incore")
        for f in [float(x) for x in a.fractions.split(",")]:
            budget = int(per + f * (peak - per))
            cached = a.json_dir and os.path.join(a.json_dir, f"{name}_{f}.json")
            if a.from_json:
                if not os.path.exists(cached):
                    continue
                with open(cached) as fh:
                    d = json.load(fh)
            else:
                d = compare(a.plan, model, a.device, budget,
                            ["--oracle", "--max-seconds", a.seconds])
            if a.json_dir and not a.from_json:
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
                objs = ("infeasible (proven)" if o.get("proven_infeasible") or o["solve_s"] < 1e-3
                        else f"none found (bound {o['bound_s']*1e3:.4f})")
                proven = "-"
            else:
                objs = f"{obj*1e3:.4f}"
                proven = "optimal" if o["optimal"] else \
                    f"bound {o['bound_s']*1e3:.4f} (gap {o['gap']*100:.1f}%)"
            feas = [(s["iteration_time_s"], n) for n, s in sims.items()
                    if s["feasible"] and n != "local"]
            hsim = min(feas) if feas else None
            hbs = f"{hsim[0]*1e3:.4f} ({hsim[1]})" if hsim else "none fits"
            ls = sims.get("local")
            asim = ls["iteration_time_s"] if ls and ls["feasible"] else None
            asims = f"{asim*1e3:.4f}" if asim else "-"
            gap = f"{(asim/obj-1)*100:+.2f}%" if asim and obj else "-"
            autom = f"{auto*1e3:.4f} ({(auto/obj-1)*100:+.2f}%)" if auto is not None and obj \
                else "over its memory model" if asim else "-"
            osim = f"{o['sim_time_s']*1e3:.4f}" if o.get("sim_feasible") else \
                "infeasible" if obj else "-"
            print(f"| {name} | {d.get('n_nodes', '')} | {f} | {objs} | {proven} | {osim} | {hbs} | "
                  f"{asims} | {gap} | {autom} | {o['solve_s']:.1f} |", flush=True)


if __name__ == "__main__":
    main()
