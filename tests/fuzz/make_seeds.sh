#!/usr/bin/env bash
# make_seeds.sh OUT — the fuzz targets' seed inputs, made by this build's
# outcore-plan from the bundled graphs and a tiny CNN (tiny_model.py):
#   OUT/import/   models: the bundled graphs, the tiny CNN, ONNX node tests and
#                 outcore's own (tests/data/node: Einsum, Col2Im, Tile, ..)
#   OUT/profile/  profiles: analytic ones on each device preset
#   OUT/plan/     plans of the tiny CNN (every strategy, budgets from in-core
#                 down) and its training graph; RoBERTa's (host inputs)
#   OUT/cli/      command lines (NUL-separated; first byte 0: outcore-plan,
#                 1: outcore-run)
#   OUT/tensor/   TensorProto files (raw and typed data, float and int64)
#   OUT/npy/      pairs of NumPy arrays, data and labels (format 1 and 2; float32,
#                 int64, int32, float64)
#   OUT/fixtures/ fuzz_cli's scratch files: m.onnx p.json plan.onnx t.onnx dev.json
set -eu
OUT=$1
BUILD=${BUILD:-build}
PY=${PY:-/usr/bin/python3}
PLAN="$BUILD/outcore-plan"
rm -rf "$OUT" && mkdir -p "$OUT"/{import,profile,plan,cli,tensor,npy,fixtures}
F="$OUT/fixtures"
"$PY" tests/fuzz/tiny_model.py "$F/m.onnx"
cp graphs/*_op13.onnx "$F/m.onnx" tests/data/torch2/*.onnx "$OUT/import/"
"$PY" - "$OUT/npy" <<'PY'
import sys
import numpy as np
from numpy.lib import format as npf
d = sys.argv[1]
def pair(name, x, y):  # fuzz_npy's input: len(x) (2 bytes), x, y
    with open(f"{d}/{name}", "wb") as f:
        f.write(len(x).to_bytes(2, "little") + x + y)
def npy(a, version=None):
    import io
    b = io.BytesIO()
    npf.write_array(b, a, version=version)
    return b.getvalue()
x = np.arange(48, dtype=np.float32).reshape(4, 3, 2, 2) / 7
pair("v1", npy(x), npy(np.array([0, 3, 1, 2], np.int64)))
pair("v2_int32", npy(x, (2, 0)), npy(np.array([1, 0, 2, 3], np.int32), (2, 0)))
pair("float64", npy(x.astype(np.float64)), npy(np.array([0, 1, 1, 0], np.int64)))
pair("labels_2d", npy(x), npy(np.zeros((4, 1), np.int64)))
PY
for t in /usr/share/libonnx-testdata/data/node/test_{conv,relu,maxpool,averagepool,batchnorm,gemm,concat,flatten,reshape,add,sigmoid,dropout,pad,gather,clip,softmax,mul,sub,unsqueeze,squeeze,einsum,scatternd,max_,min_,tile,scatter_elements,reduce_max,reduce_min}*/model.onnx \
    tests/data/node/test_*/model.onnx; do
    [ -f "$t" ] && cp "$t" "$OUT/import/$(basename "$(dirname "$t")").onnx"
done
for d in v100 a100 h100 h200; do
    "$PLAN" profile "$F/m.onnx" --batch 2 --device $d -o "$OUT/profile/tiny_$d.json" >/dev/null
    "$PLAN" profile graphs/alexnet_op13.onnx --batch 2 --device $d -o "$OUT/profile/alexnet_$d.json" >/dev/null
done
cp "$OUT/profile/tiny_v100.json" "$F/p.json"
# alternatives (profile --merge): each node's time at the workspaces of two caps
"$PY" - "$OUT/profile/tiny_v100.json" "$F/p_ws.json" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
for i, n in enumerate(p["nodes"]):
    n["time_s"] *= 0.5 if i % 2 else 1
    n["workspace_bytes"] = 4096 * (i % 3)
json.dump(p, open(sys.argv[2], "w"))
PY
"$PLAN" profile --merge "$F/p.json" "$F/p_ws.json" -o "$OUT/profile/tiny_merged.json" >/dev/null
cp "$OUT/profile/tiny_merged.json" "$F/pm.json"
"$PY" -c "import json,sys; print(json.dumps(json.load(open(sys.argv[1]))['device']))" \
    "$F/p.json" >"$F/dev.json"
peak=$("$PLAN" plan "$F/m.onnx" --batch 2 --device v100 --budget 1TB --strategy incore --json |
       sed -n 's/.*"peak_bytes": \([0-9]*\).*/\1/p')
for s in incore swap-all vdnn-conv superneurons hybrid chen dp dp-swap; do
    for pct in 200 110 90 75; do
        "$PLAN" plan "$F/m.onnx" --batch 2 --device v100 --budget $((peak * pct / 100)) \
            --strategy $s -o "$OUT/plan/${s}_$pct.onnx" >/dev/null 2>&1 || true
    done
