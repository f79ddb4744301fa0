#!/usr/bin/env bash
# test_run_cli.sh — outcore-run end to end on the cpu backend: an emitted training
# graph and the forward model it came from train identically; --save writes a model
# onnx.checker accepts; bad input gives one error line and a non-zero exit before
# any step runs; a decomposed GELU trains as one Gelu and is saved decomposed.
set -u
BUILD=${BUILD:-build}
PY=${PY:-/usr/bin/python3}
RUN="$BUILD/outcore-run"
PLAN="$BUILD/outcore-plan"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fails=0
ok() { echo "ok - $1"; }
bad() { echo "not ok - $1"; fails=$((fails + 1)); }

M=graphs/googlenet_op13.onnx
"$PLAN" emit "$M" --batch 2 --lr 0.05 -o "$T/train.onnx" >/dev/null || bad "emit"
"$PY" -c "import onnx,sys; onnx.checker.check_model(onnx.load(sys.argv[1]))" "$T/train.onnx" \
  && ok "emitted training graph passes onnx.checker" || bad "emitted graph fails onnx.checker"
"$RUN" "$T/train.onnx" --steps 2 --seed 3 --save "$T/trained.onnx" >"$T/a.out" 2>&1 || bad "run training graph"
"$RUN" "$M" --batch 2 --lr 0.05 --steps 2 --seed 3 >"$T/b.out" 2>&1 || bad "run forward model"
# --lr overrides the file's SGDMomentum attributes (before they are decoded): the
# file's own lr repeats the default run bit for bit, another lr changes step 1.
"$PLAN" emit graphs/resnet18_op13.onnx --batch 1 --lr 0.05 -o "$T/r18.onnx" >/dev/null || bad "emit r18"
for lr in file 0.05 0; do
    args=(); [ $lr = file ] || args=(--lr $lr)
    "$RUN" "$T/r18.onnx" --steps 2 "${args[@]}" 2>&1 | grep '^step 1' >"$T/lr_$lr.out" || bad "run --lr $lr"
done
if cmp -s "$T/lr_file.out" "$T/lr_0.05.out" && ! cmp -s "$T/lr_file.out" "$T/lr_0.out"; then
    ok "--lr overrides a training graph's learning rate"
else
    bad "--lr override: file $(cat "$T/lr_file.out"), 0.05 $(cat "$T/lr_0.05.out"), 0 $(cat "$T/lr_0.out")"
fi
# A structure-only model initialises alike in every layout and precision: the rules look
# through autocast's Casts and the layout Transposes to the reading Conv / Gemm (before
# 2026-11-28 a channels-last filter, and under bf16 every weight, fell to the 0.02 default).
# Saved after one step at lr 0: the initial weights, each layout and precision's bit for bit.
init_flags=("" "--layout nhwc" "--precision bf16" "--precision bf16 --layout nhwc")
for i in 0 1 2 3; do
    # shellcheck disable=SC2086  # the flags split into words on purpose
    "$RUN" graphs/resnet18_op13.onnx --batch 1 --steps 1 --lr 0 --momentum 0 --weight-decay 0 \
        ${init_flags[$i]} --save "$T/init_$i.onnx" >/dev/null 2>"$T/init_$i.err" || bad "init run ${init_flags[$i]}"
done
if "$PY" - "$T"/init_{0,1,2,3}.onnx >"$T/init.out" 2>&1 <<'PYEOF'
import sys, onnx
from onnx import numpy_helper
ws = [{t.name: numpy_helper.to_array(t) for t in onnx.load(p).graph.initializer
       if t.name.endswith(("weight", "bias"))} for p in sys.argv[1:]]
convs = [k for k in ws[0] if ws[0][k].ndim == 4]
assert convs and len(ws[0]) > 40, ws[0].keys()
for w in ws[1:]:
    diff = [k for k in ws[0] if k not in w or w[k].tobytes() != ws[0][k].tobytes()]
    assert not diff, f"{len(diff)} differ, e.g. {diff[:3]}"
