# tools/gpu-check-transformers.sh — `tools/gpu-check --transformers` (issue 20), sourced by
# tools/gpu-check after its build: GPT-2 small (T 1024, batch 16) and ViT-B/16 (batch 256),
# fp32, under a 16 GiB cap, beside PyTorch at the same cap. Per model:
#   1. the bundled structure-only graph (graphs/<model>.onnx; the emulator: a tiny stand-in),
#      one fixed batch (tokens with next-token labels; images with labels);
#   2. a measured profile (--profile-out, in core: the 80 GB card holds both) and the in-core
#      run, timed (the ideal), with the planner's in-core prediction beside it;
#   3. `plan --strategy auto` under the cap less what the in-core run held besides its arena,
#      with that profile; the plan run: loss falls, device memory <= the cap, slowdown vs in
#      core, predicted vs measured;
#   4. PyTorch (tools/gpu_torch_transformers.py): eager in core, every block checkpointed
#      under the cap, torch.compile with activation_memory_budget lowered until it fits — and
#      where no budget fits, torch.compile over the checkpointed blocks.
# outcore runs with --attention fused (FusedAttention: the scores recomputed in backward),
# profile, in-core run and plan alike; one more in-core run unfused, for reference.
# Rows as the other checks (row, pl_* of tools/gpu-check-planner.sh's kind), then the ratios
# the issue asks for: outcore's faster in-core run / PyTorch eager, outcore at the cap /
# PyTorch checkpointed and compiled at the cap. GPU_CHECK_TF_MODELS picks the models (default
# both); a step that would not fit the time left (GPU_CHECK_SECONDS) is a skipped row.
# GPU_CHECK_COMPILE_BUDGETS="0.1 0.05" gives the activation_memory_budget values to try (each is
# a compile; default per model — GPT-2 0.05, 0.02; ViT 0.05, 0.01 — from the H200 runs: GPT-2 b16
# ran out of memory at 0.5 to 0.1 and fitted at 0.05; ViT-B/16 b256 ran out of memory at 0.5 to
# 0.01 without expandable segments, which tools/gpu_torch_transformers.py now sets).
TSTEPS=6
if [ $EMU = 1 ]; then
    TF_SPECS="tiny_gpt_range:4:32x64:0.5 tiny_vit:4:3x32x32:0.5"
else
    TF_SPECS="gpt2_small:16:1024x50257:0.05,0.02 vit_b16:256:3x224x224:0.05,0.01"
