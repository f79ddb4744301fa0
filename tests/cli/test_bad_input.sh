#!/usr/bin/env bash
# test_bad_input.sh — outcore-plan on bad input: every case must exit non-zero
# with exactly one line on stderr that names the problem, print nothing on
# stdout, and trip no sanitizer. Also: --help exits 0, and inspect --json is
# well-formed with the keys build pipelines read.
# Run from the repository root; BUILD names the build dir (build or build-san).
set -u
BUILD=${BUILD:-build}
PY=${PY:-/usr/bin/python3}
PLAN="$BUILD/outcore-plan"
MODEL=graphs/resnet50_op13.onnx

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0

ok() { echo "ok - $1"; }
not_ok() { echo "not ok - $1: $2"; failures=$((failures + 1)); }

# expect_error CASE PATTERN... -- ARGS...: runs outcore-plan ARGS and checks the
# error contract; each PATTERN must occur (fixed string) in the stderr line.
expect_error() {
    local name=$1; shift
    local patterns=()
    while [ "$1" != "--" ]; do patterns+=("$1"); shift; done
    shift
    "$PLAN" "$@" >"$tmp/out" 2>"$tmp/err"
    local rc=$?
    local lines; lines=$(wc -l <"$tmp/err")
    local err; err=$(cat "$tmp/err")
    if [ "$rc" -eq 0 ]; then not_ok "$name" "exit status 0"; return; fi
    if [ "$rc" -ge 128 ]; then not_ok "$name" "killed by signal (status $rc): $err"; return; fi
    if grep -qE 'runtime error|AddressSanitizer|LeakSanitizer' "$tmp/err"; then
        not_ok "$name" "sanitizer report: $err"; return
    fi
    if [ "$lines" -ne 1 ]; then not_ok "$name" "stderr has $lines lines: $err"; return; fi
    if [ -s "$tmp/out" ]; then
        not_ok "$name" "stdout not empty: $(head -c 200 "$tmp/out")"; return
    fi
    for p in "${patterns[@]}"; do
        if ! grep -qF -- "$p" "$tmp/err"; then not_ok "$name" "'$p' not in: $err"; return; fi
    done
    ok "$name"
}

# ---- inputs ----
head -c $(( $(stat -c %s "$MODEL") / 2 )) "$MODEL" >"$tmp/truncated.onnx"
mkfifo "$tmp/fifo"
"$PY" -c 'import random, sys
random.seed(7)  # the same 4 KiB every run
sys.stdout.buffer.write(bytes(random.getrandbits(8) for _ in range(4096)))' >"$tmp/random.onnx"
"$PY" - "$tmp" <<'EOF' || { echo "not ok - making ONNX inputs with $PY"; exit 1; }
import sys
from onnx import TensorProto, helper, save
out = sys.argv[1]
def model(node, dims):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, dims)
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    g = helper.make_graph([node], "g", [x], [y])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
save(model(helper.make_node("Hardmax", ["x"], ["y"], name="my_hardmax"), ["batch", 4]),
     out + "/hardmax.onnx")
save(model(helper.make_node("Relu", ["x"], ["y"], name="relu"), ["batch", 3, "height", 8]),
     out + "/height.onnx")
# a project-domain backward op in a user's model (only plans may hold them)
m = model(helper.make_node("ReluGrad", ["x", "x"], ["y"], name="sneaky", domain="ai.outcore"),
          ["batch", 4])
m.opset_import.append(helper.make_opsetid("ai.outcore", 1))
save(m, out + "/project_op.onnx")
# a Loop carrying the attribute outcore's own unrolling keeps its state in
body = helper.make_graph([helper.make_node("Identity", ["c"], ["c_out"]),
                          helper.make_node("Identity", ["v"], ["v_out"])], "body",
                         [helper.make_tensor_value_info("i", TensorProto.INT64, []),
                          helper.make_tensor_value_info("c", TensorProto.BOOL, []),
                          helper.make_tensor_value_info("v", TensorProto.FLOAT, None)],
                         [helper.make_tensor_value_info("c_out", TensorProto.BOOL, []),
                          helper.make_tensor_value_info("v_out", TensorProto.FLOAT, None)])
