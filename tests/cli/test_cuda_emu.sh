#!/usr/bin/env bash
# test_cuda_emu.sh — the cuda backend (runtime/cuda/) run on the CPU through the
# CUDA emulator (tests/emu/, `make CUDA=emu`; `make test` builds it into
# ${BUILD}-emu). Checks:
#   1. the ONNX node conformance suite on the emulated cuda backend passes
#      (exit 77 = "no GPU" is a failure here: the emulator always has one),
#      and so does the op x backend harness (test_op_harness --require cuda), also under
#      the kernel knobs (BN parts, OC_BN_MATH=float, attention by rows / blocks), and
#      test_cuda_backend's emulator cases (with OC_BN_V8=1 too);
#   2. `outcore-run --backend cuda` vs `--backend cpu` on ResNet-18 (64x64,
#      batch 2, exported with weights) and alexnet_small (32x32, Dropout): loss,
#      every gradient and the weights after 3 steps within 1e-3 relative
#      (tools/gpu_grad_compare.py). Not ResNet-18 at 32x32: its layer4
#      BatchNormalization sees 2 values per channel, whose gradient is rounding
#      noise (cpu and cuda differ by 4e-2 there, and would on a GPU too);
#   2b. the torch 2.x fixtures (tests/data/torch2) on --backend cuda: one SGD step each against
#      PyTorch float64 (tests/py/torch2_on_backend.py), as the cpu backend is checked;
#   3. a swap-all plan of the same model under a budget below its in-core peak,
#      run on --backend cuda, gives bitwise the in-core cuda run's losses and
#      trained weights (the emulator is deterministic, so any difference is a
#      stream-ordering or arena bug of the executor / backend): with
#      --deterministic (BN statistics recomputed in backward), and by default
#      (the backward takes the forward's BN statistics, also through a swap);
#   3a. so does a recompute-only (chen) plan, by default too: the BN backward of a
#      recomputed input takes the forward's statistics (the stash maps a recompute
#      clone's output to its original);
#   3c. --tf32-conv off / --tf32-matmul on (PyTorch's TF32 switches) reach cuDNN / cuBLAS;
#   3g. --conv-algo measure: every convolution shape with more than one candidate is timed
#      on its first run and runs the fastest (on the emulator every algorithm computes the
#      same bits, so the losses equal the heuristic run's); not with --deterministic; each
#      AlexNet ConvRelu shape times cuDNN's fused call against the convolution + bias/Relu pass;
#   1c-graph. the op harness with the convolutions through the graph API;
#   3j. --conv-api graph: every convolution through cuDNN's graph API (the emulator's fake
#      engines), none falling back to the legacy calls: weights bitwise == the legacy run's
#      (fp32 NCHW; bf16 channels-last with --deterministic and --cuda-graph on); TF32 off
#      takes the no-tensor-core engine only; --conv-algo measure times its plans; AlexNet's
#      ConvRelu with its bias and Relu in the graph (fp32), and on bf16 (refused by the
#      emulator) the convolution alone then one pass: bitwise the legacy run's too;
#      --conv-api auto times each shape's graph plan against its legacy algorithm (none with
#      --deterministic): bitwise the legacy run's;
#   3e. loss scaling (GradScaler) at 3e38: the float32 gradients overflow, the first
#      steps are skipped while the scale halves, then steps update: cuda's scales and
#      skipped steps equal cpu's, and both skip and update;
#   3f. --precision bf16 on cuda (half nodes widened to float32 in their workspace): a
#      swap-all plan gives bitwise the in-core cuda run's losses and weights, the
#      in-core step-0 loss is within 1e-2 of cpu's (one bfloat16 step of a logit near 8
#      moves this loss by ~1e-3: the two backends' sums round differently);
#   3g. --precision fp16 with GradScaler on cuda: the tiny ResNet's 20 steps skip the
#      same steps at the same scales as torch.amp.GradScaler (tests/data/amp);
#   3i. --layout nhwc (fp32) on cuda: a swap-all plan bitwise == in-core, losses within 1e-5
#      of the model's own layout;
#   3h''. --conv-algo measure --profile-out: the timed candidates as alternatives, a plan
#      with --workspace smallest run in its regions, losses == in core's;
#   3h. bf16 with a measured profile: --profile-out records the widening workspaces, the
#      plan holds them, and the plan runs in a device of its arena + 1 MiB with nothing
#      outside the plan (a SwapOut of a half tensor once asked for a workspace); 3h'. so does
#      fp32 with the convolutions through the graph API (profile and run);
#   3b. the default run (BN statistics from the forward) and the --deterministic
#      one: step-0 gradients within 1e-5 (norm-wise, all at once) and not
#      bit-identical (the forward's float statistics vs the emulator's double
#      recomputation: the stash is used);
#   1e. column sums 4 columns a thread == 1 a thread, bitwise (OC_CUDA_SCALAR_SUMS);
#   4b. FusedAttention through the GEMMs (the default), planned with a smaller
#      workspace than its default scratch, runs in smaller chunks inside it (nothing outside
#      the plan), losses bitwise == in-core; 4c. by rows (OC_ATTENTION_KERNEL=rows: heads up
#      to 64), a measured plan's workspaces are the rows' and the plan runs inside them. 1c,
#      1d and the graph replay run both.
set -u
BUILD=${BUILD:-build}
PY=${PY:-/usr/bin/python3}
EMU="${BUILD}-emu"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail=0
# Under the sanitizers (make test SANITIZE=1 / thread) a few repeats of the long ResNet-18
# flows are left out (CI's 45 minutes): the chen plan's --deterministic run and the
# --deterministic graph replay of the swap plan; the plain build runs them all.
case "$BUILD" in *san*) SAN=1 ;; *) SAN=0 ;; esac
ok() { echo "ok - $1 [${SECONDS} s]"; } # seconds since the start: where the time goes
bad() { echo "not ok - $1 [${SECONDS} s]"; fail=1; }

if [ ! -x "$EMU/outcore-run" ] || [ ! -x "$EMU/gpu-tests/test_cuda_conformance" ]; then
    echo "not ok - $EMU/outcore-run or $EMU/gpu-tests/test_cuda_conformance missing" \
         "(make test builds them: make CUDA=emu BUILD=$EMU all gpu-tests)"
    exit 1
fi

# 1. conformance on the emulated cuda backend
"$EMU/gpu-tests/test_cuda_conformance" >"$T/conf.out" 2>&1
rc=$?
summary=$(grep '^conformance:' "$T/conf.out")
if [ $rc -eq 0 ]; then
    ok "cuda conformance (emulated): $summary"
else
    bad "cuda conformance (emulated) exit $rc: $summary"
    grep -E '^(FAIL|ERROR)|\[  (ERROR|FAILED) |SKIP cuda' "$T/conf.out" | head -20
fi

# 1b. the emulator's own unit tests (tests/unit/test_emu_*.c, built for CUDA=emu)
for t in "$EMU"/tests/test_emu_*; do
    [ -x "$t" ] || continue
    if "$t" >"$T/emu_unit.out" 2>&1; then
        ok "$(basename "$t") (emulated build)"
    else
        bad "$(basename "$t") (emulated build):"
        tail -20 "$T/emu_unit.out"
    fi
done

# 1b'. test_cuda_backend on the emulator: its OC_CUDA_EMU cases (the BN kernels' vector forms
#     against the one-element forms bit for bit, masks, ReluGrad's addend), also with the
#     8-element half vectors (OC_BN_V8=1) and with them in float arithmetic (OC_BN_MATH=float)
for envs in "" "OC_BN_V8=1" "OC_BN_V8=1 OC_BN_MATH=float"; do
    if [ ! -x "$EMU/tests/test_cuda_backend" ]; then
        bad "$EMU/tests/test_cuda_backend missing (make test builds it)"; break
    elif env $envs "$EMU/tests/test_cuda_backend" >"$T/cuda_backend.out" 2>&1 &&
         grep -q "^ok - emulated cuda: BN kernels" "$T/cuda_backend.out"; then
        ok "test_cuda_backend (emulated build${envs:+, $envs}): $(grep -o 'BN kernels.*(\([0-9]*\) cases)' "$T/cuda_backend.out" | grep -o '[0-9]* cases')"
    else
        bad "test_cuda_backend (emulated build${envs:+, $envs}):"
        grep -E '^(ERROR|not ok)|FAILED' "$T/cuda_backend.out" | head -10
    fi