k = convs[1]
fan_in = ws[0][k][0].size
assert abs(ws[0][k].std() * (3 * fan_in) ** 0.5 - 1) < 0.05, (k, ws[0][k].std(), fan_in)
print(f"{len(ws[0])} weights and biases, {k} std {ws[0][k].std():.4f} = 1/sqrt(3 fan_in)")
PYEOF
then
    ok "initial weights bitwise equal across --layout nhwc / --precision bf16 ($(cat "$T/init.out"))"
else
    bad "initial weights differ by layout or precision: $(tail -2 "$T/init.out")"
fi
if diff <(grep '^step' "$T/a.out") <(grep '^step' "$T/b.out") >/dev/null && grep -q '^step 1' "$T/a.out"; then
    ok "training graph and forward model give identical losses"
else
    bad "losses differ: $(grep '^step' "$T/a.out" | tr '\n' ' ') vs $(grep '^step' "$T/b.out" | tr '\n' ' ')"
fi
grep -q '^arena high-water .* capacity' "$T/a.out" && grep -q '^images/s' "$T/a.out" \
  && ok "prints images/s, high-water and capacity" || bad "missing report lines"
"$PY" -c "import onnx,sys; m=onnx.load(sys.argv[1]); onnx.checker.check_model(m); \
assert all(t.raw_data for t in m.graph.initializer if t.data_type == 1)" "$T/trained.onnx" \
  && ok "--save writes a checker-valid model with every weight" || bad "--save output invalid"
# A ScatterND into plan-time zeros at device indices (torch.export's max_unpool2d) under
# --precision bf16: the zeros take the bfloat16 updates' type (as PyTorch makes them), and
# the first loss is the float32 run's within bfloat16's tolerance (refused before 2026-11-30).
U=tests/data/torch2/tiny_unpool_dynamo.onnx
u32=$("$RUN" "$U" --batch 2 --steps 1 2>&1 | awk '/^step 0/ {print $4}')
u16=$("$RUN" "$U" --batch 2 --steps 1 --precision bf16 2>&1 | awk '/^step 0/ {print $4}')
if [ -n "$u32" ] && [ -n "$u16" ] &&
   awk -v a="$u32" -v b="$u16" 'BEGIN { d = (a - b) / a; exit !(d < 1e-2 && d > -1e-2) }'; then
    ok "max_unpool2d trains under --precision bf16 (loss $u16 vs float32 $u32)"
else
    bad "max_unpool2d under --precision bf16: loss '$u16' vs float32 '$u32'"
fi

# expect_error NAME CMD...: exit != 0, exactly one stderr line, no step ran.
expect_error() {
    local name=$1; shift
    "$@" >"$T/o" 2>"$T/e"
    local rc=$?
    if [ $rc -ne 0 ] && [ "$(wc -l <"$T/e")" -eq 1 ] && ! grep -q '^step' "$T/o"; then
        ok "$name: $(cat "$T/e")"
    else
        bad "$name (rc $rc): $(cat "$T/e")"
    fi
}
expect_error "missing file" "$RUN" "$T/nope.onnx" --batch 2
head -c 1000 /dev/urandom >"$T/junk.onnx"
expect_error "not an ONNX model" "$RUN" "$T/junk.onnx" --batch 2
"$PY" -c "import onnx,sys; m=onnx.load(sys.argv[1]); onnx.helper.set_model_props(m, {'outcore.kind': 'plan-v9'}); onnx.save(m, sys.argv[2])" "$M" "$T/kind.onnx"
expect_error "not a training graph" "$RUN" "$T/kind.onnx" --batch 2
expect_error "budget smaller than the layout" "$RUN" "$T/train.onnx" --budget 1MiB
expect_error "batch differs from the emitted one" "$RUN" "$T/train.onnx" --batch 4
expect_error "unknown backend" "$RUN" "$T/train.onnx" --backend tpu
expect_error "an unknown option last" "$RUN" "$T/train.onnx" --frobnicate
grep -q "unknown option '--frobnicate'" "$T/e" && ok "  ... reported as unknown, not as needing a value" ||
    bad "unknown option message: $(cat "$T/e")"
expect_error "a known option without its value" "$RUN" "$T/train.onnx" --lr
grep -q "option --lr needs a value" "$T/e" && ok "  ... reported as needing a value" ||
    bad "missing value message: $(cat "$T/e")"