m = model(helper.make_node("Loop", ["m", "", "x"], ["y"], name="looped", body=body,
                           outcore_iterations=3), ["batch", 4])
m.graph.initializer.append(helper.make_tensor("m", TensorProto.INT64, [], [2]))
save(m, out + "/loop_state.onnx")
# a node name with a newline and an escape sequence (an unsupported op, so the name is echoed)
save(model(helper.make_node("Hardmax", ["x"], ["y"], name="evil\nname\x1b[31m"), ["batch", 4]),
     out + "/control_name.onnx")
# the same graph input listed twice
m = model(helper.make_node("Relu", ["x"], ["y"], name="relu"), ["batch", 4])
m.graph.input.append(m.graph.input[0])
save(m, out + "/dup_input.onnx")
# a Gather whose constant index lies outside its axis
from onnx import numpy_helper
import numpy as np
m = model(helper.make_node("Gather", ["x", "i"], ["y"], name="pick", axis=1), ["batch", 4])
m.graph.initializer.append(numpy_helper.from_array(np.array([2**40], np.int64), "i"))
save(m, out + "/gather_range.onnx")
EOF

# ---- bad input ----
expect_error "missing file" "$tmp/missing.onnx" -- inspect "$tmp/missing.onnx" --batch 2
expect_error "truncated model" "$tmp/truncated.onnx" -- inspect "$tmp/truncated.onnx" --batch 2
expect_error "random bytes" "$tmp/random.onnx" -- inspect "$tmp/random.onnx" --batch 2
expect_error "unsupported op" "$tmp/hardmax.onnx" "my_hardmax" "Hardmax" "opset 13" "Conv" \
    -- inspect "$tmp/hardmax.onnx" --batch 2
expect_error "ai.outcore op in a model" "'sneaky'" "ReluGrad" "ai.outcore" \
    -- inspect "$tmp/project_op.onnx" --batch 2
"$BUILD/outcore-run" "$tmp/project_op.onnx" --batch 2 --steps 1 >"$tmp/out" 2>"$tmp/err"
if [ $? -ne 0 ] && grep -q "'sneaky'.*ai.outcore" "$tmp/err"; then
    ok "outcore-run refuses an ai.outcore op in a model"
else
    not_ok "outcore-run refuses an ai.outcore op in a model" "$(cat "$tmp/err")"
fi
expect_error "a Loop setting outcore's own attribute" "'looped'" "outcore_iterations" \
    -- inspect "$tmp/loop_state.onnx" --batch 2
expect_error "control bytes in a name are escaped" 'evil\x0aname\x1b[31m' \
    -- inspect "$tmp/control_name.onnx" --batch 2
"$BUILD/outcore-run" "$tmp/control_name.onnx" --batch 2 --steps 1 >/dev/null 2>"$tmp/err"
if [ "$(wc -l <"$tmp/err")" -eq 1 ] && grep -qF 'evil\x0aname\x1b[31m' "$tmp/err" &&
   ! grep -q $'\x1b' "$tmp/err"; then
    ok "outcore-run escapes control bytes in a name"
else
    not_ok "outcore-run escapes control bytes in a name" "$(cat -v "$tmp/err")"
fi
expect_error "graph input listed twice" "'x'" "twice" -- inspect "$tmp/dup_input.onnx" --batch 2
expect_error "Gather index out of range" "'pick'" "1099511627776" "out of range" \
    -- inspect "$tmp/gather_range.onnx" --batch 2
expect_error "unbound dim" "$tmp/height.onnx" "'height'" "dim 2" "'x'" \
    -- inspect "$tmp/height.onnx" --batch 2
expect_error "a directory as the model" "$tmp" "not a regular file (a directory)" \
    -- inspect "$tmp" --batch 2