done

# 1c. the op x backend harness (tests/unit/op_cases.h) with the emulated cuda backend
#     required: every case's whole training step on cuda against cpu
if [ ! -x "$EMU/tests/test_op_harness" ]; then
    bad "$EMU/tests/test_op_harness missing (make test builds it)"
elif "$EMU/tests/test_op_harness" --require cuda >"$T/harness.out" 2>&1; then
    ok "op harness, cuda (emulated) vs cpu: $(grep -c 'cuda matches cpu' "$T/harness.out") cases compared, $(grep -c 'cuda refuses it' "$T/harness.out") refused as marked"
else
    bad "op harness, cuda (emulated) vs cpu:"
    grep -E '^(ERROR|not ok)|FAILED' "$T/harness.out" | head -20
fi

# 1c'. again with BatchNormRelu's statistics in parts of 8 elements (OC_BN_PART_ELEMS): every
#     case's channels then reduce over several parts, summed in order
if OC_BN_PART_ELEMS=8 "$EMU/tests/test_op_harness" --require cuda >"$T/harness8.out" 2>&1; then
    ok "op harness, cuda (emulated) vs cpu, BN statistics in 8-element parts: $(grep -c 'BatchNormRelu (.*cuda matches cpu' "$T/harness8.out") BatchNormRelu cases match"
else
    bad "op harness with OC_BN_PART_ELEMS=8:"
    grep -E '^(ERROR|not ok)|FAILED' "$T/harness8.out" | head -20
fi

# 1c-bnf. again with the channels-last BatchNorm passes' per-element arithmetic in float
#     (OC_BN_MATH=float, cuda_batch_norm.cu's FM 1 kernels; cpu keeps double): the nhwc BN cases, bf16
#     and fp16 among them, within the harness's tolerance of cpu
if OC_BN_MATH=float OC_BN_PART_ELEMS=8 "$EMU/tests/test_op_harness" --require cuda >"$T/harness_bnf.out" 2>&1; then
    ok "op harness, cuda (emulated) vs cpu, BN arithmetic in float: $(grep -c 'BatchNorm.*nhwc.*cuda matches cpu' "$T/harness_bnf.out") channels-last BatchNorm cases match"
else
    bad "op harness with OC_BN_MATH=float:"
    grep -E '^(ERROR|not ok)|FAILED' "$T/harness_bnf.out" | head -20
fi

# 1c-graph. again with the convolutions through cuDNN's graph API (OC_CUDNN_CONV_API=graph:
#     the emulator's backend API; Conv / ConvRelu with their bias and Relu in the graph)
if OC_CUDNN_CONV_API=graph "$EMU/tests/test_op_harness" --require cuda >"$T/harness_graph.out" 2>&1; then
    ok "op harness, cuda (emulated) vs cpu, convolutions through the graph API: $(grep -c '^ok - Conv.*cuda matches cpu' "$T/harness_graph.out") convolution cases match"
else
    bad "op harness with OC_CUDNN_CONV_API=graph:"
    grep -E '^(ERROR|not ok)|FAILED' "$T/harness_graph.out" | head -20
fi

# 1c-rows. again with FusedAttention by rows (OC_ATTENTION_KERNEL=rows, cuda_attention.cu: heads
#     up to 64; by default through the batched GEMMs over chunks of scores)
if OC_ATTENTION_KERNEL=rows "$EMU/tests/test_op_harness" --require cuda >"$T/harness_att_rows.out" 2>&1; then
    ok "op harness, cuda (emulated) vs cpu, attention by rows: $(grep -c 'FusedAttention (.*cuda matches cpu' "$T/harness_att_rows.out") FusedAttention cases match"
else
    bad "op harness with OC_ATTENTION_KERNEL=rows:"
    grep -E '^(ERROR|not ok)|FAILED' "$T/harness_att_rows.out" | head -20
fi

# 1c''. the GEMMs with causal FusedAttention in blocks of 4 rows (OC_ATTENTION_BLOCK): the 9-row
#     cases run 3 blocks (the last of 1 row), the 130-row one 33
if OC_ATTENTION_KERNEL=gemm OC_ATTENTION_BLOCK=4 "$EMU/tests/test_op_harness" --require cuda >"$T/harness_blk.out" 2>&1; then
    ok "op harness, cuda (emulated) vs cpu, causal attention in blocks of 4 rows: $(grep -c 'FusedAttention (causal.*cuda matches cpu' "$T/harness_blk.out") causal cases match"
else
    bad "op harness with OC_ATTENTION_BLOCK=4:"
    grep -E '^(ERROR|not ok)|FAILED' "$T/harness_blk.out" | head -20
fi

# 1c'''. the same blocks with dV and dK by row blocks, each block adding to the columns up to
#     its end (OC_ATTENTION_DKV_ROWS, the GPU's attention sweep compares it with column blocks)
if OC_ATTENTION_KERNEL=gemm OC_ATTENTION_BLOCK=4 OC_ATTENTION_DKV_ROWS=1 \
   "$EMU/tests/test_op_harness" --require cuda \
    >"$T/harness_rows.out" 2>&1; then
    ok "op harness, cuda (emulated) vs cpu, causal dV and dK by row blocks of 4: $(grep -c 'FusedAttention (causal.*cuda matches cpu' "$T/harness_rows.out") causal cases match"
else
    bad "op harness with OC_ATTENTION_DKV_ROWS=1:"
    grep -E '^(ERROR|not ok)|FAILED' "$T/harness_rows.out" | head -20
fi

# 1c''''. again with cuDNN's fused convolution-bias-activation refused (EMU_CUDNN_REFUSE): the
#     ConvRelu nodes fall back to convolution, bias and Relu apart, said once per shape
if EMU_CUDNN_REFUSE=cudnnConvolutionBiasActivationForward "$EMU/tests/test_op_harness" \
    --require cuda >"$T/harness_nofused.out" 2>&1 &&
   [ "$(grep -c 'refused the fused convolution-bias-activation' "$T/harness_nofused.out")" -ge 3 ]; then
    ok "op harness, cuda (emulated) vs cpu, cuDNN's fused conv-bias-relu refused: $(grep -c 'ConvRelu (.*cuda matches cpu' "$T/harness_nofused.out") ConvRelu cases match unfused"
else
    bad "op harness with the fused conv-bias-relu refused:"
    grep -E '^(ERROR|not ok)|FAILED|refused' "$T/harness_nofused.out" | head -20
fi

# 1d. transformers on emulated cuda vs cpu: the tiny GPT (causal mask, tied head) and ViT,
#     attention unfused, fused (by rows) and fused through the GEMMs (in chunks of 3
#     batch-heads: several chunks, the last one short; the GPT's causal blocks of 8 rows: 4
#     of its 32), 2 steps: losses within 1e-5 relative
for m in tiny_gpt tiny_vit; do
    for att in unfused fused fused-gemm; do
        args=("tests/data/torch2/${m}_legacy.onnx" --batch 2 --steps 2 --seed 3 --lr 0.01
              --attention "${att%-gemm}")
        kern=rows && [ "$att" = fused-gemm ] && kern=gemm
        if "$BUILD/outcore-run" "${args[@]}" --backend cpu >"$T/tf_cpu.out" 2>"$T/tf.err" &&
           OC_ATTENTION_KERNEL=$kern OC_ATTENTION_CHUNK=3 OC_ATTENTION_BLOCK=8 "$EMU/outcore-run" \
               "${args[@]}" --backend cuda >"$T/tf_cuda.out" 2>>"$T/tf.err" &&
           "$PY" - "$T/tf_cpu.out" "$T/tf_cuda.out" <<'PYEOF'
import re, sys
a, b = ([float(v) for v in re.findall(r"^step \d+ loss (\S+)", open(f).read(), re.M)]
        for f in sys.argv[1:3])