expect_error "--trace-out with one step (nothing to trace after the warm-up)" "$RUN" "$T/train.onnx" \
    --steps 1 --trace-out "$T/t.json"
# the training options both command lines share (planner/train/train_opts.c)
expect_error "--optimizer adam" "$RUN" "$M" --batch 2 --optimizer adam
expect_error "--betas without a comma" "$RUN" "$M" --batch 2 --optimizer adamw --betas 0.9
expect_error "--betas out of [0, 1)" "$RUN" "$M" --batch 2 --optimizer adamw --betas 0.9,1.5
expect_error "--clip-grad-norm 0" "$RUN" "$M" --batch 2 --clip-grad-norm 0
expect_error "--ignore-index x" "$RUN" "$M" --batch 2 --ignore-index x
expect_error "--attention maybe" "$RUN" "$M" --batch 2 --attention maybe
expect_error "--optimizer on a training graph" "$RUN" "$T/train.onnx" --optimizer adamw
expect_error "--fuse some" "$RUN" "$M" --batch 2 --fuse some
expect_error "--no-fuse on a training graph" "$RUN" "$T/train.onnx" --no-fuse
# a step that computes its own loss (--loss model) takes all its inputs by --input, no labels;
# a step with labels needs them
"$PLAN" emit tests/data/torch2/tiny_nll_loss_legacy.onnx --loss model --batch 2 -o "$T/own.onnx" \
    >/dev/null 2>&1 || bad "emit --loss model"
"$PY" - "$T" <<'PYEOF' || bad "writing the own-loss inputs"
import sys, numpy as np, onnx
from onnx import numpy_helper
r = np.load("tests/data/torch2/tiny_nll_loss.ref.npz")
onnx.save_tensor(numpy_helper.from_array(r["input"], "x"), sys.argv[1] + "/ox.pb")
onnx.save_tensor(numpy_helper.from_array(r["input_1"], "t"), sys.argv[1] + "/ot.pb")
np.save(sys.argv[1] + "/ox.npy", np.concatenate([r["input"]] * 2))
np.save(sys.argv[1] + "/ot.npy", np.concatenate([r["input_1"]] * 2))
PYEOF
"$RUN" "$T/own.onnx" --steps 1 --input "$T/ox.pb,$T/ot.pb" >"$T/own.out" 2>&1 &&
    grep -q "^step 0 loss" "$T/own.out" && ok "a step computing its own loss runs on --input alone" ||
    bad "own-loss step: $(tail -1 "$T/own.out")"
expect_error "--labels to a step computing its own loss" "$RUN" "$T/own.onnx" \
    --input "$T/ox.pb,$T/ot.pb" --labels "$T/ot.pb"
"$RUN" "$T/own.onnx" --data "$T/ox.npy,$T/ot.npy" --epochs 2 >"$T/own_data.out" 2>&1 &&
    [ "$(grep -c '^epoch . train loss' "$T/own_data.out")" = 2 ] &&
    ok "a step computing its own loss trains on --data alone (2 epochs of 2 steps)" ||
    bad "own-loss step on --data: $(tail -1 "$T/own_data.out")"
expect_error "--data and --labels to a step computing its own loss" "$RUN" "$T/own.onnx" \
    --data "$T/ox.npy,$T/ot.npy" --labels "$T/ot.npy"
expect_error "--input without --labels to a step with labels" "$RUN" "$T/train.onnx" \
    --input "$T/ox.pb"
expect_error "--tf32-conv maybe" "$RUN" "$M" --batch 2 --tf32-conv maybe
expect_error "--conv-api v8" "$RUN" "$M" --batch 2 --conv-api v8
expect_error "OC_CUDNN_CONV_API=grph" env OC_CUDNN_CONV_API=grph "$RUN" "$M" --batch 2
expect_error "OC_CUDNN_CONV_ALGO=fastest" env OC_CUDNN_CONV_ALGO=fastest "$RUN" "$M" --batch 2
expect_error "--precision fp8" "$RUN" "$M" --batch 2 --precision fp8
expect_error "--loss-scale 0.5" "$RUN" "$M" --batch 2 --precision fp16 --loss-scale 0.5
expect_error "--loss-scale-interval 0" "$RUN" "$M" --batch 2 --loss-scale-interval 0
expect_error "--precision on a training graph" "$RUN" "$T/train.onnx" --precision bf16
expect_error "--freeze matching no parameter" "$RUN" "$M" --batch 2 --freeze 'nothing.*'
grep -q "'nothing.\*' matches none of the model's" "$T/e" && ok "  ... naming the pattern" ||
    bad "--freeze message: $(cat "$T/e")"
