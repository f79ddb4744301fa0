#!/usr/bin/env bash
# bench_step.sh — training step time on the cpu backend: images/s of
# outcore-run (in-core step built in-process, synthetic data) for a few models,
# median of ROUNDS runs. With BASE=DIR (a directory holding another build's
# outcore-run, e.g. the commit before a refactor) both binaries run
# interleaved, A B A B ..., and the ratio this/base is printed: machines are
# noisy, so only ratios measured side by side in one run are reported.
#   bash bench/bench_step.sh            BUILD=build ROUNDS=5 BASE=/tmp/base_bin
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
ROUNDS=${ROUNDS:-5}
BASE=${BASE:-}
export OPENBLAS_NUM_THREADS=1
# model:batch — small enough for a 2-core CI machine, large enough that kernels dominate
CASES=${CASES:-"resnet18_op13:4 mobilenet_v2_op13:4 googlenet_op13:2"}

ips() { # binary model batch -> images/s of steps 1..3
  "$1" "graphs/$2.onnx" --backend cpu --batch "$3" --steps 4 2>/dev/null |
    sed -n 's/^images\/s \([0-9.]*\).*/\1/p'
}
median() { sort -g | awk '{v[NR]=$1} END {print (NR % 2) ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2}'; }

printf "%-20s %6s %12s" model batch "images/s"
[ -n "$BASE" ] && printf " %12s %8s" "base img/s" "ratio"
echo
for c in $CASES; do
  m=${c%%:*} b=${c##*:}
  : > /tmp/bench_step.a.$$; : > /tmp/bench_step.b.$$
  for r in $(seq "$ROUNDS"); do
    ips "$BUILD/outcore-run" "$m" "$b" >> /tmp/bench_step.a.$$
    [ -n "$BASE" ] && ips "$BASE/outcore-run" "$m" "$b" >> /tmp/bench_step.b.$$
  done
  a=$(median < /tmp/bench_step.a.$$)
  printf "%-20s %6s %12.3f" "$m" "$b" "$a"
  if [ -n "$BASE" ]; then
    bb=$(median < /tmp/bench_step.b.$$)
    printf " %12.3f %8.3f" "$bb" "$(awk -v a="$a" -v b="$bb" 'BEGIN {print a / b}')"
  fi
  echo
  rm -f /tmp/bench_step.a.$$ /tmp/bench_step.b.$$
done
