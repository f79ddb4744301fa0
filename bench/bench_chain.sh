#!/usr/bin/env bash
# bench_chain.sh — a 100,000-node chain (Relu after Relu, every other node named
# "same"): outcore-plan inspect and plan (in core) wall time. Target (issue 18):
# both under 2 s; every pass linear or n log n in nodes and tensors.
set -euo pipefail
BUILD=${BUILD:-build}
PY=${PY:-/usr/bin/python3}
N=${N:-100000}
dir="$BUILD/bench"
model="$dir/chain_$N.onnx"
mkdir -p "$dir"
if [ ! -f "$model" ]; then
    "$PY" - "$model" "$N" <<'PYEOF'
import sys
from onnx import TensorProto, helper, save
path, n = sys.argv[1], int(sys.argv[2])
nodes, prev = [], "x"
for i in range(n):
    out = f"t{i}" if i < n - 1 else "y"
    nodes.append(helper.make_node("Relu", [prev], [out], name="same" if i % 2 else f"n{i}"))
    prev = out
x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 8])
y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
g = helper.make_graph(nodes, "chain", [x], [y])
save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), path)
PYEOF
fi
secs() { local s; s=$(date +%s.%N); "$@" >/dev/null 2>&1; awk -v a="$s" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }'; }
echo "chain of $N nodes: inspect $(secs "$BUILD/outcore-plan" inspect "$model" --batch 2) s," \
     "plan in core $(secs "$BUILD/outcore-plan" plan "$model" --batch 2 --budget 1TB --device v100 \
       --strategy incore -o "$dir/chain_plan.onnx") s (target < 2 s each)"