expect_error "--freeze with an empty pattern" "$RUN" "$M" --batch 2 --freeze 'a,,b'
expect_error "--freeze on a training graph" "$RUN" "$T/train.onnx" --freeze '*'
expect_error "--freeze everything" "$RUN" "$M" --batch 2 --freeze '*'
# a bf16 training graph saves the float32 model: autocast's Casts left out, float32 output
"$BUILD/outcore-plan" emit "$M" --batch 2 --precision bf16 -o "$T/bf16.onnx" >/dev/null 2>&1 &&
    "$RUN" "$T/bf16.onnx" --steps 1 --save "$T/bf16_saved.onnx" >/dev/null 2>"$T/e" &&
    "$PY" -c "
import onnx, sys
m = onnx.load(sys.argv[1]); onnx.checker.check_model(m)
sys.exit(any(n.op_type == 'Cast' for n in m.graph.node) or m.graph.output[0].type.tensor_type.elem_type != 1)" \
    "$T/bf16_saved.onnx" && ok "a bf16 training graph --save's the float32 model (no Cast)" ||
    bad "bf16 training graph --save: $(cat "$T/e")"
# a model whose own names are those the training graph derives ("w/momentum", "x/bf16",
# "labels"): once an internal error (an assertion), now trained with the derived ones renamed
"$PY" - "$T" <<'PYEOF'
import sys
import onnx
from onnx import helper, TensorProto
x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])
y = helper.make_tensor_value_info("labels", TensorProto.FLOAT, [2, 3])
w = helper.make_tensor("w", TensorProto.FLOAT, [3, 4], [0.1] * 12)
nodes = [helper.make_node("Gemm", ["x", "w"], ["w/momentum"], transB=1, name="g"),
         helper.make_node("Relu", ["w/momentum"], ["x/bf16"], name="r"),
         helper.make_node("Relu", ["x/bf16"], ["labels"], name="r2")]
m = helper.make_model(helper.make_graph(nodes, "clash", [x], [y], [w]),
                      opset_imports=[helper.make_opsetid("", 13)])
onnx.save(m, sys.argv[1] + "/clash.onnx")
PYEOF
for pr in fp32 bf16; do
    "$RUN" "$T/clash.onnx" --batch 2 --steps 2 --precision $pr >"$T/o" 2>"$T/e" && grep -q "^step 1" "$T/o" &&
        ok "model names clashing with derived ones (--precision $pr): trains" ||
        bad "clashing names, --precision $pr: $(tail -2 "$T/e")"
done
expect_error "--tf32-matmul without a value" "$RUN" "$M" --batch 2 --tf32-matmul
expect_error "--cuda-graph sometimes" "$RUN" "$M" --batch 2 --cuda-graph sometimes
expect_error "--cuda-graph on with --trace-out" "$RUN" "$T/train.onnx" --steps 2 --cuda-graph on \
    --trace-out "$T/t.json"
"$RUN" "$T/train.onnx" --steps 2 --cuda-graph on >"$T/o" 2>"$T/e" && grep -q "^step 1" "$T/o" &&
    grep -q "graph: the cpu backend has no graphs" "$T/e" &&
    ok "--cuda-graph on, cpu backend: runs on its streams, said once" ||
    bad "--cuda-graph on on cpu: $(cat "$T/e")"
# a trace that cannot be written: the steps run, then one error naming the path, non-zero exit
"$RUN" "$T/train.onnx" --steps 2 --trace-out "$T/no/such/dir/t.json" >"$T/o" 2>"$T/e"
rc=$?
if [ $rc -ne 0 ] && [ "$(wc -l <"$T/e")" -eq 1 ] && grep -q "no/such/dir/t.json" "$T/e"; then
    ok "unwritable --trace-out: $(cat "$T/e")"