expect_error "a FIFO as the model" "$tmp/fifo" "not a regular file" -- inspect "$tmp/fifo" --batch 2
SMALL=graphs/resnet18_op13.onnx
for b in 0 0.5 0.3KiB nan -1; do
    expect_error "--budget $b" "--budget" "'$b'" \
        -- plan "$SMALL" --batch 2 --device v100 --budget "$b" -o "$tmp/never.onnx"
done
expect_error "--budget 0 (simulate)" "--budget" "'0'" \
    -- simulate "$SMALL" --batch 2 --device v100 --budget 0
for s in nan inf 0 -3 abc; do
    expect_error "--max-seconds $s" "--max-seconds" "'$s'" \
        -- plan "$SMALL" --batch 2 --device v100 --budget 1GiB --max-seconds "$s" -o "$tmp/never.onnx"
done
[ -e "$tmp/never.onnx" ] && not_ok "refused plans write nothing" "$tmp/never.onnx exists"
expect_error "--batch 0" "--batch" "0" -- inspect "$MODEL" --batch 0
expect_error "--batch -3" "--batch" "-3" -- inspect "$MODEL" --batch -3
expect_error "--batch 99999999999" "--batch" "99999999999" -- inspect "$MODEL" --batch 99999999999
expect_error "--batch abc" "--batch" "abc" -- inspect "$MODEL" --batch abc
expect_error "--batch without value" "--batch" -- inspect "$MODEL" --batch
expect_error "unknown option" "--frobnicate" -- inspect "$MODEL" --frobnicate
expect_error "--dim without =" "--dim" "height" "NAME=VALUE" -- inspect "$MODEL" --dim height
expect_error "--dim unknown name" "'depth'" -- inspect "$MODEL" --batch 2 --dim depth=3
expect_error "unknown command" "frobnicate" -- frobnicate

# ---- help ----
for args in "--help" "inspect --help"; do
    # shellcheck disable=SC2086
    if "$PLAN" $args >"$tmp/out" 2>"$tmp/err" && [ -s "$tmp/out" ] && [ ! -s "$tmp/err" ]; then
        ok "$args"
    else
        not_ok "$args" "non-zero exit, empty stdout or stderr output"
    fi
done

