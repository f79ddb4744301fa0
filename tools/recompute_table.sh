#!/usr/bin/env bash
# recompute_table.sh — minimum memory by recomputation on the bundled models:
# simulated peak of the memory-centric DP (`dp-min`) and of Chen √n (`chen`)
# against the in-core peak, at batch $BATCH (default 640) on the v100 analytic
# profile, with an unlimited budget. Prints a Markdown table (docs/recompute.md).
set -euo pipefail
BUILD=${BUILD:-build}
BATCH=${BATCH:-640}
PLAN="$BUILD/outcore-plan"
declare -A PAPER=([resnet50]="-62%" [densenet121]="-81%" [unet]="-45%" [googlenet]="-39%" [vgg16]="-36%")
peak() { # model strategy -> peak bytes (GiB figure from the plan report)
    "$PLAN" plan "graphs/$1_op13.onnx" --batch "$BATCH" --device v100 --budget 100000GiB \
        --strategy "$2" | awk '/^peak/ && !d {v = $2; u = $3; f = u == "TiB" ? 1024 : u == "GiB" ? 1 : u == "MiB" ? 1 / 1024 : u == "KiB" ? 1 / 1048576 : 1 / 1073741824; print v * f; d = 1}'
}
slow() {
    "$PLAN" plan "graphs/$1_op13.onnx" --batch "$BATCH" --device v100 --budget 100000GiB \
        --strategy "$2" | awk '/^ideal time/ && !d {gsub(/[()x]/, "", $NF); print $NF; d = 1}'
}
echo "| model (batch $BATCH) | in-core peak (GiB) | dp-min peak (GiB) | dp-min reduction | dp-min slowdown | chen peak (GiB) | chen reduction | chen slowdown | paper (DP) |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|"
for m in resnet50 densenet121 googlenet vgg16 unet resnet18 mobilenet_v2; do
    [ -f "graphs/${m}_op13.onnx" ] || continue
    inc=$(peak "$m" incore); dp=$(peak "$m" dp-min); ch=$(peak "$m" chen)
    sdp=$(slow "$m" dp-min); sch=$(slow "$m" chen)
    awk -v m="$m" -v i="$inc" -v d="$dp" -v c="$ch" -v sd="$sdp" -v sc="$sch" -v p="${PAPER[$m]:-}" \
        'BEGIN{printf "| %s | %.2f | %.2f | %+.0f%% | %sx | %.2f | %+.0f%% | %sx | %s |\n", m, i, d, (d/i-1)*100, sd, c, (c/i-1)*100, sc, p}'
done