else
    bad "unwritable --trace-out (rc $rc): $(cat "$T/e")"
fi
grep -q "does not fit" <("$RUN" "$T/train.onnx" --budget 1MiB 2>&1) \
  && ok "budget error names the tensor that does not fit" || bad "budget error message"

# A tiny GPT exported at opset 17 (tanh GELU decomposed: ONNX has Gelu from opset 20): trained
# as one ai.outcore Gelu per block, the emitted training graph passes onnx.checker and runs;
# the losses equal --no-fuse's to 1e-5; --save writes the GELU back decomposed (standard ONNX
# at opset 17), which reloads, fuses again and saves the same nodes under the same names.
G="$T/tiny_gpt_range.onnx"
"$PY" tools/export_models.py --models tiny_gpt_range --out "$T" >/dev/null 2>&1 || bad "export tiny_gpt_range"
"$BUILD/outcore-plan" emit "$G" --batch 2 -o "$T/gelu_train.onnx" >/dev/null 2>"$T/e" &&
    grep -q "2 GELU chains fused (Gelu)" "$T/e" && "$RUN" "$T/gelu_train.onnx" --steps 2 >"$T/o" 2>&1 &&
    grep -q "^step 1" "$T/o" && "$PY" -c "
import onnx, sys
m = onnx.load(sys.argv[1]); onnx.checker.check_model(m)
g = [n for n in m.graph.node if n.op_type == 'Gelu']
sys.exit(len(g) != 2 or any(n.domain != 'ai.outcore' for n in g) or
         any(n.op_type == 'Tanh' for n in m.graph.node))" "$T/gelu_train.onnx" &&
    ok "decomposed GELU (opset 17): 2 ai.outcore Gelu nodes in the training graph, which runs" ||
    bad "decomposed GELU training graph: $(cat "$T/e") $(tail -2 "$T/o")"
for f in fused no-fuse; do
    args=(); [ $f = fused ] || args=(--no-fuse)
    "$RUN" "$G" --batch 2 --steps 3 --seed 3 --lr 0.001 "${args[@]}" --save "$T/gelu_$f.onnx" \
        >"$T/gelu_$f.out" 2>&1 || bad "tiny GPT $f: $(tail -2 "$T/gelu_$f.out")"
done
# (the reloaded model trains 3 steps: the constants the exporter wrote as Constant nodes — the
# LayerNorms' epsilon, the attention scale, the mask's fill — are saved as Constant nodes again;
# saved as initializers they loaded as parameters and the loss was NaN at step 1)
"$RUN" "$T/gelu_fused.onnx" --batch 2 --steps 3 --lr 0.001 --save "$T/gelu_again.onnx" >"$T/o" 2>"$T/e"
if grep -q "2 GELU chains fused" "$T/e" && grep -q "^step 2 loss [0-9]" "$T/o" && "$PY" - "$T" "$G" <<'PYEOF'; then
import re, sys
import onnx
t = sys.argv[1]
first = {i.name for i in onnx.load(sys.argv[2]).graph.initializer}
extra = [i.name for i in onnx.load(f"{t}/gelu_fused.onnx").graph.initializer  # float ones
         if i.data_type in (1, 10, 16) and i.name not in first and not i.name.endswith("/momentum")]
assert not extra, f"float initializers the exported model did not have: {extra}"
loss = [[float(v) for v in re.findall(r"^step \d+ loss (\S+)$", open(f"{t}/gelu_{f}.out").read(), re.M)]
        for f in ("fused", "no-fuse")]
assert len(loss[0]) == 3 and all(abs(a - b) <= 1e-5 for a, b in zip(*loss)), loss
saved, again = (onnx.load(f"{t}/gelu_{f}.onnx") for f in ("fused", "again"))
for m in (saved, again):
    onnx.checker.check_model(m, full_check=True)
    assert [(o.domain, o.version) for o in m.opset_import] == [("", 17)], m.opset_import
