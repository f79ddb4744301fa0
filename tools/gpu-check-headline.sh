# tools/gpu-check-headline.sh — `tools/gpu-check --headline`, sourced by tools/gpu-check after
# its build: the must-shows of the open issues 22 (fast step), 23 (mixed precision) and 20
# (transformers) that fit one 10-minute call, most telling first, each part skipped when
# GPU_CHECK_SECONDS is spent (said so in its row). GPU_CHECK_PARTS picks and orders the parts
# (default: all, in the order below), so a second call on the same warm machine can run the
# rest (GPU_CHECK_NO_BUILD=1 there keeps the first call's build). The full per-issue checks
# (--fast-step, --precision, --transformers) need more than one call each.
#   harness    test_cuda_backend; the op x backend harness, every case cuda vs cpu (fp32 TF32
#              off), with rows for the fused, channels-last, half and attention cases; the
#              torch 2.x fixtures' SGD step on cuda vs PyTorch float64 (tests/py/torch2_on_backend.py)
#   r50        ResNet-50 b640 fp32 in core: fused (the default), --no-fuse, --layout nhwc, nhwc
#              with --conv-algo measure (each convolution's algorithm timed on its first run)
#   bf16       ResNet-50 b640 in core --precision bf16, nchw, nhwc and nhwc measured
#   gpt2       GPT-2 small T 1024 b16 fp32 in core, --attention fused
#   torch_r50  PyTorch ResNet-50 b640: eager, torch.compile (fp32), torch.compile + bf16 autocast;
#              outcore's best fp32 / best PyTorch fp32, outcore's best bf16 / compile + AMP
#   vgg        VGG-16 b256 fp32 in core: fused, --no-fuse, nhwc, nhwc measured; PyTorch eager
#              and compile
#   graph      ResNet-50 fused with --cuda-graph on (timed); --deterministic 2 steps with graph
#              replay off and on, weights compared bit for bit
#   trace      ResNet-50 traced --no-fuse and fused: tools/step_time.py's per-op-class table
#   trace_best ResNet-50 nhwc fp32 and bf16, VGG-16 nhwc traced: where the fastest steps go
#              (not in the default list: a second call's)
#   caps       16 GiB: ResNet-50 fused fp32 and bf16 (a measured profile per layout, the
#              layout chosen by plan --layout auto), GPT-2 (measured profile, plan, run), and
#              PyTorch ResNet-50 under the cap: checkpointing, save_on_cpu, compile with a budget
#              (GPU_CHECK_CAP_MODES picks those; GPU_CHECK_R50_BUDGETS the budgets compile tries)
#   bn_sweep   ResNet-50 b640 nhwc fp32 and bf16 in core, the BN passes' per-element arithmetic
#              in double (the default) and in float (OC_BN_MATH=float), float with 4x the
#              parts (OC_NHWC_THREADS), float 8-wide on bf16 (OC_BN_V8);
#              GPU_CHECK_BN_VARIANTS="math:threads:v8 ..."; each timed and traced (not in the
#              default list)
#   conv_api   the op harness with --conv-api graph (its convolution cases vs cpu on this cuDNN);
#              ResNet-50 b640 nhwc fp32 and bf16, VGG-16 b256 nhwc fp32, in core, with the
#              convolutions through the legacy cuDNN calls, through the graph API (--conv-api
#              graph, PyTorch's path) and each shape's faster of the two's 4 first, timed
#              (--conv-api auto --conv-algo measure): images/s side by side, graph plans and
#              fallbacks counted
#              (not in the default list)
#   gpt2_trace GPT-2 traced with --attention unfused, fused, and fused with every score computed
#              (OC_ATTENTION_BLOCK=0: no causal blocks skipped) (tools/step_time.py --nodes)
#   torch_gpt2 PyTorch GPT-2 eager in core (tools/gpu_torch_transformers.py)
#   amp_curve  issue 23's bf16 loss curve against PyTorch AMP, ResNet-18 224 b64 100 steps
#              (tools/gpu_amp_curve.py, as --precision runs it; not in the default list)
#   att_sweep  GPT-2 (causal) and ViT-B/16 fused in core, traced under FusedAttention's knobs
#              (GPU_CHECK_ATT_VARIANTS; default: the default, through the GEMMs, and by rows,
#              OC_ATTENTION_KERNEL=rows; on an H200 4-6x slower: docs/gpu-check-2026-11-28-h200.txt;
#              the GEMMs' OC_ATTENTION_BLOCK, _SCRATCH_MIB, _DKV_ROWS): step and
#              FusedAttention / FusedAttentionGrad ms per variant (not in the default list)
# (the emulator: ResNet-18 b4 64x64, alexnet_small b4, the tiny GPT; PyTorch on the CPU)
HSTEPS=6
if [ $EMU = 1 ]; then
    R=resnet18 RB=4 RSZ=64 RCL=10 V=alexnet_small VB=4 VSZ=32 G=tiny_gpt_range GB=4 GS=32x64
    HDEV="--device cpu --image-size 64" HVDEV="--device cpu --image-size 32"
    export OC_ATTENTION_BLOCK=8 # the tiny GPT's 32 rows in 4 causal blocks, as GPT-2's 1024 in 8
