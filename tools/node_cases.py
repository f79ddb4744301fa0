#!/usr/bin/python3
"""Writes outcore's own ONNX node test cases (tests/data/node), in the layout of the ONNX
backend test data (model.onnx, test_data_set_0/input_*.pb, output_0.pb), for
tests/unit/test_conformance.c. The official data checks Einsum in float64 only, which
outcore's MatMul does not take; these cases are float32, references from numpy in float64.
MatMul's cases there are of equal batch dims only; here a vector on either side and batch
dims that broadcast. And, Or and Xor are there at opset 7 only, InstanceNormalization at 6; here at 13 to 18. Debian's copy of that data has Elu, Selu, Softplus, Sin and Cos at opsets 6, 1 and 7 only
(outcore reads 9 to 21) and no Mish: their spec formulas are written here at opsets 13 and 18.
GatherElements' and ScatterElements' cases there take the indices as an input; here they are a
Constant (the exporters' torch.gather / scatter with a fixed index), the data an input. RNN, GRU and
LSTM there are forward-only, of 1 to 2 steps; here both other directions, layout 1, states in
and out, peepholes, torch's linear_before_reset, activations with alpha and beta, sequence
lengths (packed sequences: each over its own length, 0 too), and sequences
longer than one Split (references from the spec's equations, in float64). Conv and
ConvTranspose with pads that differ at a dim's two ends (ONNX's "asymmetric" cases differ
between dims only). Tile of
run-time data, BatchNormalization with computed statistics, SplitToSequence with chunks no node
reads: forms of torch 2.x's exports of timm's models.
A case named *_refused must be rejected by the importer with a message.

    /usr/bin/python3 tools/node_cases.py      # Debian's python3-onnx and numpy
"""
import os
import shutil

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "tests", "data", "node")
DIMS = {c: 2 + i % 3 for i, c in enumerate("abcdefghijklmnopqrstuvwxyz")}
DIMS.update({"B": 2, "G": 3, "H": 2, "I": 4, "J": 4, "D": 3})

# (case name, equation, refused?)
EINSUM = [
    ("batch_matmul", "bij,bjk->bik", False),
    ("maxvit_scores", "BGHID,BGHJD->BGHIJ", False),  # MaxViT's q k^T
    ("maxvit_values", "BGHIJ,BGHJD->BGHID", False),  # and attention times v
    ("heads_transposed", "bqhd,bkhd->bhqk", False),
    ("inner_implicit", "i,i", False),
    ("matmul_implicit", "ij,jk", False),
    ("outer", "i,j->ij", False),
    ("rows", "bij,jk->bik", False),  # b and i both MatMul's rows
    ("rows_second", "jk,bij->bik", False),  # the same, operands swapped
    ("elementwise", "ab,ab->ab", False),
    ("sum_alone", "ijk,jl->il", False),  # k summed before the contraction
    ("sum_rows", "ij->i", False),
    ("sum_all", "abc->", False),
    ("transpose_sum", "abc->ca", False),
    ("identity", "ab->ab", False),
    # merged by Reshapes (shapes folded from the operands'):
    ("two_contractions", "ijk,ijl->kl", False),
    ("mvit_rel_pos", "bythwc,hkc->bythwk", False),  # MViTv2's relative positions
    ("both_sides_free", "abk,kcd->abcd", False),
    ("batch_free_both", "sabk,skcd->sacbd", False),
    ("batch_contract_two", "bijk,bjkl->bil", False),
    ("full_contraction", "ij,ij->", False),
    ("outer_batch", "bi,bjk->bijk", False),
    ("diagonal_dims", "ii->i", False),  # refused (diagonal_refused) until 2026-11-30
]

# Einsum with an ellipsis (spelled out at load as numpy broadcasts it): (name, equation,
# the operands' shapes)
ELLIPSIS = [
    ("ellipsis_matmul", "...ij,...jk->...ik", [[2, 3, 4, 5], [2, 3, 5, 6]]),
    ("ellipsis_ranks", "...ij,...jk->...ik", [[2, 3, 4, 5], [3, 5, 6]]),
    ("ellipsis_ones", "...ij,...jk->...ik", [[2, 1, 4, 5], [1, 3, 5, 6]]),
    ("ellipsis_implicit", "...ij,...jk", [[2, 4, 5], [2, 5, 6]]),
    ("ellipsis_dot", "...d,d->...", [[2, 3, 4], [4]]),
    ("ellipsis_scale", "...d,d->...d", [[2, 3, 4], [4]]),
    ("ellipsis_one_operand", "...ij->...j", [[2, 3, 4, 5]]),
    ("ellipsis_empty", "...ij,...jk->...ik", [[4, 5], [5, 6]]),
]


# numpy's MatMul beyond outcore's kernels' forms, rewritten at load (op_matmul.c):
# (case name, A's shape, B's shape, opset, refused?)
MATMUL = [
    ("vector_left", [4], [4, 5], 13, False),
    ("vector_right", [3, 4], [4], 13, False),
    ("vector_left_batched", [4], [2, 4, 5], 13, False),
    ("vector_right_batched", [2, 3, 4], [4], 13, False),
    ("vector_left_opset11", [4], [2, 4, 5], 11, False),  # Unsqueeze's axes an attribute
    ("matrix_left", [3, 4], [2, 4, 5], 13, False),
    ("ones_right", [2, 3, 3, 4], [1, 4, 5], 13, False),  # B squeezed to its matrix
    ("ones_right_opset11", [2, 3, 3, 4], [1, 1, 4, 5], 11, False),
    ("ones_right_higher", [3, 4], [1, 1, 4, 5], 13, False),
    ("broadcast_heads", [2, 3, 4, 5], [3, 5, 6], 13, False),
    ("broadcast_both", [2, 1, 4, 5], [1, 3, 5, 6], 13, False),
    ("broadcast_rank", [3, 4, 5], [2, 1, 5, 6], 13, False),
    ("broadcast_left", [1, 3, 4, 5], [2, 3, 5, 6], 13, False),
    ("dot", [4], [4], 13, False),
    ("dot_opset11", [4], [4], 11, False),  # ReduceSum's axes an attribute
    ("batch_mismatch_refused", [2, 3, 4, 5], [4, 5, 6], 13, True),
]

# (case name, X's shape, opset, scale and shift plan-time ones and zeros?)
INSTANCE_NORM = [
    ("opset13", [2, 3, 4, 5], 13, False),
    ("opset17", [2, 3, 4, 5], 17, False),
    ("group_form_opset18", [2, 4, 12], 18, True),
    ("group_form_opset13", [2, 4, 12], 13, True),
    ("3d_opset13", [2, 2, 3, 4, 2], 13, False),
    ("rank2_refused", [4, 5], 17, False),
]

# (case name, data shape, indices, axis): GatherElements of run-time data at plan-time
# indices (a Constant), lowered at load into a Gather of the flattened data; refused: an
# index outside its dim
GATHER_ELEMENTS = [
    ("axis0", [3, 4], [[1, 2, 0, 2], [0, 0, 1, 2]], 0),
    ("axis1_negative", [3, 4], [[-1, 0], [2, -4], [3, 3]], 1),
    ("rank3_axis_negative", [2, 3, 4], [[[0, 2, 1, 1], [2, 2, 0, 1]], [[1, 0, 0, 2], [0, 1, 2, 2]]],
     -2),
    ("smaller_than_data", [3, 4], [[3, 0, 1], [2, 2, 2]], 1),
    ("out_of_range_refused", [3, 4], [[0, 4], [1, 2]], 1),
]


def gather_elements(x, idx, axis):
    """ONNX GatherElements, element by element (indices may be smaller than data)."""
    axis = axis % x.ndim
    y = np.zeros(idx.shape, x.dtype)
    for c in np.ndindex(*idx.shape):
        at = list(c)
        at[axis] = idx[c] % x.shape[axis]
        y[c] = x[tuple(at)]
    return y


# (case name, data shape, indices, axis, reduction): ScatterElements of run-time data and
# updates at plan-time indices, lowered at load into ScatterND; refused: an index outside
# its dim
SCATTER_ELEMENTS = [
    ("axis0", [3, 4], [[1, 2, 0, 2], [0, 1, 2, 1]], 0, "none"),
    ("axis1_negative", [3, 4], [[-1, 0], [2, -4], [3, 1]], 1, "none"),
    ("rank3_add_plan_time", [2, 3, 4],
     [[[0, 2, 1, 1], [2, 2, 0, 1]], [[1, 0, 0, 2], [0, 1, 2, 2]]], -2, "add"),
    # reduction add on run-time data: a scatter-add (Gather's gradient), repeats summed
    ("add_on_run_time_data", [3, 4], [[0, 2], [1, 1]], 1, "add"),
    ("out_of_range_refused", [3, 4], [[0, 4], [1, 2]], 1, "none"),
]


def scatter_elements(x, idx, u, axis, reduction):
    """ONNX ScatterElements, element by element in index order."""
    axis = axis % x.ndim
    y = x.copy()
    for c in np.ndindex(*idx.shape):
        at = list(c)
        at[axis] = idx[c] % x.shape[axis]
        y[tuple(at)] = y[tuple(at)] + u[c] if reduction == "add" else u[c]
    return y


# (case name): (N, C, image_shape, block_shape, attributes): Col2Im (F.fold), lowered at
# load into a ConvTranspose with a one-hot weight; refused: columns of the wrong count
COL2IM = {
    "3x3_pad1": (2, 3, [5, 4], [3, 3], {"pads": [1, 1, 1, 1]}),
    "stride2_uneven": (1, 2, [8, 7], [3, 2], {"strides": [2, 2], "pads": [1, 0, 1, 0]}),
    "dilation2": (1, 2, [6, 6], [2, 3], {"dilations": [2, 1]}),
    "1d": (2, 2, [9], [3], {"strides": [2]}),
    "wrong_columns_refused": (1, 2, [4, 4], [2, 2], {"strides": [3, 3]}),
}


def col2im(x, img, blk, dil, st, pads):
    """ONNX Col2Im (F.fold): every column's block values summed into the image."""
    ks = len(img)
    n, cb, _ = x.shape
    b = int(np.prod(blk))
    c = cb // b
    rows = [(img[d] + pads[d] + pads[d + ks] - dil[d] * (blk[d] - 1) - 1) // st[d] + 1
            for d in range(ks)]
    y = np.zeros([n, c] + list(img))
    for ci in range(cb):
        ch, j = divmod(ci, b)
        kpos = np.unravel_index(j, blk)
        for li, pos in enumerate(np.ndindex(*rows)):
            at = [pos[d] * st[d] - pads[d] + kpos[d] * dil[d] for d in range(ks)]
            if all(0 <= at[d] < img[d] for d in range(ks)):
                y[(slice(None), ch) + tuple(at)] += x[:, ci, li]
    return y


# (case name, op, data shape, axes or None, keepdims, opset): ReduceMax / ReduceMin of run-time
# data, lowered at load into a MaxPool; "_plan_time": of a Constant, folded
EXTREMES = [
    ("max_axis1_keep", "ReduceMax", [2, 5, 3], [1], 1, 13),
    ("max_axes_02_opset18", "ReduceMax", [3, 2, 4], [0, 2], 0, 18),
    ("max_all", "ReduceMax", [2, 3, 4], None, 1, 13),
    ("min_last_negative", "ReduceMin", [2, 3, 4], [-1], 0, 18),
    ("max_plan_time", "ReduceMax", [3, 4], [1], 0, 13),
]

# (case name, data shape, repeats): Tile of run-time data
TILE = [("batch", [1, 3, 4], [2, 1, 1]), ("every_dim", [2, 3], [2, 3]), ("ones", [2, 3], [1, 1]),
        ("zero", [2, 3], [0, 2])]

SELU_A, SELU_G = 1.67326319217681884765625, 1.05070102214813232421875
# (case name, op, attributes, reference of x in float64, opset)
ACTIVATIONS = [
    ("elu", "Elu", {"alpha": 2.0}, lambda x: np.where(x > 0, x, 2.0 * (np.exp(x) - 1)), 13),
    ("elu_default", "Elu", {}, lambda x: np.where(x > 0, x, np.exp(x) - 1), 13),
    ("selu", "Selu", {"alpha": 2.0, "gamma": 3.0},
     lambda x: np.where(x > 0, 3.0 * x, 3.0 * 2.0 * (np.exp(x) - 1)), 13),
    ("selu_default", "Selu", {},
     lambda x: np.where(x > 0, SELU_G * x, SELU_G * SELU_A * (np.exp(x) - 1)), 13),
    ("softplus", "Softplus", {}, lambda x: np.log1p(np.exp(x)), 13),
    ("mish", "Mish", {}, lambda x: x * np.tanh(np.log1p(np.exp(x))), 18),
    ("sin", "Sin", {}, np.sin, 13),
    ("cos", "Cos", {}, np.cos, 13),
]