sys.exit(not (len(a) == 2 and len(b) == 2 and all(abs(x - y) <= 1e-5 * abs(x) for x, y in zip(a, b))))
PYEOF
        then
            ok "$m, attention $att: cuda (emulated) losses == cpu within 1e-5 ($(grep '^step 1' "$T/tf_cuda.out"))"
        else
            bad "$m, attention $att on cuda: $(tail -2 "$T/tf.err") $(grep '^step' "$T/tf_cpu.out" "$T/tf_cuda.out")"
        fi
    done
done

# 2. gradients cuda vs cpu (one export with weights, reused below)
if "$PY" tools/export_models.py --models resnet18 --opset 13 --image-size 64 --batch 2 \
     --out "$T" >"$T/export.log" 2>&1; then
    mv "$T/resnet18_op13.onnx" "$T/resnet18_64_op13.onnx"
else
    bad "export resnet18: $(tail -3 "$T/export.log")"
    exit 1
fi
MODEL="$T/resnet18_64_op13.onnx"
if OC_MODELS_DIR="$T" "$PY" tools/gpu_grad_compare.py "$EMU" resnet18:64 alexnet_small:32 >"$T/grad.out" 2>&1; then
    ok "cuda vs cpu within 1e-3: $(grep -c '^ok' "$T/grad.out") classes ($(grep -o 'worst rel err [^ ]*' "$T/grad.out" | sort -k4 -g | tail -1))"
else
    bad "cuda vs cpu gradients:"
    cat "$T/grad.out"
fi

# 2b. whole models from PyTorch: the torch 2.x fixtures' one SGD step on --backend cuda against
# PyTorch's float64 step, as tests/py/test_torch2_exports.py checks cpu's (every tensor within
# 1e-4 or a float32 tie; tiny_rnn's unrolled LSTMs, GRU and RNN among them)
if "$PY" tests/py/torch2_on_backend.py "$EMU" cuda >"$T/fixtures.out" 2>&1; then
    ok "torch 2.x fixtures on cuda: $(tail -1 "$T/fixtures.out")"
else
    bad "torch 2.x fixtures on cuda:"
    grep FAIL "$T/fixtures.out" | head -20
fi

# 3. a plan with swaps on --backend cuda == the in-core cuda run, bitwise
PLAN="$BUILD/outcore-plan"
"$PLAN" emit "$MODEL" --batch 2 -o "$T/incore.onnx" >/dev/null 2>"$T/emit.err" ||
    bad "emit: $(cat "$T/emit.err")"
peak=$("$PLAN" plan "$MODEL" --batch 2 --device v100 --budget 1TB --strategy incore --json |
       sed -n 's/.*"peak_bytes": \([0-9]*\).*/\1/p')
budget=
for f in 94 96 97 98 99; do
    b=$((peak * f / 100))
    # --fuse all: the in-core graph's fusion (plan's auto may pick forward, whose floor is
    # lower; test 4's measured profile has the records of this graph only)
    if "$PLAN" plan "$MODEL" --batch 2 --device v100 --budget "$b" --strategy swap-all \
         --fuse all -o "$T/swap.onnx" >/dev/null 2>"$T/plan.err"; then
        budget=$b
        break
    fi
done
run_cuda() { # PLAN SAVE [BUDGET]  ($MODE: extra outcore-run flags)
    "$EMU/outcore-run" "$1" --backend cuda ${MODE:-} --steps 3 --seed 7 --save "$2" \
        ${3:+--budget "$3"} 2>"$2.err" | grep '^step ' | awk '{print $1, $2, $3, $4}'
}
weights_cmp() { # A.onnx B.onnx: every initializer bitwise equal
    "$PY" - "$@" <<'PYEOF'
import sys, onnx
from onnx import numpy_helper
a, b = ({t.name: numpy_helper.to_array(t).tobytes() for t in onnx.load(p).graph.initializer}
        for p in sys.argv[1:3])
diff = [k for k in a if b.get(k) != a[k]]
if diff or set(a) != set(b):
    sys.exit(f"{len(diff)} weights differ, e.g. {diff[:3]}")
PYEOF
}
# 1e. column sums four columns a thread (a Gemm's bias gradient by ReduceSumTo, LayerNorm's
#     dScale and dBias; bfloat16 ones; a channels-last convolution's bias) give the bits of
#     one column a thread (OC_CUDA_SCALAR_SUMS=1): 2 steps' losses and weights bitwise equal
for spec in "tiny_gpt:tiny_gpt:--attention fused" "tiny_gpt bf16:tiny_gpt:--precision bf16" \
            "tiny_vit nhwc:tiny_vit:--layout nhwc"; do
    IFS=: read -r sname smodel sopts <<<"$spec"
    sargs=("tests/data/torch2/${smodel}_legacy.onnx" --batch 2 --steps 2 --seed 3 --backend cuda)
    # shellcheck disable=SC2086  # sopts: options without spaces inside
    if "$EMU/outcore-run" "${sargs[@]}" $sopts --save "$T/sv4.onnx" >"$T/sv4.out" 2>"$T/sv.err" &&
       OC_CUDA_SCALAR_SUMS=1 "$EMU/outcore-run" "${sargs[@]}" $sopts --save "$T/sv1.onnx" \
           >"$T/sv1.out" 2>>"$T/sv.err" &&
       cmp -s <(grep '^step' "$T/sv4.out") <(grep '^step' "$T/sv1.out") &&
       grep -q '^step 1' "$T/sv4.out" &&
       weights_cmp "$T/sv4.onnx" "$T/sv1.onnx" >"$T/sv.cmp" 2>&1; then
        ok "$sname: column sums 4 columns a thread == 1 a thread, bitwise (losses, weights)"
    else
        bad "$sname: column sums by 4 vs 1: $(tail -2 "$T/sv.err") $(cat "$T/sv.cmp" 2>/dev/null)"
    fi
done

if [ -z "$budget" ]; then
    bad "no swap-all plan of resnet18@64 below its in-core peak $peak: $(cat "$T/plan.err")"
elif ! "$PLAN" show "$T/swap.onnx" 2>/dev/null | grep -q 'SwapIn'; then
    bad "the swap-all plan at $budget has no SwapIn"
