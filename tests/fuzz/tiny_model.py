"""tiny_model.py OUT.onnx — the small CNN the fuzz targets start from (and
fuzz_cli's scratch model): Conv, BatchNormalization, Relu, a residual Add,
a Conv -> Relu (fused as ConvRelu), MaxPool, AveragePool, Concat, Flatten and Gemm on 3x8x8 images, 10 classes,
weights included. Small enough that one training step takes milliseconds."""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

rng = np.random.default_rng(0)


def w(name, *shape):
    return numpy_helper.from_array((rng.standard_normal(shape) * 0.1).astype(np.float32), name)


nodes = [
    helper.make_node("Conv", ["x", "c1.w", "c1.b"], ["c1"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
    helper.make_node("BatchNormalization", ["c1", "bn.s", "bn.b", "bn.m", "bn.v"],
                     ["bn", "bn.rm", "bn.rv"], training_mode=1),
    helper.make_node("Relu", ["bn"], ["r1"]),
    helper.make_node("Conv", ["r1", "c2.w"], ["c2"], kernel_shape=[1, 1]),
    helper.make_node("Add", ["c2", "r1"], ["sum"]),
    helper.make_node("MaxPool", ["sum"], ["mp"], kernel_shape=[2, 2], strides=[2, 2]),
    helper.make_node("Conv", ["r1", "c3.w", "c3.b"], ["c3"], kernel_shape=[1, 1]),
    helper.make_node("Relu", ["c3"], ["r3"]),
    helper.make_node("AveragePool", ["r3"], ["ap"], kernel_shape=[2, 2], strides=[2, 2]),
    helper.make_node("Concat", ["mp", "ap"], ["cat"], axis=1),
    helper.make_node("Flatten", ["cat"], ["flat"], axis=1),
    helper.make_node("Gemm", ["flat", "fc.w", "fc.b"], ["y"], transB=1),
]
inits = [w("c1.w", 4, 3, 3, 3), w("c1.b", 4), w("c2.w", 4, 4, 1, 1), w("c3.w", 4, 4, 1, 1),
         w("c3.b", 4), w("fc.w", 10, 128), w("fc.b", 10),
         numpy_helper.from_array(np.ones(4, np.float32), "bn.s"),
         numpy_helper.from_array(np.zeros(4, np.float32), "bn.b"),
         numpy_helper.from_array(np.zeros(4, np.float32), "bn.m"),
         numpy_helper.from_array(np.ones(4, np.float32), "bn.v")]
g = helper.make_graph(nodes, "tiny",
                      [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, 8, 8])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 10])], inits)
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 15)])
m.ir_version = 7
onnx.checker.check_model(m)
onnx.save(m, sys.argv[1])