# (case name): (cell, steps, batch, input, hidden, attributes, optional inputs given,
# outputs given): RNN, GRU and LSTM, unrolled at load (op_rnn.c)
RNNS = {
    "lstm_bidirectional_states_peepholes": ("LSTM", 5, 2, 3, 4, {"direction": "bidirectional"},
                                            "B seq h0 c0 P", "Y Y_h Y_c"),
    "lstm_reverse_batch_first_c_only": ("LSTM", 4, 3, 2, 3, {"direction": "reverse", "layout": 1},
                                        "B c0", "Y_c"),
    "lstm_long": ("LSTM", 70, 1, 2, 3, {}, "B", "Y Y_h"),
    "gru_torch_bidirectional": ("GRU", 6, 2, 3, 4, {"direction": "bidirectional",
                                                    "linear_before_reset": 1}, "B h0", "Y Y_h"),
    "gru_reverse_batch_first": ("GRU", 3, 2, 3, 2, {"direction": "reverse", "layout": 1},
                                "B h0", "Y Y_h"),
    "gru_lbr_no_state": ("GRU", 3, 2, 2, 3, {"linear_before_reset": 1}, "B", "Y"),
    "rnn_bidirectional_alpha_beta": ("RNN", 4, 2, 3, 3, {
        "direction": "bidirectional", "activations": ["LeakyRelu", "HardSigmoid"],
        "activation_alpha": [0.1, 0.3], "activation_beta": [0.6]}, "B h0", "Y Y_h"),
    "rnn_relu_long_groups": ("RNN", 130, 2, 2, 3, {"activations": ["Relu"]}, "", "Y"),
    "lstm_clip_refused": ("LSTM", 3, 2, 2, 3, {"clip": 1.0}, "", "Y"),
    "gru_activation_refused": ("GRU", 3, 2, 2, 3, {"activations": ["Sigmoid", "Softsign"]}, "",
                               "Y"),
    # sequence_lens (packed sequences): a Constant here, so the masks fold
    "lstm_lengths": ("LSTM", 3, 2, 2, 3, {}, "B lens=3,2", "Y Y_h Y_c"),
    "gru_lengths_bidirectional": ("GRU", 5, 3, 2, 3, {"direction": "bidirectional",
                                                      "linear_before_reset": 1},
                                  "B h0 lens=5,2,0", "Y Y_h"),
    "rnn_lengths_reverse_batch_first": ("RNN", 4, 2, 3, 2, {"direction": "reverse", "layout": 1},
                                        "B h0 lens=1,4", "Y Y_h"),
    "lstm_length_over_refused": ("LSTM", 3, 2, 2, 3, {}, "lens=4,2", "Y"),
}


def rnn_act(name, x, alpha, beta):
    if name == "Sigmoid":
        return 1 / (1 + np.exp(-x))
    if name == "Tanh":
        return np.tanh(x)
    if name == "Relu":
        return np.maximum(x, 0)
    if name == "LeakyRelu":
        return np.where(x >= 0, x, alpha * x)
    if name == "HardSigmoid":
        return np.clip(alpha * x + beta, 0, 1)
    raise ValueError(name)


def rnn_ref(cell, x, w, r, b, h0, c0, p, attrs, lens=None):
    """The spec's equations: Y [T, D, B, H], Y_h and Y_c [D, B, H] (layout 1: batch first);
    with lens, each sequence over its own length (reverse: from its last element), Y 0 past it
    and Y_h / Y_c its last state."""
    first = attrs.get("layout", 0) == 1
    if first:
        x = x.transpose(1, 0, 2)
        h0 = None if h0 is None else h0.transpose(1, 0, 2)
        c0 = None if c0 is None else c0.transpose(1, 0, 2)
    direction = attrs.get("direction", "forward")
    dirs = 2 if direction == "bidirectional" else 1
    steps, batch, hid = x.shape[0], x.shape[1], r.shape[2]
    per = {"RNN": 1, "GRU": 2, "LSTM": 3}[cell]
    names = attrs.get("activations", {"RNN": ["Tanh"], "GRU": ["Sigmoid", "Tanh"],
                                      "LSTM": ["Sigmoid", "Tanh", "Tanh"]}[cell])
    alphas, betas = list(attrs.get("activation_alpha", [])), list(attrs.get("activation_beta", []))
    acts = []
    for d in range(dirs):
        for k in range(per):
            nm = names[k if len(names) == per else d * per + k]
            al = alphas.pop(0) if nm in ("LeakyRelu", "HardSigmoid") and alphas else \
                {"LeakyRelu": 0.01, "HardSigmoid": 0.2}.get(nm)
            be = betas.pop(0) if nm == "HardSigmoid" and betas else 0.5
            acts.append((nm, al, be))
    y = np.zeros([steps, dirs, batch, hid])
    yh, yc = np.zeros([dirs, batch, hid]), np.zeros([dirs, batch, hid])
    for d in range(dirs):
        f = lambda k, v: rnn_act(acts[d * per + k][0], v, *acts[d * per + k][1:])
        gh = w.shape[1]
        bd = b[d] if b is not None else np.zeros(2 * gh)
        wb, rb = bd[:gh], bd[gh:]
        h_all = h0[d] if h0 is not None else np.zeros([batch, hid])
        c_all = c0[d] if c0 is not None else np.zeros([batch, hid])
        for bi in range(batch):  # each sequence over its own length
            h, c = h_all[bi:bi + 1], c_all[bi:bi + 1]
            n = steps if lens is None else int(lens[bi])
            order = range(n - 1, -1, -1) if direction == "reverse" or d == 1 else range(n)
            for t in order:
                xt = x[t, bi:bi + 1]
                if cell == "RNN":
                    h = f(0, xt @ w[d].T + h @ r[d].T + wb + rb)
                elif cell == "LSTM":
                    g = xt @ w[d].T + h @ r[d].T + wb + rb
                    i, o, fg, cc = np.split(g, 4, axis=1)
                    pi, po, pf = np.split(p[d] if p is not None else np.zeros(3 * hid), 3)
                    i, fg, cc = f(0, i + pi * c), f(0, fg + pf * c), f(1, cc)
                    c = fg * c + i * cc
                    h = f(0, o + po * c) * f(2, c)
                else:
                    xz, xr, xh = np.split(xt @ w[d].T + wb, 3, axis=1)
                    rz, rr, rh = np.split(r[d], 3, axis=0)
                    bz, br, bh = np.split(rb, 3)
                    z, rg = f(0, xz + h @ rz.T + bz), f(0, xr + h @ rr.T + br)
                    if attrs.get("linear_before_reset", 0):
                        cand = f(1, xh + rg * (h @ rh.T + bh))
                    else:
                        cand = f(1, xh + (rg * h) @ rh.T + bh)
                    h = (1 - z) * cand + z * h
                y[t, d, bi] = h[0]
            yh[d, bi], yc[d, bi] = h[0], c[0]
    if first:
        y, yh, yc = y.transpose(2, 0, 1, 3), yh.transpose(1, 0, 2), yc.transpose(1, 0, 2)
    return {"Y": y, "Y_h": yh, "Y_c": yc}


def rnn_case(rng, name, spec):
    cell, steps, batch, inp, hid, attrs, given, outs = spec
    gates = {"RNN": 1, "GRU": 3, "LSTM": 4}[cell]
    dirs = 2 if attrs.get("direction") == "bidirectional" else 1
    first = attrs.get("layout", 0) == 1
    f32 = lambda *s: (0.5 * rng.standard_normal(s)).astype(np.float32)
    x = f32(batch, steps, inp) if first else f32(steps, batch, inp)
    w, r = f32(dirs, gates * hid, inp), f32(dirs, gates * hid, hid)
    state = lambda: f32(batch, dirs, hid) if first else f32(dirs, batch, hid)
    vals = {"B": f32(dirs, 2 * gates * hid), "h0": state(), "c0": state(), "P": f32(dirs, 3 * hid)}
    given = given.split()
    inputs = [("X", x), ("W", w), ("R", r)]
    names = ["X", "W", "R", "", "", "", "", ""]
    nodes = []
    for k, nm in ((3, "B"), (5, "h0"), (6, "c0"), (7, "P")):
        if nm in given:
            inputs.append((nm, vals[nm]))
            names[k] = nm
    lens = [g for g in given if g.startswith("lens=")] + (["lens=" + ",".join(
        [str(steps)] * batch)] if "seq" in given else [])
    if lens:  # a Constant of these lengths ("seq": the full length)
        lens = np.array([int(v) for v in lens[0][5:].split(",")], np.int32)
        nodes.append(helper.make_node("Constant", [], ["lens"],
                                      value=numpy_helper.from_array(lens, "lens")))
        names[4] = "lens"
    while names[-1] == "":
        names.pop()
    d64 = lambda nm: vals[nm].astype(np.float64) if nm in given else None
    ref = ({} if name.endswith("_refused") else
           rnn_ref(cell, x.astype(np.float64), w.astype(np.float64), r.astype(np.float64),
                   d64("B"), d64("h0"), d64("c0"), d64("P"), attrs,
                   lens if len(lens) else None))
    outs = outs.split()
    out_names = [o if o in outs else "" for o in ("Y", "Y_h", "Y_c")[:3 if cell == "LSTM" else 2]]
    while out_names[-1] == "":
        out_names.pop()
    nodes.append(helper.make_node(cell, names, out_names, hidden_size=hid, **attrs))
    outputs = [(o, ref[o].astype(np.float32) if ref else np.zeros([1], np.float32)) for o in outs]
    write_case("test_" + name.replace("_", "_f32_", 1), nodes, inputs, outputs, 14)

# Col2Im with pads unequal at a dim's ends: its ConvTranspose then a Slice (op_conv.c)
COL2IM_UNEQUAL = {"unequal_pads": (1, 2, [6, 5], [3, 2], {"pads": [1, 0, 0, 1]}),
                  "unequal_pads_strided": (2, 1, [7, 8], [2, 3],
                                           {"strides": [2, 2], "pads": [0, 2, 1, 0]})}