else
    for MODE in --deterministic ""; do
        tag=${MODE:-default}
        run_cuda "$T/incore.onnx" "$T/incore$tag.save.onnx" >"$T/incore$tag.loss"
        run_cuda "$T/swap.onnx" "$T/swap$tag.save.onnx" "$budget" >"$T/swap$tag.loss"
        if [ "$(wc -l <"$T/incore$tag.loss")" -eq 3 ] && cmp -s "$T/incore$tag.loss" "$T/swap$tag.loss" &&
           weights_cmp "$T/incore$tag.save.onnx" "$T/swap$tag.save.onnx"; then
            ok "swap-all plan (budget $budget < peak $peak) on cuda ($tag): losses and weights bitwise == in-core ($(tr '\n' ' ' <"$T/swap$tag.loss"))"
        else
            bad "swap-all plan on cuda ($tag) differs from in-core: in-core [$(tr '\n' ' ' <"$T/incore$tag.loss")]" \
                "swap [$(tr '\n' ' ' <"$T/swap$tag.loss")] $(tail -2 "$T/swap$tag.save.onnx.err")"
        fi
    done
    # a recompute-only plan (chen: convolutions, BNs and ReLUs re-run in backward): the BN
    # backward of a recomputed X takes the forward's statistics (the stash keys a clone's output
    # as its original's), so by default too the plan equals the in-core run bit for bit
    # (the emulator's kernels are deterministic); before, it recomputed them and differed
    rbudget=
    for f in 90 94 96 97 98 99; do
        b=$((peak * f / 100))
        "$PLAN" plan "$MODEL" --batch 2 --device v100 --budget "$b" --strategy chen \
            -o "$T/rc.onnx" >/dev/null 2>"$T/rcplan.err" && { rbudget=$b; break; }
    done
    for MODE in $([ $SAN = 1 ] || echo --deterministic) ""; do
        tag=${MODE:-default}
        run_cuda "$T/rc.onnx" "$T/rc$tag.save.onnx" "$rbudget" >"$T/rc$tag.loss"
        if [ -n "$rbudget" ] && [ "$(wc -l <"$T/rc$tag.loss")" -eq 3 ] &&
           cmp -s "$T/incore$tag.loss" "$T/rc$tag.loss" && weights_cmp "$T/incore$tag.save.onnx" "$T/rc$tag.save.onnx"; then
            ok "chen plan (recompute, budget $rbudget) on cuda ($tag): losses and weights bitwise == in-core"
        else
            bad "chen plan on cuda ($tag): in-core [$(tr '\n' ' ' <"$T/incore$tag.loss")] plan [$(tr '\n' ' ' <"$T/rc$tag.loss")] $(tail -2 "$T/rcplan.err") $(tail -2 "$T/rc$tag.save.onnx.err")"
        fi
    done
    for MODE in --deterministic ""; do
        "$EMU/outcore-run" "$T/incore.onnx" --backend cuda $MODE --steps 1 --seed 7 \
            --dump-grads "$T/grads${MODE:-default}" >/dev/null 2>&1
    done
    if w=$("$PY" - "$T/grads--deterministic/grads" "$T/gradsdefault/grads" <<'PYEOF'
import os, sys, onnx, numpy as np
from onnx import numpy_helper
a, b = ([numpy_helper.to_array(onnx.load_tensor(os.path.join(d, f))).astype(np.float64).ravel()
         for f in sorted(os.listdir(sys.argv[1]))] for d in sys.argv[1:3])
if not a or len(a) != len(b):
    sys.exit("no gradients dumped")
x, y = np.concatenate(a), np.concatenate(b)
rel = np.linalg.norm(x - y) / np.linalg.norm(x)
if not rel <= 1e-5 or np.array_equal(x, y):
    sys.exit(f"all gradients differ by {rel:.2e} (tolerance 1e-5), identical: {np.array_equal(x, y)}")
print(f"{rel:.1e}")
PYEOF
); then
        ok "BN statistics from the forward (default) vs recomputed (--deterministic): step-0 gradients within $w, not identical"
    else
        bad "BN statistics stash: default vs --deterministic gradients: $w"
    fi
fi
# 3d. CUDA graphs: --cuda-graph on captures step 1 and replays it; losses and weights bitwise
#     those of the stream runs (--deterministic and default), for the in-core graph and the
#     swap-all plan, alexnet_small (Dropout) and the tiny GPT (AdamW, attention fused); a
#     capture that fails (EMU_CAPTURE_FAIL_AT) falls back to the streams with the same bits.
if [ -n "$budget" ]; then
    for MODE in --deterministic ""; do
        for P in incore swap; do
            [ $SAN = 1 ] && [ $P = swap ] && [ -n "$MODE" ] && continue
            ref=$([ $P = incore ] && echo "$T/incore$( [ -n "$MODE" ] && echo "$MODE" || echo default).loss" || echo "")
            run_cuda "$T/$P.onnx" "$T/g_$P$MODE.onnx" >"$T/g_$P$MODE.loss" 2>/dev/null
            MODE="$MODE --cuda-graph on" run_cuda "$T/$P.onnx" "$T/gr_$P$MODE.onnx" >"$T/gr_$P$MODE.loss"
            if grep -q "graph: step 1 captured" "$T/gr_$P$MODE.onnx.err" &&
               cmp -s "$T/g_$P$MODE.loss" "$T/gr_$P$MODE.loss" && [ -s "$T/gr_$P$MODE.loss" ] &&
               w=$(weights_cmp "$T/g_$P$MODE.onnx" "$T/gr_$P$MODE.onnx" 2>&1); then
                ok "cuda graph replay (${MODE:-default}, $P): losses and weights bitwise == stream execution"
            else
                bad "cuda graph replay (${MODE:-default}, $P): $(cat "$T/gr_$P$MODE.onnx.err" | tail -3) $w"
            fi
        done
    done
    EMU_CAPTURE_FAIL_AT=7 MODE="--deterministic --cuda-graph on" run_cuda "$T/incore.onnx" \
        "$T/gf.onnx" >"$T/gf.loss"
    if grep -q "graph: capture failed" "$T/gf.onnx.err" && cmp -s "$T/gf.loss" "$T/g_incore--deterministic.loss" &&
       weights_cmp "$T/gf.onnx" "$T/g_incore--deterministic.onnx" >/dev/null 2>&1; then
        ok "a failed capture falls back to the streams: $(grep -m1 'graph: capture failed' "$T/gf.onnx.err" | cut -c1-120)"
    else
        bad "capture fallback: $(tail -3 "$T/gf.onnx.err")"
    fi
fi
# steps with per-step arguments (their step read from device memory): Dropout (alexnet_small),
# AdamW with attention fused (the tiny GPT: by rows, and through the GEMMs in causal blocks of 8
# rows, the pointer arrays of its blocked GEMMs written by a kernel in the captured step)
"$PY" tools/export_models.py --models alexnet_small --opset 13 --image-size 32 --batch 2 \
    --structure-only --out "$T/alex" >/dev/null 2>&1
for spec in "alexnet_small:$T/alex/alexnet_small_op13.onnx:" \
            "tiny_gpt (AdamW):tests/data/torch2/tiny_gpt_legacy.onnx:--optimizer adamw --lr 0.001 --attention fused" \
            "tiny_gpt (AdamW, attention by GEMMs):tests/data/torch2/tiny_gpt_legacy.onnx:--optimizer adamw --lr 0.001 --attention fused:gemm"; do
    IFS=: read -r gname gmodel gopts gkern <<<"$spec"
    for gm in off on; do
        OC_ATTENTION_KERNEL=${gkern:-rows} OC_ATTENTION_BLOCK=8 "$EMU/outcore-run" "$gmodel" --batch 2 --backend cuda --steps 4 \
            --seed 5 $gopts --cuda-graph $gm --save "$T/gp_$gm.onnx" >"$T/gp_$gm.out" 2>"$T/gp_$gm.err"
    done
    if grep -q "graph: step 1 captured" "$T/gp_on.err" &&
       cmp -s <(grep '^step' "$T/gp_off.out") <(grep '^step' "$T/gp_on.out") &&
       grep -q '^step 3' "$T/gp_on.out" && weights_cmp "$T/gp_off.onnx" "$T/gp_on.onnx" >/dev/null 2>&1; then
        ok "cuda graph replay, $gname (per-step draws / bias correction from device memory): bitwise == streams"
    else
        bad "cuda graph replay, $gname: $(tail -2 "$T/gp_on.err")"
    fi
done
# 3c. TF32 switches (PyTorch's): --tf32-conv off makes every convolution's algorithm one of
#     FMA math (no tensor cores) and --tf32-matmul on is accepted by cuBLAS; the banner says so.
if "$EMU/outcore-run" "$T/incore.onnx" --backend cuda --steps 1 --seed 7 --verbose-algos \
     --tf32-conv off --tf32-matmul on >"$T/tf32.out" 2>"$T/tf32.err" &&
   grep -q "TF32: convolutions off, matmuls on" "$T/tf32.err" &&
   n=$(grep -c ' algo [0-9]*, math ' "$T/tf32.err") && [ "$n" -gt 0 ] &&
   ! grep ' algo [0-9]*, math ' "$T/tf32.err" | grep -vq ', math fma,'; then
    ok "--tf32-conv off: all $n convolution algorithms on FMA math; --tf32-matmul on accepted"
else
    bad "TF32 switches: $(grep -m3 'TF32\|, math ' "$T/tf32.err") $(tail -2 "$T/tf32.err")"
