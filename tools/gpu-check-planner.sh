# tools/gpu-check-planner.sh — `tools/gpu-check --planner` (issue 21), sourced by tools/gpu-check
# after its build: does the simulator predict what the GPU measures under a memory cap, and how
# much slower than in core does a plan run?
#   1. ResNet-50 b640: measured profile (in core, --profile-out) and the in-core run (the ideal)
#   2. plan A: `plan --strategy auto` under the 16 GiB cap less what the in-core run held
#      besides its arena (context, handles) and 64 MiB, with that profile; run it (timed),
#      then again with --trace-out
#   3. tools/calibrate fits the contention coefficients from trace A into profile_cal.json
#   4. plan B: the same with the calibrated profile; run it (timed, traced): prediction vs
#      measurement out of sample (the coefficients came from run A)
#   4b. plan C: the same under a 12 GiB cap
#   5. VGG-16 at b128 / 8 GiB cap and b256 / 12 GiB cap (b256 cannot fit 8 GiB: one ReLU's
#      gradient needs 10.2 GiB; `outcore-plan plan` says so): profile (1 GiB workspaces), the
#      ResNet-50 coefficients copied in, plan, run, trace; the ideal is the default in-core run
#   5b. the same caps with profiles under 8 GiB and 128 MiB workspaces too (GPU_CHECK_VGG_WS_CAPS),
#      merged (`outcore-plan profile --merge`), planned with --workspace auto, run, traced
# Rows: slowdown vs in core, predicted vs measured; $OUT gets the table and a tarball of the
# profiles, plans' JSON, traces and logs.
M=$LOG/${BIG}.onnx
if [ $EMU = 1 ]; then
    $PYTHON tools/export_models.py --models $BIG --opset 13 --image-size $BIG_SIZE --structure-only \
        --out "$LOG/export" >/dev/null 2>&1 && mv "$LOG/export/${BIG}_op13.onnx" "$M"
else
    cp graphs/${BIG}_op13.onnx "$M"
fi
batch_files "" $BIG_BATCH $BIG_SIZE 1000
DATA="--input $LOG/x.pb --labels $LOG/y.pb"
tbox 150 $RUN "$M" --backend cuda --batch $BIG_BATCH --steps 5 --lr 0.01 $DATA \
    --profile-out "$LOG/profile.json" >"$LOG/profile_run.log" 2>&1
row "$BIG b$BIG_BATCH: measured profile" "rc $?, $(grep '^copy bandwidth' "$LOG/profile_run.log" || echo "FAILED (profile_run.log)")"
tbox 150 $RUN "$M" --backend cuda --batch $BIG_BATCH --steps $PSTEPS --lr 0.01 $DATA >"$LOG/incore.log" 2>&1
IC_IPS=$(ips "$LOG/incore.log")
row "$BIG b$BIG_BATCH: in core (the ideal)" "${IC_IPS:-FAILED} img/s, device $(dev_used "$LOG/incore.log") B"
$PLAN plan "$M" --batch $BIG_BATCH --profile "$LOG/profile.json" --strategy incore --json \
    >"$LOG/plan_incore.json" 2>/dev/null
PRED=$(pjson "$LOG/plan_incore.json" iteration_time_s)
[ -n "$IC_IPS" ] && [ -n "$PRED" ] && [ "$PRED" != None ] &&
    row "  in core: predicted vs measured step" "$($PYTHON -c "p,m=$PRED,$BIG_BATCH/$IC_IPS;print(f'pred {p*1e3:.1f} ms, meas {m*1e3:.1f} ms, err {100*(p-m)/m:+.1f}%')")"
OVER=$(over_of "$LOG/incore.log")
CAP=17179869184 BUDGET=$((17179869184 - OVER))
row "  budget under a cap" "the cap less $OVER B (context and handles + 64 MiB, from the in-core run)"
if [ $EMU = 1 ]; then # a budget half the saved activations below the in-core peak
    $PLAN plan "$M" --batch $BIG_BATCH --profile "$LOG/profile.json" --strategy incore --json \
        >"$LOG/plan_incore.json" 2>/dev/null
    BUDGET=$($PYTHON -c 'import json,sys;d=json.load(open(sys.argv[1]));print(int(d["peak_bytes"]-sum(x["bytes"] for x in d["decisions"])//2))' "$LOG/plan_incore.json")
    CAP=$((BUDGET * 16 / 15))
