# tools/gpu-check-fast-step.sh — `tools/gpu-check --fast-step` (issue 22), sourced by
# tools/gpu-check after its build: where the fp32 step's time goes and how it compares with
# PyTorch's fast paths, in one run. NOT YET RUN on a GPU (none lent 2026-11-26); --emu runs its
# flow here. Per model (ResNet-50 b640, VGG-16 b256; the emulator: ResNet-18 / alexnet_small):
#   1. outcore in core, --no-fuse, fused (the default) and fused with --layout nhwc
#      (channels-last), each timed and traced (--trace-out): images/s, and
#      tools/step_time.py's per-op-class table of the three side by side; the faster of fused
#      and nhwc is outcore's best layout for the rows after it;
#   2. op harness rows of the fused kernels (BatchNormRelu, its gradient) cuda vs cpu; the
#      fused step with --cuda-graph on (timed; --deterministic weights vs the streams' bitwise);
#   3. PyTorch in core (tools/gpu_torch_bench.py, TF32 as outcore's defaults): eager,
#      torch.compile default and mode="max-autotune-no-cudagraphs", channels-last eager and
#      compile; the ratio of outcore's fused in-core throughput to the best of them;
#   4. ResNet-50 only: a 16 GiB plan with the fused run's measured profile, run; PyTorch under the
#      same cap: compile with activation_memory_budget, checkpointing, save_on_cpu; the ratio to
#      the best that fits.
# Rows as the other checks. GPU_CHECK_SECONDS bounds the whole run (compiles are the slow part:
# rows past the budget are skipped, said so).
FSTEPS=6
torch_ips() { # a gpu_torch_bench.py line -> its images/s ('' on OOM or failure)
    echo "$1" | $PYTHON -c "import sys; t=sys.stdin.read().split(); i=3+('channels-last' in t); print(t[i] if len(t)>i and t[i]!='OOM' else '')"
}
torch_rows() { # WHAT MODEL BATCH SIZE MODE...: a row per PyTorch mode (MODE+cl: channels-last);
    # sets best / bestm, the fastest mode's images/s and name
    local what=$1 m=$2 b=$3 sz=$4 mode out v cl
    shift 4
    best=0 bestm=
    for mode in "$@"; do
        [ "$(budget_left)" -gt 60 ] || { row "  pytorch $mode ($what)" "skipped (GPU_CHECK_SECONDS spent)"; continue; }
        cl=$([ "${mode#*+}" = cl ] && echo --channels-last)
        out=$(tbox 240 $PYTHON tools/gpu_torch_bench.py $m ${mode%+cl} $b --iters 5 $cl \
              $([ $EMU = 1 ] && echo "--device cpu --image-size $sz") 2>"$LOG/${m}_torch_$mode.err" | tail -1)
        row "  pytorch $mode ($what)" "${out:-FAILED ($(tail -1 "$LOG/${m}_torch_$mode.err"))}"
        v=$(torch_ips "$out")
        [ -n "$v" ] && $PYTHON -c "import sys; sys.exit(not $v > $best)" && best=$v bestm=$mode
    done
}
if [ $EMU = 1 ]; then
    FS_SPECS="resnet18:4:64:10 alexnet_small:4:32:10"
    TORCH_MODES="eager compile"
    CAP_MODES="checkpoint" # no memory cap on the CPU
else
    FS_SPECS="resnet50:640:224:1000 vgg16:256:224:1000"
    TORCH_MODES="eager compile compile-max eager+cl compile+cl"
    CAP_MODES="compile-budget checkpoint save_on_cpu"
fi
NVIDIA_TF32_OVERRIDE=0 tbox 200 $BUILD/tests/test_op_harness --require cuda >"$LOG/op_harness.log" 2>&1
row "op harness: BatchNormRelu cases cuda vs cpu" "$(grep -c 'BatchNormRelu (.*cuda matches cpu' "$LOG/op_harness.log") of $(grep -c '^\[ RUN      \] BatchNormRelu' "$LOG/op_harness.log") match"
row "op harness: channels-last (nhwc) cases cuda vs cpu" "$(grep -c '(nhwc.*cuda matches cpu' "$LOG/op_harness.log") of $(grep -c '^\[ RUN      \] .*: nhwc' "$LOG/op_harness.log") match"
for spec in $FS_SPECS; do
    IFS=: read -r fm fb fsz fcl <<<"$spec"
    M=$LOG/${fm}.onnx
    model_file $fm $fsz "$M"
    batch_files ${fm}_ $fb $fsz $fcl
    D="--input $LOG/${fm}_x.pb --labels $LOG/${fm}_y.pb"
    for lvl in no-fuse fused nhwc; do
        # (outcore-run's default --layout auto would pick by the GPU's preset: pinned here)
        F=$(case $lvl in (no-fuse) echo --no-fuse --layout nchw ;; (nhwc) echo --layout nhwc ;;
            (*) echo --layout nchw ;; esac)
        tbox 150 $RUN "$M" --backend cuda --batch $fb --steps $FSTEPS --lr 0.01 $D $F \
            >"$LOG/${fm}_${lvl}.log" 2>&1
        tbox 120 $RUN "$M" --backend cuda --batch $fb --steps 4 --lr 0.01 $D $F \
            --trace-out "$LOG/${fm}_${lvl}_trace.json" >"$LOG/${fm}_${lvl}_trace.log" 2>&1
        row "$fm b$fb in core, $lvl" "$(ips "$LOG/${fm}_${lvl}.log" || true) img/s, device $(dev_used "$LOG/${fm}_${lvl}.log") B, loss falls: $(loss_falls "$LOG/${fm}_${lvl}.log" && echo yes || echo NO)"
    done
    FUSED_IPS=$(ips "$LOG/${fm}_fused.log")
    NHWC_IPS=$(ips "$LOG/${fm}_nhwc.log")
    # outcore's best layout: the rows below run with it (L: its flag, empty for nchw)
    L=
    if [ -n "$NHWC_IPS" ] && $PYTHON -c "import sys; sys.exit(not $NHWC_IPS > ${FUSED_IPS:-0})"; then
        L="--layout nhwc" FUSED_IPS=$NHWC_IPS
    fi
    LNAME=${L:-nchw}
    row "  outcore best layout ($fm)" "${LNAME#--layout }: $FUSED_IPS img/s"
    # CUDA graphs: timed, and --deterministic replay == stream execution bit for bit
    tbox 150 $RUN "$M" --backend cuda --batch $fb --steps $FSTEPS --lr 0.01 $D ${L:---layout nchw} --cuda-graph on \
        >"$LOG/${fm}_graph.log" 2>&1
    row "$fm b$fb in core, fused, --cuda-graph on" "$(ips "$LOG/${fm}_graph.log" || true) img/s ($(grep -m1 '^graph:' "$LOG/${fm}_graph.log" | cut -c1-90))"
    for gm in off on; do
        tbox 150 $RUN "$M" --backend cuda --batch $fb --steps 3 --lr 0.01 $D ${L:---layout nchw} --deterministic \
            --cuda-graph $gm --save "$LOG/${fm}_det_$gm.onnx" >"$LOG/${fm}_det_$gm.log" 2>&1
    done
    row "  graph replay vs streams, --deterministic" "$($PYTHON - "$LOG/${fm}_det_off.onnx" "$LOG/${fm}_det_on.onnx" <<'PY' 2>&1 | tail -1