fi
# 3g. --conv-algo measure: timed choices, the same losses; --deterministic does not time
if "$EMU/outcore-run" "$T/incore.onnx" --backend cuda --steps 2 --seed 7 --verbose-algos \
     --conv-algo measure >"$T/meas.out" 2>"$T/meas.err" &&
   "$EMU/outcore-run" "$T/incore.onnx" --backend cuda --steps 2 --seed 7 >"$T/heur.out" 2>&1 &&
   "$EMU/outcore-run" "$T/incore.onnx" --backend cuda --steps 1 --seed 7 --verbose-algos \
     --conv-algo measure --deterministic >"$T/measd.out" 2>"$T/measd.err" &&
   n=$(grep -c ': measured algo .* -> algo ' "$T/meas.err") && [ "$n" -gt 0 ] &&
   [ "$n" -eq "$(grep 'timed on the first run' "$T/meas.err" | cut -d: -f2 | sort -u | wc -l)" ] &&
   ! grep -q 'measured\|timed on the first run' "$T/measd.err" &&
   cmp -s <(grep '^step' "$T/meas.out") <(grep '^step' "$T/heur.out") &&
   grep -q '^step 1' "$T/meas.out"; then
    ok "--conv-algo measure: $n convolution shapes timed on their first run, losses == the heuristic run's; none with --deterministic"
else
    bad "--conv-algo measure: $(grep -m2 'measured' "$T/meas.err") $(tail -2 "$T/meas.err")"
fi
#     and AlexNet's Conv + bias + Relu (ConvRelu): cuDNN's one call timed against the
#     convolution then one bias + Relu pass, per shape; the same losses either way
aargs=("$T/alex/alexnet_small_op13.onnx" --batch 2 --steps 2 --seed 7 --backend cuda)
if "$EMU/outcore-run" "${aargs[@]}" --conv-algo measure --verbose-algos >"$T/am.out" 2>"$T/am.err" &&
   "$EMU/outcore-run" "${aargs[@]}" >"$T/ah.out" 2>&1 &&
   nf=$(grep -c ': measured conv-bias-relu as one cuDNN call .* -> ' "$T/am.err") &&
   [ "$nf" -ge 2 ] &&
   cmp -s <(grep '^step' "$T/am.out") <(grep '^step' "$T/ah.out") && grep -q '^step 1' "$T/am.out"; then
    ok "--conv-algo measure: $nf ConvRelu shapes timed as one cuDNN call and apart, losses == the heuristic run's"
else
    bad "--conv-algo measure, ConvRelu: $(grep -m2 'conv-bias-relu' "$T/am.err") $(tail -2 "$T/am.err")"
fi
# 3j. --conv-api graph (the emulator's engines compute the legacy algorithms' bits)
graph_run() { # TAG MODEL ARGS..: a 2-step cuda run saved to $T/TAG.save.onnx, stderr to TAG.err
    local tag=$1 m=$2
    shift 2
    "$EMU/outcore-run" "$m" --backend cuda --steps 2 --seed 7 --save "$T/$tag.save.onnx" "$@" \
        >"$T/$tag.out" 2>"$T/$tag.err"
}
"$PLAN" emit "$MODEL" --batch 2 --layout nhwc --precision bf16 -o "$T/gbf.onnx" >/dev/null 2>&1
if graph_run gl "$T/incore.onnx" && graph_run gg "$T/incore.onnx" --conv-api graph --verbose-algos &&
   graph_run gm "$T/incore.onnx" --conv-api graph --conv-algo measure --verbose-algos &&
   graph_run gt "$T/incore.onnx" --conv-api graph --tf32-conv off --verbose-algos &&
   graph_run bl "$T/gbf.onnx" --deterministic &&
   graph_run bg "$T/gbf.onnx" --deterministic --conv-api graph --cuda-graph on --verbose-algos &&
   ng=$(grep -c ': [a-z-]* graph plan 0, ' "$T/gg.err") && [ "$ng" -gt 0 ] &&
   nb=$(grep -c ': [a-z-]* graph plan 0, ' "$T/bg.err") && [ "$nb" -gt 0 ] &&
   nm=$(grep -c ': measured graph plan .* -> graph plan ' "$T/gm.err") && [ "$nm" -gt 0 ] &&
   ! grep -q 'legacy calls instead' "$T/gg.err" "$T/gm.err" "$T/gt.err" "$T/bg.err" &&
   ! grep 'graph plan 0, ' "$T/gt.err" | grep -vq 'engines: 4 ' &&
   ! grep 'bwd-[a-z]* graph plan 0, ' "$T/bg.err" | grep -q 'engines: 2 ' &&
   cmp -s "$T/gl.save.onnx" "$T/gg.save.onnx" && cmp -s "$T/gl.save.onnx" "$T/gm.save.onnx" &&
   cmp -s "$T/gl.save.onnx" "$T/gt.save.onnx" && cmp -s "$T/bl.save.onnx" "$T/bg.save.onnx"; then
    ok "--conv-api graph: $ng fp32 and $nb bf16 nhwc convolution shapes through the graph API, $nm timed; weights bitwise == the legacy calls' (TF32 off: engine 4 only; deterministic: no nondeterministic engine)"
else
    bad "--conv-api graph: $(grep -h 'legacy calls instead\|error' "$T"/g[gmt].err "$T/bg.err" | head -2) $(tail -1 "$T/bg.err")"
fi
#     --conv-api auto: each shape's graph plan and legacy algorithm timed on its first run (with
#     --conv-algo measure 4 of each); with --deterministic nothing timed, the legacy calls
if graph_run ga "$T/incore.onnx" --conv-api auto --verbose-algos &&
   graph_run gam "$T/incore.onnx" --conv-api auto --conv-algo measure --verbose-algos &&
   graph_run gad "$T/incore.onnx" --conv-api auto --deterministic --verbose-algos &&
   na=$(grep -c ': measured graph plan 0 .*, algo [0-9]* .* -> ' "$T/ga.err") && [ "$na" -gt 0 ] &&
   nam=$(grep -c ': measured graph plan 0 .* graph plan 1 .*, algo [0-9]* .* -> ' "$T/gam.err") &&
   [ "$nam" -gt 0 ] && ! grep -q 'measured\|graph plan' "$T/gad.err" &&
      cmp -s "$T/gl.save.onnx" "$T/ga.save.onnx" && cmp -s "$T/gl.save.onnx" "$T/gam.save.onnx"; then
    ok "--conv-api auto: $na shapes timed graph plan against legacy algorithm ($(grep -c -- '-> graph plan' "$T/ga.err") kept a graph plan), $nam with up to 4 of each; none with --deterministic; weights bitwise == the legacy calls'"
else
    bad "--conv-api auto: $(grep -m2 'measured' "$T/ga.err") $(tail -1 "$T/ga.err")"
fi
#     AlexNet's ConvRelu (+ bias): the convolution, bias and Relu as one graph (fp32); the
#     emulator refuses that on bfloat16 data, so there the convolution alone, then one pass
AX="$T/alex/alexnet_small_op13.onnx"
if graph_run xl "$AX" --batch 2 && graph_run xg "$AX" --batch 2 --conv-api graph --verbose-algos &&
   graph_run hl "$AX" --batch 2 --precision bf16 &&
   graph_run hg "$AX" --batch 2 --precision bf16 --conv-api graph --verbose-algos &&
   ne=$(grep -c ': fwd+bias+relu graph plan 0, ' "$T/xg.err") && [ "$ne" -ge 2 ] &&
   nr=$(grep -c 'refused the convolution with its bias and Relu' "$T/hg.err") && [ "$nr" -ge 2 ] &&
   ! grep -q 'legacy calls instead' "$T/xg.err" "$T/hg.err" &&
   cmp -s "$T/xl.save.onnx" "$T/xg.save.onnx" && cmp -s "$T/hl.save.onnx" "$T/hg.save.onnx"; then
    ok "--conv-api graph, ConvRelu: $ne shapes with bias and Relu in the graph (fp32); bf16: $nr refused by the emulator, the convolution alone; weights bitwise == the legacy calls'"
else
    bad "--conv-api graph, ConvRelu: $(grep -h 'legacy calls instead\|refused\|error' "$T/xg.err" "$T/hg.err" | head -2) $(tail -1 "$T/xg.err")"
fi
# 3e. loss scaling: the same scales and skipped steps on cuda as on cpu
for be in cpu cuda; do
    "$EMU/outcore-run" "$MODEL" --backend $be --batch 2 --steps 4 --seed 7 --loss-scale 3e38 \
        --loss-scale-interval 2 2>"$T/scale_$be.err" | grep '^step ' | cut -d' ' -f1,2,5- >"$T/scale_$be.out"
