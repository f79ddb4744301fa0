#!/usr/bin/env bash
# test_oracle_cli.sh — `outcore-plan compare --oracle`: an "ilp-oracle" row with
# the objective and its plan's simulated time, a gap line per strategy, the JSON
# "oracle" object (objective <= every model_time_s), the proven bound and gap
# under a time limit, proven infeasibility, and a clear refusal of graphs over
# 100 nodes. Run from the repository root; BUILD names the build dir.
set -u
BUILD=${BUILD:-build}
PY=${PY:-/usr/bin/python3}
PLAN="$BUILD/outcore-plan"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
ok() { echo "ok - $1"; }
bad() { echo "not ok - $1"; failures=$((failures + 1)); }
ARGS=(graphs/alexnet_op13.onnx --batch 32 --device v100 --budget 715MB --max-leaves 8)

if "$PLAN" compare "${ARGS[@]}" --oracle >"$tmp/out.txt" 2>"$tmp/err.txt" &&
   grep -q '^ilp-oracle .*objective .* ms (optimal), its plan simulated: ' "$tmp/out.txt" &&
   grep -q '^  hybrid  *model ' "$tmp/out.txt"; then
    ok "compare --oracle prints the ilp-oracle row and gaps"
else
    bad "compare --oracle text"; cat "$tmp/out.txt" "$tmp/err.txt"
fi

if "$PLAN" compare "${ARGS[@]}" --oracle --json >"$tmp/out.json" 2>"$tmp/err.txt" &&
   "$PY" - "$tmp/out.json" <<'PYEOF'
import json, sys
d = json.load(open(sys.argv[1]))
o = d["oracle"]
assert o["strategy"] == "ilp-oracle" and o["feasible"] and o["optimal"], o
assert o["sim_feasible"], o
names = {g["strategy"] for g in o["gaps"]}
assert "hybrid" in names and "dp" in names, names
for g in o["gaps"]:
    if g["fits_model"]:
        assert g["model_time_s"] >= o["objective_s"] * (1 - 1e-6), g
PYEOF
then
    ok "compare --oracle --json: objective <= every plan's model time"
else
    bad "compare --oracle --json"; cat "$tmp/err.txt"
fi

# A time limit the solver cannot prove within (small_dense at 0.45 of its activation memory):
# the best solution, at most its warm start, with the proven bound and the gap; and a budget
# under which no position fits: proven infeasible, no bound.
"$PLAN" compare graphs/small/small_dense.onnx --batch 64 --device h100 --budget 48219224 \
    --oracle --max-seconds 3 --json >"$tmp/lim.json" 2>"$tmp/err.txt"
rc_lim=$?
"$PLAN" compare graphs/small/small_dense.onnx --batch 64 --device h100 --budget 19000000 \
    --oracle --json >"$tmp/inf.json" 2>>"$tmp/err.txt"
rc_inf=$? # 3: no strategy fits either
if [ $rc_lim -eq 0 ] && [ $rc_inf -eq 3 ] && "$PY" - "$tmp/lim.json" "$tmp/inf.json" <<'PYEOF'
import json, sys
o = json.load(open(sys.argv[1]))["oracle"]
assert o["feasible"] and not o["optimal"] and not o["proven_infeasible"], o
assert 0 < o["bound_s"] <= o["objective_s"], o
assert abs(o["gap"] - (o["objective_s"] / o["bound_s"] - 1)) < 1e-9, o
assert o["warm_start"] and o["objective_s"] <= o["warm_start_model_s"] * (1 + 1e-9), o
i = json.load(open(sys.argv[2]))["oracle"]
assert not i["feasible"] and i["proven_infeasible"] and "bound_s" not in i, i
PYEOF
then
    ok "compare --oracle: time limit gives the proven bound and gap; proven infeasibility"
else
    bad "compare --oracle bound / infeasible"; cat "$tmp/err.txt"
fi

"$PLAN" compare graphs/resnet18_op13.onnx --batch 4 --device v100 --oracle >"$tmp/out.txt" \
    2>"$tmp/err.txt"
rc=$?
if [ "$rc" -eq 1 ] && grep -q 'limited to graphs of at most 100 nodes' "$tmp/err.txt" &&
   [ "$(wc -l <"$tmp/err.txt")" -eq 1 ]; then
    ok "compare --oracle refuses a 223-node graph with one line"
else
    bad "compare --oracle on resnet18 (rc $rc)"; cat "$tmp/err.txt"
fi
exit $((failures > 0))