import sys, onnx
from onnx import numpy_helper
a, b = ({t.name: numpy_helper.to_array(t).tobytes() for t in onnx.load(p).graph.initializer} for p in sys.argv[1:3])
d = [k for k in a if b.get(k) != a[k]]
print(f"{len(a) - len(d)} of {len(a)} weights bitwise equal" + (f"; differ: {d[:3]}" if d else ""))
PY
)"
    $PYTHON tools/step_time.py "--no-fuse=$LOG/${fm}_no-fuse_trace.json" \
        "fused=$LOG/${fm}_fused_trace.json" "nhwc=$LOG/${fm}_nhwc_trace.json" \
        >"$LOG/${fm}_step_time.md" 2>&1
    row "  where the step goes ($fm, ms/step)" "$LOG/${fm}_step_time.md:"
    while IFS= read -r l; do ROWS+=("    $l"); echo "    $l"; done <"$LOG/${fm}_step_time.md"
    torch_rows "in core" $fm $fb $fsz $TORCH_MODES
    [ -n "$FUSED_IPS" ] && [ -n "$bestm" ] &&
        row "  outcore (best layout) / best PyTorch in core" "$($PYTHON -c "print(f'{$FUSED_IPS/$best:.3f}x (best: $bestm, $best img/s)')")"
    [ "$fm" = resnet50 ] || [ "$fm" = resnet18 ] || continue
    # 4. the 16 GiB cap (the emulator: half the in-core peak's saved activations)
    tbox 150 $RUN "$M" --backend cuda --batch $fb --steps 5 --lr 0.01 $D ${L:---layout nchw} \
        --profile-out "$LOG/${fm}_fs_profile.json" >"$LOG/${fm}_fs_profile.log" 2>&1
    $PLAN emit "$M" --batch $fb $L -o "$LOG/${fm}_train.onnx" >/dev/null 2>&1 &&
        $PYTHON tools/step_time.py "fused, measured profile=$LOG/${fm}_fs_profile.json@$LOG/${fm}_train.onnx" \
            >"$LOG/${fm}_profile_time.md" 2>&1
    row "  per op class from the measured profile ($fm)" "$LOG/${fm}_profile_time.md:"
    while IFS= read -r l; do ROWS+=("    $l"); echo "    $l"; done <"$LOG/${fm}_profile_time.md"
    CAP=17179869184 BUDGET=$((17179869184 - $(over_of "$LOG/${fm}_fused.log")))
    if [ $EMU = 1 ]; then
        $PLAN plan "$M" --batch $fb $L --profile "$LOG/${fm}_fs_profile.json" --strategy incore --json \
            >"$LOG/${fm}_fs_incore.json" 2>/dev/null
        BUDGET=$($PYTHON -c 'import json,sys;d=json.load(open(sys.argv[1]));print(int(d["peak_bytes"]-sum(x["bytes"] for x in d["decisions"])//2))' "$LOG/${fm}_fs_incore.json" 2>/dev/null || echo 0)
        CAP=$((BUDGET * 16 / 15))
    fi
    PLAN_EXTRA="$L" pl_plan "$LOG/${fm}_fs_profile.json" $BUDGET ${fm}_fs_plan.onnx "$M" $fb; rc=$?
    pl_plan_row "$fm b$fb fused, cap $CAP B" "$LOG/${fm}_fs_plan.json" $rc
    [ $rc = 0 ] && { pl_run ${fm}_fs_plan.onnx ${fm}_fs "$D" $CAP; pl_rows ${fm}_fs "$LOG/${fm}_fs_plan.json" "$FUSED_IPS" $fb $CAP; }
    PLAN_IPS=$(ips "$LOG/${fm}_fs_run.log")
    torch_rows "16 GiB cap" $fm $fb $fsz $CAP_MODES
    [ -n "$PLAN_IPS" ] && [ -n "$bestm" ] &&
        row "  outcore plan / best PyTorch under the cap" "$($PYTHON -c "print(f'{$PLAN_IPS/$best:.3f}x (best: $bestm, $best img/s)')")"
done
finish 0