done
if [ "$(wc -l <"$T/scale_cuda.out")" -eq 4 ] && cmp -s "$T/scale_cpu.out" "$T/scale_cuda.out" &&
   grep -q skipped "$T/scale_cuda.out" && grep -vq skipped "$T/scale_cuda.out"; then
    ok "loss scaling at 3e38 on cuda: scales and skipped steps == cpu ($(grep -c skipped "$T/scale_cuda.out") of 4 skipped)"
else
    bad "loss scaling on cuda: cpu [$(tr '\n' ' ' <"$T/scale_cpu.out")] cuda [$(tr '\n' ' ' <"$T/scale_cuda.out")] $(tail -2 "$T/scale_cuda.err")"
fi
# 3f. bf16 on cuda: a swap plan == in-core, bitwise; in-core near cpu
"$PLAN" emit "$MODEL" --batch 2 --precision bf16 -o "$T/bf16_incore.onnx" >/dev/null 2>"$T/bf16.err"
bpeak=$("$PLAN" plan "$MODEL" --batch 2 --precision bf16 --device v100 --budget 1TB --strategy incore \
        --json 2>>"$T/bf16.err" | sed -n 's/.*"peak_bytes": \([0-9]*\).*/\1/p')
bbudget=
for f in 94 96 97 98 99; do
    b=$((bpeak * f / 100))
    if "$PLAN" plan "$MODEL" --batch 2 --precision bf16 --device v100 --budget "$b" \
         --strategy swap-all --fuse all -o "$T/bf16_swap.onnx" >/dev/null 2>>"$T/bf16.err"; then
        bbudget=$b
        break
    fi
done
MODE="--lr 0.001" run_cuda "$T/bf16_incore.onnx" "$T/bf16_incore.save.onnx" >"$T/bf16_incore.loss"
MODE="--lr 0.001" run_cuda "$T/bf16_swap.onnx" "$T/bf16_swap.save.onnx" "$bbudget" >"$T/bf16_swap.loss"
"$EMU/outcore-run" "$T/bf16_incore.onnx" --backend cpu --steps 1 --seed 7 2>/dev/null |
    grep '^step 0' | awk '{print $4}' >"$T/bf16_cpu.loss"
if [ -n "$bbudget" ] && [ "$(wc -l <"$T/bf16_incore.loss")" -eq 3 ] &&
   cmp -s "$T/bf16_incore.loss" "$T/bf16_swap.loss" &&
   weights_cmp "$T/bf16_incore.save.onnx" "$T/bf16_swap.save.onnx" &&
   "$PY" -c "import sys; a, b = float(sys.argv[1]), float(sys.argv[2]); sys.exit(abs(a - b) > 1e-2 * abs(b))" \
     "$(head -1 "$T/bf16_incore.loss" | awk '{print $4}')" "$(cat "$T/bf16_cpu.loss")"; then
    ok "bf16 on cuda: swap-all plan (budget $bbudget < peak $bpeak) bitwise == in-core; step 0 $(head -1 "$T/bf16_incore.loss" | awk '{print $4}') vs cpu $(cat "$T/bf16_cpu.loss")"
else
    bad "bf16 on cuda: budget '$bbudget' in-core [$(tr '\n' ' ' <"$T/bf16_incore.loss")] swap [$(tr '\n' ' ' <"$T/bf16_swap.loss")] cpu $(cat "$T/bf16_cpu.loss") $(tail -2 "$T/bf16.err" "$T/bf16_swap.save.onnx.err")"
fi
# 3i. --layout nhwc on cuda: cuDNN's convolutions on channels-last tensors and KRSC filters,
#     our BatchNorm and pooling kernels in place; in-core near the model's own layout (BN sums
#     in another order), a swap-all plan bitwise == in-core (fp32; bf16 nhwc: the op harness)
for prec in fp32; do
    "$PLAN" emit "$MODEL" --batch 2 --layout nhwc --precision $prec -o "$T/nhwc_$prec.onnx" \
        >/dev/null 2>"$T/nhwc.err"
    npeak=$("$PLAN" plan "$MODEL" --batch 2 --layout nhwc --precision $prec --device v100 \
            --budget 1TB --strategy incore --json 2>>"$T/nhwc.err" |
            sed -n 's/.*"peak_bytes": \([0-9]*\).*/\1/p')
    nbudget=
    for f in 94 96 97 98 99; do
        b=$((npeak * f / 100))
        if "$PLAN" plan "$MODEL" --batch 2 --layout nhwc --precision $prec --device v100 \
             --budget "$b" --strategy swap-all --fuse all -o "$T/nhwc_${prec}_swap.onnx" \
             >/dev/null 2>>"$T/nhwc.err"; then
            nbudget=$b
            break
        fi
    done
    MODE="--deterministic --lr 0.001" run_cuda "$T/incore.onnx" "$T/nhwc_${prec}_ref.save.onnx" \
        >"$T/nhwc_${prec}_ref.loss"
    MODE="--deterministic --lr 0.001" run_cuda "$T/nhwc_$prec.onnx" "$T/nhwc_$prec.save.onnx" \
        >"$T/nhwc_$prec.loss"
    MODE="--deterministic --lr 0.001" run_cuda "$T/nhwc_${prec}_swap.onnx" \
        "$T/nhwc_${prec}_swap.save.onnx" "$nbudget" >"$T/nhwc_${prec}_swap.loss"
    if [ -n "$nbudget" ] && [ "$(wc -l <"$T/nhwc_$prec.loss")" -eq 3 ] &&
       cmp -s "$T/nhwc_$prec.loss" "$T/nhwc_${prec}_swap.loss" &&
       weights_cmp "$T/nhwc_$prec.save.onnx" "$T/nhwc_${prec}_swap.save.onnx" &&
       "$PY" - "$T/nhwc_${prec}_ref.loss" "$T/nhwc_$prec.loss" <<'PYEOF'
import sys
a, b = ([float(l.split()[3]) for l in open(p)] for p in sys.argv[1:3])
sys.exit(len(a) != 3 or any(abs(x - y) > 1e-5 * abs(y) for x, y in zip(a, b)))
PYEOF
    then
        ok "--layout nhwc $prec on cuda: swap-all plan (budget $nbudget < peak $npeak) bitwise == in-core; losses within 1e-5 of nchw [$(awk '{print $4}' "$T/nhwc_$prec.loss" | tr '\n' ' ')]"
    else
        bad "--layout nhwc $prec on cuda: budget '$nbudget' nchw [$(tr '\n' ' ' <"$T/nhwc_${prec}_ref.loss")] nhwc [$(tr '\n' ' ' <"$T/nhwc_$prec.loss")] swap [$(tr '\n' ' ' <"$T/nhwc_${prec}_swap.loss")] $(tail -2 "$T/nhwc.err" "$T/nhwc_${prec}_swap.save.onnx.err")"
    fi
done
# 3i'. --layout auto (the default) on a forward model: a device file whose NCHW convolutions
#      are slow makes it build the channels-last step, the losses bitwise those of the emitted
#      --layout nhwc graph; the emulator's name matches no preset: NCHW, said once
printf '{"name": "slow-nchw", "memory_bytes": 1e10, "h2d_bytes_per_s": 1e10,
  "d2h_bytes_per_s": 1e10, "duplex": true, "copy_latency_s": 0, "peak_flops": 1e13,
  "mem_bandwidth_bytes_per_s": 1e12, "launch_overhead_s": 0, "conv_nchw_slowdown": 9}' \
    >"$T/slow_nchw.json"
MODE="--deterministic --lr 0.001 --batch 2 --device-file $T/slow_nchw.json" \
    run_cuda "$MODEL" "$T/auto_nhwc.save.onnx" >"$T/auto_nhwc.loss"
MODE="--deterministic --lr 0.001 --batch 2" run_cuda "$MODEL" "$T/auto_emu.save.onnx" \
    >"$T/auto_emu.loss"
