# tools/gpu-check-precision.sh — `tools/gpu-check --precision` (issue 23), sourced by
# tools/gpu-check after its build: mixed precision on the GPU beside PyTorch AMP, in one run.
# NOT YET RUN on a GPU (none lent 2026-11-26); --emu runs its flow here. The cuda backend runs
# convolutions and GEMMs on cuDNN / cuBLAS's half paths (tensor cores), the BN family, pooling,
# pointwise ops and residual Adds with its own half kernels (docs/mixed-precision.md); the rows
# are the issue's must-shows. ResNet-50 b640 (the emulator: ResNet-18 b4 at 64x64):
#   1. outcore in core, --precision fp32, bf16, and bf16 with --layout nhwc (channels-last, where
#      cuDNN's half convolutions are fastest): images/s, device bytes, loss falls; the faster
#      bf16 layout is used below;
#   2. PyTorch in core (tools/gpu_torch_bench.py --amp bf16): eager and torch.compile under
#      autocast (also channels-last), and eager float32; outcore bf16 / the best PyTorch AMP;
#   3. bf16 under a 16 GiB cap: a measured bf16 profile, a plan, the run: device bytes <= cap,
#      slowdown against outcore's own bf16 in-core run (target <= 10%), predicted vs measured;
#   4. a bf16 loss curve (ResNet-18 224, batch 64, 100 steps; the emulator: 64x64, batch 4, 10
#      steps) against PyTorch AMP from the same weights and batch (tools/gpu_amp_curve.py).
# Rows as the other checks; GPU_CHECK_SECONDS bounds the whole run.
if [ $EMU = 1 ]; then
    PM=resnet18 PB=4 PSZ=64 PCL=10 PDEV="--device cpu --image-size 64"
    P_TORCH="eager eager-amp compile-amp eager-amp+cl"
else
    PM=resnet50 PB=640 PSZ=224 PCL=1000 PDEV=""
    P_TORCH="eager eager-amp compile-amp compile-amp+cl"
fi
M=$LOG/${PM}_p.onnx
model_file $PM $PSZ "$M"
batch_files p_ $PB $PSZ $PCL
D="--input $LOG/p_x.pb --labels $LOG/p_y.pb"
for pr in fp32 bf16 bf16-nhwc; do
    tbox 150 $RUN "$M" --backend cuda --batch $PB --steps 6 --lr 0.01 $D --precision ${pr%-nhwc} \
        --layout $([ $pr = bf16-nhwc ] && echo nhwc || echo nchw) >"$LOG/p_$pr.log" 2>&1
    row "$PM b$PB in core, --precision ${pr%-nhwc}$([ $pr = bf16-nhwc ] && echo ' --layout nhwc')" "$(ips "$LOG/p_$pr.log" || true) img/s, device $(dev_used "$LOG/p_$pr.log") B, loss falls: $(loss_falls "$LOG/p_$pr.log" && echo yes || echo NO)"
done
BF_IPS=$(ips "$LOG/p_bf16.log") L=  # L: the faster bf16 layout's flag (empty: nchw)
NHWC_IPS=$(ips "$LOG/p_bf16-nhwc.log")
if [ -n "$NHWC_IPS" ] && $PYTHON -c "import sys; sys.exit(not $NHWC_IPS > ${BF_IPS:-0})"; then
    BF_IPS=$NHWC_IPS L="--layout nhwc"
fi
row "  outcore bf16 best layout" "${L:-nchw}: $BF_IPS img/s"
best=0 bestm=
for mode in $P_TORCH; do
    [ "$(budget_left)" -gt 60 ] || { row "  pytorch $mode" "skipped (GPU_CHECK_SECONDS spent)"; continue; }
    base=${mode%+cl} cl=$([ "$base" != "$mode" ] && echo --channels-last)
    amp=$([ "${base%-amp}" != "$base" ] && echo "--amp bf16")
    out=$(tbox 240 $PYTHON tools/gpu_torch_bench.py $PM ${base%-amp} $PB --iters 5 $amp $cl $PDEV \
          2>"$LOG/p_torch_$mode.err" | tail -1)
    row "  pytorch $mode (in core)" "${out:-FAILED ($(tail -1 "$LOG/p_torch_$mode.err"))}"
    v=$(echo "$out" | awk -v f=$([ -n "$cl" ] && echo 5 || echo 4) '{print $f}')
    [ -n "$amp" ] && [ -n "$v" ] && [ "$v" != OOM ] &&
        $PYTHON -c "import sys; sys.exit(not $v > $best)" && best=$v bestm=$mode
done
[ -n "$BF_IPS" ] && [ -n "$bestm" ] &&
    row "  outcore bf16 / best PyTorch AMP in core" "$($PYTHON -c "print(f'{$BF_IPS/$best:.3f}x (best: $bestm, $best img/s)')")"
# 3. bf16 under the cap, planned with a measured bf16 profile
tbox 150 $RUN "$M" --backend cuda --batch $PB --steps 5 --lr 0.01 $D --precision bf16 ${L:---layout nchw} \
    --profile-out "$LOG/p_profile.json" >"$LOG/p_profile.log" 2>&1
CAP=17179869184 BUDGET=$((17179869184 - $(over_of "$LOG/p_bf16.log")))
if [ $EMU = 1 ]; then
    $PLAN plan "$M" --batch $PB --precision bf16 $L --profile "$LOG/p_profile.json" --strategy incore \
        --json >"$LOG/p_incore.json" 2>/dev/null
    BUDGET=$($PYTHON -c 'import json,sys;d=json.load(open(sys.argv[1]));print(int(d["peak_bytes"]-sum(x["bytes"] for x in d["decisions"])//2))' "$LOG/p_incore.json" 2>/dev/null || echo 0)
    CAP=$((BUDGET * 16 / 15))
fi
PLAN_EXTRA="--precision bf16 $L" pl_plan "$LOG/p_profile.json" $BUDGET p_plan.onnx "$M" $PB; rc=$?
pl_plan_row "$PM b$PB bf16, cap $CAP B" "$LOG/p_plan.json" $rc
[ $rc = 0 ] && { pl_run p_plan.onnx p_capped "$D" $CAP; pl_rows p_capped "$LOG/p_plan.json" "$BF_IPS" $PB $CAP; }
# 4. the loss curve against PyTorch AMP
amp_curve_row
finish 0