done
"$PLAN" emit "$F/m.onnx" --batch 2 -o "$OUT/plan/training.onnx" >/dev/null
# mixed precision: half tensors, autocast's Casts, GradScaler and its in-place state
"$PLAN" emit "$F/m.onnx" --batch 2 --precision fp16 --clip-grad-norm 1 -o "$OUT/plan/fp16.onnx" >/dev/null
# multi-tensor AdamW updates with their step counts (fp16 loss scaling) and the SGD groups of
# each forward node's parameters (op_update.h)
"$PLAN" emit "$F/m.onnx" --batch 2 --precision fp16 --optimizer adamw -o "$OUT/plan/adamw_fp16.onnx" >/dev/null
"$PLAN" plan "$F/m.onnx" --batch 2 --precision bf16 --device v100 --budget $((peak * 90 / 100)) \
    --strategy swap-all -o "$OUT/plan/bf16_swap.onnx" >/dev/null 2>&1 || true
# channels-last: layout Transposes, the layout in metadata outcore.channels_last
"$PLAN" emit "$F/m.onnx" --batch 2 --layout nhwc -o "$OUT/plan/nhwc.onnx" >/dev/null
"$PLAN" plan "$F/m.onnx" --batch 2 --layout nhwc --device v100 --budget $((peak * 90 / 100)) \
    --strategy hybrid -o "$OUT/plan/nhwc_hybrid.onnx" >/dev/null 2>&1 || true
# host inputs (ir/host_inputs.h): RoBERTa's position ids from its token ids, the function
# ai.outcore.HostInputs beside the graph inputs it computes
R=tests/data/torch2/tiny_hf_roberta_legacy.onnx
"$PLAN" emit "$R" --batch 2 -o "$OUT/plan/host_inputs.onnx" >/dev/null
"$PLAN" plan "$R" --batch 2 --device v100 --budget 250KiB --strategy hybrid \
    -o "$OUT/plan/host_inputs_hybrid.onnx" >/dev/null 2>&1 || true
cp "$OUT/plan/nhwc.onnx" "$OUT/import/"
cp "$OUT/plan/training.onnx" "$F/t.onnx"
cp "$OUT/plan/swap-all_110.onnx" "$F/plan.onnx"
# Command lines: program byte, then NUL-separated arguments.
i=0
cli() {
    local prog=$1; shift
    { printf "\\x$prog"; printf '%s\0' "$@"; } >"$OUT/cli/$i"
    i=$((i + 1))
}
cli 00 inspect m.onnx --batch 2 --training
cli 00 dot m.onnx --batch 2 --training
cli 00 profile m.onnx --batch 2 --device v100 -o q.json
cli 00 simulate m.onnx --batch 2 --profile p.json --plan swap-all
cli 00 plan m.onnx --batch 2 --device-file dev.json --budget 200KiB --strategy hybrid -o out.onnx --trace t.json --svg s.svg
cli 00 plan m.onnx --batch 4 --profile p.json --budget 1MiB --reserve 1KiB --strategy dp --json
cli 00 compare m.onnx --batch 2 --device h100 --budget 300000 --max-seconds 1
cli 00 emit m.onnx --batch 2 --loss softmax-ce --lr 0.01 --momentum 0.5 --weight-decay 0 -o e.onnx
cli 00 show plan.onnx --trace t.json --svg s.svg
cli 00 show t.onnx
cli 00 plan m.onnx --dim N=3 --device a100 --strategy auto
cli 00 inspect m.onnx --batch 2 --training --json --precision bf16
cli 00 plan m.onnx --batch 2 --layout nhwc --device v100 --budget 300KiB -o out.onnx
cli 00 plan m.onnx --batch 2 --device h100 --budget 300KiB --layout auto -o out.onnx
cli 00 profile m.onnx --batch 2 --device h100 --layout nhwc -o q.json
cli 00 plan m.onnx --batch 2 --profile p.json --profile q.json --budget 300KiB
cli 00 profile --merge p.json pm.json -o q.json
cli 00 plan m.onnx --batch 2 --profile pm.json --budget 300KiB --workspace auto -o out.onnx --json
cli 00 compare m.onnx --batch 2 --profile pm.json --budget 300KiB --workspace 4KiB
cli 01 m.onnx --batch 2 --precision fp16 --loss-scale 3e38 --loss-scale-interval 1 --steps 3
cli 01 plan.onnx --backend cpu --steps 2 --budget 1MiB --seed 3 --lr 0.1
cli 01 m.onnx --batch 2 --input x.pb --labels y.pb --save s.onnx --dump-grads d
cli 01 t.onnx --backend cuda --deterministic --workspace-limit 1GiB --verbose-algos --profile-out p.json --steps 4
"$PY" - "$OUT/tensor" <<'PYEOF'
import sys
import numpy as np
from onnx import numpy_helper, helper, TensorProto
d = sys.argv[1]
x = np.random.default_rng(0).standard_normal((2, 3, 8, 8)).astype(np.float32)
open(f"{d}/x_raw.pb", "wb").write(numpy_helper.from_array(x, "input").SerializeToString())
open(f"{d}/y_raw.pb", "wb").write(numpy_helper.from_array(np.array([1, 7], np.int64), "labels").SerializeToString())
t = helper.make_tensor("input", TensorProto.FLOAT, [2, 3, 8, 8], x.ravel().tolist())
open(f"{d}/x_typed.pb", "wb").write(t.SerializeToString())
t = helper.make_tensor("labels", TensorProto.INT64, [2], [3, 4])
open(f"{d}/y_typed.pb", "wb").write(t.SerializeToString())
PYEOF
echo "seeds: $(ls "$OUT/import" | wc -l) models, $(ls "$OUT/profile" | wc -l) profiles, $(ls "$OUT/plan" | wc -l) plans, $i command lines"