if grep -q -- "--layout auto: nhwc (predicted" "$T/auto_nhwc.save.onnx.err" &&
   grep -q "no device preset for 'outcore CUDA emulator'" "$T/auto_emu.save.onnx.err" &&
   [ "$(wc -l <"$T/auto_nhwc.loss")" -eq 3 ] && cmp -s "$T/auto_nhwc.loss" "$T/nhwc_fp32.loss" &&
   cmp -s "$T/auto_emu.loss" "$T/nhwc_fp32_ref.loss"; then
    ok "--layout auto on cuda: channels-last by a device file's figures == --layout nhwc, bitwise; nchw on the emulator (no preset)"
else
    bad "--layout auto on cuda: [$(tr '\n' ' ' <"$T/auto_nhwc.loss")] vs nhwc [$(tr '\n' ' ' <"$T/nhwc_fp32.loss")]; [$(tr '\n' ' ' <"$T/auto_emu.loss")] vs nchw [$(tr '\n' ' ' <"$T/nhwc_fp32_ref.loss")] $(grep -h 'layout' "$T"/auto_*.err)"
fi
# 3h. bf16: measured profile -> plan -> run in a device of arena + 1 MiB, nothing outside
if "$EMU/outcore-run" "$T/bf16_incore.onnx" --backend cuda --steps 4 --seed 7 \
     --profile-out "$T/bf16_prof.json" >"$T/bf16_prof.out" 2>&1 &&
   "$PLAN" plan "$MODEL" --batch 2 --precision bf16 --profile "$T/bf16_prof.json" \
     --budget "${bbudget:-$bpeak}" --strategy swap-all --fuse all -o "$T/bf16_wsplan.onnx" \
     >/dev/null 2>"$T/bf16_wsplan.err" &&
   barena=$("$PY" -c "import onnx,sys; print({p.key: p.value for p in onnx.load(sys.argv[1]).metadata_props}['outcore.arena_bytes'])" "$T/bf16_wsplan.onnx") &&
   EMU_DEVICE_BYTES=$((barena + 1048576)) "$EMU/outcore-run" "$T/bf16_wsplan.onnx" --backend cuda \
     --steps 2 --seed 7 >"$T/bf16_wsrun.out" 2>"$T/bf16_wsrun.err" &&
   ! grep -q "outside the plan" "$T/bf16_wsrun.err" && grep -q '^step 1' "$T/bf16_wsrun.out"; then
    ok "bf16 measured profile -> plan -> cuda run in a device of arena + 1 MiB, nothing outside the plan"
else
    bad "bf16 measured-profile plan on cuda: $(tail -2 "$T/bf16_prof.out") $(cat "$T/bf16_wsplan.err") $(tail -3 "$T/bf16_wsrun.err")"
fi
# 3h'. the same workflow with the convolutions through the graph API (profile and run under
#     OC_CUDNN_CONV_API=graph): each graph plan within the workspace the profile measured
if OC_CUDNN_CONV_API=graph "$EMU/outcore-run" "$T/incore.onnx" --backend cuda --steps 4 --seed 7 \
     --profile-out "$T/g_prof.json" >"$T/g_prof.out" 2>&1 &&
   "$PLAN" plan "$MODEL" --batch 2 --profile "$T/g_prof.json" --budget 1TB --strategy incore \
     -o "$T/g_wsplan.onnx" >/dev/null 2>"$T/g_wsplan.err" &&
   garena=$("$PY" -c "import onnx,sys; print({p.key: p.value for p in onnx.load(sys.argv[1]).metadata_props}['outcore.arena_bytes'])" "$T/g_wsplan.onnx") &&
   OC_CUDNN_CONV_API=graph EMU_DEVICE_BYTES=$((garena + 1048576)) "$EMU/outcore-run" \
     "$T/g_wsplan.onnx" --backend cuda --steps 2 --seed 7 --verbose-algos >"$T/g_wsrun.out" \
     2>"$T/g_wsrun.err" &&
   ng=$(grep -c ' graph plan 0, ' "$T/g_wsrun.err") && [ "$ng" -gt 0 ] &&
   ! grep -q "outside the plan\|legacy calls instead" "$T/g_wsrun.err" && grep -q '^step 1' "$T/g_wsrun.out"; then
    ok "--conv-api graph: measured profile -> plan -> run in a device of arena + 1 MiB, $ng graph plans, nothing outside the plan"
else
    bad "--conv-api graph measured-profile plan: $(tail -2 "$T/g_prof.out") $(cat "$T/g_wsplan.err") $(grep -v '^cuda: .*graph plan' "$T/g_wsrun.err" | tail -3)"
