#!/usr/bin/env bash
# test_layering.sh — the module structure of planner/ and runtime/, checked:
#   - no #include cycle among their headers;
#   - libcore (planner/ir, planner/train, planner/plan) includes nothing from
#     planner/sim, search, emit or cli; planner/ir nothing from planner/train;
#   - runtime/ includes no planner/sim, search, emit or cli header.
# Includes are read from the sources ("dir/file.h" resolved against planner/,
# runtime/ and the including file's folder), so a violation fails here before
# it fails to link.
set -euo pipefail
cd "$(dirname "$0")/../.."
exec /usr/bin/python3 - "$@" <<'PY'
import os, re, sys
roots = ["planner", "runtime"]
files = [os.path.join(d, f) for r in roots for d, _, fs in os.walk(r) for f in fs
         if f.endswith((".c", ".h", ".cu"))]
inc = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)

def resolve(src, name):
    for base in (os.path.dirname(src), "planner", "runtime"):
        p = os.path.normpath(os.path.join(base, name))
        if os.path.isfile(p):
            return p
    return None  # generated (onnx.pb-c.h) or outside

deps = {f: [p for p in (resolve(f, n) for n in inc.findall(open(f).read())) if p] for f in files}
bad = []
layer = lambda p: p.split("/")[1] if p.startswith("planner/") else "runtime"
forbidden = {
    "ir": {"train", "plan", "sim", "search", "emit", "cli"},
    "train": {"plan", "sim", "search", "emit", "cli"},
    "plan": {"sim", "search", "emit", "cli"},
    "runtime": {"sim", "search", "emit", "cli"},
}
for f, ds in deps.items():
    for d in ds:
        if d.startswith("planner/") and layer(d) in forbidden.get(layer(f), ()):
            bad.append(f"{f} includes {d} ({layer(f)} may not reach {layer(d)})")
# cycles among headers (DFS)
hdr = {f: [d for d in ds if d.endswith(".h")] for f, ds in deps.items() if f.endswith(".h")}
state, stack, cycles = {}, [], []
def dfs(u):
    state[u] = 1; stack.append(u)
    for v in hdr.get(u, []):
        if state.get(v) == 1:
            cycles.append(stack[stack.index(v):] + [v])
        elif v not in state:
            dfs(v)
    stack.pop(); state[u] = 2
for h in sorted(hdr):
    if h not in state:
        dfs(h)
for c in cycles:
    bad.append("include cycle: " + " -> ".join(c))
for b in bad:
    print("not ok -", b)
if not bad:
    print(f"ok - {len(files)} files: no include cycle, libcore and runtime reach no planner stage above them")
sys.exit(1 if bad else 0)
PY
