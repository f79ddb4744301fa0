#!/usr/bin/env bash
# bench_import.sh — import time of ResNet-50 with its weights inline (~100 MB).
# Exports the model once (tools/export_models.py, cached in $BUILD/bench), then
# times `outcore-plan inspect` (read + protobuf parse + IR + shape inference)
# over several runs and prints the median. Target (issue 2): under 1 s.
set -euo pipefail
BUILD=${BUILD:-build}
PY=${PY:-/usr/bin/python3}
dir="$BUILD/bench"
model="$dir/resnet50_op13.onnx"
if [ ! -f "$model" ]; then
    mkdir -p "$dir"
    "$PY" tools/export_models.py --models resnet50 --opset 13 --out "$dir" >/dev/null
fi
bytes=$(stat -c %s "$model")
times=()
for _ in 1 2 3 4 5; do
    start=$(date +%s.%N)
    "$BUILD/outcore-plan" inspect "$model" --batch 640 >/dev/null
    end=$(date +%s.%N)
    times+=("$(awk -v a="$start" -v b="$end" 'BEGIN { print b - a }')")
done
median=$(printf '%s\n' "${times[@]}" | sort -g | sed -n 3p)
awk -v b="$bytes" -v m="$median" 'BEGIN {
    printf "import resnet50 with inline weights (%.1f MB): median %.3f s over 5 runs (target < 1 s)\n", b / 1e6, m }'
