#!/usr/bin/env bash
# test_outputs.sh — outputs never replace what they must not: `plan X -o X`,
# `outcore-run P --save P`, an -o that is a symlink, a FIFO, a directory or a
# device is refused (exit non-zero, the target untouched, nothing left beside
# it); a written output leaves no temporary file behind.
set -u
BUILD=${BUILD:-build}
PLAN="$BUILD/outcore-plan"
RUN="$BUILD/outcore-run"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail=0
ok() { echo "ok - $1"; }
bad() { echo "not ok - $1"; fail=1; }

cp graphs/resnet18_op13.onnx "$T/model.onnx"
before=$(sha256sum <"$T/model.onnx")
args=(--batch 2 --budget 1GiB --device v100 --strategy incore)

# refused: exit non-zero, message, target unchanged
refuse() { # name pattern target-check -- command...
    local name=$1 pattern=$2; shift 2
    "$@" >"$T/out" 2>"$T/err"
    local rc=$?
    if [ $rc -ne 0 ] && [ $rc -lt 128 ] && grep -q "$pattern" "$T/err"; then ok "$name"
    else bad "$name (rc $rc): $(cat "$T/err")"; fi
}

refuse "plan X -o X refused" "input of this run" "$PLAN" plan "$T/model.onnx" "${args[@]}" -o "$T/model.onnx"
[ "$(sha256sum <"$T/model.onnx")" = "$before" ] && ok "the input is untouched" || bad "the input changed"

ln -s "$T/model.onnx" "$T/link.onnx"
refuse "-o a symlink refused" "symbolic link" "$PLAN" plan "$T/model.onnx" "${args[@]}" -o "$T/link.onnx"
[ -L "$T/link.onnx" ] && [ "$(sha256sum <"$T/model.onnx")" = "$before" ] &&
    ok "the link and its target are untouched" || bad "the link or its target changed"

mkfifo "$T/fifo"
refuse "-o a FIFO refused (without blocking)" "FIFO" timeout 20 "$PLAN" plan "$T/model.onnx" "${args[@]}" -o "$T/fifo"
mkdir "$T/dir"
refuse "-o a directory refused" "directory" "$PLAN" plan "$T/model.onnx" "${args[@]}" -o "$T/dir"
refuse "-o a device refused" "device" "$PLAN" plan "$T/model.onnx" "${args[@]}" -o /dev/null

if "$PLAN" plan "$T/model.onnx" "${args[@]}" -o "$T/plan.onnx" >/dev/null 2>"$T/err"; then
    ok "a plan is written"
else
    bad "plan -o failed: $(cat "$T/err")"
fi
mode=$(stat -c %a "$T/plan.onnx") want=$(printf '%o' $((0666 & ~$(umask))))
[ "$mode" = "$want" ] && ok "the plan has mode $mode (0666 less the umask)" || bad "plan mode $mode, want $want"
refuse "outcore-run P --save P refused" "input of this run" "$RUN" "$T/plan.onnx" --steps 1 --save "$T/plan.onnx"
left=$(find "$T" -name '.*.??????' | wc -l)
[ "$left" -eq 0 ] && ok "no temporary file left behind" || bad "$left temporary files left: $(find "$T" -name '.*')"
[ $fail -eq 0 ]