fi
pl_plan "$LOG/profile.json" $BUDGET planA.onnx "$M" $BIG_BATCH; rc=$?
pl_plan_row "$BIG b$BIG_BATCH, plan A (profile as measured)" "$LOG/planA.json" $rc
[ $rc = 0 ] && { pl_run planA.onnx A "$DATA" $CAP; pl_rows A "$LOG/planA.json" "$IC_IPS" $BIG_BATCH $CAP; }
tools/calibrate --profile "$LOG/profile.json" --trace "$LOG/A_trace.json" -o "$LOG/profile_cal.json" \
    >"$LOG/calibrate_A.log" 2>&1
row "calibrate (from trace A)" "rc $?: $(tail -1 "$LOG/calibrate_A.log")"
sed 's/^/    /' "$LOG/calibrate_A.log"
pl_plan "$LOG/profile_cal.json" $BUDGET planB.onnx "$M" $BIG_BATCH; rc=$?
pl_plan_row "$BIG b$BIG_BATCH, plan B (calibrated profile)" "$LOG/planB.json" $rc
[ $rc = 0 ] && { pl_run planB.onnx B "$DATA" $CAP; pl_rows B "$LOG/planB.json" "$IC_IPS" $BIG_BATCH $CAP; }
# plan C: the calibrated profile under a 12 GiB cap (more of the step moves over PCIe)
CAP12=12884901888 BUDGET12=$((12884901888 - OVER))
[ $EMU = 1 ] && CAP12=$CAP BUDGET12=$BUDGET
pl_plan "$LOG/profile_cal.json" $BUDGET12 planC.onnx "$M" $BIG_BATCH; rc=$?
pl_plan_row "$BIG b$BIG_BATCH, plan C (calibrated, cap $CAP12 B)" "$LOG/planC.json" $rc
[ $rc = 0 ] && { pl_run planC.onnx C "$DATA" $CAP12; pl_rows C "$LOG/planC.json" "$IC_IPS" $BIG_BATCH $CAP12; }

# VGG-16: the ResNet-50 coefficients, a model they were not fitted on
coef() { # PROFILE: copies the calibrated contention fields into it
    $PYTHON - "$1" "$LOG/profile_cal.json" <<'PY'
import json, sys
p, c = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))["device"]
for k in ("compute_slowdown_h2d", "compute_slowdown_d2h"):
    p["device"][k] = c.get(k, 0.0)
json.dump(p, open(sys.argv[1], "w"), indent=1)
PY
}
VGG_M=graphs/${VGG}_op13.onnx
if [ $EMU = 1 ]; then
    $PYTHON tools/export_models.py --models $VGG --opset 13 --image-size $BIG_SIZE --structure-only \
        --out "$LOG/export" >/dev/null 2>&1 && VGG_M=$LOG/export/${VGG}_op13.onnx
