#!/usr/bin/python3
"""`outcore-run --trace-out` and tools/calibrate.

1. A swap-all plan of graphs/small/small_residual.onnx (batch 8) runs 4 steps on the cpu backend,
   and on the cuda backend through the CUDA emulator (CUDA events), with --trace-out. The trace must hold, for each of steps 1..3, one event per op of the program
   (the graph inputs' copies, every node of the plan, the loss copy) on its stream's track
   (compute 1, D2H 2, H2D 3); ops of one stream one after another; every SwapIn after its
   SwapOut; every node that reads a swapped-in tensor after that SwapIn; steps one after another.
2. tools/calibrate recovers known contention factors from a synthetic trace whose kernels were
   slowed by the fluid model the simulator uses (a kernel advances at 1 / (1 + k) of its speed
   while a copy of that direction runs), within 1e-3; keeps the profile's duplex factor; and
   fails naming the file on a file that is not a trace.
"""
import json
import os
import random
import subprocess
import sys
import tempfile

import onnx

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.path.join(ROOT, os.environ.get("BUILD", "build"))
EPS_US = 1e-3  # stamps are microsecond floats in the trace


def fail(msg):
    print(f"not ok - {msg}")
    sys.exit(1)


def run(args):
    p = subprocess.run(args, capture_output=True, text=True)
    if p.returncode:
        fail(f"{' '.join(args)} exited {p.returncode}: {p.stderr.strip()[-400:]}")
    return p.stdout


def check_real_trace(tmp, run_bin, backend):
    plan = os.path.join(tmp, "plan.onnx")
    trace = os.path.join(tmp, "trace.json")
    run([f"{BUILD}/outcore-plan", "plan", os.path.join(ROOT, "graphs/small/small_residual.onnx"),
         "--batch", "8", "--device", "h100", "--strategy", "swap-all", "-o", plan])
    run([run_bin, plan, "--backend", backend, "--steps", "4", "--trace-out", trace])
    g = onnx.load(plan).graph
    evs = [e for e in json.load(open(trace))["traceEvents"] if e["ph"] == "X"]
    steps = sorted({e["args"]["step"] for e in evs})
    if steps != [1, 2, 3]:
        fail(f"trace steps {steps}, expected [1, 2, 3]")
    n_ops = 2 + len(g.node) + 1  # the batch's two inputs (input, labels), nodes, the loss
    tid_of = {"compute": 1, "recompute": 1, "swap_out": 2, "loss": 2, "swap_in": 3, "input": 3}
    consumers = {}
    for n in g.node:
        for i in n.input:
            consumers.setdefault(i, []).append(n.name)
    n_swaps = 0
    prev_end = -1.0
    for s in steps:
        se = sorted((e for e in evs if e["args"]["step"] == s), key=lambda e: e["args"]["op"])
        if [e["args"]["op"] for e in se] != list(range(n_ops)):
            fail(f"step {s}: ops {len(se)} of {n_ops}, or some twice")
        if sorted(e["name"] for e in se if e["cat"] == "input") != ["input", "labels"]:
            fail(f"step {s}: the input copies are not those of 'input' and 'labels'")
        for e in se:
            if e["tid"] != tid_of[e["cat"]] or e["dur"] < 0:
                fail(f"step {s}: '{e['name']}' ({e['cat']}) on track {e['tid']}, dur {e['dur']}")
        start = min(e["ts"] for e in se)
        if start < prev_end - EPS_US:
            fail(f"step {s} starts at {start} us, before step {s - 1} ended ({prev_end})")
        prev_end = max(e["ts"] + e["dur"] for e in se)
        for tid in (1, 2, 3):  # a stream runs its ops in order, one at a time
            on = [e for e in se if e["tid"] == tid]
            for a, b in zip(on, on[1:]):
                if b["ts"] < a["ts"] + a["dur"] - EPS_US:
                    fail(f"step {s}: '{b['name']}' starts before '{a['name']}' ends on track {tid}")
        by_name = {e["args"].get("node"): e for e in se}
        for n in g.node:
            if n.op_type != "SwapIn":
                continue
            n_swaps += 1
            si = by_name[n.name]
            so = [e for e in se if e["cat"] == "swap_out" and e["args"]["tensor"] == si["args"]["tensor"]]
            if len(so) != 1 or si["ts"] < so[0]["ts"] + so[0]["dur"] - EPS_US:
                fail(f"step {s}: SwapIn '{n.name}' does not follow its one SwapOut")
            for c in consumers.get(n.output[0], []):
                if by_name[c]["ts"] < si["ts"] + si["dur"] - EPS_US:
                    fail(f"step {s}: '{c}' starts before SwapIn '{n.name}' ends")
    if n_swaps == 0:
        fail("the swap-all plan has no SwapIn")
    print(f"ok - {backend} trace: {len(steps)} steps x {n_ops} ops, {n_swaps // len(steps)} swap-ins "
          "each after its SwapOut and before its readers, streams in order")


