#!/usr/bin/env bash
# run_all.sh — runs every test suite and ends with one line "N passed, M failed".
# Suites: cmocka unit binaries ($BUILD/tests/test_*), then tests/cli/test_*.sh and
# tests/py/test_*.py (run with $PY). Each suite is one pass or one failure in the
# tally. Suites run $TEST_JOBS at a time (default: the CPU count; each suite
# works one core, so CI's two cores halve its time), the long ones first; a
# suite's output (each case by name) is shown whole when it ends, and the slowest
# suites' seconds at the end (CI's 45-minute budget). TEST_JOBS=1 runs them one
# after another, as they are listed.
set -u
BUILD=${BUILD:-build}
PY=${PY:-/usr/bin/python3}
export BUILD PY
cd "$(dirname "$0")/.."
JOBS=${TEST_JOBS:-$(nproc 2>/dev/null || echo 1)}
case "$JOBS" in '' | *[!0-9]* | 0) echo "run_all.sh: TEST_JOBS must be a positive count"; exit 2 ;; esac
# The longest suites (seconds in CI's plain stage: 290, 160, 100, 46) start first
# so that no lane is left with one of them at the end.
LONG="test_cuda_emu.sh test_plan_invariance.py test_strategies test_plan_cli.sh"

names=() cmds=()
add_suite() { names+=("$1"); shift; cmds+=("$*"); }
for t in "$BUILD"/tests/test_*; do
    [ -x "$t" ] && add_suite "$(basename "$t")" "$t"
done
for t in tests/cli/test_*.sh; do
    [ -f "$t" ] && add_suite "$(basename "$t")" bash "$t"
done
for t in tests/py/test_*.py; do
    [ -f "$t" ] && add_suite "$(basename "$t")" "$PY" "$t"
done
order=()
if [ "$JOBS" -gt 1 ]; then
    for l in $LONG; do
        for i in "${!names[@]}"; do [ "${names[$i]}" = "$l" ] && order+=("$i"); done
    done
fi
for i in "${!names[@]}"; do
    case " ${order[*]} " in *" $i "*) ;; *) order+=("$i") ;; esac
done

OUT=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$OUT"' EXIT
passed=0 failed=0 failures=() times=()
declare -A pid_of=() start_of=()

# finish I RC: prints suite I's output and tallies its exit status.
finish() {
    local i=$1 rc=$2
    echo "=== ${names[$i]}"
    cat "$OUT/$i.out"
    if [ "$rc" -eq 0 ]; then
        passed=$((passed + 1))
    else
        failed=$((failed + 1)); failures+=("${names[$i]}")
        echo "--- FAILED: ${names[$i]} (exit $rc)"
    fi
    times+=("$((SECONDS - start_of[$i])) s ${names[$i]}")
    unset "pid_of[$i]"
}

# reap: waits until a running suite ends (bash >= 5.1: wait -n -p) and finishes it.
reap() {
    local p rc i
    wait -n -p p; rc=$?
    for i in "${!pid_of[@]}"; do
        if [ "${pid_of[$i]}" = "${p:-}" ]; then finish "$i" "$rc"; return; fi
    done
    echo "run_all.sh: lost track of a suite (wait -n gave '${p:-}')"; exit 2
}

for i in "${order[@]}"; do
    while [ ${#pid_of[@]} -ge "$JOBS" ]; do reap; done
    start_of[$i]=$SECONDS
    # shellcheck disable=SC2086  # cmds are "program [script]" with no spaces inside
    ${cmds[$i]} >"$OUT/$i.out" 2>&1 </dev/null &
    pid_of[$i]=$!
done
while [ ${#pid_of[@]} -gt 0 ]; do reap; done

echo
echo "slowest suites ($JOBS at a time):"
printf '%s\n' "${times[@]}" | sort -rn | head -8 | sed 's/^/  /'
[ ${#failures[@]} -eq 0 ] || echo "failed suites: ${failures[*]}"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