fi
for spec in $VGG_SPECS; do
    IFS=: read -r vb vcap <<<"$spec"
    tag=V$vb
    batch_files vgg${vb}_ $vb $BIG_SIZE $([ $EMU = 1 ] && echo 10 || echo 1000)
    VD="--input $LOG/vgg${vb}_x.pb --labels $LOG/vgg${vb}_y.pb"
    tbox 100 $RUN "$VGG_M" --backend cuda --batch $vb --steps 5 --lr 0.01 $VD --workspace-limit 1GiB \
        --profile-out "$LOG/profile_$tag.json" >"$LOG/${tag}_profile_run.log" 2>&1
    tbox 100 $RUN "$VGG_M" --backend cuda --batch $vb --steps $PSTEPS --lr 0.01 $VD >"$LOG/${tag}_incore.log" 2>&1
    V_IPS=$(ips "$LOG/${tag}_incore.log")
    row "$VGG b$vb: in core (the ideal)" "${V_IPS:-FAILED} img/s, device $(dev_used "$LOG/${tag}_incore.log") B"
    [ -f "$LOG/profile_$tag.json" ] && [ -f "$LOG/profile_cal.json" ] && coef "$LOG/profile_$tag.json"
    if [ $EMU = 1 ]; then
        $PLAN plan "$VGG_M" --batch $vb --profile "$LOG/profile_$tag.json" --strategy incore --json \
            >"$LOG/${tag}_incore_plan.json" 2>/dev/null
        vbud=$($PYTHON -c 'import json,sys;d=json.load(open(sys.argv[1]));print(int(d["peak_bytes"]-sum(x["bytes"] for x in d["decisions"])//2))' "$LOG/${tag}_incore_plan.json")
        vcap=$((vbud * 16 / 15))
    else
        vbud=$((vcap - $(over_of "$LOG/${tag}_incore.log")))
    fi
    pl_plan "$LOG/profile_$tag.json" $vbud plan$tag.onnx "$VGG_M" $vb; rc=$?
    pl_plan_row "$VGG b$vb, cap $vcap B (calibrated profile)" "$LOG/plan$tag.json" $rc
    [ $rc = 0 ] && { pl_run plan$tag.onnx $tag "$VD" $vcap; pl_rows $tag "$LOG/plan$tag.json" "$V_IPS" $vb $vcap; }
    # 5b. the workspace as a planning choice: profiles under more caps beside the 1 GiB one,
    # merged (`profile --merge`: each convolution's (time, workspace) pairs), planned with
    # --workspace auto (the cap, then per node a faster pair where the plan has room)
    ws_profiles=("$LOG/profile_$tag.json")
    for wl in ${GPU_CHECK_VGG_WS_CAPS:-8GiB 128MiB}; do
        tbox 100 $RUN "$VGG_M" --backend cuda --batch $vb --steps 5 --lr 0.01 $VD --workspace-limit $wl \
            --profile-out "$LOG/profile_${tag}_$wl.json" >"$LOG/${tag}_profile_run_$wl.log" 2>&1 &&
            ws_profiles+=("$LOG/profile_${tag}_$wl.json")
    done
    $PLAN profile --merge "${ws_profiles[@]}" -o "$LOG/profile_${tag}_ws.json" >"$LOG/${tag}_merge.log" 2>&1
    row "$VGG b$vb: profiles merged (workspace caps 1GiB ${GPU_CHECK_VGG_WS_CAPS:-8GiB 128MiB})" \
        "rc $?, $(grep -c '"alternatives"' "$LOG/profile_${tag}_ws.json" 2>/dev/null) nodes with alternatives"
    pl_plan "$LOG/profile_${tag}_ws.json" $vbud plan${tag}ws.onnx "$VGG_M" $vb; rc=$?
    pl_plan_row "$VGG b$vb, cap $vcap B (--workspace auto)" "$LOG/plan${tag}ws.json" $rc
    grep -h 'workspace auto' "$LOG/plan${tag}ws.err" | sed 's/^/    /'
    [ $rc = 0 ] && { pl_run plan${tag}ws.onnx ${tag}ws "$VD" $vcap; pl_rows ${tag}ws "$LOG/plan${tag}ws.json" "$V_IPS" $vb $vcap; }
done
# every ResNet-50 trace at once: the fit the docs quote
tools/calibrate --profile "$LOG/profile.json" --trace "$LOG/A_trace.json" --trace "$LOG/B_trace.json" \
    -o "$LOG/profile_cal_AB.json" >"$LOG/calibrate_AB.log" 2>&1
row "calibrate (traces A and B)" "rc $?: $(tail -1 "$LOG/calibrate_AB.log")"
# PyTorch's own in-core figure for the same model and batch, measured in this run
if [ "$(budget_left)" -gt 60 ]; then
    out=$(tbox 60 $PYTHON tools/gpu_torch_bench.py $BIG eager $BIG_BATCH --iters 5 $TORCH_DEV 2>"$LOG/torch_eager.err" | tail -1)
    row "pytorch $BIG eager b$BIG_BATCH (img/s, peak GiB)" "${out:-FAILED ($(tail -1 "$LOG/torch_eager.err"))}"
fi
if [ -n "${OUT:-}" ]; then
    tar -C "$LOG" -czf "$OUT/planner-check.tar.gz" --exclude='*.pb' --exclude='*.onnx' . 2>/dev/null
    for f in planA planB planC; do [ -f "$LOG/$f.onnx" ] && gzip -c "$LOG/$f.onnx" >"$OUT/$f.onnx.gz"; done
fi
finish 0