else
    R=resnet50 RB=640 RSZ=224 RCL=1000 V=vgg16 VB=256 VSZ=224 G=gpt2_small GB=16 GS=1024x50257
    HDEV="" HVDEV=""
fi
h_model() { # NAME SIZE -> $LOG/NAME_h.onnx (structure only)
    [ -f "$LOG/$1_h.onnx" ] || model_file "$1" "$2" "$LOG/$1_h.onnx"
}
h_left() { # SECONDS NAME: true when at least SECONDS of the budget are left, else a skipped row
    [ "$(budget_left)" -gt "$1" ] && return 0
    row "$2" "skipped (GPU_CHECK_SECONDS spent)"; return 1
}
nchw_unless_layout() { # FLAGS...: "--layout nchw" unless they name a layout (outcore-run's own
    # default, --layout auto, picks one by the GPU's preset; these runs compare layouts)
    case " $* " in (*" --layout "*) ;; (*) echo --layout nchw ;; esac
}
h_run() { # TAG MODEL BATCH DATA FLAGS...: a timed in-core run -> $LOG/TAG.log and its row (HR_SECONDS: its box)
    local tag=$1 m=$2 b=$3 d=$4
    shift 4
    set -- "$@" $(nchw_unless_layout "$@")
    h_left 20 "$tag" || return 1
    tbox ${HR_SECONDS:-150} $RUN "$m" --backend cuda --batch "$b" --steps $HSTEPS --lr 0.01 $d "$@" >"$LOG/$tag.log" 2>&1
    row "$tag ($*)" "$(ips "$LOG/$tag.log" || true) img/s, device $(dev_used "$LOG/$tag.log") B, loss falls: $(loss_falls "$LOG/$tag.log" && echo yes || echo "NO ($(tail -1 "$LOG/$tag.log" | cut -c1-80))")"
}
faster() { # A B: true when A > B (both numbers; an empty one loses)
    [ -n "$1" ] && $PYTHON -c "import sys; sys.exit(not $1 > ${2:-0})"
}
h_torch() { # TAG ARGS...: one gpu_torch_bench.py mode -> row; its images/s in $TV (HT_SECONDS: its time box)
    local tag=$1 out
    shift
    TV=
    [ "${GPU_CHECK_NO_TORCH:-0}" = 1 ] && { row "  pytorch $tag" "not run (GPU_CHECK_NO_TORCH=1)"; return 1; }
    h_left 60 "  pytorch $tag" || return 1
    local err=$LOG/torch_$tag.err last
    out=$(tbox ${HT_SECONDS:-240} $PYTHON tools/gpu_torch_bench.py "$@" --iters 5 2>"$err" | tail -1)
    # not finished: the last configuration it tried (its progress lines), else its last line
    last=$(grep -E ' (config|segments) [0-9.]+: ' "$err" | tail -1)
    row "  pytorch $tag" "${out:-FAILED or cut off (${last:+last tried: $last; }$(tail -1 "$err"))}"
    TV=$(echo "$out" | awk '{print ($4 == "channels-last") ? $5 : $4}')
    [ "$TV" = OOM ] && TV=
    return 0
}
h_ratio() { # NAME OURS THEIRS
    [ -n "$2" ] && [ -n "$3" ] && row "$1" "$($PYTHON -c "print(f'{$2/$3:.3f}x ($2 / $3)')")"
}

