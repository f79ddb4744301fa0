#!/usr/bin/env bash
# test_edge_models.sh — models at the edges of the gradient rules, planned and
# run: every plan the planner writes must load and run in outcore-run.
#   - Concat of a graph input and an activation: its ConcatGrad omits the
#     input's gradient (output 0), which the loader once refused;
#   - BatchNormalization of the graph input: its gradient omits dX, which the
#     cpu kernel once wrote through a NULL pointer.
set -u
BUILD=${BUILD:-build}
PY=${PY:-/usr/bin/python3}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail=0
"$PY" - "$T" <<'PYEOF' || { echo "not ok - making the models with $PY"; exit 1; }
import sys
import numpy as np
from onnx import TensorProto, helper, numpy_helper, save
out = sys.argv[1]
F = TensorProto.FLOAT
def save_model(name, nodes, inits, opset):
    x = helper.make_tensor_value_info("x", F, ["batch", 3])
    y = helper.make_tensor_value_info("y", F, None)
    g = helper.make_graph(nodes, name, [x], [y], inits)
    save(helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)]), f"{out}/{name}.onnx")
save_model("concat_input", [helper.make_node("Gemm", ["x", "w"], ["a"], transB=1, name="fc"),
                            helper.make_node("Concat", ["x", "a"], ["y"], axis=1, name="cat")],
           [numpy_helper.from_array(np.full((2, 3), 0.1, np.float32), "w")], 13)
save_model("bn_input", [helper.make_node("BatchNormalization", ["x", "s", "b", "m", "v"],
                                         ["y", "rm", "rv"], training_mode=1, name="bn")],
           [numpy_helper.from_array(np.ones(3, np.float32), "s"),
            numpy_helper.from_array(np.zeros(3, np.float32), "b"),
            numpy_helper.from_array(np.zeros(3, np.float32), "m"),
            numpy_helper.from_array(np.ones(3, np.float32), "v")], 15)
PYEOF
for m in concat_input bn_input; do
    if ! "$BUILD/outcore-run" "$T/$m.onnx" --batch 4 --steps 2 >"$T/run.log" 2>&1; then
        echo "not ok - $m: outcore-run on the model: $(tail -2 "$T/run.log")"; fail=1; continue
    fi
    if ! "$BUILD/outcore-plan" plan "$T/$m.onnx" --batch 4 --budget 1GiB --device v100 \
         --strategy incore -o "$T/$m.plan.onnx" >/dev/null 2>"$T/plan.log"; then
        echo "not ok - $m: plan: $(tail -2 "$T/plan.log")"; fail=1; continue
    fi
    if "$BUILD/outcore-run" "$T/$m.plan.onnx" --steps 2 >"$T/run.log" 2>&1; then
        echo "ok - $m: trained in process and from its plan"
    else
        echo "not ok - $m: outcore-run on its plan: $(tail -2 "$T/run.log")"; fail=1
    fi
done
[ $fail -eq 0 ]
