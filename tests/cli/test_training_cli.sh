#!/usr/bin/env bash
# test_training_cli.sh — `inspect --training` and `dot --training` on the
# bundled models: the JSON keys pipelines read, the in-core figures the README
# quotes (ResNet-50 at batch 640 needs more than 50 GB in-core, as the seed
# paper reports), every bundled model at opset 13 and 15 builds a training
# graph, and dot output is a well-formed digraph with one node per graph node.
set -u
BUILD=${BUILD:-build}
PY=${PY:-/usr/bin/python3}
PLAN="$BUILD/outcore-plan"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
ok() { echo "ok - $1"; }
not_ok() { echo "not ok - $1: $2"; failures=$((failures + 1)); }

for f in graphs/*_op13.onnx graphs/*_op15.onnx; do
    if "$PLAN" inspect "$f" --batch 640 --training --json >"$tmp/j.json" 2>"$tmp/err"; then
        if "$PY" - "$tmp/j.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
t = d["training"]
assert t["incore_peak_bytes"] > t["saved_activation_bytes"] > 0, t
assert t["saved"] and all({"name", "bytes", "readers"} <= set(s) for s in t["saved"])
assert all(s["readers"] for s in t["saved"]), "a saved tensor with no backward reader"
assert sum(s["bytes"] for s in t["saved"] if s["kind"] == "saved_activation") == t["saved_activation_bytes"]
c = t["bytes_by_class"]
# SGD momentum: one gradient and one momentum buffer per parameter byte.
assert c["parameter"] == c["gradient"] == c["optimizer_state"] == d["totals"]["parameter_bytes"], c
PY
        then ok "inspect --training $f"; else not_ok "inspect --training $f" "bad JSON content"; fi
    else
        not_ok "inspect --training $f" "$(cat "$tmp/err")"
    fi
done

"$PLAN" inspect graphs/resnet50_op13.onnx --batch 640 --training --json >"$tmp/r50.json"
if "$PY" -c '
import json, sys
t = json.load(open(sys.argv[1]))["training"]
sys.exit(0 if t["incore_peak_bytes"] > 50e9 else 1)' "$tmp/r50.json"; then
    ok "resnet50 at batch 640 needs more than 50 GB in-core"
else
    not_ok "resnet50 in-core peak" "not above 50 GB"
fi

"$PLAN" dot graphs/resnet18_op13.onnx --batch 2 --training -o "$tmp/g.dot"
nodes=$("$PLAN" inspect graphs/resnet18_op13.onnx --batch 2 --training --json |
        "$PY" -c 'import json,sys; print(json.load(sys.stdin)["training"]["nodes"])')
if head -1 "$tmp/g.dot" | grep -q '^digraph' && tail -1 "$tmp/g.dot" | grep -q '^}' &&
   [ "$(grep -c '^  n[0-9]* \[label' "$tmp/g.dot")" = "$nodes" ]; then
    ok "dot --training writes one node per graph node ($nodes)"
else
    not_ok "dot --training" "malformed or wrong node count"
fi
if "$PLAN" dot graphs/resnet18_op13.onnx --batch 2 -o /nonexistent/dir/g.dot 2>"$tmp/err"; then
    not_ok "dot to an unwritable path" "exit 0"
elif [ "$(wc -l <"$tmp/err")" = 1 ] && grep -q '/nonexistent/dir/g.dot' "$tmp/err"; then
    ok "dot to an unwritable path fails naming it"
else
    not_ok "dot to an unwritable path" "$(cat "$tmp/err")"
fi

echo "training cli: $failures failure(s)"
[ "$failures" -eq 0 ]