fi
tf_left() { # SECONDS WHAT: true when SECONDS of the budget are left, else a skipped row
    [ "$(budget_left)" -gt "$1" ] && return 0
    row "$2" "skipped (GPU_CHECK_SECONDS spent)"; return 1
}
tf_ratio() { # NAME OURS THEIRS (samples/s; either may be empty)
    [ -n "$2" ] && [ -n "$3" ] && row "$1" "$($PYTHON -c "print(f'{$2/$3:.3f}x ($2 / $3 samples/s)')")"
    return 0
}
for spec in $TF_SPECS; do
    IFS=: read -r tm tb tsample tbudgets <<<"$spec"
    case " ${GPU_CHECK_TF_MODELS:-$tm} " in *" $tm "*) ;; *) continue ;; esac
    tf_left 60 "$tm b$tb" || continue
    M=$LOG/$tm.onnx
    if [ -f graphs/$tm.onnx ]; then cp graphs/$tm.onnx "$M"
    else $PYTHON tools/export_models.py --models $tm --out "$LOG" >/dev/null 2>&1; fi
    tf_data $tm $tb $tsample
    D="--input $LOG/${tm}_x.pb --labels $LOG/${tm}_y.pb"
    ATT="--attention fused"
    tbox 200 $RUN "$M" --backend cuda --batch $tb --steps 5 --lr 0.01 $D $ATT \
        --profile-out "$LOG/${tm}_profile.json" >"$LOG/${tm}_profile_run.log" 2>&1
    row "$tm b$tb: measured profile" "rc $?, $(grep '^copy bandwidth' "$LOG/${tm}_profile_run.log" || echo "FAILED ($(tail -1 "$LOG/${tm}_profile_run.log"))")"
    tbox 150 $RUN "$M" --backend cuda --batch $tb --steps $TSTEPS --lr 0.01 $D $ATT >"$LOG/${tm}_incore.log" 2>&1
    T_IPS=$(ips "$LOG/${tm}_incore.log")
    row "$tm b$tb: in core, fused (the ideal)" "${T_IPS:-FAILED ($(tail -1 "$LOG/${tm}_incore.log"))} samples/s, device $(dev_used "$LOG/${tm}_incore.log") B, loss falls: $(loss_falls "$LOG/${tm}_incore.log" && echo yes || echo NO)"
    U_IPS=
    if tf_left 40 "$tm b$tb: in core, unfused"; then
        tbox 150 $RUN "$M" --backend cuda --batch $tb --steps $TSTEPS --lr 0.01 $D >"$LOG/${tm}_incore_unfused.log" 2>&1
        U_IPS=$(ips "$LOG/${tm}_incore_unfused.log" || true)
        row "$tm b$tb: in core, unfused" "$U_IPS samples/s, device $(dev_used "$LOG/${tm}_incore_unfused.log") B"
    fi
    BEST=$T_IPS
    [ -n "$U_IPS" ] && $PYTHON -c "import sys; sys.exit(not $U_IPS > ${T_IPS:-0})" && BEST=$U_IPS
    $PLAN plan "$M" --batch $tb --profile "$LOG/${tm}_profile.json" --strategy incore --json $ATT \
        >"$LOG/${tm}_plan_incore.json" 2>/dev/null
    P=$(pjson "$LOG/${tm}_plan_incore.json" iteration_time_s)
    [ -n "$T_IPS" ] && [ -n "$P" ] && [ "$P" != None ] &&
        row "  in core: predicted vs measured step" "$($PYTHON -c "p,m=$P,$tb/$T_IPS;print(f'pred {p*1e3:.1f} ms, meas {m*1e3:.1f} ms, err {100*(p-m)/m:+.1f}%')")"
    CAP=17179869184 BUDGET=$((17179869184 - $(over_of "$LOG/${tm}_incore.log")))
    if [ $EMU = 1 ]; then # the emulator: half the saved activations below the in-core peak
        BUDGET=$($PYTHON -c 'import json,sys;d=json.load(open(sys.argv[1]));print(int(d["peak_bytes"]-sum(x["bytes"] for x in d["decisions"])//2))' "$LOG/${tm}_plan_incore.json" 2>/dev/null || echo 0)
        CAP=$((BUDGET * 16 / 15))
    fi
    CAP_IPS=
    if tf_left 90 "$tm b$tb under the cap"; then
        PLAN_EXTRA=$ATT pl_plan "$LOG/${tm}_profile.json" $BUDGET ${tm}_plan.onnx "$M" $tb; rc=$?
        pl_plan_row "$tm b$tb, cap $CAP B" "$LOG/${tm}_plan.json" $rc
        if [ $rc = 0 ]; then
            pl_run ${tm}_plan.onnx $tm "$D" $CAP
            pl_rows $tm "$LOG/${tm}_plan.json" "$T_IPS" $tb $CAP
            CAP_IPS=$(ips "$LOG/${tm}_run.log" || true)
        fi
    fi
    declare -A TV=()
    for mode in eager checkpoint $([ $EMU = 0 ] && echo compile compile-checkpoint); do
        if [ "${GPU_CHECK_NO_TORCH:-0}" = 1 ]; then
            row "  pytorch $tm $mode" "not run (GPU_CHECK_NO_TORCH=1)"; continue
        fi
        # compiled with every block checkpointed: only where no budget fitted
        [ $mode = compile-checkpoint ] && [ -n "${TV[compile]:-}" ] && continue
        tf_left $([ ${mode%-*} = compile ] && echo 120 || echo 40) "  pytorch $tm $mode" || continue
        out=$(tbox 200 $PYTHON tools/gpu_torch_transformers.py $tm $mode $tb --iters 3 \
              $([ $EMU = 1 ] && echo --device cpu) \
              --budgets "${GPU_CHECK_COMPILE_BUDGETS:-$tbudgets}" \
              2>"$LOG/${tm}_torch_$mode.err" | tail -1)
        row "  pytorch $mode$([ $mode != eager ] && echo ' (16 GiB cap)')" "${out:-FAILED ($(tail -1 "$LOG/${tm}_torch_$mode.err"))}"
        TV[$mode]=$(echo "$out" | awk '/samples\/s/ {print $1}')
    done
    tf_ratio "$tm: outcore in core (faster of fused / unfused) / PyTorch eager" "$BEST" "${TV[eager]:-}"
    tf_ratio "$tm: outcore at the cap / PyTorch checkpointed at the cap" "$CAP_IPS" "${TV[checkpoint]:-}"
    tf_ratio "$tm: outcore at the cap / PyTorch compiled with a budget at the cap" "$CAP_IPS" "${TV[compile]:-}"
    tf_ratio "$tm: outcore at the cap / PyTorch compiled, blocks checkpointed, at the cap" "$CAP_IPS" \
        "${TV[compile-checkpoint]:-}"
    unset TV
done
if [ -n "${OUT:-}" ]; then
    tar -C "$LOG" -czf "$OUT/transformers-check.tar.gz" --exclude='*.pb' --exclude='*.onnx' . 2>/dev/null
fi
finish 0
