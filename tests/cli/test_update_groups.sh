#!/usr/bin/env bash
# test_update_groups.sh — multi-tensor updates (--fuse all, op_update.h): the training
# graph updates many parameters with one SGDMomentum / AdamW node ("members" lists them),
# every parameter exactly once, and the step's results are bitwise those of one update
# node per parameter (--fuse forward differs from all only there on a model without
# BatchNorm + Relu), on the cpu backend and, where the emulator build exists
# (EMU=build-emu), on the cuda backend: SGD, AdamW with clipping (one update after the
# norm), AdamW with fp16 loss scaling (per-parameter step counts, a skipped step).
set -u
BUILD=${BUILD:-build}
PY=${PY:-/usr/bin/python3}
EMU=${EMU:-build-emu}
PLAN="$BUILD/outcore-plan"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fails=0
ok() { echo "ok - $1"; }
bad() { echo "not ok - $1"; fails=$((fails + 1)); }

# 1. the graphs: grouped updates (a BatchNorm's scale and bias, the fc weight and bias) cover
#    every parameter once; one per parameter unfused;
#    with --clip-grad-norm a single update after ClipGradNorm
M=graphs/resnet18_op13.onnx
for f in all none clip; do
    args=(--fuse all); [ $f = none ] && args=(--no-fuse); [ $f = clip ] && args=(--clip-grad-norm 1)
    "$PLAN" emit "$M" --batch 1 "${args[@]}" -o "$T/r18_$f.onnx" >/dev/null 2>"$T/emit.err" ||
        bad "emit $f: $(cat "$T/emit.err")"
done
if "$PY" - "$T"/r18_{all,none,clip}.onnx >"$T/graphs.out" 2>&1 <<'PYEOF'
import sys, onnx
def updates(path):
    g = onnx.load(path).graph
    ups = [n for n in g.node if n.op_type == "SGDMomentum"]
    seen = []
    for n in ups:
        members = [a.strings for a in n.attribute if a.name == "members"]
        k = len(members[0]) if members else 1
        scale = (len(n.input) - 3 * k)
        assert scale in (0, 1) and len(n.output) == 2 * k, (n.name, len(n.input), len(n.output))
        ws = [n.input[3 * i] for i in range(k)]
        assert all(n.output[2 * i] == w + "/updated" for i, w in enumerate(ws)), n.name
        if members:
            assert [m.decode() for m in members[0]] == [w + "/sgd" for w in ws], n.name
        seen += ws
    assert len(seen) == len(set(seen)), path
    return ups, sorted(seen)
unf, params = updates(sys.argv[2])
assert len(unf) == len(params) and len(params) > 50, len(params)
ups, seen = updates(sys.argv[1])
assert seen == params and 1 < len(ups) < len(params) * 3 // 4, (len(ups), len(params))
clip, seen = updates(sys.argv[3])
assert seen == params
assert len(clip) == 1 and len(clip[0].input) == 3 * len(params) + 1
print(f"{len(params)} parameters: {len(ups)} updates grouped, {len(unf)} unfused, "
      f"{len(clip)} with clipping")
PYEOF
then
    ok "ResNet-18's updates: $(cat "$T/graphs.out")"
else
    bad "grouped updates: $(tail -3 "$T/graphs.out")"
fi

# 2. bitwise equal steps, grouped or not: every saved initializer (weights, optimizer state)
G=tests/data/torch2/tiny_gpt_legacy.onnx
same_bits() {
    "$PY" - "$1" "$2" <<'PYEOF'
import sys, onnx
from onnx import numpy_helper
a, b = ({t.name: numpy_helper.to_array(t).tobytes() for t in onnx.load(p).graph.initializer}
        for p in sys.argv[1:3])
diff = [k for k in a if a[k] != b.get(k)]
assert len(a) > 20 and a.keys() == b.keys() and not diff, (len(a), diff[:3])
print(f"{len(a)} tensors")
PYEOF
}
specs=("SGD:--lr 0.01"
       "AdamW, clipped:--optimizer adamw --lr 0.001 --clip-grad-norm 0.05"
       "AdamW, fp16 loss scaling (step 0 skipped):--optimizer adamw --lr 0.001 --precision fp16 --loss-scale 4e5")
for backend in cpu cuda; do
    RUN="$BUILD/outcore-run"
    if [ $backend = cuda ]; then
        RUN="$EMU/outcore-run"
        [ -x "$RUN" ] || { echo "ok - cuda (emulated): skipped, no $RUN (make CUDA=emu BUILD=$EMU)"; continue; }
    fi
    for spec in "${specs[@]}"; do
        what=${spec%%:*} flags=${spec#*:}
        for f in forward all; do
            # shellcheck disable=SC2086  # the flags split into words on purpose
            "$RUN" "$G" --backend $backend --batch 2 --steps 4 --seed 5 --fuse $f $flags \
                --save "$T/$f.onnx" >"$T/$f.out" 2>&1 || bad "$backend $what --fuse $f: $(tail -2 "$T/$f.out")"
        done
        if cmp -s <(grep '^step' "$T/forward.out") <(grep '^step' "$T/all.out") &&
           grep -q '^step 3' "$T/all.out" && { [ "${what#*skipped}" = "$what" ] ||
               [ "$(grep -c '^step .*skipped' "$T/all.out")" = 1 ]; } && same_bits "$T/forward.onnx" "$T/all.onnx" >"$T/bits.out" 2>&1; then
            ok "$backend, $what: grouped updates give the per-parameter updates' bits ($(cat "$T/bits.out"), 4 steps)"
        else
            bad "$backend, $what: grouped != per-parameter: $(tail -2 "$T/bits.out") $(grep '^step' "$T/forward.out" "$T/all.out" | tr '\n' ' ')"
        fi
    done
done
exit $((fails > 0))
