#!/usr/bin/env bash
# run_all.sh — runs every test suite and ends with one line "N passed, M failed".
# Suites: cmocka unit binaries ($BUILD/tests/test_*), then tests/cli/test_*.sh and
# tests/py/test_*.py (run with $PY). Each suite is one pass or one failure in the
# tally; their own output (each case by name) is shown as they run, and the
# slowest suites' seconds at the end (CI's 45-minute budget).
set -u
BUILD=${BUILD:-build}
PY=${PY:-/usr/bin/python3}
export BUILD PY
cd "$(dirname "$0")/.."
passed=0 failed=0 failures=() times=()

run_suite() {
    local name=$1; shift
    local start=$SECONDS
    echo "=== $name"
    if "$@"; then
        passed=$((passed + 1))
    else
        failed=$((failed + 1)); failures+=("$name")
        echo "--- FAILED: $name"
    fi
    times+=("$((SECONDS - start)) s $name")
}

for t in "$BUILD"/tests/test_*; do
    [ -x "$t" ] || continue
    run_suite "$(basename "$t")" "$t"
done
for t in tests/cli/test_*.sh; do
    [ -f "$t" ] || continue
    run_suite "$(basename "$t")" bash "$t"
done
for t in tests/py/test_*.py; do
    [ -f "$t" ] || continue
    run_suite "$(basename "$t")" "$PY" "$t"
done

echo
echo "slowest suites:"
printf '%s\n' "${times[@]}" | sort -rn | head -8 | sed 's/^/  /'
[ ${#failures[@]} -eq 0 ] || echo "failed suites: ${failures[*]}"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