ops = [n.op_type for n in saved.graph.node]
assert "Gelu" not in ops and ops.count("Tanh") == 2, ops
nodes = lambda m: [(n.name, n.op_type, list(n.input), list(n.output)) for n in m.graph.node]
assert nodes(saved) == nodes(again), "the reloaded model saves other nodes"
PYEOF
    ok "decomposed GELU: losses as --no-fuse's; --save writes it decomposed, reload fuses and saves the same"
else
    bad "decomposed GELU --save round trip: $(cat "$T/e") $(tail -2 "$T/o")"
fi

# --layout auto (the default): with a device's figures (--device, or the GPU's own preset by
# name) the step is built in both layouts and the faster kept: the same choice as
# `outcore-plan plan --layout auto` in core, and then the same step as --layout L gives
# (bitwise losses). On the cpu (no device name) the model's own layout, no notice.
layout_ok=1
for spec in resnet18_op13:2:h100 vgg16_op13:2:h100 resnet18_op13:2:v100 mobilenet_v2_op13:2:h200; do
    IFS=: read -r m b dev <<<"$spec"
    "$RUN" graphs/$m.onnx --batch $b --steps 2 --device $dev >"$T/la.out" 2>"$T/la.err"
    run_pick=$(sed -n 's/.*--layout auto: \(n[a-z]*\) (predicted in-core step on .*/\1/p' "$T/la.err")
    plan_pick=$("$PLAN" plan graphs/$m.onnx --batch $b --device $dev --budget 1TB --fuse all \
                --json 2>/dev/null | sed -n 's/.*"layout": "\([a-z]*\)".*/\1/p')
    "$RUN" graphs/$m.onnx --batch $b --steps 2 --layout "${run_pick:-none}" 2>/dev/null >"$T/lf.out"
    if [ -z "$run_pick" ] || [ "$run_pick" != "$plan_pick" ] ||
       ! cmp -s <(grep '^step' "$T/la.out") <(grep '^step' "$T/lf.out") ||
       [ "$(grep -c '^step' "$T/la.out")" -ne 2 ]; then
        bad "--layout auto $m b$b $dev: run '$run_pick', plan '$plan_pick' $(tail -1 "$T/la.err")"
        layout_ok=0
    else
        picks="${picks:-}$m/$dev:$run_pick "
    fi
done
"$RUN" graphs/vgg16_op13.onnx --batch 2 --steps 1 >/dev/null 2>"$T/la.err"
if grep -q "layout" "$T/la.err"; then
    bad "--layout auto on the cpu without --device: $(cat "$T/la.err")"
elif [ $layout_ok = 1 ]; then
    ok "--layout auto weighs with the device's figures as outcore-plan does ($picks), the same steps as --layout L; nchw on the cpu"
fi
printf '{"device": {"name": "slow-nchw", "memory_bytes": 1e10, "h2d_bytes_per_s": 1e10,
  "d2h_bytes_per_s": 1e10, "duplex": true, "copy_latency_s": 0, "peak_flops": 1e13,
  "mem_bandwidth_bytes_per_s": 1e12, "launch_overhead_s": 0, "conv_nchw_slowdown": 9}}' \
    >"$T/dev.json"
"$RUN" graphs/resnet18_op13.onnx --batch 2 --device-file "$T/dev.json" >/dev/null 2>"$T/la.err"
grep -q -- "--layout auto: nhwc (predicted in-core step on $T/dev.json" "$T/la.err" &&
    ok "--device-file: its conv_nchw_slowdown makes resnet18 b2 channels-last" ||
    bad "--device-file: $(cat "$T/la.err")"
expect_error "--device unknown" "$RUN" graphs/resnet18_op13.onnx --batch 2 --device b200
expect_error "--device with a fixed --layout" "$RUN" graphs/resnet18_op13.onnx --batch 2 \
    --device h100 --layout nchw
expect_error "--device on a training graph" "$RUN" "$T/r18.onnx" --device h100
expect_error "--device-file missing" "$RUN" graphs/resnet18_op13.onnx --batch 2 \
    --device-file "$T/none.json"
[ $fails -eq 0 ]
