#!/usr/bin/env bash
# test_op_table.sh — the structure issue 17 set, checked on every run:
#   - each op's ONNX name (planner/ir/ops/op_list.h) is a string literal in at
#     most two source files under planner/ and runtime/ (the list, and at most
#     one other: every later test is on the op_kind enum);
#   - kernels (runtime/cpu, runtime/cuda) never read raw attributes (ir_attr_*):
#     they take the decoded arguments (op_args_of);
#   - outcore-run links no strategy, simulator, DP, ILP, layout or rewrite code.
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}
fail=0

names=$(grep -o 'X([A-Z_0-9]*, "[A-Za-z0-9]*"' planner/ir/ops/op_list.h | sed 's/.*"\(.*\)"/\1/')
[ "$(echo "$names" | wc -l)" -ge 30 ] || { echo "not ok - op names not found in op_list.h"; exit 1; }
worst=0
for n in $names; do
  files=$(grep -rl --include=*.c --include=*.h --include=*.cu "\"$n\"" planner runtime || true)
  c=$(echo -n "$files" | grep -c . || true)
  [ "$c" -gt "$worst" ] && worst=$c
  if [ "$c" -gt 2 ]; then echo "not ok - op name \"$n\" is a literal in $c files:" $files; fail=1; fi
done
[ $fail = 0 ] && echo "ok - each of $(echo "$names" | wc -l) op names is a literal in at most $worst source files"

if grep -rn "ir_attr_[a-z]*(" runtime/cpu runtime/cuda runtime/*.h runtime/kernel_args.c; then
  echo "not ok - a kernel reads raw attributes (above)"; fail=1
else
  echo "ok - no kernel reads raw attributes"
fi

if [ -x "$BUILD/outcore-run" ]; then
  bad=$(nm "$BUILD/outcore-run" | grep -E ' [TtDdBbRr] (strategy_|sim_|simulator_|dp_|ilp_|glp_|layout_|rewrite_|plan_make)' || true)
  if [ -n "$bad" ]; then echo "not ok - outcore-run links planner code:"; echo "$bad" | head; fail=1
  else echo "ok - outcore-run has no strategy, simulator, DP, ILP, layout or rewrite symbols"; fi
else
  echo "not ok - $BUILD/outcore-run not built"; fail=1
fi
exit $fail
