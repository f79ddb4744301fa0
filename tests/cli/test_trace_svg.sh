#!/usr/bin/env bash
# test_trace_svg.sh — `simulate --trace --svg` on ResNet-18: the trace is valid
# trace-event JSON (every event has name/ph/ts/pid/tid, X events dur >= 0, a
# memory counter series), the SVG renders to a non-empty PNG with rsvg-convert;
# `profile` writes a profile that `simulate --profile` reads; bad input fails
# with a message naming it and leaves no output file behind.
set -euo pipefail
BUILD=${BUILD:-build}
PY=${PY:-/usr/bin/python3}
PLAN="$BUILD/outcore-plan"
cd "$(dirname "$0")/../.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

"$PLAN" simulate graphs/resnet18_op13.onnx --batch 256 --device v100 --budget 6GiB \
    --plan swap-all --trace "$tmp/trace.json" --svg "$tmp/mem.svg" > "$tmp/out.txt"
grep -q "iteration time" "$tmp/out.txt" || fail "no summary"
grep -q "feasible        yes" "$tmp/out.txt" || fail "swap-all should fit 6GiB: $(cat "$tmp/out.txt")"

"$PY" - "$tmp/trace.json" <<'PYEOF'
import json, sys
d = json.load(open(sys.argv[1]))
ev = d["traceEvents"]
assert ev, "no events"
for e in ev:
    for k in ("name", "ph", "ts", "pid", "tid"):
        assert k in e, f"event without {k}: {e}"
    if e["ph"] == "X":
        assert e["dur"] >= 0, f"negative dur: {e}"
        assert "bytes" in e["args"], e
x = [e for e in ev if e["ph"] == "X"]
c = [e for e in ev if e["ph"] == "C" and e["name"] == "memory"]
assert len(c) > 10, "memory counter missing"
assert {e["tid"] for e in x} == {1, 2, 3}, "expected compute, D2H and H2D tracks"
assert any(e["cat"] == "swap_in" for e in x) and any(e["cat"] == "swap_out" for e in x)
print(f"trace ok: {len(x)} X events, {len(c)} counter samples")
PYEOF

if ! command -v rsvg-convert > /dev/null; then
    if [ "$(id -u)" = 0 ]; then
        apt-get install -y -qq librsvg2-bin > /dev/null 2>&1 || true
    fi
fi
command -v rsvg-convert > /dev/null || fail "rsvg-convert missing (apt-get install librsvg2-bin)"
rsvg-convert -w 1200 -h 600 "$tmp/mem.svg" -o "$tmp/mem.png" || fail "SVG does not render"
[ -s "$tmp/mem.png" ] || fail "empty PNG"
echo "svg ok: $(stat -c %s "$tmp/mem.png") byte PNG"

# profile -> simulate --profile; scaled to another batch with a warning.
"$PLAN" profile graphs/resnet18_op13.onnx --batch 128 --device h100 -o "$tmp/p.json"
"$PY" -c "import json,sys; d=json.load(open(sys.argv[1])); assert d['source']=='analytic' and d['batch']==128 and len(d['nodes'])>100" "$tmp/p.json"
"$PLAN" simulate graphs/resnet18_op13.onnx --batch 256 --profile "$tmp/p.json" --budget 80GiB \
    > /dev/null 2> "$tmp/err.txt"
grep -q "warning: profile taken at batch 128 applied at batch 256" "$tmp/err.txt" || fail "no scaling warning"

# Bad input: named, non-zero exit, no half-written output.
if "$PLAN" profile graphs/resnet18_op13.onnx --batch 4 --device tpu -o "$tmp/x.json" 2> "$tmp/err.txt"; then
    fail "unknown device accepted"
fi
grep -q "tpu" "$tmp/err.txt" || fail "error does not name the device"
[ ! -e "$tmp/x.json" ] || fail "output written on error"
echo '{"device": {"name": "x"}}' > "$tmp/bad.json"
if "$PLAN" simulate graphs/resnet18_op13.onnx --batch 4 --profile "$tmp/bad.json" 2> "$tmp/err.txt"; then
    fail "bad profile accepted"
fi
grep -q "bad.json" "$tmp/err.txt" || fail "error does not name the file: $(cat "$tmp/err.txt")"
# An infeasible budget: exit 3 and a reason.
set +e
"$PLAN" simulate graphs/resnet18_op13.onnx --batch 256 --device v100 --budget 1GiB > /dev/null 2> "$tmp/err.txt"
rc=$?
set -e
[ "$rc" = 3 ] || fail "infeasible plan should exit 3, got $rc"
grep -q "infeasible" "$tmp/err.txt" || fail "no infeasibility reason"
echo "test_trace_svg: ok"