# ---- inspect --json ----
check_json() {
    local model=$1 want_params=$2
    if ! "$PLAN" inspect "$model" --batch 640 --json >"$tmp/json" 2>"$tmp/err"; then
        not_ok "inspect --json $model" "$(cat "$tmp/err")"; return
    fi
    if "$PY" -c '
import json, sys
d = json.load(sys.stdin)
want_params = int(sys.argv[1])
assert d["batch"] == 640, d["batch"]
ts = d["tensors"]
assert len(ts) > 100, len(ts)
for t in ts:
    assert isinstance(t["name"], str) and t["name"], t
    assert all(isinstance(v, int) and v > 0 for v in t["shape"]), t
    assert isinstance(t["bytes"], int) and t["bytes"] >= 0, t
    assert t["kind"] in ("input", "parameter", "state", "constant", "activation"), t
out = [t for t in ts if t["name"] == "output"]
assert out and out[0]["shape"] == [640, 1000], out
assert out[0]["bytes"] == 640 * 1000 * 4, out
tot = d["totals"]
assert tot["parameter_bytes"] == 4 * want_params, tot
assert tot["parameter_count"] == want_params, tot
assert tot["activation_bytes"] > 0, tot
assert tot["activation_bytes"] == sum(t["bytes"] for t in ts if t["kind"] == "activation")
' "$want_params" <"$tmp/json" 2>"$tmp/err"; then
        ok "inspect --json $model"
    else
        not_ok "inspect --json $model" "$(tail -n 3 "$tmp/err")"
    fi
}
# Sizes past the limits of planner/ir/ir.h: one tensor over 256 TiB, and a
# chain whose tensors add up to more than 1 EiB (sums would approach int64's limit).
"$PY" - "$tmp" <<'PYEOF'
import sys, onnx
from onnx import helper, TensorProto
d = sys.argv[1]
def chain(name, width, n):
    nodes = [helper.make_node("Relu", [f"t{i}"], [f"t{i+1}"], name=f"r{i}") for i in range(n)]
    nodes[0].input[0] = "x"
    g = helper.make_graph(nodes, name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", width])],
                          [helper.make_tensor_value_info(f"t{n}", TensorProto.FLOAT, ["N", width])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 7
    onnx.save(m, f"{d}/{name}.onnx")
chain("huge_tensor", 1 << 26, 1)
chain("huge_total", 1 << 20, 20000)
PYEOF
expect_error "one tensor over 256 TiB" "'t1'" "larger than 281474976710656 bytes" -- \
    inspect "$tmp/huge_tensor.onnx" --batch 16777216
expect_error "tensors adding up to over 1 EiB" "add up to more than 1152921504606846976 bytes" -- \
    inspect "$tmp/huge_total.onnx" --batch 16777216

# IR versions this build was not written for (999 was read as if it were 8).
"$PY" -c "
import onnx, sys
m = onnx.load('graphs/alexnet_op13.onnx')
for v in (999, 0, 2):
    m.ir_version = v
    onnx.save(m, f'{sys.argv[1]}/ir{v}.onnx')" "$tmp"
for v in 999 0 2; do
    expect_error "ONNX IR version $v" "$tmp/ir$v.onnx" "IR version $v" "3 to 12" -- \
        inspect "$tmp/ir$v.onnx" --batch 2
done

# Channels-last metadata (outcore.channels_last, written by onnx_export for --layout nhwc)
# naming no node, a node without a channel axis, or a Conv whose tensors are not channels-last.
"$PY" - "$tmp" <<'PYEOF'
import onnx, sys
m = onnx.load('graphs/alexnet_op13.onnx')
names = {n.op_type: n.name for n in m.graph.node}
for tag, value in (("nonode", "no/such/node"), ("gemm", names["Gemm"]), ("nchw", names["Conv"])):
    e = m.metadata_props.add()
    e.key, e.value = "outcore.channels_last", value
    onnx.save(m, f"{sys.argv[1]}/cl_{tag}.onnx")
    del m.metadata_props[-1]
PYEOF
expect_error "channels-last metadata naming no node" "cl_nonode.onnx" "no/such/node" \
    "no node of the graph" -- inspect "$tmp/cl_nonode.onnx" --batch 2
expect_error "channels-last metadata naming a Gemm" "cl_gemm.onnx" "does not read a channel axis" \
    -- inspect "$tmp/cl_gemm.onnx" --batch 2
expect_error "channels-last metadata naming an (N, C, H, W) Conv" "(Conv" "channels do not match" \
    -- inspect "$tmp/cl_nchw.onnx" --batch 2
expect_error "--layout with an unknown value" "--layout" "nchw, nhwc" -- \
    emit graphs/alexnet_op13.onnx --batch 2 --layout chwn -o "$tmp/never.onnx"
"$PLAN" profile graphs/alexnet_op13.onnx --batch 2 --device v100 --layout nhwc \
    -o "$tmp/p_nhwc.json" >/dev/null 2>&1
expect_error "a profile of the other --layout" "p_nhwc.json" "outcore/layout/" \
    "measured with another --layout" -- \
    plan graphs/alexnet_op13.onnx --batch 2 --profile "$tmp/p_nhwc.json" --budget 1GiB \
    --layout nchw
# --layout auto takes a second profile, the other layout's: not one of the same layout, not
# with a fixed layout, not a third.
expect_error "two profiles of one layout" "p_nhwc.json" "both of channels-last steps" -- \
    plan graphs/alexnet_op13.onnx --batch 2 --profile "$tmp/p_nhwc.json" --profile "$tmp/p_nhwc.json"
expect_error "two profiles and a fixed layout" "--layout auto" "one per layout" -- \
    plan graphs/alexnet_op13.onnx --batch 2 --profile "$tmp/p_nhwc.json" --layout nhwc \
    --profile "$tmp/p_nhwc.json"
expect_error "three profiles" "--profile" "at most two" -- \
    plan graphs/alexnet_op13.onnx --batch 2 --profile "$tmp/p_nhwc.json" \
    --profile "$tmp/p_nhwc.json" --profile "$tmp/p_nhwc.json"

# Profiles and device files with values no device has (issue 18, class 7).
"$PLAN" profile graphs/alexnet_op13.onnx --batch 2 --device v100 -o "$tmp/p.json" >/dev/null
"$PY" - "$tmp" <<'PYEOF'
import json, sys
d = sys.argv[1]
base = json.load(open(f"{d}/p.json"))
def edit(name, f):
    p = json.loads(json.dumps(base))
    f(p)
    json.dump(p, open(f"{d}/{name}.json", "w"))
    json.dump({"device": p["device"]}, open(f"{d}/{name}.dev.json", "w"))
edit("mem_huge", lambda p: p["device"].__setitem__("memory_bytes", 1e30))
edit("mem_frac", lambda p: p["device"].__setitem__("memory_bytes", 1000.5))
edit("neg_time", lambda p: p["nodes"][0].__setitem__("time_s", -1))
edit("neg_latency", lambda p: p["device"].__setitem__("copy_latency_s", -1e-6))
PYEOF
for f in mem_huge mem_frac; do
    expect_error "profile: memory_bytes $f" "$tmp/$f.json" "memory_bytes" -- \
        plan graphs/alexnet_op13.onnx --batch 2 --profile "$tmp/$f.json"
    expect_error "device file: memory_bytes $f" "memory_bytes" -- \
        plan graphs/alexnet_op13.onnx --batch 2 --device-file "$tmp/$f.dev.json"
done
expect_error "profile: a negative node time" "$tmp/neg_time.json" "time_s" -- \
    plan graphs/alexnet_op13.onnx --batch 2 --profile "$tmp/neg_time.json"
expect_error "profile: a negative copy latency" "$tmp/neg_latency.json" "copy_latency_s" -- \
    plan graphs/alexnet_op13.onnx --batch 2 --profile "$tmp/neg_latency.json"

# control flow whose count or condition only the run knows: refused at load, naming the node
"$PY" - "$tmp" <<'PYEOF' || { echo "not ok - making control-flow models with $PY"; exit 1; }
import sys
import onnx
from onnx import TensorProto as T, helper as h
d = sys.argv[1]
vi = lambda n, t, s: h.make_tensor_value_info(n, t, s)
body = h.make_graph([h.make_node("Identity", ["c"], ["c2"]),
                     h.make_node("Add", ["y", "y"], ["y2"])], "b",
                    [vi("i", T.INT64, []), vi("c", T.BOOL, []), vi("y", T.FLOAT, [2, 3])],
                    [vi("c2", T.BOOL, []), vi("y2", T.FLOAT, [2, 3])])
def save(name, nodes, inputs):
    g = h.make_graph(nodes, name, inputs, [vi("out", T.FLOAT, [2, 3])])
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 13)])
    m.ir_version = 7
    onnx.save(m, f"{d}/{name}.onnx")
x = vi("x", T.FLOAT, [2, 3])
save("loop_count_input", [h.make_node("Loop", ["m", "", "x"], ["out"], name="my_loop",
                                      body=body)], [x, vi("m", T.INT64, [])])
br = lambda op: h.make_graph([h.make_node(op, ["x"], ["r"])], op, [], [vi("r", T.FLOAT, [2, 3])])
save("if_cond_input", [h.make_node("If", ["c"], ["out"], name="my_if", then_branch=br("Relu"),
                                   else_branch=br("Neg"))], [x, vi("c", T.BOOL, [])])
PYEOF
expect_error "a Loop's trip count given at run time" "my_loop" "trip count" "run time" -- \
    inspect "$tmp/loop_count_input.onnx" --batch 2
expect_error "an If's condition given at run time" "my_if" "condition" "run time" -- \
    inspect "$tmp/if_cond_input.onnx" --batch 2

check_json graphs/resnet50_op13.onnx 25557032 # torchvision resnet50 parameter count
check_json graphs/resnet50_op15.onnx 25557032

[ "$failures" -eq 0 ] || { echo "$failures case(s) failed"; exit 1; }
