#!/usr/bin/python3
"""small_graphs.py -- the small training graphs (<= 100 nodes) of the planner's
optimality table (docs/planner.md): five DAG shapes, each a structure-only ONNX
model (opset 13, batch dim `batch`, weights without data) written with
onnx.helper, so no torch is needed.

    /usr/bin/python3 tools/small_graphs.py graphs/small

Shapes: a plain chain (VGG-like), residual blocks (ResNet-like), a U-Net with
skip concatenations, inception modules (parallel branches joined by Concat) and
a dense block (every layer reads the concatenation of all earlier ones)."""
import os
import sys

import onnx
from onnx import TensorProto, helper


class Net:
    def __init__(self, name, channels, size):
        self.name, self.nodes, self.inits, self.n = name, [], [], 0
        self.shape = {"input": (channels, size, size)}

    def _t(self, op):
        self.n += 1
        return f"{op.lower()}{self.n}"

    def _w(self, name, dims):
        t = TensorProto(name=name, data_type=TensorProto.FLOAT, dims=dims)
        self.inits.append(t)
        return name

    def conv(self, x, cout, k=3, stride=1):
        cin, h, w = self.shape[x]
        y = self._t("Conv")
        wt = self._w(y + ".weight", [cout, cin, k, k])
        p = k // 2
        self.nodes.append(helper.make_node("Conv", [x, wt], [y], name=y, kernel_shape=[k, k],
                                           pads=[p] * 4, strides=[stride] * 2))
        self.shape[y] = (cout, (h + 2 * p - k) // stride + 1, (w + 2 * p - k) // stride + 1)
        return y

    def relu(self, x):
        y = self._t("Relu")
        self.nodes.append(helper.make_node("Relu", [x], [y], name=y))
        self.shape[y] = self.shape[x]
        return y

    def conv_relu(self, x, cout, k=3, stride=1):
        return self.relu(self.conv(x, cout, k, stride))

    def pool(self, x):
        c, h, w = self.shape[x]
        y = self._t("MaxPool")
        self.nodes.append(helper.make_node("MaxPool", [x], [y], name=y, kernel_shape=[2, 2],
                                           strides=[2, 2]))
        self.shape[y] = (c, h // 2, w // 2)
        return y

    def up(self, x, cout):
        cin, h, w = self.shape[x]
        y = self._t("ConvTranspose")
        wt = self._w(y + ".weight", [cin, cout, 2, 2])
        self.nodes.append(helper.make_node("ConvTranspose", [x, wt], [y], name=y,
                                           kernel_shape=[2, 2], strides=[2, 2]))
        self.shape[y] = (cout, 2 * h, 2 * w)
        return y

    def add(self, a, b):
        y = self._t("Add")
        self.nodes.append(helper.make_node("Add", [a, b], [y], name=y))
        self.shape[y] = self.shape[a]
        return y

    def concat(self, xs):
        y = self._t("Concat")
        self.nodes.append(helper.make_node("Concat", xs, [y], name=y, axis=1))
        c = sum(self.shape[x][0] for x in xs)
        self.shape[y] = (c,) + self.shape[xs[0]][1:]
        return y

    def head(self, x, classes=10):
        g = self._t("GlobalAveragePool")
        self.nodes.append(helper.make_node("GlobalAveragePool", [x], [g], name=g))
        f = self._t("Flatten")
        self.nodes.append(helper.make_node("Flatten", [g], [f], name=f, axis=1))
        c = self.shape[x][0]
        y = "logits"
        wt, b = self._w("fc.weight", [classes, c]), self._w("fc.bias", [classes])
        self.nodes.append(helper.make_node("Gemm", [f, wt, b], [y], name="fc", transB=1))
        self.shape[y] = (classes,)
        return y

    def model(self, out):
        c, h, w = self.shape["input"]
        inp = helper.make_tensor_value_info("input", TensorProto.FLOAT, ["batch", c, h, w])
        outp = helper.make_tensor_value_info(out, TensorProto.FLOAT, ["batch", self.shape[out][0]])
        g = helper.make_graph(self.nodes, self.name, [inp], [outp], self.inits)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)],
                              producer_name="tools/small_graphs.py")
        helper.set_model_props(m, {"outcore.structure_only": "1"})
        return m


def chain():
    n = Net("small_chain", 16, 32)
    x = "input"
    for _ in range(12):
        x = n.conv_relu(x, 16)
    return n.model(n.head(x))


def residual():
    n = Net("small_residual", 16, 32)
    x = n.conv_relu("input", 16)
    for _ in range(4):
        y = n.conv(n.conv_relu(x, 16), 16)
        x = n.relu(n.add(y, x))
    return n.model(n.head(x))


def unet():
    n = Net("small_unet", 16, 32)
    e1 = n.conv_relu(n.conv_relu("input", 16), 16)
    e2 = n.conv_relu(n.conv_relu(n.pool(e1), 32), 32)
    b = n.conv_relu(n.conv_relu(n.pool(e2), 64), 64)
    d2 = n.conv_relu(n.concat([n.up(b, 32), e2]), 32)
    d1 = n.conv_relu(n.concat([n.up(d2, 16), e1]), 16)
    return n.model(n.head(d1))


def inception():
    n = Net("small_inception", 16, 32)
    x = n.conv_relu("input", 24)
    for _ in range(3):
        b1 = n.conv_relu(x, 8, 1)
        b2 = n.conv_relu(n.conv_relu(x, 8, 1), 8)
        b3 = n.conv_relu(x, 8)
        x = n.concat([b1, b2, b3])
    return n.model(n.head(x))


def dense():
    n = Net("small_dense", 16, 32)
    feats = [n.conv_relu("input", 16)]
    for _ in range(5):
        y = n.conv_relu(n.conv_relu(feats[0] if len(feats) == 1 else n.concat(feats), 16, 1), 8)
        feats.append(y)
    return n.model(n.head(n.concat(feats)))


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "graphs/small"
    os.makedirs(out, exist_ok=True)
    for make in (chain, residual, unet, inception, dense):
        m = make()
        # (onnx.checker refuses initializers without data: structure-only on purpose)
        path = os.path.join(out, m.graph.name + ".onnx")
        onnx.save(m, path)
        print(f"{path}: {len(m.graph.node)} forward nodes")


if __name__ == "__main__":
    main()