part_harness() {
    if tbox 60 $BUILD/tests/test_cuda_backend >"$LOG/unit.log" 2>&1 && grep -q "GPU present" "$LOG/unit.log"; then
        row "test_cuda_backend" "ok: $(grep -o 'cuDNN [0-9.]*, cuBLAS [0-9]*' "$LOG/unit.log" | head -1)${TORCH_CUDNN:+ (the one PyTorch loads)}"
    else
        row "test_cuda_backend" "FAILED ($(tail -1 "$LOG/unit.log"))"
    fi
    NVIDIA_TF32_OVERRIDE=0 tbox 150 $BUILD/tests/test_op_harness --require cuda >"$LOG/op_harness.log" 2>&1
    local rc=$? H=$LOG/op_harness.log
    row "op harness cuda vs cpu (fp32 TF32 off)" "rc $rc: $(grep -c 'cuda matches cpu' "$H") cases match, $(grep -c 'cuda refuses it' "$H") refused as marked, $(grep '\[  FAILED  \] [A-Z]' "$H" | sort -u | wc -l) failed"
    local what pat
    for what in "BatchNormRelu:^ok - BatchNormRelu" "ConvRelu:^ok - ConvRelu" "channels-last:^ok - .*nhwc" \
                "fp16:^ok - .*fp16" "bf16:^ok - .*bf16" "attention:^ok - .*[Aa]ttention"; do
        pat=${what#*:}
        row "  $( printf '%-14s' "${what%%:*}") cases" "$(grep "$pat" "$H" | grep -c 'cuda matches cpu') match"
    done
    while IFS= read -r l; do row "    failed" "${l#*FAILED  \] }"; done < <(grep '\[  FAILED  \] [A-Z]' "$H" | sort -u | head -12)
    # whole models: the torch 2.x fixtures' one SGD step on cuda against PyTorch float64
    NVIDIA_TF32_OVERRIDE=0 tbox 90 $PYTHON tests/py/torch2_on_backend.py $BUILD cuda \
        >"$LOG/fixtures_cuda.log" 2>&1
    rc=$?
    row "torch 2.x fixtures on cuda vs PyTorch float64 (TF32 off)" "rc $rc: $(tail -1 "$LOG/fixtures_cuda.log")"
    while IFS= read -r l; do row "    failed" "$l"; done < <(grep '^FAIL' "$LOG/fixtures_cuda.log" | head -6)
    return 0
}
part_r50() {
    h_model $R $RSZ && batch_files h_ $RB $RSZ $RCL
    RD="--input $LOG/h_x.pb --labels $LOG/h_y.pb"
    h_run "$R b$RB fp32 fused" "$LOG/${R}_h.onnx" $RB "$RD"
    h_run "$R b$RB fp32 no-fuse" "$LOG/${R}_h.onnx" $RB "$RD" --no-fuse
    h_run "$R b$RB fp32 nhwc" "$LOG/${R}_h.onnx" $RB "$RD" --layout nhwc
    h_run "$R b$RB fp32 nhwc measured" "$LOG/${R}_h.onnx" $RB "$RD" --layout nhwc --conv-algo measure
    R_FUSED=$(ips "$LOG/$R b$RB fp32 fused.log") R_NHWC=$(ips "$LOG/$R b$RB fp32 nhwc.log")
    R_BEST=$R_FUSED R_L= R_A= # the best run's layout (the caps plan with it) and algorithm choice
    faster "$R_NHWC" "$R_FUSED" && R_BEST=$R_NHWC R_L="--layout nhwc"
    faster "$(ips "$LOG/$R b$RB fp32 nhwc measured.log")" "$R_BEST" &&
        R_BEST=$(ips "$LOG/$R b$RB fp32 nhwc measured.log") R_L="--layout nhwc" R_A="--conv-algo measure"
    h_ratio "  fused / no-fuse" "$R_FUSED" "$(ips "$LOG/$R b$RB fp32 no-fuse.log")"
    # outcore-run's own default: --layout auto weighs both layouts on the GPU's preset
    h_run "$R b$RB fp32 default layout" "$LOG/${R}_h.onnx" $RB "$RD" --layout auto &&
        row "  its choice" "$(grep -o -- '--layout auto: .*' "$LOG/$R b$RB fp32 default layout.log" || echo "no notice (no preset for this GPU's name?)")"
}
part_bf16() {
    h_model $R $RSZ && [ -f "$LOG/h_x.pb" ] || batch_files h_ $RB $RSZ $RCL
    RD="--input $LOG/h_x.pb --labels $LOG/h_y.pb"
    h_run "$R b$RB bf16" "$LOG/${R}_h.onnx" $RB "$RD" --precision bf16
    h_run "$R b$RB bf16 nhwc" "$LOG/${R}_h.onnx" $RB "$RD" --precision bf16 --layout nhwc
    h_run "$R b$RB bf16 nhwc measured" "$LOG/${R}_h.onnx" $RB "$RD" --precision bf16 --layout nhwc \
        --conv-algo measure
    B_BEST=$(ips "$LOG/$R b$RB bf16.log") B_L= B_A=
    faster "$(ips "$LOG/$R b$RB bf16 nhwc.log")" "$B_BEST" && B_BEST=$(ips "$LOG/$R b$RB bf16 nhwc.log") B_L="--layout nhwc"
    faster "$(ips "$LOG/$R b$RB bf16 nhwc measured.log")" "$B_BEST" &&
        B_BEST=$(ips "$LOG/$R b$RB bf16 nhwc measured.log") B_L="--layout nhwc" B_A="--conv-algo measure"
}
tf_files() { # NAME BATCH SAMPLE: $LOG/NAME.onnx (bundled, else exported) and one batch's files
    if [ -f graphs/$1.onnx ]; then cp graphs/$1.onnx "$LOG/$1.onnx"
    else $PYTHON tools/export_models.py --models $1 --out "$LOG" >/dev/null 2>&1; fi
    tf_data $1 $2 $3
}
gpt2_files() { # $GM, its batch's files ($GD)
    tf_files $G $GB $GS
    GM=$LOG/$G.onnx GD="--input $LOG/${G}_x.pb --labels $LOG/${G}_y.pb"
}
part_gpt2() {
    gpt2_files
    h_run "$G b$GB fp32" "$GM" $GB "$GD" --attention ${GPU_CHECK_ATTENTION:-fused}
    G_IPS=$(ips "$LOG/$G b$GB fp32.log")
}
part_torch_r50() {
    local tf tb
    h_torch "$R eager b$RB" $R eager $RB $HDEV; tf=$TV
    h_torch "$R compile b$RB" $R compile $RB $HDEV; faster "$TV" "$tf" && tf=$TV
    h_ratio "outcore $R fp32 (${R_L:-nchw}${R_A:+ $R_A}) / best PyTorch fp32" "${R_BEST:-}" "$tf"
    h_torch "$R compile bf16-autocast b$RB" $R compile $RB --amp bf16 $HDEV; tb=$TV
    h_ratio "outcore $R bf16 (${B_L:-nchw}${B_A:+ $B_A}) / PyTorch compile + AMP" "${B_BEST:-}" "$tb"
    return 0
}
part_vgg() {
    h_model $V $VSZ && batch_files hv_ $VB $VSZ $RCL
    local VD="--input $LOG/hv_x.pb --labels $LOG/hv_y.pb" vf vn best tf
    h_run "$V b$VB fp32 fused" "$LOG/${V}_h.onnx" $VB "$VD"
    h_run "$V b$VB fp32 no-fuse" "$LOG/${V}_h.onnx" $VB "$VD" --no-fuse
    h_run "$V b$VB fp32 nhwc" "$LOG/${V}_h.onnx" $VB "$VD" --layout nhwc
    h_run "$V b$VB fp32 nhwc measured" "$LOG/${V}_h.onnx" $VB "$VD" --layout nhwc --conv-algo measure
    vf=$(ips "$LOG/$V b$VB fp32 fused.log") vn=$(ips "$LOG/$V b$VB fp32 nhwc.log") best=$vf
    faster "$vn" "$vf" && best=$vn
    faster "$(ips "$LOG/$V b$VB fp32 nhwc measured.log")" "$best" &&
        best=$(ips "$LOG/$V b$VB fp32 nhwc measured.log")
    h_ratio "  fused / no-fuse" "$vf" "$(ips "$LOG/$V b$VB fp32 no-fuse.log")"
    h_torch "$V eager b$VB" $V eager $VB $HVDEV; tf=$TV
    h_torch "$V compile b$VB" $V compile $VB $HVDEV; faster "$TV" "$tf" && tf=$TV
    h_ratio "outcore $V fp32 (best layout) / best PyTorch fp32" "$best" "$tf"
}
part_graph() {
    h_model $R $RSZ && [ -f "$LOG/h_x.pb" ] || batch_files h_ $RB $RSZ $RCL
    RD="--input $LOG/h_x.pb --labels $LOG/h_y.pb"
    h_run "$R b$RB fp32 fused cuda-graph" "$LOG/${R}_h.onnx" $RB "$RD" ${R_L:-} --cuda-graph on
    grep -m1 '^graph:' "$LOG/$R b$RB fp32 fused cuda-graph.log" | cut -c1-100 | while IFS= read -r l; do echo "    $l"; done
    h_left 40 "graph replay vs streams, --deterministic" || return 0
    local gm
    for gm in off on; do
        tbox 150 $RUN "$LOG/${R}_h.onnx" --backend cuda --batch $RB --steps 2 --lr 0.01 $RD ${R_L:---layout nchw} --deterministic \
            --cuda-graph $gm --save "$LOG/det_$gm.onnx" >"$LOG/det_$gm.log" 2>&1
    done
    row "graph replay vs streams, --deterministic, 2 steps" "$($PYTHON - "$LOG/det_off.onnx" "$LOG/det_on.onnx" <<'PY' 2>&1 | tail -1
import sys, onnx
from onnx import numpy_helper
a, b = ({t.name: numpy_helper.to_array(t).tobytes() for t in onnx.load(p).graph.initializer} for p in sys.argv[1:3])
d = [k for k in a if b.get(k) != a[k]]
print(f"{len(a) - len(d)} of {len(a)} weights bitwise equal" + (f"; differ: {d[:3]}" if d else ""))
PY
)"
}
part_trace() {
    h_model $R $RSZ && [ -f "$LOG/h_x.pb" ] || batch_files h_ $RB $RSZ $RCL
    RD="--input $LOG/h_x.pb --labels $LOG/h_y.pb"
    local lvl
    for lvl in no-fuse fused; do
        h_left 30 "trace $lvl" || return 0
        tbox 120 $RUN "$LOG/${R}_h.onnx" --backend cuda --batch $RB --steps 3 --lr 0.01 $RD \
            $([ $lvl = no-fuse ] && echo --no-fuse) --layout nchw --trace-out "$LOG/trace_$lvl.json" >"$LOG/trace_$lvl.log" 2>&1
    done
    $PYTHON tools/step_time.py "--no-fuse=$LOG/trace_no-fuse.json" "fused=$LOG/trace_fused.json" \
        >"$LOG/step_time.md" 2>&1
    row "where the step goes ($R b$RB fp32, ms/step)" "step_time.md:"
    while IFS= read -r l; do ROWS+=("    $l"); echo "    $l"; done <"$LOG/step_time.md"
}
part_trace_best() { # the fastest layouts traced: ResNet-50 nhwc fp32 and bf16, VGG-16 nhwc
    h_model $R $RSZ && [ -f "$LOG/h_x.pb" ] || batch_files h_ $RB $RSZ $RCL
    h_model $V $VSZ && [ -f "$LOG/hv_x.pb" ] || batch_files hv_ $VB $VSZ $RCL
    local spec tag m b d args files=()
    for spec in "r50-nhwc:$R:$RB:h_:--layout nhwc" "r50-bf16-nhwc:$R:$RB:h_:--layout nhwc --precision bf16" \
                "vgg-nhwc:$V:$VB:hv_:--layout nhwc"; do
        IFS=: read -r tag m b d args <<<"$spec"
        h_left 30 "trace $tag" || return 0
        tbox 120 $RUN "$LOG/${m}_h.onnx" --backend cuda --batch $b --steps 3 --lr 0.01 \
            --input "$LOG/${d}x.pb" --labels "$LOG/${d}y.pb" $args --trace-out "$LOG/trace_$tag.json" \
            >"$LOG/trace_$tag.log" 2>&1
        files+=("$tag=$LOG/trace_$tag.json")
    done
    $PYTHON tools/step_time.py "${files[@]}" --nodes 15 >"$LOG/step_time_best.md" 2>&1
    row "where the step goes (fastest layouts, ms/step; nodes: the first)" "step_time_best.md:"
    while IFS= read -r l; do ROWS+=("    $l"); echo "    $l"; done <"$LOG/step_time_best.md"
}
part_bn_sweep() { # the channels-last BN passes: double (default) vs float arithmetic, part counts
    h_model $R $RSZ && [ -f "$LOG/h_x.pb" ] || batch_files h_ $RB $RSZ $RCL
    RD="--input $LOG/h_x.pb --labels $LOG/h_y.pb"
    local prec spec math thr v8 tag v files=()
    for prec in fp32 bf16; do
        for spec in ${GPU_CHECK_BN_VARIANTS:-double:0:0 float:0:0 float:1048576:0 float:0:1}; do
            IFS=: read -r math thr v8 <<<"$spec"
            [ "${v8:-0}" = 1 ] && [ $prec = fp32 ] && continue # 8-wide: half data only
            v=bn-$math$([ "$thr" != 0 ] && echo "-t$thr")$([ "${v8:-0}" = 1 ] && echo "-v8")
            tag="$R b$RB $prec nhwc $v"
            export OC_BN_MATH=$math OC_NHWC_THREADS=$thr OC_BN_V8=${v8:-0}
            h_run "$tag" "$LOG/${R}_h.onnx" $RB "$RD" --layout nhwc \
                $([ $prec = bf16 ] && echo --precision bf16) || break 2
            h_left 30 "trace $tag" || break 2
            tbox 120 $RUN "$LOG/${R}_h.onnx" --backend cuda --batch $RB --steps 3 --lr 0.01 $RD \
                --layout nhwc $([ $prec = bf16 ] && echo --precision bf16) \
                --trace-out "$LOG/trace_$prec-$v.json" >"$LOG/trace_$prec-$v.log" 2>&1
            files+=("$prec-$v=$LOG/trace_$prec-$v.json")
            # the fastest variant so far is each precision's best (torch_r50's ratios, when it
            # runs after this part and r50 / bf16 did not run)
            if [ $prec = fp32 ] && faster "$(ips "$LOG/$tag.log")" "${R_BEST:-}"; then
                R_BEST=$(ips "$LOG/$tag.log") R_L="--layout nhwc" R_A=$v
            elif [ $prec = bf16 ] && faster "$(ips "$LOG/$tag.log")" "${B_BEST:-}"; then
                B_BEST=$(ips "$LOG/$tag.log") B_L="--layout nhwc" B_A=$v
            fi
            [ $v = bn-double ] ||
                h_ratio "  $prec nhwc: $v / bn-double" "$(ips "$LOG/$tag.log")" \
                    "$(ips "$LOG/$R b$RB $prec nhwc bn-double.log")"
        done
    done
    unset OC_BN_MATH OC_NHWC_THREADS OC_BN_V8
    [ ${#files[@]} -gt 0 ] || return 0
    $PYTHON tools/step_time.py "${files[@]}" >"$LOG/step_time_bn.md" 2>&1
    row "where the step goes (BN variants, ms/step)" "step_time_bn.md:"
    while IFS= read -r l; do ROWS+=("    $l"); echo "    $l"; done <"$LOG/step_time_bn.md"
}
part_conv_api() { # convolutions through cuDNN's graph API (PyTorch's path) vs the legacy calls
    # first its correctness on this cuDNN: the op harness's convolution cases against cpu
    OC_CUDNN_CONV_API=graph NVIDIA_TF32_OVERRIDE=0 tbox 150 $BUILD/tests/test_op_harness \
        --require cuda >"$LOG/op_harness_graph.log" 2>&1
    local rc=$? H=$LOG/op_harness_graph.log
    row "op harness cuda vs cpu, --conv-api graph" "rc $rc: $(grep -c '^ok - Conv.*cuda matches cpu' "$H") convolution cases match, $(grep '\[  FAILED  \] [A-Z]' "$H" | sort -u | wc -l) failed, $(grep -c 'legacy calls instead' "$H") shapes fell back to legacy, $(grep -c 'refused the convolution with' "$H") epilogues refused"
    while IFS= read -r l; do row "    " "$l"; done < <(grep -m3 'legacy calls instead\|refused the convolution with' "$H" | cut -c1-200)
    h_model $R $RSZ && [ -f "$LOG/h_x.pb" ] || batch_files h_ $RB $RSZ $RCL
    RD="--input $LOG/h_x.pb --labels $LOG/h_y.pb"
    local prec api tag m b d fb
    for prec in fp32 bf16 vgg; do
        m="$LOG/${R}_h.onnx" b=$RB d=$RD
        if [ $prec = vgg ]; then
            h_model $V $VSZ && [ -f "$LOG/hv_x.pb" ] || batch_files hv_ $VB $VSZ $RCL
            m="$LOG/${V}_h.onnx" b=$VB d="--input $LOG/hv_x.pb --labels $LOG/hv_y.pb"
        fi
                for api in legacy graph auto; do
            tag="$([ $prec = vgg ] && echo "$V b$VB fp32" || echo "$R b$RB $prec") nhwc conv-api $api"
            # a longer box for the graph API: its first step finalizes every shape's plans
                        HR_SECONDS=240 h_run "$tag" "$m" $b "$d" --layout nhwc --conv-api $api --verbose-algos \
                $([ $api = auto ] && echo --conv-algo measure) \
                $([ $prec = bf16 ] && echo --precision bf16) || return 0
            if [ $api = graph ]; then
                fb=$(grep -c 'legacy calls instead' "$LOG/$tag.log")
                row "  graph API plans / fallbacks to legacy" "$(grep -c ' graph plan 0, ' "$LOG/$tag.log") / $fb$([ "$fb" = 0 ] || echo " ($(grep -m1 'legacy calls instead' "$LOG/$tag.log" | cut -c1-160))")"
                row "  graph plans' build time (first step)" "$(grep -o 'built in [0-9.]* ms' "$LOG/$tag.log" | awk '{t += $3; if ($3 > m) m = $3} END {printf "%.0f ms in all, the longest %.0f ms", t, m}')"
                                h_ratio "  $prec nhwc: graph / legacy" "$(ips "$LOG/$tag.log")" \
                    "$(ips "$LOG/${tag% graph} legacy.log")"
            elif [ $api = auto ]; then
                row "  shapes keeping a graph plan / a legacy algorithm" "$(grep -c -- '-> graph plan' "$LOG/$tag.log") / $(grep -c -- '-> algo' "$LOG/$tag.log")"
                h_ratio "  $prec nhwc: auto (measured) / legacy" "$(ips "$LOG/$tag.log")" \
                    "$(ips "$LOG/${tag% auto} legacy.log")"
            fi
            # the fastest run so far is the precision's best (torch_r50's ratios after this part)
            if [ $prec = fp32 ] && faster "$(ips "$LOG/$tag.log")" "${R_BEST:-}"; then
                R_BEST=$(ips "$LOG/$tag.log") R_L="--layout nhwc" R_A="--conv-api $api"
            elif [ $prec = bf16 ] && faster "$(ips "$LOG/$tag.log")" "${B_BEST:-}"; then
                B_BEST=$(ips "$LOG/$tag.log") B_L="--layout nhwc" B_A="--conv-api $api"
            fi
        done
    done
}
part_gpt2_trace() { # GPT-2 traced, attention unfused, fused, fused without causal blocks
    [ -n "${GM:-}" ] || part_gpt2
    local att
    for att in unfused fused fused-whole; do # fused-whole: OC_ATTENTION_BLOCK=0, every score computed
        h_left 40 "trace $G $att" || return 0
        ( [ $att = fused-whole ] && export OC_ATTENTION_BLOCK=0
          tbox 150 $RUN "$GM" --backend cuda --batch $GB --steps 3 --lr 0.01 $GD \
              --attention ${att%-whole} --trace-out "$LOG/trace_${G}_$att.json" \
              >"$LOG/trace_${G}_$att.log" 2>&1 )
    done
    $PYTHON tools/step_time.py "unfused=$LOG/trace_${G}_unfused.json" "fused=$LOG/trace_${G}_fused.json" \
        "fused-whole=$LOG/trace_${G}_fused-whole.json" --nodes 30 >"$LOG/step_time_$G.md" 2>&1
    row "where the step goes ($G b$GB fp32, ms/step; nodes: unfused)" "step_time_$G.md:"
    while IFS= read -r l; do ROWS+=("    $l"); echo "    $l"; done <"$LOG/step_time_$G.md"
}
part_torch_gpt2() { # PyTorch GPT-2 eager in core, for the in-core ratio
    [ "${GPU_CHECK_NO_TORCH:-0}" = 1 ] && { row "  pytorch $G eager" "not run (GPU_CHECK_NO_TORCH=1)"; return 0; }
    h_left 60 "  pytorch $G eager b$GB" || return 0
    local out
    out=$(tbox 150 $PYTHON tools/gpu_torch_transformers.py $G eager $GB --iters 3 \
          $([ $EMU = 1 ] && echo --device cpu) 2>"$LOG/torch_${G}_eager.err" | tail -1)
    row "  pytorch $G eager b$GB" "${out:-FAILED ($(tail -1 "$LOG/torch_${G}_eager.err"))}"
}
# att_sweep: MODEL:VARIANT:ENV,ENV.. (ENV without spaces); gpt2 runs the GPT-2 part's model
ATT_VARIANTS_DEFAULT="gpt2:default: gpt2:rows:OC_ATTENTION_KERNEL=rows vit:default:
  vit:rows:OC_ATTENTION_KERNEL=rows"
part_att_sweep() {
    [ -n "${GM:-}" ] || gpt2_files
    local VB=256 VS=3x224x224 VN=vit_b16 spec m tag envs f mf mb md
    [ $EMU = 1 ] && VB=4 VS=3x32x32 VN=tiny_vit
    for spec in ${GPU_CHECK_ATT_VARIANTS:-$ATT_VARIANTS_DEFAULT}; do
        IFS=: read -r m tag envs <<<"$spec"
        h_left 25 "att_sweep $m $tag" || return 0
        mf=$GM mb=$GB md=$GD
        if [ $m = vit ]; then
            [ -f "$LOG/$VN.onnx" ] || tf_files $VN $VB $VS
            mf=$LOG/$VN.onnx mb=$VB md="--input $LOG/${VN}_x.pb --labels $LOG/${VN}_y.pb"
        fi
        f=$LOG/att_${m}_$tag
        ( for e in ${envs//,/ }; do export "$e"; done
          tbox 120 $RUN "$mf" --backend cuda --batch $mb --steps 3 --lr 0.01 $md \
              --attention fused --trace-out "$f.json" >"$f.log" 2>&1 )
        $PYTHON tools/step_time.py "$tag=$f.json" --by-op >"$f.md" 2>&1
        row "att_sweep $m $tag (${envs:-defaults})" "$($PYTHON - "$f.md" <<'PY'
import re, sys
t = open(sys.argv[1]).read()
ms = lambda k: (re.search(r"^\| (?:\*\*)?" + k + r"(?:\*\*)? \| (?:\*\*)?([0-9.]+)", t, re.M) or [0, "?"])[1]
print(f"step {ms('step')} ms, FusedAttention {ms('FusedAttention')} ms, FusedAttentionGrad {ms('FusedAttentionGrad')} ms")
PY
) $(loss_falls "$f.log" && echo "loss falls" || echo "FAILED: $(tail -1 "$f.log" | cut -c1-80)")"
    done
}
h_cap() { # TAG MODEL BATCH DATA IN-CORE-LOG IN-CORE-IPS FLAGS...: profile, plan, run under 16 GiB
    # With CAP_NHWC_LOG (the in-core log of the same flags with --layout nhwc) set, a profile is
    # measured in each layout and `plan --layout auto` chooses between them from those measured
    # times; the slowdown is then against the in-core run of the layout it chose.
    local tag=$1 m=$2 b=$3 d=$4 ilog=$5 iips=$6 rc two= over
    shift 6
    h_left 60 "$tag under 16 GiB" || return 1
    tbox 150 $RUN "$m" --backend cuda --batch $b --steps 4 --lr 0.01 $d "$@" $(nchw_unless_layout "$@") \
        --profile-out "$LOG/${tag}_profile.json" >"$LOG/${tag}_profile.log" 2>&1
    over=$(over_of "$ilog")
    if [ -n "${CAP_NHWC_LOG:-}" ]; then
        tbox 150 $RUN "$m" --backend cuda --batch $b --steps 4 --lr 0.01 $d "$@" --layout nhwc \
            --profile-out "$LOG/${tag}_profile_nhwc.json" >"$LOG/${tag}_profile_nhwc.log" 2>&1
        two="--profile $LOG/${tag}_profile_nhwc.json"
        [ "$(over_of "$CAP_NHWC_LOG")" -gt "$over" ] && over=$(over_of "$CAP_NHWC_LOG")
    fi
    CAP=17179869184 BUDGET=$((17179869184 - over))
    if [ $EMU = 1 ]; then # the emulator: half the saved activations below the in-core peak
        $PLAN plan "$m" --batch $b "$@" --profile "$LOG/${tag}_profile.json" --strategy incore --json \
            >"$LOG/${tag}_incore.json" 2>/dev/null
        BUDGET=$($PYTHON -c 'import json,sys;d=json.load(open(sys.argv[1]));print(int(d["peak_bytes"]-sum(x["bytes"] for x in d["decisions"])//2))' "$LOG/${tag}_incore.json" 2>/dev/null || echo 0)
        CAP=$((BUDGET * 16 / 15))
    fi
    PLAN_EXTRA="$* $two" pl_plan "$LOG/${tag}_profile.json" $BUDGET ${tag}_plan.onnx "$m" $b; rc=$?
    pl_plan_row "$tag, cap $CAP B" "$LOG/${tag}_plan.json" $rc
    [ $rc = 0 ] || return 1
    if [ -n "$two" ]; then
        row "  $tag: layout" "$(grep -o -- '--layout auto: .*' "$LOG/${tag}_plan.err" || echo "no choice printed")"
        grep -q -- '--layout auto: nhwc' "$LOG/${tag}_plan.err" && ilog=$CAP_NHWC_LOG iips=$(ips "$CAP_NHWC_LOG")
    fi
    EMU_DEVICE_BYTES=$CAP tbox 150 $RUN "$LOG/${tag}_plan.onnx" --backend cuda --steps $PSTEPS --lr 0.01 $d \
        >"$LOG/${tag}_run.log" 2>&1
    echo "(untraced)" >"$LOG/${tag}_trace.log"
    pl_rows $tag "$LOG/${tag}_plan.json" "$iips" $b $CAP
}
part_amp_curve() { # issue 23's 100-step bf16 loss curve (as --precision's; not in the default list)
    h_left 60 "bf16 loss curve" || return 0
    amp_curve_row
}
h_incore_pair() { # NCHW-TAG NHWC-TAG FLAGS...: ResNet-50's in-core runs in both layouts (this
    local t1=$1 t2=$2 # call's r50 / bf16 parts', else made now); CAP_NHWC_LOG: the nhwc one's log
    shift 2
    [ -f "$LOG/$t1.log" ] || h_run "$t1" "$LOG/${R}_h.onnx" $RB "$RD" "$@"
    [ -f "$LOG/$t2.log" ] || h_run "$t2" "$LOG/${R}_h.onnx" $RB "$RD" "$@" --layout nhwc
    CAP_NHWC_LOG="$LOG/$t2.log"
    [ -f "$CAP_NHWC_LOG" ] || CAP_NHWC_LOG=
}
part_caps() {
    h_model $R $RSZ && [ -f "$LOG/h_x.pb" ] || batch_files h_ $RB $RSZ $RCL
    RD="--input $LOG/h_x.pb --labels $LOG/h_y.pb"
    # ResNet-50 fp32 and bf16: the layout chosen by `plan --layout auto` from a measured profile
    # of each (h_cap), the slowdown against the in-core run of the layout chosen
    h_incore_pair "$R b$RB fp32 fused" "$R b$RB fp32 nhwc"
    h_cap r50_fp32 "$LOG/${R}_h.onnx" $RB "$RD" "$LOG/$R b$RB fp32 fused.log" \
        "$(ips "$LOG/$R b$RB fp32 fused.log")"
    local cap_ips=$(ips "$LOG/r50_fp32_run.log")
    # issue 22's anchors at the cap: checkpointing, save_on_cpu, compile with the largest
    # activation_memory_budget that fits (each at b640, else the largest fallback batch that fits)
    local best= mode
    # compile-budget: each budget tried compiles anew (~50 s on an H200); its in-core peak is
    # 51.2 GiB (2026-11-28), so budgets from 0.2 down (GPU_CHECK_R50_BUDGETS), and a longer box
    for mode in ${GPU_CHECK_CAP_MODES:-checkpoint save_on_cpu compile-budget}; do
        HT_SECONDS=$([ $mode = compile-budget ] && echo 330 || echo 240) \
        h_torch "$R $mode b$RB (16 GiB cap)" $R $mode $RB --cap-gib 16 --fallback-batches 512,384,256 $HDEV \
            $([ $mode = compile-budget ] && echo --budgets "${GPU_CHECK_R50_BUDGETS:-0.2,0.1,0.05,0}")
        h_ratio "outcore $R fp32 @16 GiB / PyTorch $mode @16 GiB" "$cap_ips" "$TV"
        faster "$TV" "$best" && best=$TV
    done
    h_ratio "outcore $R fp32 @16 GiB / the best PyTorch @16 GiB (issue 22: >= 1.5)" "$cap_ips" "$best"
    h_incore_pair "$R b$RB bf16" "$R b$RB bf16 nhwc" --precision bf16
    h_cap r50_bf16 "$LOG/${R}_h.onnx" $RB "$RD" "$LOG/$R b$RB bf16.log" "$(ips "$LOG/$R b$RB bf16.log")" \
        --precision bf16
    CAP_NHWC_LOG=
    [ -n "${GM:-}" ] || part_gpt2
    h_cap gpt2 "$GM" $GB "$GD" "$LOG/$G b$GB fp32.log" "${G_IPS:-}" --attention ${GPU_CHECK_ATTENTION:-fused}
}

for part in ${GPU_CHECK_PARTS:-harness r50 bf16 gpt2 torch_r50 vgg graph trace caps}; do
    echo ">>> part $part ($(budget_left) s left)"
    part_$part
done
finish 0