fi
# 3h''. --conv-algo measure's timings as the profile's alternatives: each timed convolution's
#     record holds the workspace of the algorithm it took, the other candidates as
#     alternatives; planned with --workspace smallest and run with --conv-algo measure, every
#     convolution runs in its smaller region: nothing outside the plan, losses == in core's
if "$EMU/outcore-run" "$T/incore.onnx" --backend cuda --steps 4 --seed 7 --conv-algo measure \
     --profile-out "$T/m_prof.json" >"$T/m_prof.out" 2>&1 &&
   malt=$("$PY" -c "
import json, sys
p = json.load(open(sys.argv[1]))
alts = [n for n in p['nodes'] if n.get('alternatives')]
assert alts, 'no alternatives'
print(len(alts), sum(1 for n in alts if min(a['workspace_bytes'] for a in n['alternatives']) < n['workspace_bytes']))
" "$T/m_prof.json") &&
   "$PLAN" plan "$MODEL" --batch 2 --profile "$T/m_prof.json" --budget 1TB --strategy incore \
     --workspace smallest -o "$T/m_wsplan.onnx" >/dev/null 2>"$T/m_wsplan.err" &&
   marena=$("$PY" -c "import onnx,sys; print({p.key: p.value for p in onnx.load(sys.argv[1]).metadata_props}['outcore.arena_bytes'])" "$T/m_wsplan.onnx") &&
   EMU_DEVICE_BYTES=$((marena + 1048576)) "$EMU/outcore-run" "$T/m_wsplan.onnx" --backend cuda \
     --steps 2 --seed 7 --conv-algo measure >"$T/m_wsrun.out" 2>"$T/m_wsrun.err" &&
   ! grep -q "outside the plan" "$T/m_wsrun.err" &&
   cmp -s <(grep '^step' "$T/m_wsrun.out") <(grep '^step' "$T/heur.out"); then
    ok "--conv-algo measure --profile-out: $malt (nodes with alternatives, of them with a smaller one); --workspace smallest plan runs in its regions, losses == in core's"
else
    bad "measured alternatives: $(tail -2 "$T/m_prof.out") ${malt:-} $(cat "$T/m_wsplan.err") $(tail -3 "$T/m_wsrun.err")"
fi
# 3g. fp16 + GradScaler on cuda against PyTorch's reference sequence
if "$PY" - "$EMU/outcore-run" "$T" <<'PYEOF'
import subprocess, sys
import numpy as np, onnx
from onnx import numpy_helper
run, tmp = sys.argv[1:3]
ref = np.load("tests/data/amp/tiny_resnet_fp16.ref.npz")
data = np.load("tests/data/torch2/tiny_resnet.ref.npz")
onnx.save_tensor(numpy_helper.from_array(data["input"], "input"), f"{tmp}/ax.pb")
onnx.save_tensor(numpy_helper.from_array(data["labels"].astype(np.int64), "labels"), f"{tmp}/ay.pb")
r = subprocess.run([run, "tests/data/torch2/tiny_resnet_legacy.onnx", "--backend", "cuda",
                    "--batch", "2", "--steps", str(len(ref["loss"])), "--lr", "0.01",
                    "--momentum", "0.9", "--weight-decay", "1e-4", "--input", f"{tmp}/ax.pb",
                    "--labels", f"{tmp}/ay.pb", "--precision", "fp16", "--loss-scale",
                    str(int(ref["init_scale"])), "--loss-scale-interval", str(int(ref["interval"]))],
                   capture_output=True, text=True)
rows = [l.split() for l in r.stdout.splitlines() if l.startswith("step ")]
scales = [float(f[5]) for f in rows if len(f) > 5]
skips = ["skipped" in f for f in rows]
ok = scales == list(ref["scale"]) and skips == list(ref["skipped"])
print(f"{sum(skips)} of {len(rows)} skipped" if ok else f"{r.stderr[-300:]} scales {scales} skips {skips}")
sys.exit(0 if ok else 1)
PYEOF
then
    ok "fp16 + GradScaler on cuda: scales and skipped steps == torch.amp.GradScaler's at all 20 steps"
else
    bad "fp16 + GradScaler on cuda differs from PyTorch's sequence"
fi
# test 4 runs in the default mode: its reference is the default in-core run's losses
cp "$T/incoredefault.loss" "$T/incore.loss" 2>/dev/null
# 4. the measured-profile workflow: --profile-out on the emulated cuda backend
#    (its cuDNN lists algorithms with workspaces) -> plan with that profile (each
#    convolution's workspace laid out in the arena) -> the plan on cuda: the
#    kernels run in their regions (nothing outside the plan), under a device
#    exactly the plan's arena + 1 MiB (EMU_DEVICE_BYTES: any other device
#    allocation of a real size fails), losses equal the in-core cuda run's.
if "$EMU/outcore-run" "$T/incore.onnx" --backend cuda --steps 4 --seed 7 \
     --profile-out "$T/prof.json" >"$T/prof.out" 2>&1 &&
   nws=$("$PY" -c "import json,sys; print(sum(n['workspace_bytes'] > 0 for n in json.load(open(sys.argv[1]))['nodes']))" "$T/prof.json") &&
   [ "$nws" -gt 0 ] &&
   "$PLAN" plan "$MODEL" --batch 2 --profile "$T/prof.json" --budget "${budget:-$peak}" --strategy swap-all \
     -o "$T/wsplan.onnx" >/dev/null 2>"$T/wsplan.err" &&
   arena=$("$PY" -c "import onnx,sys; print({p.key: p.value for p in onnx.load(sys.argv[1]).metadata_props}['outcore.arena_bytes'])" "$T/wsplan.onnx") &&
   EMU_DEVICE_BYTES=$((arena + 1048576)) "$EMU/outcore-run" "$T/wsplan.onnx" --backend cuda --steps 3 \
     --seed 7 >"$T/wsrun.out" 2>"$T/wsrun.err" &&
   ! grep -q "outside the plan" "$T/wsrun.err" &&
   cmp -s <(grep '^step ' "$T/wsrun.out" | awk '{print $1, $2, $3, $4}') "$T/incore.loss"; then
    ok "measured profile ($nws nodes with workspace) -> plan -> cuda run in a device of arena + 1 MiB: losses == in-core"
else
    bad "measured-profile plan on cuda: $(tail -2 "$T/prof.out") $(cat "$T/wsplan.err") $(tail -3 "$T/wsrun.err") $(grep '^step' "$T/wsrun.out")"
fi
# 4b. a plan whose FusedAttention workspace is smaller than the kernel's default scratch (its
#     profile measured in chunks of 1 batch-head: another version's, another
#     OC_ATTENTION_SCRATCH_MIB): the run makes its chunks fit the planned workspace — nothing
#     outside the plan, a device of the arena + 1 MiB — and its losses equal the in-core run's
#     in the default chunks bit for bit (dV and dK by column blocks in both; the GEMMs'
#     path, the default: by rows the workspace is rowsum(dY Y) alone)
TG=tests/data/torch2/tiny_gpt_legacy.onnx
TGA=(--batch 2 --attention fused)
if OC_ATTENTION_DKV_ROWS=0 "$EMU/outcore-run" "$TG" "${TGA[@]}" --backend cuda --steps 3 --seed 7 \
       >"$T/att_incore.out" 2>&1 &&
   OC_ATTENTION_CHUNK=1 "$EMU/outcore-run" "$TG" "${TGA[@]}" --backend cuda --steps 4 --seed 7 \
       --profile-out "$T/att_prof.json" >"$T/att_prof.out" 2>&1 &&
   "$PLAN" plan "$TG" "${TGA[@]}" --profile "$T/att_prof.json" --strategy incore \
       -o "$T/att_plan.onnx" >/dev/null 2>"$T/att_plan.err" &&
   arena=$("$PY" -c "import onnx,sys; print({p.key: p.value for p in onnx.load(sys.argv[1]).metadata_props}['outcore.arena_bytes'])" "$T/att_plan.onnx") &&
   OC_ATTENTION_DKV_ROWS=0 EMU_DEVICE_BYTES=$((arena + 1048576)) "$EMU/outcore-run" "$T/att_plan.onnx" \
       --backend cuda --steps 3 --seed 7 >"$T/att_run.out" 2>"$T/att_run.err" &&
   ! grep -q "outside the plan" "$T/att_run.err" &&
   cmp -s <(grep '^step ' "$T/att_run.out") <(grep '^step ' "$T/att_incore.out"); then
    ok "a plan with a smaller FusedAttention workspace (profiled in chunks of 1): run inside it, losses bitwise == in-core"
else
    bad "FusedAttention in a smaller planned workspace: $(tail -2 "$T/att_plan.err") $(tail -3 "$T/att_run.err") $(grep '^step' "$T/att_run.out" "$T/att_incore.out")"
fi
export OC_ATTENTION_KERNEL=rows
# 4c. by rows (OC_ATTENTION_KERNEL=rows): the measured profile gives FusedAttention no
#     workspace and its gradient rowsum(dY Y) alone (batch-heads x rows floats: under one
#     batch-head's [T, S] scores); the plan runs in a device of its arena + 1 MiB, nothing
#     outside the plan, losses bitwise == in-core
if "$EMU/outcore-run" "$TG" "${TGA[@]}" --backend cuda --steps 3 --seed 7 >"$T/r_incore.out" 2>&1 &&
   "$EMU/outcore-run" "$TG" "${TGA[@]}" --backend cuda --steps 4 --seed 7 \
       --profile-out "$T/r_prof.json" >"$T/r_prof.out" 2>&1 &&
   ws=$("$PY" - "$T/r_prof.json" <<'PYEOF'
import json, sys
nodes = [n for n in json.load(open(sys.argv[1]))["nodes"] if n["name"].endswith(("fused_attention", "fused_attention/grad"))]
fwd = [n["workspace_bytes"] for n in nodes if n["name"].endswith("fused_attention")]
grad = [n["workspace_bytes"] for n in nodes if n["name"].endswith("/grad")]
# the tiny GPT: batch 2, 4 heads, 32 rows: rowsum(dY Y) 2 * 4 * 32 floats; one [T, S] = 32 * 32 floats
ok = fwd and grad and set(fwd) == {0} and set(grad) == {2 * 4 * 32 * 4}
print(f"{len(fwd)} forward 0 B, {len(grad)} gradients {grad[0] if grad else '-'} B" if ok else "")
sys.exit(not ok)
PYEOF
) &&
   "$PLAN" plan "$TG" "${TGA[@]}" --profile "$T/r_prof.json" --strategy incore \
       -o "$T/r_plan.onnx" >/dev/null 2>"$T/r_plan.err" &&
   arena=$("$PY" -c "import onnx,sys; print({p.key: p.value for p in onnx.load(sys.argv[1]).metadata_props}['outcore.arena_bytes'])" "$T/r_plan.onnx") &&
   EMU_DEVICE_BYTES=$((arena + 1048576)) "$EMU/outcore-run" "$T/r_plan.onnx" --backend cuda \
       --steps 3 --seed 7 >"$T/r_run.out" 2>"$T/r_run.err" &&
   ! grep -q "outside the plan" "$T/r_run.err" &&
   cmp -s <(grep '^step ' "$T/r_run.out") <(grep '^step ' "$T/r_incore.out"); then
    ok "attention by rows: measured workspaces ($ws), plan run in arena + 1 MiB, losses bitwise == in-core"
else
    bad "attention by rows in a measured plan: $(tail -2 "$T/r_prof.out") $(tail -2 "$T/r_plan.err") $(tail -3 "$T/r_run.err") $(grep '^step' "$T/r_run.out" "$T/r_incore.out")"
fi
unset OC_ATTENTION_KERNEL
exit $fail
