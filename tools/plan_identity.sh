#!/usr/bin/env bash
# Writes, for every bundled model, the plan of several strategies at batch 640 in 16 GiB (v100
# profile, the README's figures) and the losses of 3 cpu steps of a small plan, so that a
# refactor can be checked to change no plan byte and no loss bit:
#   tools/plan_identity.sh BUILD OUTDIR      then    diff -r OUTDIR_before OUTDIR_after
set -euo pipefail
build=${1:?usage: plan_identity.sh BUILD OUTDIR}
out=${2:?usage: plan_identity.sh BUILD OUTDIR}
mkdir -p "$out"
plan=$build/outcore-plan
run=$build/outcore-run
strategies=${STRATEGIES:-"hybrid dp-swap swap-all superneurons"}
for m in graphs/*_op1[35].onnx; do
  b=$(basename "$m" .onnx)
  for s in $strategies; do
    if "$plan" plan "$m" --batch 640 --budget 16GiB --device v100 --strategy "$s" \
        -o "$out/$b.$s.plan.onnx" > "$out/$b.$s.txt" 2>&1; then :; else echo "rc $?" >> "$out/$b.$s.txt"; fi
  done
  # A small plan that runs: batch 2, swap-all at 97% of the in-core peak, 3 cpu steps.
  peak=$("$plan" plan "$m" --batch 2 --budget 1TB --device v100 --strategy incore --json |
    sed -n 's/.*"peak_bytes": \([0-9]*\).*/\1/p')
  budget=$((peak * 97 / 100))
  if "$plan" plan "$m" --batch 2 --budget $budget --device v100 --strategy swap-all \
      -o "$out/$b.small.plan.onnx" > /dev/null 2>&1; then
    OPENBLAS_NUM_THREADS=1 "$run" "$out/$b.small.plan.onnx" --backend cpu --steps 3 --budget $budget 2>&1 |
      grep -E '^step' > "$out/$b.small.losses" || true
  fi
done
( cd "$out" && sha256sum *.plan.onnx > SHA256SUMS )