def conv_ref(x, w, b, pads, strides):
    """Conv (group 1, dilation 1) in float64 with pads per dim (begins then ends)."""
    ns = x.ndim - 2
    xp = np.pad(x.astype(np.float64), [(0, 0), (0, 0)] + [(pads[d], pads[d + ns])
                                                          for d in range(ns)])
    k = w.shape[2:]
    out = [(xp.shape[2 + d] - k[d]) // strides[d] + 1 for d in range(ns)]
    y = np.zeros([x.shape[0], w.shape[0]] + out)
    for pos in np.ndindex(*out):
        win = xp[(slice(None), slice(None)) +
                 tuple(slice(pos[d] * strides[d], pos[d] * strides[d] + k[d]) for d in range(ns))]
        y[(slice(None), slice(None)) + pos] = np.tensordot(win, w.astype(np.float64),
                                                           axes=([1] + [2 + d for d in range(ns)],
                                                                 [1] + [2 + d for d in range(ns)]))
    return y + (b.astype(np.float64).reshape([1, -1] + [1] * ns) if b is not None else 0)


def conv_transpose_ref(x, w, pads, strides):
    """ConvTranspose (group 1, dilation 1): every input scattered times the kernel, then the
    pads cropped (begins then ends)."""
    ns = x.ndim - 2
    k = w.shape[2:]
    full = [(x.shape[2 + d] - 1) * strides[d] + k[d] for d in range(ns)]
    y = np.zeros([x.shape[0], w.shape[1]] + full)
    for pos in np.ndindex(*x.shape[2:]):
        contrib = np.tensordot(x[(slice(None), slice(None)) + pos].astype(np.float64),
                               w.astype(np.float64), axes=([1], [0]))
        y[(slice(None), slice(None)) +
          tuple(slice(pos[d] * strides[d], pos[d] * strides[d] + k[d]) for d in range(ns))] += contrib
    return y[(slice(None), slice(None)) +
             tuple(slice(pads[d], full[d] - pads[d + ns]) for d in range(ns))]


# (case name, op, x shape, w shape, bias?, attributes, the pads they mean, strides, opset):
# pads that differ at a dim's two ends (cuDNN pads both ends alike): a Pad before the Conv, a
# Slice after the ConvTranspose, at load (op_conv.c); below opset 11 / 10 Pad's and Slice's
# attribute forms
UNEQUAL_PADS = [
    ("conv_unequal_pads", "Conv", [1, 2, 6, 5], [3, 2, 3, 2], True,
     {"pads": [1, 0, 0, 1]}, [1, 0, 0, 1], [1, 1], 13),
    ("conv_unequal_pads_opset10", "Conv", [1, 2, 6, 5], [3, 2, 3, 2], True,
     {"pads": [2, 0, 0, 1]}, [2, 0, 0, 1], [1, 1], 10),
    ("conv_same_upper_even_kernel", "Conv", [2, 2, 6, 6], [2, 2, 2, 2], False,
     {"auto_pad": "SAME_UPPER"}, [0, 0, 1, 1], [1, 1], 13),
    ("conv_same_lower_stride2", "Conv", [1, 2, 8, 8], [3, 2, 3, 3], True,
     {"auto_pad": "SAME_LOWER", "strides": [2, 2]}, [1, 1, 0, 0], [2, 2], 13),
    ("convtranspose_unequal_pads", "ConvTranspose", [1, 2, 3, 3], [2, 2, 3, 3], False,
     {"pads": [1, 0, 0, 1], "strides": [2, 2]}, [1, 0, 0, 1], [2, 2], 13),
    ("convtranspose_unequal_pads_opset9", "ConvTranspose", [1, 2, 3, 4], [2, 3, 3, 2], False,
     {"pads": [0, 2, 1, 0], "strides": [2, 1]}, [0, 2, 1, 0], [2, 1], 9),
    ("convtranspose_crop_past_output_refused", "ConvTranspose", [1, 2, 2, 2], [2, 2, 3, 3],
     False, {"pads": [5, 0, 0, 1]}, [5, 0, 0, 1], [1, 1], 13),
]


def col2im_case(rng, name, spec):
    n_, c, img, blk, attrs = spec
    ks = len(img)
    dil, st = attrs.get("dilations", [1] * ks), attrs.get("strides", [1] * ks)
    pads = attrs.get("pads", [0] * 2 * ks)
    rows = [(img[d] + pads[d] + pads[d + ks] - dil[d] * (blk[d] - 1) - 1) // st[d] + 1
            for d in range(ks)]
    cols = int(np.prod(rows)) + name.endswith("_refused")  # one column too many
    x = rng.standard_normal([n_, c * int(np.prod(blk)), cols]).astype(np.float32)
    y = (np.zeros([2], np.float32) if name.endswith("_refused") else
         col2im(x.astype(np.float64), img, blk, dil, st, pads).astype(np.float32))
    nodes = [helper.make_node("Constant", [], ["img"], value=numpy_helper.from_array(
                 np.array(img, np.int64), "img")),
             helper.make_node("Constant", [], ["blk"], value=numpy_helper.from_array(
                 np.array(blk, np.int64), "blk")),
             helper.make_node("Col2Im", ["x", "img", "blk"], ["y"], **attrs)]
    write_case(f"test_col2im_f32_{name}", nodes, [("x", x)], [("y", y)], 18)


def control_flow_cases(rng):
    """Loop with a plan-time trip count (unrolled at load, op_loop.c): carried values, scan
    outputs, a sequence of slices (torch's legacy tensor_split) read by SequenceAt and
    ConcatFromSequence; If with a plan-time condition; a condition the body computes from
    plan-time values (with a trip count, and without one with an If in the body reading the
    body's names); and one it computes from run-time data, refused."""
    const = lambda nm, v: helper.make_node("Constant", [], [nm],
                                           value=numpy_helper.from_array(np.asarray(v), nm))
    vi = lambda nm, dt, shape=None: helper.make_tensor_value_info(nm, dt, shape)
    f, i64, b = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL
    x = rng.standard_normal([4, 3]).astype(np.float32)
    y0 = rng.standard_normal([3]).astype(np.float32)
    # y <- y * 0.5 + x[i] for i < 4; scan out: each y; the body also reads x from outside
    body = helper.make_graph(
        [helper.make_node("Identity", ["c_in"], ["c_out"]),
         const("one", np.int64(1)), helper.make_node("Add", ["i", "one"], ["end"]),
         helper.make_node("Unsqueeze", ["i", "ax0"], ["s"]),
         helper.make_node("Unsqueeze", ["end", "ax0"], ["e"]),
         const("ax0", np.array([0], np.int64)),
         helper.make_node("Slice", ["x", "s", "e"], ["row2"]),
         helper.make_node("Squeeze", ["row2", "ax0"], ["row"]),
         const("half", np.float32(0.5)),
         helper.make_node("Mul", ["y_in", "half"], ["yh"]),
         helper.make_node("Add", ["yh", "row"], ["y_out"]),
         helper.make_node("Identity", ["y_out"], ["scan"])],
        "body", [vi("i", i64, []), vi("c_in", b, []), vi("y_in", f, [3])],
        [vi("c_out", b, []), vi("y_out", f, [3]), vi("scan", f, [3])])
    # (the Unsqueeze's axes Constant comes after its reader: reorder for topological order)
    nodes = list(body.node)
    nodes.insert(3, nodes.pop(5))
    del body.node[:]
    body.node.extend(nodes)
    ys, y = [], y0.astype(np.float64)
    for k in range(4):
        y = y * 0.5 + x[k]
        ys.append(y)
    nodes = [const("m", np.int64(4)), const("cond", np.bool_(True)),
             helper.make_node("Loop", ["m", "cond", "y0"], ["y", "ys"], body=body)]
    write_case("test_loop_f32_carried_scan", nodes, [("x", x), ("y0", y0)],
               [("y", y.astype(np.float32)), ("ys", np.stack(ys).astype(np.float32))], 13)
    # a sequence of x's rows split at plan-time points, as torch's legacy tensor_split: read
    # back by SequenceAt and ConcatFromSequence (new axis); M from a Shape, as exported
    split = np.array([0, 1, 3, 4], np.int64)
    seq_body = helper.make_graph(
        [helper.make_node("Identity", ["c_in"], ["c_out"]),
         helper.make_node("Gather", ["pts", "i"], ["a"], axis=0),
         const("one", np.int64(1)), helper.make_node("Add", ["i", "one"], ["i1"]),
         helper.make_node("Gather", ["pts", "i1"], ["z"], axis=0),
         const("ax0", np.array([0], np.int64)),
         helper.make_node("Unsqueeze", ["a", "ax0"], ["a1"]),
         helper.make_node("Unsqueeze", ["z", "ax0"], ["z1"]),
         helper.make_node("Slice", ["x", "a1", "z1", "ax0"], ["part"]),
         helper.make_node("ReduceSum", ["part", "ax0"], ["part_sum"], keepdims=0),
         helper.make_node("SequenceInsert", ["s_in", "part_sum"], ["s_out"])],
        "seq_body", [vi("i", i64, []), vi("c_in", b, []),
                     helper.make_tensor_sequence_value_info("s_in", f, None)],
        [vi("c_out", b, []), helper.make_tensor_sequence_value_info("s_out", f, None)])
    sums = [x[split[k]:split[k + 1]].astype(np.float64).sum(0) for k in range(3)]
    nodes = [const("pts", split), helper.make_node("Shape", ["pts"], ["n_pts"]),
             const("one_", np.array([1], np.int64)),
             helper.make_node("Sub", ["n_pts", "one_"], ["m1"]),
             helper.make_node("Squeeze", ["m1"], ["m"]),
             const("cond", np.bool_(True)),
             helper.make_node("SequenceEmpty", [], ["empty"], dtype=f),
             helper.make_node("Loop", ["m", "cond", "empty"], ["parts"], body=seq_body),
             const("last", np.int64(-1)),
             helper.make_node("SequenceAt", ["parts", "last"], ["tail"]),
             helper.make_node("ConcatFromSequence", ["parts"], ["stacked"], axis=0, new_axis=1)]
    write_case("test_loop_f32_sequence_split", nodes, [("x", x)],
               [("tail", sums[-1].astype(np.float32)),
                ("stacked", np.stack(sums).astype(np.float32))], 13)
    # If on a plan-time test of a shape (torch's legacy export of MViT's residual pooling)
    then_g = helper.make_graph([helper.make_node("Mul", ["x", "x"], ["t"])], "then", [],
                               [vi("t", f, [4, 3])])
    else_g = helper.make_graph([helper.make_node("Neg", ["x"], ["e"])], "else", [],
                               [vi("e", f, [4, 3])])
    nodes = [helper.make_node("Shape", ["x"], ["sh"]), const("k0", np.int64(0)),
             helper.make_node("Gather", ["sh", "k0"], ["rows"], axis=0),
             const("four", np.int64(4)), helper.make_node("Equal", ["rows", "four"], ["c"]),
             helper.make_node("If", ["c"], ["y"], then_branch=then_g, else_branch=else_g)]
    write_case("test_if_f32_plan_time", nodes, [("x", x)], [("y", x * x)], 13)
    # a condition the body computes from plan-time values (torch.export's nn.EmbeddingBag:
    # a counter against the bag count), unrolled one iteration a visit: i < 2 after
    # iterations 0, 1, 2 -> three iterations of the four M allows
    cbody = helper.make_graph(
        [const("two", np.int64(2)), helper.make_node("Less", ["i", "two"], ["c_out"]),
         helper.make_node("Add", ["y_in", "y_in"], ["y_out"])],
        "cbody", [vi("i", i64, []), vi("c_in", b, []), vi("y_in", f, [3])],
        [vi("c_out", b, []), vi("y_out", f, [3])])
    nodes = [const("m", np.int64(4)), const("cond", np.bool_(True)),
             helper.make_node("Loop", ["m", "cond", "y0"], ["y"], body=cbody)]
    write_case("test_loop_f32_condition_in_body", nodes, [("y0", y0)], [("y", y0 * 8)], 13)
    # no trip count: a carried counter k, k + 1 < 3 to go on (three iterations); an If in the
    # body, reading the body's own names (k, y_in, the sum s), doubles y at k = 1 and adds 1
    # elsewhere; scan output: each y
    lrng = np.random.default_rng(451)
    w0 = lrng.standard_normal([3]).astype(np.float32)
    then_g = helper.make_graph([helper.make_node("Mul", ["s", "y_in"], ["t"])], "then", [],
                               [vi("t", f, [3])])
    else_g = helper.make_graph([helper.make_node("Add", ["y_in", "one_f"], ["e"])], "else", [],
                               [vi("e", f, [3])])
    wbody = helper.make_graph(
        [const("one", np.int64(1)), const("three", np.int64(3)), const("one_f", np.float32(1)),
         helper.make_node("Add", ["k_in", "one"], ["k_out"]),
         helper.make_node("Less", ["k_out", "three"], ["c_out"]),
         helper.make_node("Add", ["one_f", "one_f"], ["s"]),
         helper.make_node("Equal", ["k_in", "one"], ["is_one"]),
         helper.make_node("If", ["is_one"], ["y_out"], then_branch=then_g, else_branch=else_g),
         helper.make_node("Identity", ["y_out"], ["scan"])],
        "wbody", [vi("i", i64, []), vi("c_in", b, []), vi("k_in", i64, []), vi("y_in", f, [3])],
        [vi("c_out", b, []), vi("k_out", i64, []), vi("y_out", f, [3]), vi("scan", f, [3])])
    ws, w = [], w0.astype(np.float64)
    for k in range(3):
        w = w * 2 if k == 1 else w + 1
        ws.append(w)
    nodes = [const("cond", np.bool_(True)), const("k0", np.int64(0)),
             helper.make_node("Loop", ["", "cond", "k0", "w0"], ["k", "w", "ws"], body=wbody)]
    write_case("test_loop_f32_while_nested_if", nodes, [("w0", w0)],
               [("k", np.int64(3)), ("w", w.astype(np.float32)),
                ("ws", np.stack(ws).astype(np.float32))], 13)
    # a trip count, an If in the body reading the body's own initializer (two_f) and input
    then_g = helper.make_graph([helper.make_node("Mul", ["y_in", "two_f"], ["t"])], "then", [],
                               [vi("t", f, [3])])
    else_g = helper.make_graph([helper.make_node("Add", ["y_in", "two_f"], ["e"])], "else", [],
                               [vi("e", f, [3])])
    ibody = helper.make_graph(
        [helper.make_node("Identity", ["c_in"], ["c_out"]),
         helper.make_node("Equal", ["i", "one"], ["is_one"]),
         helper.make_node("If", ["is_one"], ["y_out"], then_branch=then_g, else_branch=else_g)],
        "ibody", [vi("i", i64, []), vi("c_in", b, []), vi("y_in", f, [3])],
        [vi("c_out", b, []), vi("y_out", f, [3])],
        initializer=[numpy_helper.from_array(np.float32(2), "two_f"),
                     numpy_helper.from_array(np.int64(1), "one")])
    v0 = np.random.default_rng(452).standard_normal([3]).astype(np.float32)
    nodes = [const("m", np.int64(3)), const("cond", np.bool_(True)),
             helper.make_node("Loop", ["m", "cond", "v0"], ["v"], body=ibody)]
    v = ((v0.astype(np.float64) + 2) * 2) + 2
    write_case("test_loop_f32_if_reads_body_initializer", nodes, [("v0", v0)],
               [("v", v.astype(np.float32))], 13)
    # refused: a condition the body computes from run-time data (a trip count given at run
    # time is refused too, test_shapes: this runner makes inputs that nodes take as plan-time
    # values constants)
    rbody = helper.make_graph(
        [helper.make_node("Add", ["y_in", "y_in"], ["y_out"]),
         helper.make_node("ReduceSum", ["y_out"], ["total"], keepdims=0),
         const("zero", np.float32(0)), helper.make_node("Less", ["total", "zero"], ["c_out"])],
        "rbody", [vi("i", i64, []), vi("c_in", b, []), vi("y_in", f, [3])],
        [vi("c_out", b, []), vi("y_out", f, [3])])
    nodes = [const("m", np.int64(4)), const("cond", np.bool_(True)),
             helper.make_node("Loop", ["m", "cond", "y0"], ["y"], body=rbody)]
    write_case("test_loop_f32_condition_run_time_refused", nodes, [("y0", y0)],
               [("y", np.zeros([2], np.float32))], 13)


def topk_cases(rng):
    """TopK of plan-time values (folded; host programs fold it the same way each step: the
    sort of pack_padded_sequence(enforce_sorted=False)): equal values keep their order along
    the axis, a NaN counts larger than any number, k from opset 9's attribute; TopK of
    run-time data refused."""
    const = lambda nm, v: helper.make_node("Constant", [], [nm],
                                           value=numpy_helper.from_array(np.asarray(v), nm))

    cases = [  # name, x, axis, k, largest, opset
        ("f32_ties", rng.integers(0, 3, [3, 6]).astype(np.float32), 1, 4, 1, 13),
        ("i64_smallest_axis0", rng.integers(-2, 2, [5, 3]).astype(np.int64), 0, 2, 0, 13),
        ("f32_rank3_middle_opset9", rng.standard_normal([2, 5, 3]).astype(np.float32), 1, 3, 1, 9),
        ("f32_k0", rng.standard_normal([2, 4]).astype(np.float32), -1, 0, 1, 13),
    ]
    for name, x, axis, k, largest, opset in cases:
        idx = np.take(np.argsort(-x if largest else x, axis=axis, kind="stable"),
                      np.arange(k), axis=axis)
        vals = np.take_along_axis(x, idx, axis=axis)
        attrs = {"axis": axis, "largest": largest}
        nodes = [const("x", x)]
        if opset < 10:
            attrs["k"] = k
            nodes.append(helper.make_node("TopK", ["x"], ["v", "i"], **attrs))
        else:
            nodes += [const("k", np.array([k], np.int64)),
                      helper.make_node("TopK", ["x", "k"], ["v", "i"], **attrs)]
        nodes += [helper.make_node("Cast", ["v"], ["vf"], to=TensorProto.FLOAT),
                  helper.make_node("Cast", ["i"], ["if"], to=TensorProto.FLOAT),
                  helper.make_node("Add", ["z", "vf"], ["y"]),
                  helper.make_node("Add", ["z", "if"], ["yi"])]
        z = rng.standard_normal(idx.shape).astype(np.float32)
        write_case(f"test_topk_{name}_plan_time", nodes, [("z", z)],
                   [("y", z + vals.astype(np.float32)), ("yi", z + idx.astype(np.float32))],
                   opset)
    # NaN first, then the numbers in decreasing order, ties in order: the indices
    x = np.array([[1.0, np.nan, 3.0, 1.0, np.nan, -np.inf, 3.0]], np.float32)
    idx = np.array([[1, 4, 2, 6, 0, 3]], np.int64)
    nodes = [const("x", x), const("k", np.array([6], np.int64)),
             helper.make_node("TopK", ["x", "k"], ["v", "i"]),
             helper.make_node("Cast", ["i"], ["if"], to=TensorProto.FLOAT),
             helper.make_node("Add", ["z", "if"], ["yi"])]
    z = rng.standard_normal(idx.shape).astype(np.float32)
    write_case("test_topk_f32_nan_first_plan_time", nodes, [("z", z)],
               [("yi", z + idx.astype(np.float32))])
    # run-time data (an activation): TopKOffsets then a Gather; Relu's zeros tie, in order
    x = rng.standard_normal([2, 4]).astype(np.float32)
    r = np.maximum(x, 0)
    idx = np.argsort(-r, axis=1, kind="stable")[:, :2]
    nodes = [const("k", np.array([2], np.int64)), helper.make_node("Relu", ["x"], ["r"]),
             helper.make_node("TopK", ["r", "k"], ["v", "i"])]
    write_case("test_topk_f32_run_time", nodes, [("x", x)],
               [("v", np.take_along_axis(r, idx, 1)), ("i", idx.astype(np.int64))])


def topk_run_time_cases(rng):
    """TopK of run-time data (lowered to TopKOffsets, a kernel, and a Gather): ties and NaN
    in ONNX's order, the middle axis, smallest, k of the whole axis."""
    const = lambda nm, v: helper.make_node("Constant", [], [nm],
                                           value=numpy_helper.from_array(np.asarray(v), nm))
    relu = rng.standard_normal([3, 7]).astype(np.float32)
    relu[1, [1, 4]] = np.nan  # Relu keeps a NaN: first, in index order
    cases = [  # name, x, Relu before it, axis, k, largest
        ("ties_nan", relu, True, 1, 5, 1),
        ("middle_axis_smallest", rng.standard_normal([2, 5, 3]).astype(np.float32), False, 1, 3,
         0),
        ("whole_axis", rng.standard_normal([4, 6]).astype(np.float32), False, 0, 4, 1),
    ]
    for name, x, rl, axis, k, largest in cases:
        r = np.maximum(x, 0) if rl else x
        r = np.where(np.isnan(x), np.nan, r).astype(np.float32)
        key = np.where(np.isnan(r), np.inf, r)
        order = np.argsort(-key if largest else key, axis=axis, kind="stable")  # ties by index
        idx = np.take(order, np.arange(k), axis=axis)
        vals = np.take_along_axis(r, idx, axis=axis)
        nodes = [const("k", np.array([k], np.int64))]
        nodes.append(helper.make_node("Relu" if rl else "Identity", ["x"], ["r"]))
        nodes.append(helper.make_node("TopK", ["r", "k"], ["v", "i"], axis=axis,
                                      largest=largest))
        if np.isnan(vals).any():  # NaN values do not compare: the indices only
            write_case(f"test_topk_f32_run_time_{name}", nodes, [("x", x)],
                       [("i", idx.astype(np.int64))])
        else:
            write_case(f"test_topk_f32_run_time_{name}", nodes, [("x", x)],
                       [("v", vals), ("i", idx.astype(np.int64))])
    # the indices used on the device: another activation gathered at them (ElementOffsets,
    # then a Gather), and the values scatter-added back into zeros at them (a scatter-add)
    x = rng.standard_normal([2, 6]).astype(np.float32)
    d = rng.standard_normal([2, 6]).astype(np.float32)
    r = np.maximum(x, 0)
    idx = np.argsort(-r, axis=1, kind="stable")[:, :3]
    vals = np.take_along_axis(r, idx, 1)
    back = np.zeros([2, 6], np.float32)
    np.put_along_axis(back, idx, vals, 1)
    nodes = [const("k", np.array([3], np.int64)), helper.make_node("Relu", ["x"], ["r"]),
             helper.make_node("TopK", ["r", "k"], ["v", "i"]),
             helper.make_node("Tanh", ["d"], ["t"]),
             helper.make_node("GatherElements", ["t", "i"], ["g"], axis=1),
             const("z", np.zeros([2, 6], np.float32)),
             helper.make_node("ScatterElements", ["z", "i", "v"], ["b"], axis=1, reduction="add")]
    write_case("test_topk_f32_run_time_indices_used", nodes, [("x", x), ("d", d)],
               [("g", np.take_along_axis(np.tanh(d), idx, 1)), ("b", back)], 16)


def scatter_reduction_cases(rng):
    """Scatters with reduction add on run-time data or updates (lowered at load to Add(data,
    GatherGrad(updates, offsets))): a graph network's messages summed into zeros at their
    nodes (ScatterElements of a Constant zeros), ScatterND add with a row given twice, on
    run-time data; reduction mul on run-time data stays refused."""
    const = lambda a, n: helper.make_node("Constant", [], [n], value=numpy_helper.from_array(a, n))
    # messages [6, 3] summed at nodes [4, 3] by their targets (two targets twice)
    tgt = np.array([2, 0, 2, 3, 0, 1], np.int64)
    idx = np.repeat(tgt[:, None], 3, axis=1)
    msg = rng.standard_normal([6, 3]).astype(np.float32)
    zeros = np.zeros([4, 3], np.float32)
    y = scatter_elements(zeros.astype(np.float64), idx, msg, 0, "add").astype(np.float32)
    nodes = [const(zeros, "z"), const(idx, "i"),
             helper.make_node("ScatterElements", ["z", "i", "m"], ["y"], axis=0,
                              reduction="add")]
    write_case("test_scatterelements_f32_add_messages_into_zeros", nodes, [("m", msg)],
               [("y", y)], 16)
    x = rng.standard_normal([4, 2, 3]).astype(np.float32)
    rows = np.array([[1, 0], [3, 1], [1, 0]], np.int64)
    u = rng.standard_normal([3, 3]).astype(np.float32)
    want = x.copy()
    for r, (a, b) in enumerate(rows):
        want[a, b] += u[r]
    nodes = [const(rows, "r"), helper.make_node("ScatterND", ["x", "r", "u"], ["y"],
                                                reduction="add")]
    write_case("test_scatternd_f32_add_repeated_row", nodes, [("x", x), ("u", u)], [("y", want)],
               16)
    nodes = [const(np.array([[0, 2], [1, 1]], np.int64), "i"),
             helper.make_node("ScatterElements", ["x", "i", "u"], ["y"], axis=1,
                              reduction="mul")]
    x = rng.standard_normal([3, 4]).astype(np.float32)
    u = rng.standard_normal([2, 2]).astype(np.float32)
    write_case("test_scatterelements_f32_mul_on_run_time_data_refused", nodes,
               [("x", x), ("u", u)], [("y", np.zeros([2], np.float32))], 16)


def arg_run_time_cases(rng):
    """ArgMax / ArgMin of run-time data (TopKOffsets with k 1, then a Reshape): Relu's zeros
    tie (the first index, or the last with select_last_index), keepdims 0 and 1, a NaN wins
    (numpy's and torch's argmax and argmin)."""
    const = lambda nm, v: helper.make_node("Constant", [], [nm],
                                           value=numpy_helper.from_array(np.asarray(v), nm))
    x = rng.standard_normal([3, 4, 5]).astype(np.float32)
    x[0, 1, :] = -1  # a line of Relu zeros: all tie
    for op, axis, keep, last in (("ArgMax", 1, 1, 0), ("ArgMax", 2, 0, 1), ("ArgMin", 0, 0, 0),
                                 ("ArgMin", -1, 1, 1)):
        r = np.maximum(x, 0)
        f = np.argmax if op == "ArgMax" else np.argmin
        if last:
            flip = np.flip(r, axis=axis)
            want = r.shape[axis] - 1 - f(flip, axis=axis)
        else:
            want = f(r, axis=axis)
        if keep:
            want = np.expand_dims(want, axis)
        nodes = [helper.make_node("Relu", ["x"], ["r"]),
                 helper.make_node(op, ["r"], ["y"], axis=axis, keepdims=keep,
                                  select_last_index=last)]
        name = f"{op.lower()}_axis{axis % 3}_keep{keep}_last{last}"
        write_case(f"test_{name}_f32_run_time", nodes, [("x", x)], [("y", want.astype(np.int64))])
    x = rng.standard_normal([2, 5]).astype(np.float32)
    x[1, 3] = np.nan
    for op, f in (("ArgMax", np.argmax), ("ArgMin", np.argmin)):
        nodes = [helper.make_node("Identity", ["x"], ["r"]),
                 helper.make_node(op, ["r"], ["y"], axis=1, keepdims=0)]
        write_case(f"test_{op.lower()}_f32_run_time_nan_wins", nodes, [("x", x)],
                   [("y", f(x, axis=1).astype(np.int64))])
    # plan-time values fold (the host folds its integer glue the same way): int64, ties
    v = rng.integers(-2, 3, [4, 6]).astype(np.int64)
    z = rng.standard_normal([6]).astype(np.float32)
    nodes = [const("v", v), helper.make_node("ArgMin", ["v"], ["m"], axis=0, keepdims=0,
                                             select_last_index=1),
             helper.make_node("Cast", ["m"], ["mf"], to=TensorProto.FLOAT),
             helper.make_node("Add", ["z", "mf"], ["y"])]
    want = 3 - np.argmin(np.flip(v, 0), axis=0)
    write_case("test_argmin_i64_plan_time_last", nodes, [("z", z)],
               [("y", z + want.astype(np.float32))])


def lrn_even_case(rng):
    """LRN with an even size: ONNX's window runs floor((size - 1) / 2) channels before and
    ceil((size - 1) / 2) after (PyTorch's local_response_norm the other way round), rank 3."""
    x = rng.standard_normal([2, 7, 5]).astype(np.float32)
    size, alpha, beta, bias = 4, 0.3, 0.6, 1.2
    sq = x.astype(np.float64) ** 2
    s = np.zeros_like(sq)
    for c in range(7):
        lo, hi = max(0, c - (size - 1) // 2), min(6, c + size // 2)
        s[:, c] = sq[:, lo:hi + 1].sum(1)
    y = (x / (bias + alpha / size * s) ** beta).astype(np.float32)
    node = helper.make_node("LRN", ["x"], ["y"], size=size, alpha=alpha, beta=beta, bias=bias)
    write_case("test_lrn_f32_even_size_rank3", [node], [("x", x)], [("y", y)])


def cumsum_run_time_cases(rng):
    """CumSum of run-time float32 data (a scan a line on each backend): inclusive and
    exclusive, forward and reverse, the last axis and another."""
    x = rng.standard_normal([2, 5, 3]).astype(np.float32)
    for axis, excl, rev in ((2, 0, 0), (1, 1, 0), (1, 0, 1), (0, 1, 1)):
        r = np.maximum(x, 0).astype(np.float64)
        src = np.flip(r, axis) if rev else r
        c = np.cumsum(src, axis=axis)
        if excl:
            c = c - src
        want = (np.flip(c, axis) if rev else c).astype(np.float32)
        nodes = [helper.make_node("Constant", [], ["ax"], value=numpy_helper.from_array(
                     np.array(axis, np.int64), "ax")),
                 helper.make_node("Relu", ["x"], ["r"]),
                 helper.make_node("CumSum", ["r", "ax"], ["y"], exclusive=excl, reverse=rev)]
        write_case(f"test_cumsum_f32_run_time_axis{axis}_excl{excl}_rev{rev}", nodes,
                   [("x", x)], [("y", want)])


def reduce_family_run_time_cases(rng):
    """ReduceLogSumExp, ReduceL1, ReduceSumSquare, ReduceLogSum of run-time float32 data
    (rewritten at load into ReduceSum and pointwise ops): LogSumExp over values near 100
    (exp would overflow float32 unshifted), keepdims 0; every axis; opset 18's axes input."""
    x = (rng.standard_normal([2, 3, 4]) + 100).astype(np.float32)
    y = x.astype(np.float64)
    cases = [
        ("ReduceLogSumExp", [1], 0, 13,
         np.log(np.exp(y - y.max(1, keepdims=True)).sum(1)) + y.max(1)),
        ("ReduceL1", None, 1, 13, np.abs(y - 100).sum(keepdims=True)),
        ("ReduceSumSquare", [-1, 0], 0, 18, ((y - 100) ** 2).sum((2, 0))),
        ("ReduceLogSum", [2], 1, 18, np.log(y.sum(2, keepdims=True))),
    ]
    for op, axes, keep, opset, want in cases:
        shift = op in ("ReduceL1", "ReduceSumSquare")  # about 0, both signs
        nodes = []
        if shift:
            nodes.append(helper.make_node("Constant", [], ["c"], value=numpy_helper.from_array(
                np.array(100, np.float32), "c")))
            nodes.append(helper.make_node("Sub", ["x", "c"], ["r"]))
        else:
            nodes.append(helper.make_node("Identity", ["x"], ["r"]))
        ins, kw = ["r"], {"keepdims": keep}
        reduce_axes(nodes, ins, kw, axes, opset)
        nodes.append(helper.make_node(op, ins, ["y"], **kw))
        write_case(f"test_{op.lower()}_f32_run_time_keep{keep}_opset{opset}", nodes, [("x", x)],
                   [("y", np.asarray(want, np.float32))], opset)


def wrap_pad_cases(rng):
    """Pad mode wrap (circular, opset 19) of run-time data: pads past one extent (numpy's
    np.pad(mode='wrap')); a negative pad (a crop) with wrap is refused: torch crops first and
    wraps the rest, the coordinate map reflect and edge use would not."""
    x = rng.standard_normal([2, 3, 4]).astype(np.float32)
    for name, pads in (("past_extent", [0, 4, 1, 0, 5, 2]), ("crop_and_wrap", [0, -1, 2, 1, 0, -1])):
        r = np.maximum(x, 0)
        lo, hi = pads[:3], pads[3:]
        crop = r[tuple(slice(max(0, -a), r.shape[d] - max(0, -b))
                       for d, (a, b) in enumerate(zip(lo, hi)))]
        want = np.pad(crop, [(max(0, a), max(0, b)) for a, b in zip(lo, hi)], mode="wrap")
        nodes = [helper.make_node("Constant", [], ["p"], value=numpy_helper.from_array(
                     np.array(pads, np.int64), "p")),
                 helper.make_node("Relu", ["x"], ["r"]),
                 helper.make_node("Pad", ["r", "p"], ["y"], mode="wrap")]
        write_case(f"test_pad_f32_wrap_{name}{'_refused' if min(pads) < 0 else ''}", nodes,
                   [("x", x)], [("y", want)], 19)


def math_run_time_cases(rng):
    """The math ops and predicates of run-time float32 data: trigonometry in its domain,
    Sign / Floor / Ceil / Round at their edges (zeros of both signs, halves: Round to even,
    NaN), Softsign, ThresholdedRelu, Shrink (hard and soft); comparisons with ties and NaN,
    And / Or / Xor / Not of run-time masks, IsInf's detect flags."""
    x = rng.uniform(-0.9, 0.9, [2, 3, 4]).astype(np.float32)
    big = rng.uniform(1.1, 3.0, [2, 3, 4]).astype(np.float32)
    f64 = lambda a: a.astype(np.float64)
    unary = [("Tan", x, np.tan), ("Asin", x, np.arcsin), ("Acos", x, np.arccos),
             ("Atan", x * 4, np.arctan), ("Sinh", x * 3, np.sinh), ("Cosh", x * 3, np.cosh),
             ("Asinh", x * 4, np.arcsinh), ("Acosh", big, np.arccosh),
             ("Atanh", x, np.arctanh), ("Softsign", x * 4, lambda v: v / (1 + np.abs(v)))]
    for op, v, ref in unary:
        v = v.astype(np.float32)
        write_case(f"test_{op.lower()}_f32_opset13", [helper.make_node(op, ["x"], ["y"])],
                   [("x", v)], [("y", ref(f64(v)).astype(np.float32))])
    edges = np.array([-2.5, -1.5, -0.5, -0.0, 0.0, 0.5, 1.5, 2.5, 0.49999997, -3.7, 3.2,
                      np.nan, np.inf, -np.inf], np.float32)
    for op, ref in (("Sign", np.sign), ("Floor", np.floor), ("Ceil", np.ceil),
                    ("Round", np.round)):
        write_case(f"test_{op.lower()}_f32_edges", [helper.make_node(op, ["x"], ["y"])],
                   [("x", edges)], [("y", ref(edges).astype(np.float32))])
    v = (x * 2).astype(np.float32)
    write_case("test_thresholded_relu_f32_alpha", [helper.make_node(
        "ThresholdedRelu", ["x"], ["y"], alpha=0.4)], [("x", v)],
        [("y", np.where(v > 0.4, v, 0).astype(np.float32))])
    for name, lambd, bias in (("hard", 0.5, 0.0), ("soft", 0.3, 0.3)):
        want = np.where(v < -lambd, v + bias, np.where(v > lambd, v - bias, 0))
        write_case(f"test_shrink_f32_{name}", [helper.make_node(
            "Shrink", ["x"], ["y"], lambd=lambd, bias=bias)], [("x", v)],
            [("y", want.astype(np.float32))])
    a = np.array([[1.0, np.nan, 2.0, -1.0], [0.5, 0.5, np.nan, 3.0]], np.float32)
    b = np.array([1.0, np.nan, 3.0, -2.0], np.float32)
    for op, ref in (("Equal", np.equal), ("LessOrEqual", np.less_equal),
                    ("GreaterOrEqual", np.greater_equal)):
        write_case(f"test_{op.lower()}_f32_run_time_ties_nan",
                   [helper.make_node(op, ["a", "b"], ["y"])], [("a", a), ("b", b)],
                   [("y", ref(a, b))], 16)
    # masks computed from run-time data, then combined
    lo, hi = np.float32(-0.3), np.float32(0.4)
    consts = [helper.make_node("Constant", [], [n], value=numpy_helper.from_array(
        np.array(c, np.float32), n)) for n, c in (("lo", lo), ("hi", hi))]
    above, below = v > lo, v < hi
    for op, ref in (("And", np.logical_and), ("Or", np.logical_or), ("Xor", np.logical_xor)):
        nodes = consts + [helper.make_node("Greater", ["x", "lo"], ["above"]),
                          helper.make_node("Less", ["x", "hi"], ["below"]),
                          helper.make_node(op, ["above", "below"], ["m"]),
                          helper.make_node("Not", ["m"], ["y"])]
        write_case(f"test_{op.lower()}_not_run_time_masks", nodes, [("x", v)],
                   [("y", np.logical_not(ref(above, below)))])
    for pos, neg in ((1, 0), (0, 1), (0, 0)):
        want = (np.isposinf(edges) & bool(pos)) | (np.isneginf(edges) & bool(neg))
        write_case(f"test_isinf_f32_run_time_pos{pos}_neg{neg}", [helper.make_node(
            "IsInf", ["x"], ["y"], detect_positive=pos, detect_negative=neg)],
            [("x", edges)], [("y", want)], 20)


def trilu_run_time_cases(rng):
    """Trilu of run-time float32 data (torch.tril / triu of an activation, rewritten at load
    as a Where of the plan-time triangle): upper and lower, k from -1 to 2, a NaN outside the
    triangle zeroed as torch's, a non-square batch of matrices."""
    x = rng.standard_normal([2, 3, 4]).astype(np.float32)
    x[0, 0, 3] = np.nan
    for upper, k in ((1, 0), (0, 0), (1, 2), (0, -1)):
        want = (np.triu(x, k) if upper else np.tril(x, k)).astype(np.float32)  # NaN out: 0
        nodes = [helper.make_node("Constant", [], ["k"], value=numpy_helper.from_array(
                     np.array(k, np.int64), "k")),
                 helper.make_node("Identity", ["x"], ["r"]),
                 helper.make_node("Trilu", ["r", "k"], ["y"], upper=upper)]
        write_case(f"test_trilu_f32_run_time_upper{upper}_k{k}".replace("-", "m"), nodes,
                   [("x", x)], [("y", want)], 14)


def gather_nd_run_time_cases(rng):
    """GatherND of run-time float32 data with plan-time indices of two and three coordinates
    a row (rewritten at load as a Gather of the flattened leading dims): negative
    coordinates, a row twice, whole slabs and single elements."""
    x = rng.standard_normal([4, 3, 5]).astype(np.float32)
    for name, idx in (("k2_slabs", np.array([[[0, 1], [3, -1]], [[-4, 0], [0, 1]]], np.int64)),
                      ("k3_elements", np.array([[1, 2, 4], [-1, 0, -5], [1, 2, 4]], np.int64))):
        k = idx.shape[-1]
        want = np.stack([x[tuple(r)] for r in idx.reshape(-1, k)]).reshape(
            idx.shape[:-1] + x.shape[k:])
        nodes = [helper.make_node("Constant", [], ["i"], value=numpy_helper.from_array(idx, "i")),
                 helper.make_node("Relu", ["x"], ["r"]),
                 helper.make_node("GatherND", ["r", "i"], ["y"])]
        write_case(f"test_gathernd_f32_run_time_{name}", nodes, [("x", x)],
                   [("y", np.maximum(want, 0).astype(np.float32))], 13)


def pow_run_time_cases(rng):
    """Pow of run-time data: an int64 scalar exponent (torch.export's |x| ** 3 in
    vector_norm), and a positive plan-time base to a run-time exponent (torch.exp2, 10 ** x:
    rewritten as Exp(x ln base)), the base broadcast; a negative base is refused."""
    x = rng.standard_normal([2, 3]).astype(np.float32)
    three = helper.make_node("Constant", [], ["e"], value=numpy_helper.from_array(
        np.array(3, np.int64), "e"))
    write_case("test_pow_f32_run_time_int64_exponent",
               [three, helper.make_node("Pow", ["x", "e"], ["y"])], [("x", x)],
               [("y", (x.astype(np.float64) ** 3).astype(np.float32))], 15)
    for name, b in (("base_broadcast", np.array([2.0, 10.0, 0.5], np.float32)),
                    ("base_negative_refused", np.array([2.0, -3.0, 0.5], np.float32))):
        base = helper.make_node("Constant", [], ["b"], value=numpy_helper.from_array(b, "b"))
        with np.errstate(invalid="ignore"):  # the refused case's NaN
            want = (b.astype(np.float64) ** x.astype(np.float64)).astype(np.float32)
        write_case(f"test_pow_f32_run_time_exponent_{name}",
                   [base, helper.make_node("Identity", ["x"], ["r"]),
                    helper.make_node("Pow", ["b", "r"], ["y"])], [("x", x)],
                   [("y", want)], 15)


def soft_target_sce_cases(rng):
    """SoftmaxCrossEntropyLoss with class probabilities as its labels (torch 2.x's export of
    F.cross_entropy of soft targets; outside ONNX's spec, taken as PyTorch defines it):
    reductions none, sum and mean, [N, C] and [N, C, d]."""
    for shape, red in (([3, 4], "none"), ([3, 4], "sum"), ([2, 4, 3], "mean")):
        x = rng.standard_normal(shape).astype(np.float32)
        p = rng.random(shape).astype(np.float32)
        p = (p / p.sum(1, keepdims=True)).astype(np.float32)
        x64 = x.astype(np.float64)
        lsm = x64 - np.log(np.exp(x64).sum(1, keepdims=True))
        per = -(p.astype(np.float64) * lsm).sum(1)
        want = per if red == "none" else per.sum() if red == "sum" else per.mean()
        node = helper.make_node("SoftmaxCrossEntropyLoss", ["x", "p"], ["y"], reduction=red)
        write_case(f"test_sce_f32_soft_targets_{red}_rank{len(shape)}", [node],
                   [("x", x), ("p", p)], [("y", np.asarray(want, np.float32))], 13)


def mod_run_time_cases(rng):
    """Mod of run-time data with fmod 1 (torch.fmod: C's fmod, the sign of the dividend), the
    divisor broadcast and of either sign; fmod 0 of floats (outside ONNX's spec) refused."""
    x = (rng.standard_normal([2, 3, 4]) * 3).astype(np.float32)
    d = np.array([[1.5], [-0.7], [2.0]], np.float32)
    for name, fm in (("fmod", 1), ("fmod0_refused", 0)):
        write_case(f"test_mod_f32_run_time_{name}",
                   [helper.make_node("Identity", ["x"], ["r"]),
                    helper.make_node("Identity", ["d"], ["s"]),
                    helper.make_node("Mod", ["r", "s"], ["y"], fmod=fm)],
                   [("x", x), ("d", d)], [("y", np.fmod(x, d).astype(np.float32))], 13)


def cumsum_long_cases(rng):
    """CumSum of run-time float32 data along 6000 elements (past the 4096 the MatMul by a
    triangle took until 2026-11-30), and of int64 data computed on the device (a mask of an
    activation cast), refused: float32 only at run time."""
    x = rng.standard_normal([2, 6000]).astype(np.float32)
    ax = helper.make_node("Constant", [], ["ax"], value=numpy_helper.from_array(
        np.array(1, np.int64), "ax"))
    want = np.cumsum(np.maximum(x, 0).astype(np.float64), axis=1).astype(np.float32)
    write_case("test_cumsum_f32_run_time_axis_6000",
               [ax, helper.make_node("Relu", ["x"], ["r"]),
                helper.make_node("CumSum", ["r", "ax"], ["y"])], [("x", x)], [("y", want)])
    zero = helper.make_node("Constant", [], ["z"], value=numpy_helper.from_array(
        np.array(0, np.float32), "z"))
    ranks = np.cumsum((x > 0).astype(np.int64), axis=1)
    write_case("test_cumsum_i64_run_time_refused",
               [ax, zero, helper.make_node("Greater", ["x", "z"], ["m"]),
                helper.make_node("Cast", ["m"], ["i"], to=TensorProto.INT64),
                helper.make_node("CumSum", ["i", "ax"], ["y"])], [("x", x)], [("y", ranks)])


def reduce_prod_run_time_cases(rng):
    """ReduceProd of run-time float32 data (torch.prod of an activation: a chain of Muls over
    the rows of the reduced axes moved first): two axes kept, axes an input (opset 18), zeros
    among the factors (a ReLU's); the last axis, not kept (opset 13, axes an attribute);
    72 factors a product refused (at most 64)."""
    x = rng.standard_normal([2, 3, 4]).astype(np.float32)
    r = np.maximum(x, 0).astype(np.float64) + np.where(x > -0.6, 0.0, 0.5)  # zeros, and not
    axes = helper.make_node("Constant", [], ["axes"], value=numpy_helper.from_array(
        np.array([0, 2], np.int64), "axes"))
    half = helper.make_node("Constant", [], ["h"], value=numpy_helper.from_array(
        np.where(x > -0.6, 0.0, 0.5).astype(np.float32), "h"))
    write_case("test_reduce_prod_f32_run_time_axes_02_keep_zeros",
               [axes, half, helper.make_node("Relu", ["x"], ["rl"]),
                helper.make_node("Add", ["rl", "h"], ["r"]),
                helper.make_node("ReduceProd", ["r", "axes"], ["y"], keepdims=1)],
               [("x", x)], [("y", r.prod((0, 2), keepdims=True).astype(np.float32))], 18)
    write_case("test_reduce_prod_f32_run_time_last_axis",
               [helper.make_node("Identity", ["x"], ["i"]),
                helper.make_node("ReduceProd", ["i"], ["y"], axes=[-1], keepdims=0)],
               [("x", x)], [("y", x.astype(np.float64).prod(-1).astype(np.float32))], 13)
    w = (rng.random([2, 72]) + 0.5).astype(np.float32)
    write_case("test_reduce_prod_f32_run_time_72_factors_refused",
               [helper.make_node("Identity", ["w"], ["i"]),
                helper.make_node("ReduceProd", ["i"], ["y"], axes=[1], keepdims=0)],
               [("w", w)], [("y", w.astype(np.float64).prod(1).astype(np.float32))], 13)


def pow_tensor_cases(rng):
    """Pow of a run-time base by a run-time exponent (PowTensor: GeM pooling's learnt p is a
    parameter, here an input), broadcast, with 0 ** 0 = 1 and 0 ** 2 = 0 among them; and by a
    plan-time exponent that is not one number (a Constant tensor)."""
    x = np.abs(rng.standard_normal([2, 3, 4])).astype(np.float32)
    x[0, 0, :2] = 0.0
    e = rng.uniform(-1.5, 2.5, [3, 1]).astype(np.float32)
    e[0, 0] = 0.0
    want = np.power(x.astype(np.float64), e.astype(np.float64)).astype(np.float32)
    write_case("test_pow_f32_run_time_base_and_exponent",
               [helper.make_node("Identity", ["x"], ["b"]), helper.make_node("Identity", ["e"], ["p"]),
                helper.make_node("Pow", ["b", "p"], ["y"])],
               [("x", x), ("e", e)], [("y", want)], 15)
    c = helper.make_node("Constant", [], ["p"], value=numpy_helper.from_array(e, "p"))
    write_case("test_pow_f32_run_time_base_constant_exponent_tensor",
               [c, helper.make_node("Identity", ["x"], ["b"]),
                helper.make_node("Pow", ["b", "p"], ["y"])], [("x", x)], [("y", want)], 15)


def diagonal_cases(rng):
    """Diagonals of run-time data: Einsum with an index twice in a term (a trace "ii",
    "ncii->nc", "nii,ni->n"; EINSUM's "ii->i"), a repeated output index refused; GatherND with
    batch_dims 2 at plan-time indices (the legacy exporter's torch.diagonal)."""
    x = rng.standard_normal([2, 3, 4, 4]).astype(np.float32)
    m = rng.standard_normal([4, 4]).astype(np.float32)
    v = rng.standard_normal([2, 4]).astype(np.float32)
    cases = (("trace", "ii", [m], np.einsum("ii", m.astype(np.float64))),
             ("batch_diagonal", "ncii->nc", [x], np.einsum("ncii->nc", x.astype(np.float64))),
             ("diagonal_times", "nii,ni->n", [x[:, 0], v],
              np.einsum("nii,ni->n", x[:, 0].astype(np.float64), v.astype(np.float64))),
             ("output_repeats_refused", "i->ii", [v[0]], np.diag(v[0]).astype(np.float64)))
    for name, eq, ins, want in cases:
        names = [f"x{i}" for i in range(len(ins))]
        nodes = [helper.make_node("Identity", [n], [f"r{n}"]) for n in names]
        nodes.append(helper.make_node("Einsum", [f"r{n}" for n in names], ["y"], equation=eq))
        write_case(f"test_einsum_f32_{name}", nodes, list(zip(names, ins)),
                   [("y", np.asarray(want, np.float32))], 12)
    idx = np.array([[[[0, 0], [1, 1], [2, 2], [3, 3]]] * 3] * 2, np.int64)  # [2, 3, 4, 2]
    want = np.stack([np.stack([np.diagonal(x[a, b]) for b in range(3)]) for a in range(2)])
    write_case("test_gathernd_f32_run_time_batch_dims2",
               [helper.make_node("Constant", [], ["i"], value=numpy_helper.from_array(idx, "i")),
                helper.make_node("Identity", ["x"], ["r"]),
                helper.make_node("GatherND", ["r", "i"], ["y"], batch_dims=2)],
               [("x", x)], [("y", want.astype(np.float32))], 13)


def mask_count_cases(rng):
    """A count of a run-time mask (Greater of an activation, cast to int64, ReduceSum) read as
    float32: counted in float32; the same count read as int64 (a graph output) refused."""
    x = rng.standard_normal([2, 3, 5]).astype(np.float32)
    zero = helper.make_node("Constant", [], ["z"], value=numpy_helper.from_array(
        np.array(0, np.float32), "z"))
    axes = helper.make_node("Constant", [], ["axes"], value=numpy_helper.from_array(
        np.array([2], np.int64), "axes"))
    count = (x > 0).sum(2)
    head = [zero, axes, helper.make_node("Greater", ["x", "z"], ["m"]),
            helper.make_node("Cast", ["m"], ["i"], to=TensorProto.INT64),
            helper.make_node("ReduceSum", ["i", "axes"], ["c"], keepdims=0)]
    write_case("test_reducesum_i64_run_time_mask_count",
               head + [helper.make_node("Cast", ["c"], ["y"], to=TensorProto.FLOAT)],
               [("x", x)], [("y", count.astype(np.float32))])
    head[-1] = helper.make_node("ReduceSum", ["i", "axes"], ["y"], keepdims=0)
    write_case("test_reducesum_i64_run_time_mask_count_as_int_refused", head, [("x", x)],
               [("y", count.astype(np.int64))])


def gathernd_device_cases(rng):
    """GatherND of run-time data at indices the device computes: each row's position, then
    an ArgMax of an activation (x[arange(N), s.argmax(1)], s through an Identity: the
    runner gives inputs read only by folding ops as plan-time values), or a TopK's indices
    (x[arange(N)[:, None], s.topk(3)]); two device columns (no position column: x[a, a], each
    row's offset computed on the device; refused until 2026-11-30)."""
    x = rng.standard_normal([2, 5, 3]).astype(np.float32)
    s = rng.standard_normal([2, 5]).astype(np.float32)
    c = lambda name, v: helper.make_node("Constant", [], [name], value=numpy_helper.from_array(
        np.asarray(v), name))
    am = s.argmax(1)
    write_case("test_gathernd_f32_device_indices_argmax",
               [c("rows", np.arange(2, dtype=np.int64)[:, None]), c("ax", np.array([1])),
                helper.make_node("Identity", ["s"], ["sr"]),
                helper.make_node("ArgMax", ["sr"], ["a"], axis=1, keepdims=1),
                helper.make_node("Concat", ["rows", "a"], ["i"], axis=-1),
                helper.make_node("Identity", ["x"], ["r"]),
                helper.make_node("GatherND", ["r", "i"], ["y"])],
               [("x", x), ("s", s)], [("y", x[np.arange(2), am])])
    top = np.argsort(-s, axis=1, kind="stable")[:, :3]
    write_case("test_gathernd_f32_device_indices_topk",
               [c("rows", np.repeat(np.arange(2, dtype=np.int64)[:, None, None], 3, 1)),
                c("k", np.array([3], np.int64)), c("last", np.array([-1], np.int64)),
                helper.make_node("Identity", ["s"], ["sr"]),
                helper.make_node("TopK", ["sr", "k"], ["v", "t"], axis=1),
                helper.make_node("Unsqueeze", ["t", "last"], ["tc"]),
                helper.make_node("Concat", ["rows", "tc"], ["i"], axis=-1),
                helper.make_node("Identity", ["x"], ["r"]),
                helper.make_node("GatherND", ["r", "i"], ["y"])],
               [("x", x), ("s", s)], [("y", x[np.arange(2)[:, None], top])])
    x5 = np.random.default_rng(5).standard_normal([5, 5, 3]).astype(np.float32)  # rng: untouched
    write_case("test_gathernd_f32_device_indices_two_columns",
               [helper.make_node("Identity", ["s"], ["sr"]),
                helper.make_node("ArgMax", ["sr"], ["a"], axis=1, keepdims=1),
                helper.make_node("Concat", ["a", "a"], ["i"], axis=-1),
                helper.make_node("Identity", ["x"], ["r"]),
                helper.make_node("GatherND", ["r", "i"], ["y"])],
               [("x", x5), ("s", s)], [("y", x5[am, am])])


def mod_device_index_cases(rng):
    """Python's % of an ArgMax's indices by the axis' extent, then GatherElements
    (torch.take_along_dim's export): the Mod is the identity there (the indices lie in
    [0, 5)); by 3 it changes them: an integer Mod on the device (refused until 2026-11-30)."""
    x = rng.standard_normal([2, 5]).astype(np.float32)
    s = rng.standard_normal([2, 5]).astype(np.float32)
    am = s.argmax(1)[:, None]
    for name, d in (("wrapped", 5), ("by_less", 3)):
        c = helper.make_node("Constant", [], ["d"], value=numpy_helper.from_array(
            np.array(d, np.int64), "d"))
        write_case(f"test_mod_i64_device_indices_{name}",
                   [c, helper.make_node("Identity", ["s"], ["sr"]),
                    helper.make_node("ArgMax", ["sr"], ["a"], axis=1, keepdims=1),
                    helper.make_node("Mod", ["a", "d"], ["w"]),
                    helper.make_node("Identity", ["x"], ["r"]),
                    helper.make_node("GatherElements", ["r", "w"], ["y"], axis=1)],
                   [("x", x), ("s", s)], [("y", np.take_along_axis(x, am % d, 1))])


def unpool_device_cases(rng):
    """max_unpool2d as the default exporter writes it: a MaxPool's indices (flat over the
    tensor) made per plane by Sub of a kernel-1 MaxPool's sliced at each plane's start, times
    1 (Mul), offset to each plane again (Add), then ScatterND of the pooled values into zeros
    at those device indices. Windows of 2 at stride 1 overlap: a maximum two windows take is
    written twice (the same value); with reduction add it is summed (refused until
    2026-11-30)."""
    x = rng.standard_normal([1, 2, 4, 4]).astype(np.float32)
    c = lambda name, v: helper.make_node("Constant", [], [name], value=numpy_helper.from_array(
        np.asarray(v), name))
    y, y_add = np.zeros(32, np.float32), np.zeros(32, np.float32)  # written; summed
    for ch in range(2):
        for i in range(3):
            for j in range(3):
                w = x[0, ch, i:i + 2, j:j + 2]
                a = int(np.argmax(w))
                y[ch * 16 + (i + a // 2) * 4 + j + a % 2] = w.flat[a]
                y_add[ch * 16 + (i + a // 2) * 4 + j + a % 2] += w.flat[a]
    for name, red, want in (("unpool", "none", y), ("unpool_add", "add", y_add)):
        write_case(f"test_scatternd_f32_device_indices_{name}",
                   [c("starts", np.array([0, 0], np.int64)), c("ends", np.array([1, 1], np.int64)),
                    c("axes", np.array([2, 3], np.int64)), c("one", np.array(1, np.int64)),
                    c("planes", (np.arange(2, dtype=np.int64) * 16).reshape(1, 2, 1, 1)),
                    c("flat", np.array([-1], np.int64)), c("last", np.array([-1], np.int64)),
                    c("zeros", np.zeros(32, np.float32)), c("shape", np.array([1, 2, 4, 4])),
                    helper.make_node("MaxPool", ["x"], ["p", "i"], kernel_shape=[2, 2]),
                    helper.make_node("MaxPool", ["x"], ["p1", "i1"], kernel_shape=[1, 1]),
                    helper.make_node("Slice", ["i1", "starts", "ends", "axes"], ["base"]),
                    helper.make_node("Sub", ["i", "base"], ["in_plane"]),
                    helper.make_node("Mul", ["in_plane", "one"], ["times_one"]),
                    helper.make_node("Add", ["times_one", "planes"], ["at"]),
                    helper.make_node("Reshape", ["at", "flat"], ["at_flat"]),
                    helper.make_node("Unsqueeze", ["at_flat", "last"], ["rows"]),
                    helper.make_node("Reshape", ["p", "flat"], ["values"]),
                    helper.make_node("ScatterND", ["zeros", "rows", "values"], ["u"],
                                     reduction=red),
                    helper.make_node("Reshape", ["u", "shape"], ["y"])],
                   [("x", x)], [("y", want.reshape(1, 2, 4, 4))], 18)


def diagonal_mask_cases(rng):
    """torch.diagonal as both exporters write it: Mul by an identity mask (a plan-time value),
    then ReduceSum over one of its two dims, gathered as the diagonal (O(n)) at load: kept
    dims, the mask over the first and last dims summed over the first (the diagonal moved
    back to its place), a rectangular mask, and one whose kept dim is longer than the summed
    one (no partner for its last rows: left as Mul and ReduceSum)."""
    c = lambda name, v: helper.make_node("Constant", [], [name], value=numpy_helper.from_array(
        np.asarray(v), name))
    specs = [("keepdims", [2, 4, 4], np.eye(4, dtype=np.float32), [2], 1),
             ("first_dim", [4, 3, 4], np.eye(4, dtype=np.float32).reshape(4, 1, 4), [0], 0),
             ("rectangular", [3, 5], np.eye(3, 5, dtype=np.float32), [1], 0),
             ("kept_longer", [5, 3], np.eye(5, 3, dtype=np.float32), [1], 0)]
    for name, xs, e, axes, keep in specs:
        x = rng.standard_normal(xs).astype(np.float32)
        y = (x * e).sum(axis=tuple(axes), keepdims=bool(keep)).astype(np.float32)
        write_case(f"test_reducesum_f32_diagonal_mask_{name}",
                   [c("e", e), c("axes", np.array(axes, np.int64)),
                    helper.make_node("Mul", ["x", "e"], ["p"]),
                    helper.make_node("ReduceSum", ["p", "axes"], ["y"], keepdims=keep)],
                   [("x", x)], [("y", y)])


def einsum_gathered_diagonal_cases(rng):
    """Einsum diagonals gathered (a Transpose, then GatherND at (i, i)): an index three
    times, two indices twice each, a repeat apart from its first (the dims moved first)."""
    cases = (("diagonal_thrice", "iii->i", [3, 3, 3]), ("two_diagonals", "ijij->ij", [3, 4, 3, 4]),
             ("diagonal_apart", "ijki->kji", [3, 2, 4, 3]))
    for name, eq, shape in cases:
        x = rng.standard_normal(shape).astype(np.float32)
        want = np.einsum(eq, x.astype(np.float64)).astype(np.float32)
        write_case(f"test_einsum_f32_{name}",
                   [helper.make_node("Identity", ["x"], ["r"]),
                    helper.make_node("Einsum", ["r"], ["y"], equation=eq)], [("x", x)],
                   [("y", want)], 12)


def scatter_extreme_cases(rng):
    """ScatterElements / ScatterND with reduction max or min on run-time data and updates at
    plan-time indices (scatter_reduce amax / amin over a fixed graph): repeated targets (up
    to 3 updates one element), a target written by one update, elements not written; the
    data a plan-time value (include_self=False's fill) in one."""
    c = lambda name, v: helper.make_node("Constant", [], [name], value=numpy_helper.from_array(
        np.asarray(v), name))
    x = rng.standard_normal([3, 4]).astype(np.float32)
    u = rng.standard_normal([5, 4]).astype(np.float32)
    idx = np.array([[0, 2, 1, 0], [2, 2, 1, 0], [0, 0, 1, 1], [2, 0, 0, 0], [0, 2, 2, 1]],
                   np.int64)
    for red, fn in (("max", np.maximum), ("min", np.minimum)):
        want = x.copy()
        for i in range(5):
            for j in range(4):
                want[idx[i, j], j] = fn(want[idx[i, j], j], u[i, j])
        write_case(f"test_scatterelements_f32_{red}_run_time",
                   [c("i", idx), helper.make_node("Identity", ["x"], ["rx"]),
                    helper.make_node("Identity", ["u"], ["ru"]),
                    helper.make_node("ScatterElements", ["rx", "i", "ru"], ["y"], axis=0,
                                     reduction=red)],
                   [("x", x), ("u", u)], [("y", want)], 18)
    fill = np.full([4, 3], -np.inf, np.float32)
    rows = np.array([[1], [3], [1], [1]], np.int64)
    v = rng.standard_normal([4, 3]).astype(np.float32)
    want = fill.copy()
    for r in range(4):
        want[rows[r, 0]] = np.maximum(want[rows[r, 0]], v[r])
    write_case("test_scatternd_f32_max_plan_time_data",
               [c("d", fill), c("i", rows), helper.make_node("Identity", ["v"], ["rv"]),
                helper.make_node("ScatterND", ["d", "i", "rv"], ["y"], reduction="max")],
               [("v", v)], [("y", want)], 18)


def int_glue_device_cases(rng):
    """Integer glue of device values (bucketize's search, // and % of indices): int64 made
    from an activation (Cast of whole floats), then Div (truncated, ONNX's), Mod fmod 0
    (Python's %: the divisor's sign) and fmod 1 (C's), Where of int64, and GatherND of a
    plan-time table at one coordinate a row (negative from the end)."""
    c = lambda name, v: helper.make_node("Constant", [], [name], value=numpy_helper.from_array(
        np.asarray(v), name))
    x = rng.integers(-9, 10, [2, 6]).astype(np.float32)
    xi = x.astype(np.int64)
    d = np.array([3, -4, 5, -2, 7, 2], np.int64)
    glue = [helper.make_node("Identity", ["x"], ["r"]),
            helper.make_node("Cast", ["r"], ["i"], to=onnx.TensorProto.INT64), c("d", d)]
    trunc = (np.sign(xi) * np.sign(d) * (np.abs(xi) // np.abs(d))).astype(np.int64)
    write_case("test_div_i64_device_truncated",
               glue + [helper.make_node("Div", ["i", "d"], ["y"])], [("x", x)], [("y", trunc)])
    for fmod, want in ((0, np.mod(xi, d)), (1, np.fmod(xi, d))):
        write_case(f"test_mod_i64_device_fmod{fmod}",
                   glue + [helper.make_node("Mod", ["i", "d"], ["y"], fmod=fmod)], [("x", x)],
                   [("y", want.astype(np.int64))])
    write_case("test_where_i64_device",
               glue + [c("z", np.array(0, np.float32)),
                       helper.make_node("Greater", ["r", "z"], ["pos"]),
                       helper.make_node("Where", ["pos", "i", "d"], ["y"])],
               [("x", x)], [("y", np.where(x > 0, xi, d).astype(np.int64))])
    table = rng.standard_normal([10, 3]).astype(np.float32)
    write_case("test_gathernd_f32_table_at_device_indices",
               glue + [c("t", table), c("last", np.array([-1], np.int64)),
                       helper.make_node("Unsqueeze", ["i", "last"], ["rows"]),
                       helper.make_node("GatherND", ["t", "rows"], ["g"]),
                       helper.make_node("Identity", ["g"], ["y"])],
               [("x", x)], [("y", table[xi])])


def antialias_matrix(n, m, mode, a):
    """Resize antialias's weights along one dim as an [m, n] matrix (PyTorch's
    _compute_weights_aa, PIL's): the filter stretched by n / m when downscaling, centred on
    (o + 0.5) n / m, the taps inside the input, normalised."""
    s = n / m
    support, inv = (1.0 if mode == "linear" else 2.0) * max(s, 1.0), 1.0 / max(s, 1.0)

    def f(x):
        x = abs(x)
        if mode == "linear":
            return max(0.0, 1.0 - x)
        return ((a + 2) * x - (a + 3)) * x * x + 1 if x < 1 else \
            ((a * x - 5 * a) * x + 8 * a) * x - 4 * a if x < 2 else 0.0
    w = np.zeros([m, n])
    for o in range(m):
        c = s * (o + 0.5)
        lo, hi = max(int(c - support + 0.5), 0), min(int(c + support + 0.5), n)
        w[o, lo:hi] = [f((j + 0.5 - c) * inv) for j in range(lo, hi)]
        w[o] /= w[o].sum()
    return w


def antialias_cases(rng):
    """Resize with antialias 1 (F.interpolate(antialias=True)'s export): linear to a size
    that does not divide the input's, cubic (a = -0.5) by half, linear up by 1.5; with
    align_corners refused."""
    for name, mode, a, n, m in (("linear_down", "linear", -0.75, (12, 10), (5, 7)),
                                ("cubic_half", "cubic", -0.5, (12, 12), (6, 6)),
                                ("linear_up", "linear", -0.75, (6, 4), (9, 6)),
                                ("align_corners_refused", "linear", -0.75, (6, 6), (3, 3))):
        x = rng.standard_normal([1, 2, *n]).astype(np.float32)
        wh, ww = antialias_matrix(n[0], m[0], mode, a), antialias_matrix(n[1], m[1], mode, a)
        y = np.einsum("oh,nchw,pw->ncop", wh, x.astype(np.float64), ww).astype(np.float32)
        ct = "align_corners" if "align" in name else "half_pixel"
        sizes = np.array([1, 2, *m], np.int64)
        write_case(f"test_resize_f32_antialias_{name}",
                   [helper.make_node("Constant", [], ["sz"],
                                     value=numpy_helper.from_array(sizes, "sz")),
                    helper.make_node("Identity", ["x"], ["r"]),
                    helper.make_node("Resize", ["r", "", "", "sz"], ["y"], mode=mode, antialias=1,
                                     exclude_outside=1, cubic_coeff_a=a,
                                     coordinate_transformation_mode=ct)],
                   [("x", x)], [("y", y)], 18)


def dft_cases(rng):
    """DFT (opset 17) as torch.fft's export writes it, against numpy's fft: a real signal's
    onesided transform (rfft), a complex one forward and inverse (fft, ifft), the inverse of
    a half spectrum to an even and an odd length (irfft), a real signal zero-padded by
    dft_length; onesided on a complex input refused."""
    def cplx(v):
        return v[..., 0] + 1j * v[..., 1]

    def parts(z):
        return np.stack([z.real, z.imag], -1).astype(np.float32)
    real = rng.standard_normal([2, 6, 3, 1]).astype(np.float32)
    comp = rng.standard_normal([2, 3, 5, 2]).astype(np.float32)
    half = rng.standard_normal([2, 4, 2]).astype(np.float32)
    specs = [("rfft", real, dict(axis=1, onesided=1), None,
              parts(np.fft.rfft(real[..., 0].astype(np.float64), axis=1))),
             ("fft_complex", comp, dict(axis=2), None, parts(np.fft.fft(cplx(comp.astype(np.float64)), axis=2))),
             ("ifft_complex", comp, dict(axis=1, inverse=1), None,
              parts(np.fft.ifft(cplx(comp.astype(np.float64)), axis=1))),
             ("irfft_even", half, dict(axis=1, inverse=1, onesided=1), 6,
              parts(np.fft.irfft(cplx(half.astype(np.float64)), 6, axis=1) + 0j)),
             ("irfft_odd", half, dict(axis=1, inverse=1, onesided=1), 7,
              parts(np.fft.irfft(cplx(half.astype(np.float64)), 7, axis=1) + 0j)),
             ("rfft_padded", real, dict(axis=1, onesided=1), 9,
              parts(np.fft.rfft(real[..., 0].astype(np.float64), 9, axis=1))),
             ("onesided_complex_refused", comp, dict(axis=1, onesided=1), None,
              np.zeros([2, 2, 5, 2], np.float32))]
    for name, x, attrs, length, want in specs:
        nodes = [helper.make_node("Identity", ["x"], ["r"])]
        ins = ["r"]
        if length is not None:
            nodes.append(helper.make_node("Constant", [], ["n"], value=numpy_helper.from_array(
                np.array(length, np.int64), "n")))
            ins.append("n")
        nodes.append(helper.make_node("DFT", ins, ["y"], **attrs))
        write_case(f"test_dft_f32_{name}", nodes, [("x", x)], [("y", want)], 17)


def bag_slice_cases():
    """Reductions of consecutive row slices of a run-time input stacked by a Concat (what
    nn.EmbeddingBag's loop unrolls to): four equal slices summed (keepdims) and maxed
    (Unsqueezed), which load as one ReduceSum / ReduceMax over a bag axis (ir/bag_reduce.c),
    and slices of sizes 1, 2, 3, 6 averaged, which stay as they are."""
    rng = np.random.default_rng(31)
    x = rng.standard_normal([12, 3]).astype(np.float32)
    c = lambda name, v: helper.make_node("Constant", [], [name], value=numpy_helper.from_array(
        np.asarray(v, np.int64), name))
    for case, bounds, op, keep in (("sum_keepdims", [0, 3, 6, 9, 12], "ReduceSum", 1),
                                   ("max_unsqueezed", [0, 3, 6, 9, 12], "ReduceMax", 0),
                                   ("mean_uneven", [0, 1, 3, 6, 12], "ReduceMean", 1)):
        nodes = [helper.make_node("Identity", ["x"], ["rx"]), c("axes", [0])]
        parts, want = [], []
        for k in range(4):
            lo, hi = bounds[k], bounds[k + 1]
            nodes += [c(f"s{k}", [lo]), c(f"e{k}", [hi]),
                      helper.make_node("Slice", ["rx", f"s{k}", f"e{k}", "axes"], [f"rows{k}"]),
                      helper.make_node(op, [f"rows{k}", "axes"], [f"r{k}"], keepdims=keep)]
            part = f"r{k}"
            if not keep:
                nodes.append(helper.make_node("Unsqueeze", [part, "axes"], [f"u{k}"]))
                part = f"u{k}"
            parts.append(part)
            rows = x[lo:hi].astype(np.float64)
            want.append({"ReduceSum": rows.sum(0), "ReduceMax": rows.max(0),
                         "ReduceMean": rows.mean(0)}[op])
        nodes.append(helper.make_node("Concat", parts, ["y"], axis=0))
        write_case(f"test_bag_slices_f32_{case}", nodes, [("x", x)],
                   [("y", np.stack(want).astype(np.float32))], 18)


def shape_of(term):
    return [DIMS[c] for c in term if c != "."] if "." not in term else [2, 3, 4]


def reduce_axes(nodes, ins, kw, axes, opset):
    """A reduce node's axes: an input from a Constant from opset 18, an attribute before."""
    if axes is not None and opset >= 18:
        nodes.append(helper.make_node("Constant", [], ["axes"], value=numpy_helper.from_array(
            np.array(axes, np.int64), "axes")))
        ins.append("axes")
    elif axes is not None:
        kw["axes"] = axes


def write_case(name, nodes, inputs, outputs, opset=13):
    d = os.path.join(OUT, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(os.path.join(d, "test_data_set_0"))
    vi = lambda n, a: helper.make_tensor_value_info(
        n, onnx.mapping.NP_TYPE_TO_TENSOR_TYPE[a.dtype], list(a.shape))
    graph = helper.make_graph(nodes, name, [vi(n, a) for n, a in inputs],
                              [vi(n, a) for n, a in outputs])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                              producer_name="tools/node_cases.py")
    model.ir_version = 7
    onnx.save(model, os.path.join(d, "model.onnx"))
    for k, (n, a) in enumerate(inputs):
        onnx.save_tensor(numpy_helper.from_array(a, n),
                         os.path.join(d, "test_data_set_0", f"input_{k}.pb"))
    for k, (n, a) in enumerate(outputs):
        onnx.save_tensor(numpy_helper.from_array(a, n),
                         os.path.join(d, "test_data_set_0", f"output_{k}.pb"))


def main():
    rng = np.random.default_rng(7)
    for name, eq, refused in EINSUM:
        terms = eq.replace(" ", "").split("->")[0].split(",")
        xs = [rng.standard_normal(shape_of(t)).astype(np.float32) for t in terms]
        names = [f"x{k}" for k in range(len(xs))]
        if refused:
            y = np.zeros([2], np.float32)
        else:
            y = np.asarray(np.einsum(eq, *[x.astype(np.float64) for x in xs]), np.float32)
        node = helper.make_node("Einsum", names, ["y"], equation=eq)
        write_case(f"test_einsum_f32_{name}", [node], list(zip(names, xs)), [("y", y)])
    for name, op, attrs, ref, opset in ACTIVATIONS:
        # both signs, a value at 0 and large ones (Softplus's and Mish's far tails)
        x = np.concatenate([rng.standard_normal(22) * 3, [0.0, 30.0, -30.0]]).astype(np.float32)
        x = x.reshape(5, 5)
        y = ref(x.astype(np.float64)).astype(np.float32)
        node = helper.make_node(op, ["x"], ["y"], **attrs)
        write_case(f"test_{name}_f32_opset{opset}", [node], [("x", x)], [("y", y)], opset)
    # Max and Min of activations with ties and NaNs (a NaN wins, as numpy's maximum)
    a = np.array([[1.0, -2.0, 3.0, np.nan], [0.5, 0.5, -1.0, 2.0]], np.float32)
    b = np.array([[1.0, 4.0, np.nan, 1.0], [0.5, -0.5, -1.0, 7.0]], np.float32)
    for op, f in (("Max", np.maximum), ("Min", np.minimum)):
        node = helper.make_node(op, ["a", "b"], ["y"])
        write_case(f"test_{op.lower()}_f32_ties_nan", [node], [("a", a), ("b", b)],
                   [("y", f(a, b))])
    for name, sa, sb, opset, refused in MATMUL:
        a = rng.standard_normal(sa).astype(np.float32)
        b = rng.standard_normal(sb).astype(np.float32)
        y = (np.zeros([2], np.float32) if refused else
             np.matmul(a.astype(np.float64), b.astype(np.float64)).astype(np.float32))
        node = helper.make_node("MatMul", ["a", "b"], ["y"])
        write_case(f"test_matmul_f32_{name}", [node], [("a", a), ("b", b)], [("y", y)], opset)
    # And, Or, Xor of masks (ONNX's own cases are opset 7, below the opsets outcore reads)
    a = rng.standard_normal([3, 4]) > 0
    b = rng.standard_normal([4]) > 0
    for op, f in (("And", np.logical_and), ("Or", np.logical_or), ("Xor", np.logical_xor)):
        node = helper.make_node(op, ["a", "b"], ["y"])
        write_case(f"test_{op.lower()}_bool_bcast_opset13", [node], [("a", a), ("b", b)],
                   [("y", f(a, b))])
    # InstanceNormalization (ONNX's cases are opset 6): rewritten at load into
    # LayerNormalization from opset 17, into its decomposition below; the GroupNorm form
    # (scale ones, shift zeros as Constants: no affine after) and parameters as inputs
    for name, shape, opset, const in INSTANCE_NORM:
        x = rng.standard_normal(shape).astype(np.float32) * 2 + 1
        c = shape[1] if len(shape) > 1 else 1
        sc, sh = (np.ones(c, np.float32), np.zeros(c, np.float32)) if const else (
            rng.standard_normal(c).astype(np.float32), rng.standard_normal(c).astype(np.float32))
        if len(shape) < 3:
            y = np.zeros([2], np.float32)
        else:
            x64, ax = x.astype(np.float64), tuple(range(2, len(shape)))
            norm = (x64 - x64.mean(ax, keepdims=True)) / np.sqrt(x64.var(ax, keepdims=True) + 1e-3)
            cs = [c] + [1] * (len(shape) - 2)
            y = (norm * sc.reshape(cs) + sh.reshape(cs)).astype(np.float32)
        nodes, inputs = [], [("x", x)]
        if const:
            nodes += [helper.make_node("Constant", [], [n], value=numpy_helper.from_array(v, n))
                      for n, v in (("scale", sc), ("shift", sh))]
        else:
            inputs += [("scale", sc), ("shift", sh)]
        nodes.append(helper.make_node("InstanceNormalization", ["x", "scale", "shift"], ["y"],
                                      epsilon=1e-3))
        write_case(f"test_instancenorm_f32_{name}", nodes, inputs, [("y", y)], opset)
    for name, eq, shapes in ELLIPSIS:
        xs = [rng.standard_normal(sh).astype(np.float32) for sh in shapes]
        names = [f"x{k}" for k in range(len(xs))]
        y = np.asarray(np.einsum(eq, *[x.astype(np.float64) for x in xs]), np.float32)
        node = helper.make_node("Einsum", names, ["y"], equation=eq)
        write_case(f"test_einsum_f32_{name}", [node], list(zip(names, xs)), [("y", y)])
    for name, shape, idx, axis in GATHER_ELEMENTS:
        x = rng.standard_normal(shape).astype(np.float32)
        idx = np.array(idx, np.int64)
        y = (np.zeros([2], np.float32) if name.endswith("_refused") else
             gather_elements(x, idx, axis))
        nodes = [helper.make_node("Constant", [], ["i"], value=numpy_helper.from_array(idx, "i")),
                 helper.make_node("GatherElements", ["x", "i"], ["y"], axis=axis)]
        write_case(f"test_gatherelements_f32_{name}", nodes, [("x", x)], [("y", y)])
    for name, shape, idx, axis, red in SCATTER_ELEMENTS:
        x = rng.standard_normal(shape).astype(np.float32)
        idx = np.array(idx, np.int64)
        u = rng.standard_normal(idx.shape).astype(np.float32)
        y = (np.zeros([2], np.float32) if name.endswith("_refused") else
             scatter_elements(x.astype(np.float64), idx, u, axis, red).astype(np.float32))
        const = lambda a, n: helper.make_node("Constant", [], [n],
                                              value=numpy_helper.from_array(a, n))
        nodes = [const(idx, "i"),
                 helper.make_node("ScatterElements", ["x", "i", "u"], ["y"], axis=axis,
                                  reduction=red)]
        inputs = [("x", x), ("u", u)]
        if name.endswith("_plan_time"):  # data and updates Constants: it folds; z + it runs
            nodes = [const(x, "x"), const(u, "u")] + nodes[:1] + [nodes[1]]
            nodes[-1].output[0] = "s"
            z = rng.standard_normal(shape).astype(np.float32)
            nodes.append(helper.make_node("Add", ["z", "s"], ["y"]))
            inputs, y = [("z", z)], (z.astype(np.float64) + y).astype(np.float32)
        write_case(f"test_scatterelements_f32_{name}", nodes, inputs, [("y", y)], 16)
    for name, shape, reps in TILE:
        x = rng.standard_normal(shape).astype(np.float32)
        r = np.array(reps, np.int64)
        nodes = [helper.make_node("Constant", [], ["r"], value=numpy_helper.from_array(r, "r")),
                 helper.make_node("Tile", ["x", "r"], ["y"])]
        write_case(f"test_tile_f32_{name}", nodes, [("x", x)], [("y", np.tile(x, reps))])
    # BatchNormalization in inference form whose statistics the graph computes (torch 2.x's
    # export of F.batch_norm(w, None, None, training=True): NFNet's weight standardization)
    w = rng.standard_normal([1, 4, 6]).astype(np.float32)
    sc, sh = (rng.standard_normal([4]).astype(np.float32) for _ in range(2))
    w64 = w.astype(np.float64)
    mean, var = w64.mean((0, 2)), w64.var((0, 2))
    y = ((w64 - mean[:, None]) / np.sqrt(var[:, None] + 1e-5) * sc[:, None] + sh[:, None])
    nodes = [helper.make_node("ReduceMean", ["w"], ["mean"], axes=[0, 2], keepdims=0),
             helper.make_node("ReduceMean", ["w"], ["mean_k"], axes=[0, 2], keepdims=1),
             helper.make_node("Sub", ["w", "mean_k"], ["dev"]),
             helper.make_node("Mul", ["dev", "dev"], ["sq"]),
             helper.make_node("ReduceMean", ["sq"], ["var"], axes=[0, 2], keepdims=0),
             helper.make_node("BatchNormalization", ["w", "scale", "shift", "mean", "var"],
                              ["y"], epsilon=1e-5)]
    write_case("test_batchnorm_f32_computed_statistics", nodes,
               [("w", w), ("scale", sc), ("shift", sh)], [("y", y.astype(np.float32))], 15)
    # SplitToSequence whose first and last chunks no node reads (timm's SelectiveKernel),
    # and one by sizes whose second chunk no node reads (MixNet)
    x = rng.standard_normal([2, 8, 3]).astype(np.float32)
    at = lambda seq, k, out: [
        helper.make_node("Constant", [], [f"{out}_pos"], value=numpy_helper.from_array(
            np.array(k, np.int64), f"{out}_pos")),
        helper.make_node("SequenceAt", [seq, f"{out}_pos"], [out])]
    nodes = ([helper.make_node("Constant", [], ["two"], value=numpy_helper.from_array(
                 np.array(2, np.int64), "two")),
              helper.make_node("Constant", [], ["sizes"], value=numpy_helper.from_array(
                 np.array([5, 3], np.int64), "sizes")),
              helper.make_node("SplitToSequence", ["x", "two"], ["seq"], axis=1),
              helper.make_node("SplitToSequence", ["x", "sizes"], ["seq2"], axis=1)] +
             at("seq", 1, "b") + at("seq", 2, "c") + at("seq2", 0, "f") +
             [helper.make_node("Concat", ["b", "c"], ["y"], axis=1)])
    write_case("test_splittosequence_f32_chunks_unread", nodes, [("x", x)],
               [("y", x[:, 2:6]), ("f", x[:, :5])], 13)
    # Dropout that leaves a plan-time value as it is (ratio 0 in training mode: the exporters'
    # dropout of a position table) folds: Pow then reads its exponent at plan time
    x = rng.standard_normal([3, 4]).astype(np.float32)
    nodes = [helper.make_node("Constant", [], ["e"], value=numpy_helper.from_array(
                 np.array(3.0, np.float32), "e")),
             helper.make_node("Constant", [], ["r"], value=numpy_helper.from_array(
                 np.array(0.0, np.float32), "r")),
             helper.make_node("Constant", [], ["t"], value=numpy_helper.from_array(
                 np.array(True), "t")),
             helper.make_node("Dropout", ["e", "r", "t"], ["e_kept", "mask"]),
             helper.make_node("Pow", ["x", "e_kept"], ["y"])]
    write_case("test_pow_f32_exponent_through_dropout", nodes, [("x", x)],
               [("y", (x.astype(np.float64) ** 3).astype(np.float32))])
    n = len(EINSUM) + len(ELLIPSIS) + len(MATMUL) + len(ACTIVATIONS) + len(INSTANCE_NORM)
    for name, spec in COL2IM.items():
        col2im_case(rng, name, spec)
    for name, op, shape, axes, keep, opset in EXTREMES:
        x = rng.standard_normal(shape).astype(np.float32)
        f = np.max if op == "ReduceMax" else np.min
        y = f(x, axis=None if axes is None else tuple(axes), keepdims=bool(keep))
        kw, ins = {"keepdims": keep}, ["x"]
        nodes = []
        reduce_axes(nodes, ins, kw, axes, opset)
        inputs = [("x", x)]
        if name.endswith("_plan_time"):  # x a Constant: it folds; z + it runs
            nodes.append(helper.make_node("Constant", [], ["x"],
                                          value=numpy_helper.from_array(x, "x")))
            z = rng.standard_normal(y.shape).astype(np.float32)
            nodes += [helper.make_node(op, ins, ["m"], **kw),
                      helper.make_node("Add", ["z", "m"], ["y"])]
            inputs, y = [("z", z)], z + y
        else:
            nodes.append(helper.make_node(op, ins, ["y"], **kw))
        write_case(f"test_reduce_f32_{name}", nodes, inputs, [("y", np.asarray(y, np.float32))],
                   opset)
    # Clip of plan-time values folds (timm's TF "SAME" padding, traced: the pad computed from
    # the input's size, clipped at 0, then Div and Cast to int64), float and int64
    for name, dt in (("f32", np.float32), ("i64", np.int64)):
        v = np.array([-3, 0, 2, 5, 9], dt)
        c = lambda a, nm: helper.make_node("Constant", [], [nm],
                                           value=numpy_helper.from_array(np.asarray(a, dt), nm))
        nodes = [c(v, "v"), c(0, "lo"), c(4, "hi"), helper.make_node("Clip", ["v", "lo", "hi"], ["k"]),
                 helper.make_node("Cast", ["k"], ["kf"], to=TensorProto.FLOAT),
                 helper.make_node("Add", ["z", "kf"], ["y"])]
        z = rng.standard_normal([5]).astype(np.float32)
        write_case(f"test_clip_{name}_plan_time", nodes, [("z", z)],
                   [("y", z + np.clip(v, 0, 4).astype(np.float32))])
    for name, spec in RNNS.items():
        rnn_case(rng, name, spec)
    for name, op, xs, ws, bias, attrs, pads, strides, opset in UNEQUAL_PADS:
        x = rng.standard_normal(xs).astype(np.float32)
        w = rng.standard_normal(ws).astype(np.float32)
        b = rng.standard_normal(ws[0]).astype(np.float32) if bias else None
        y = (np.zeros([2], np.float32) if name.endswith("_refused") else
             conv_ref(x, w, b, pads, strides) if op == "Conv" else
             conv_transpose_ref(x, w, pads, strides)).astype(np.float32)
        inputs = [("x", x), ("w", w)] + ([("b", b)] if bias else [])
        node = helper.make_node(op, [n for n, _ in inputs], ["y"], **attrs)
        write_case(f"test_{name}", [node], inputs, [("y", y)], opset)
    for name, spec in COL2IM_UNEQUAL.items():
        col2im_case(rng, name, spec)
    control_flow_cases(rng)
    topk_cases(rng)
    scatter_reduction_cases(rng)
    topk_run_time_cases(rng)
    arg_run_time_cases(rng)
    lrn_even_case(rng)
    cumsum_run_time_cases(rng)
    reduce_family_run_time_cases(rng)
    wrap_pad_cases(rng)
    math_run_time_cases(rng)
    trilu_run_time_cases(rng)
    gather_nd_run_time_cases(rng)
    pow_run_time_cases(rng)
    soft_target_sce_cases(rng)
    mod_run_time_cases(rng)
    cumsum_long_cases(rng)
    reduce_prod_run_time_cases(rng)
    pow_tensor_cases(rng)
    diagonal_cases(rng)
    mask_count_cases(rng)
    gathernd_device_cases(rng)
    mod_device_index_cases(rng)
    unpool_device_cases(rng)
    diagonal_mask_cases(rng)
    einsum_gathered_diagonal_cases(rng)
    scatter_extreme_cases(rng)
    int_glue_device_cases(rng)
    antialias_cases(rng)
    dft_cases(rng)
    bag_slice_cases()
    n += len(GATHER_ELEMENTS) + len(SCATTER_ELEMENTS) + len(TILE) + len(COL2IM) + len(EXTREMES) + 5
    n += len(RNNS) + len(UNEQUAL_PADS) + len(COL2IM_UNEQUAL) + 4 + 6 + 3 + 4 + 7 + 1 + 4 + 4 + 2 + 25 + 4 + 2 + 3 + 3 + 2 + 2 + 3 + 2 + 5 + 2 + 3 + 2 + 2 + 4 + 3 + 3 + 5 + 4 + 7 + 3 + 3
    print(f"{n + 6} cases in {OUT}")


if __name__ == "__main__":
    main()