def synthetic(tmp, kh, kd):
    """A profile and a trace whose kernels were slowed by kh / kd beside H2D / D2H copies."""
    rnd = random.Random(7)
    dev = {"name": "synthetic", "memory_bytes": 1e10, "h2d_bytes_per_s": 1e10,
           "d2h_bytes_per_s": 1e10, "duplex": True, "copy_latency_s": 0.0, "peak_flops": 1e13,
           "mem_bandwidth_bytes_per_s": 1e12, "launch_overhead_s": 0.0,
           "copy_slowdown_duplex": 0.2}
    nodes = [{"name": f"n{i}", "time_s": rnd.uniform(2e-4, 3e-3), "workspace_bytes": 0}
             for i in range(300)]
    # copies (seconds): H2D and D2H alternate, never both at once
    copies, t = [], 0.001
    for k in range(40):
        d = rnd.uniform(1e-3, 4e-3)
        copies.append((3 if k % 2 else 2, t, t + d))
        t += d + rnd.uniform(0, 6e-3)
    k_of = {2: kd, 3: kh}
    evs, now = [], 0.0
    for i, n in enumerate(nodes):
        work, s = n["time_s"], now
        while work > 1e-15:  # fluid model: piecewise constant speed
            active = [c for c in copies if c[1] <= now < c[2]]
            rate = 1.0 / (1.0 + sum(k_of[c[0]] for c in active))
            nxt = min([c[2] for c in active] + [c[1] for c in copies if c[1] > now] + [now + work / rate])
            dt = min(nxt - now, work / rate)
            work -= dt * rate
            now += dt
        evs.append({"name": n["name"], "cat": "compute", "ph": "X", "ts": s * 1e6,
                    "dur": (now - s) * 1e6, "pid": 1, "tid": 1,
                    "args": {"step": 1, "op": i, "bytes": 0, "node": n["name"]}})
    for j, (tid, a, b) in enumerate(copies):
        evs.append({"name": f"c{j}", "cat": "swap_out" if tid == 2 else "swap_in", "ph": "X",
                    "ts": a * 1e6, "dur": (b - a) * 1e6, "pid": 1, "tid": tid,
                    "args": {"step": 1, "op": 1000 + j, "bytes": int((b - a) * 1e10)}})
    prof = os.path.join(tmp, "syn_profile.json")
    trace = os.path.join(tmp, "syn_trace.json")
    json.dump({"device": dev, "batch": 8, "source": "measured", "nodes": nodes}, open(prof, "w"))
    json.dump({"traceEvents": evs}, open(trace, "w"))
    return prof, trace


def check_calibrate(tmp):
    cal = os.path.join(ROOT, "tools", "calibrate")
    for kh, kd in ((0.2, 0.1), (0.0, 0.35)):
        prof, trace = synthetic(tmp, kh, kd)
        out = os.path.join(tmp, "cal.json")
        log = run([sys.executable, cal, "--profile", prof, "--trace", trace, "-o", out])
        d = json.load(open(out))["device"]
        got = (d["compute_slowdown_h2d"], d["compute_slowdown_d2h"])
        if abs(got[0] - kh) > 1e-3 or abs(got[1] - kd) > 1e-3 or d["copy_slowdown_duplex"] != 0.2:
            fail(f"calibrate fitted {got} (duplex {d['copy_slowdown_duplex']}), expected "
                 f"({kh}, {kd}) (0.2):\n{log}")
        print(f"ok - calibrate recovers compute_slowdown_h2d {got[0]:.4f}, compute_slowdown_d2h "
              f"{got[1]:.4f} (true {kh}, {kd})")
    bad = os.path.join(tmp, "not_a_trace.json")
    for text in ('{"traceEvents": []}', '[1, 2]', '{"traceEvents": [{"ph": "X", "args": {"step": 1}}]}',
                 '{"traceEvents": [{"ph": "X", "ts": 0, "dur": -1, "tid": 1, "args": {"step": 1}}]}'):
        open(bad, "w").write(text)
        p = subprocess.run([sys.executable, cal, "--profile", prof, "--trace", bad, "-o",
                            os.path.join(tmp, "x.json")], capture_output=True, text=True)
        if (p.returncode == 0 or "not_a_trace.json" not in p.stderr or "Traceback" in p.stderr
                or os.path.exists(os.path.join(tmp, "x.json"))):
            fail(f"calibrate on {text}: exit {p.returncode}, stderr {p.stderr.strip()}")
    print("ok - calibrate names a file that is not a trace (4 kinds) and writes nothing")


def main():
    with tempfile.TemporaryDirectory() as tmp:
        check_real_trace(tmp, f"{BUILD}/outcore-run", "cpu")
        emu = f"{BUILD}-emu/outcore-run"  # the cuda backend on the CUDA emulator (make test builds it)
        if os.path.exists(emu):
            check_real_trace(tmp, emu, "cuda")
        else:
            print(f"ok - # SKIP cuda trace: no {emu} (make test builds it)")
        check_calibrate(tmp)


if __name__ == "__main__":
    main()
