#!/usr/bin/env bash
# run.sh — `make fuzz`: seeds from this build (make_seeds.sh), then each target
# of FUZZ_TARGETS runs from an empty scratch folder over three corpora:
#   $FUZZ_BUILD/fuzz/<t>/new     what this run finds (not committed)
#   tests/fuzz/corpus/<t>        regression inputs: every finding, kept (committed)
#   $FUZZ_BUILD/seeds/<t>        seeds (make_seeds.sh)
# libFuzzer first runs every input of the corpora (a regression fails here),
# then fuzzes for FUZZ_SECONDS. A crash, leak, sanitizer report or timeout
# stops the target, leaves the input in $FUZZ_BUILD/fuzz/<t>/crashes/ and makes
# this script fail; the fix's commit copies it into tests/fuzz/corpus/<t>/.
# Prints per target: executions, coverage (edges), features, corpus size.
set -u
BUILD=${BUILD:-build}
FB=${FUZZ_BUILD:-build-fuzz}
SECS=${FUZZ_SECONDS:-60}
TARGETS=${FUZZ_TARGETS:-"import profile plan cli tensor npy"}
ROOT=$(pwd)
SEEDS="$ROOT/$FB/seeds"
# FUZZ_KEEP_SEEDS=1: reuse the seeds of an earlier run (runs side by side).
[ "${FUZZ_KEEP_SEEDS:-0}" = 1 ] && [ -d "$SEEDS/fixtures" ] ||
    BUILD=$BUILD bash tests/fuzz/make_seeds.sh "$SEEDS" || exit 1
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export OPENBLAS_NUM_THREADS=1 OC_FUZZ_FIXTURES="$SEEDS/fixtures"
fail=0
for t in $TARGETS; do
    W="$ROOT/$FB/fuzz/$t"
    rm -rf "$W/cwd" "$W/crashes" && mkdir -p "$W/new" "$W/crashes" "$W/cwd" "$ROOT/tests/fuzz/corpus/$t"
    dict=()
    [ -f "$ROOT/tests/fuzz/$t.dict" ] && dict=(-dict="$ROOT/tests/fuzz/$t.dict")
    # a unit may take 30 s (fuzz_cli 60: `plan -o` on the scratch model plans each --layout and
    # --fuse variant with its re-plans, about 9 s instrumented even with the local search 50x
    # shorter in fuzzing builds (local_search.c), more beside others)
    to=30 && [ "$t" = cli ] && to=60
    start=$(date +%s)
    (cd "$W/cwd" && "$ROOT/$FB/fuzz/fuzz_$t" -max_total_time="$SECS" -timeout=$to -rss_limit_mb=4096 \
        -max_len=262144 -close_fd_mask=1 -print_final_stats=1 -artifact_prefix="$W/crashes/" \
        "${dict[@]}" "$W/new" "$ROOT/tests/fuzz/corpus/$t" "$SEEDS/$t") >"$W/log" 2>&1
    rc=$?
    secs=$(($(date +%s) - start))
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$W/log" | tail -1)
    last=$(grep -E '^#[0-9]+' "$W/log" | tail -1)
    cov=$(echo "$last" | sed -n 's/.*cov: \([0-9]*\).*/\1/p')
    ft=$(echo "$last" | sed -n 's/.*ft: \([0-9]*\).*/\1/p')
    corp=$(echo "$last" | sed -n 's/.*corp: \([0-9]*\).*/\1/p')
    if [ $rc -eq 0 ]; then
        echo "ok - fuzz_$t: ${secs} s, ${runs:-?} executions, coverage ${cov:-?} edges, ${ft:-?} features, corpus ${corp:-?}"
    else
        fail=1
        echo "not ok - fuzz_$t (rc $rc after ${secs} s, ${runs:-?} executions): $(ls "$W/crashes" | head -3)"
        grep -E "ERROR:|SUMMARY:|runtime error|==[0-9]+==" "$W/log" | head -8 | sed 's/^/    /'
        echo "    log: $W/log"
    fi
    # The log keeps its last lines (a CLI target logs an error line per input).
    tail -n 400 "$W/log" >"$W/log.tail" && mv "$W/log.tail" "$W/log"
done
exit $fail
