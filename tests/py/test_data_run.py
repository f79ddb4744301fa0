#!/usr/bin/python3
"""outcore-run on a data set (--data/--labels NumPy arrays), its evaluation and checkpoints.

  - Order and batches: a linear model (Flatten -> Gemm) trained with lr 0 keeps its weights,
    so each step's printed loss is the mean cross-entropy of the batch it saw: every step of
    3 epochs equals the loss of the batch tools/outcore_torch.py:outcore_order predicts
    (the order PyTorch loops use to see outcore's batches), full batches only (23 samples,
    batch 4: 5 steps per epoch, a new order each epoch).
  - Evaluation: --eval-data/--eval-labels print, per epoch, the held-out mean loss and accuracy
    the same weights give in numpy (7 samples: the last batch padded, the padding not counted).
  - Resume: a run killed (SIGKILL) after its first --save-every checkpoint, resumed with
    --resume and its own command line (its checkpoints replace the one it resumed from), ends
    with weights, BN statistics and momentum bit for bit those of a run that
    never stopped (tiny EfficientNet: BN, dropout and stochastic depth drawn per step).
  - Token data: int64 windows [N, T] and next-token labels [N, T] (some -100, ignored) for a
    language model's [N, T, V] logits: with lr 0 every step's loss is the mean over its batch's
    labelled tokens and the held-out loss the held-out set's; float data for it is refused.
  - Attention dropout: a fused attention's Dropout draws the unfused Dropout's masks (equal
    training losses) and is off in evaluation (the same held-out loss for every seed).
  - Bad data: a missing file, float64 data, a shape that is not the model's, a label out of
    range, fewer samples than a batch, a checkpoint of another batch: each a non-zero exit with
    one line naming the file.
"""
import os
import re
import signal
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RUN = os.path.join(ROOT, os.environ.get("BUILD", "build"), "outcore-run")
sys.path.insert(0, os.path.join(ROOT, "tools"))
from outcore_torch import outcore_order  # noqa: E402

failures = []


def check(ok, what):
    print(f"{'ok  ' if ok else 'FAIL'} {what}")
    if not ok:
        failures.append(what)


def linear_model(path, w, b):
    x = helper.make_tensor_value_info("input", TensorProto.FLOAT, ["N", 3, 2, 2])
    y = helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", 4])
    nodes = [helper.make_node("Flatten", ["input"], ["flat"], axis=1),
             helper.make_node("Gemm", ["flat", "W", "b"], ["logits"], transB=1)]
    g = helper.make_graph(nodes, "linear", [x], [y],
                          [numpy_helper.from_array(w, "W"), numpy_helper.from_array(b, "b")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    onnx.save(m, path)


def ce(logits, labels):
    z = logits - logits.max(1, keepdims=True)
    lse = np.log(np.exp(z).sum(1))
    return lse - z[np.arange(len(labels)), labels]


def run(args, check_rc=True):
    r = subprocess.run([RUN, *args], capture_output=True, text=True)
    if check_rc and r.returncode != 0:
        raise RuntimeError(f"outcore-run {' '.join(args)}: {r.stderr}")
    return r


def order_and_eval(tmp):
    rng = np.random.default_rng(3)
    w = rng.standard_normal((4, 12)).astype(np.float32)
    b = rng.standard_normal(4).astype(np.float32)
    model = os.path.join(tmp, "linear.onnx")
    linear_model(model, w, b)
    x = rng.standard_normal((23, 3, 2, 2)).astype(np.float32)
    y = rng.integers(0, 4, 23).astype(np.int64)
    xe = rng.standard_normal((7, 3, 2, 2)).astype(np.float32)
    ye = rng.integers(0, 4, 7).astype(np.int32)
    for k, v in (("x", x), ("y", y), ("xe", xe), ("ye", ye)):
        np.save(os.path.join(tmp, f"{k}.npy"), v)
    f = lambda k: os.path.join(tmp, f"{k}.npy")  # noqa: E731
    out = run([model, "--batch", "4", "--data", f("x"), "--labels", f("y"), "--epochs", "3",
               "--lr", "0", "--momentum", "0", "--weight-decay", "0", "--seed", "5",
               "--eval-data", f("xe"), "--eval-labels", f("ye")]).stdout
    got = [float(v) for v in re.findall(r"^step \d+ loss (\S+)$", out, re.M)]
    per = ce(x.reshape(23, 12) @ w.T + b, y)
    want = []
    for epoch in range(3):
        order = outcore_order(23, 5, epoch)
        want += [per[order[s * 4:(s + 1) * 4]].mean() for s in range(5)]
    check(len(got) == 15 and np.allclose(got, want, atol=2e-6),
          f"data order: 3 epochs x 5 full batches, each step's loss that of the batch "
          f"outcore_order predicts (worst {np.abs(np.subtract(got, want)).max():.1e})")
    z = xe.reshape(7, 12) @ w.T + b
    el, ea = ce(z, ye).mean(), (z.argmax(1) == ye).mean()
    lines = re.findall(r"eval loss (\S+) accuracy (\S+) \((\d+) samples\)", out)
    check(len(lines) == 3 and all(abs(float(l) - el) < 1e-5 and abs(float(a) - ea) < 1e-4
                                  and s == "7" for l, a, s in lines),
          f"evaluation per epoch: loss {el:.6f}, accuracy {ea:.4f} over 7 samples: {lines}")


def resume_after_kill(tmp):
    model = os.path.join(ROOT, "tests", "data", "torch2", "tiny_efficientnet_dropout_dynamo.onnx")
    rng = np.random.default_rng(4)
    np.save(os.path.join(tmp, "rx.npy"), rng.standard_normal((40, 3, 32, 32)).astype(np.float32))
    np.save(os.path.join(tmp, "ry.npy"), rng.integers(0, 10, 40).astype(np.int64))
    common = [model, "--batch", "2", "--data", os.path.join(tmp, "rx.npy"), "--labels",
              os.path.join(tmp, "ry.npy"), "--epochs", "10", "--lr", "0.05", "--seed", "9"]
    full, ck = (os.path.join(tmp, f) for f in ("full.onnx", "ck.onnx"))
    run(common + ["--save", full])
    p = subprocess.Popen([RUN, *common, "--save", ck, "--save-every", "7"],
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    t0 = time.time()
    while not os.path.exists(ck) and p.poll() is None and time.time() - t0 < 60:
        time.sleep(0.002)
    p.send_signal(signal.SIGKILL)
    p.wait()
    killed = p.returncode == -signal.SIGKILL
    meta = {t.key: t.value for t in onnx.load(ck).metadata_props}
    step = int(meta.get("outcore.checkpoint.step", -1))
    # the restarted job's own command line: its checkpoints replace the one it resumed from
    out = run(common + ["--save", ck, "--save-every", "7", "--resume", ck]).stdout
    a = {t.name: numpy_helper.to_array(t).tobytes() for t in onnx.load(full).graph.initializer}
    c = {t.name: numpy_helper.to_array(t).tobytes() for t in onnx.load(ck).graph.initializer}
    same = set(a) == set(c) and all(a[k] == c[k] for k in a)
    n_mom = sum(1 for k in a if k.endswith("/momentum"))
    check(killed and same and n_mom > 0 and f"resumed {ck} at step {step}" in out,
          f"resume: killed at a checkpoint of step {step} (of 200), resumed into the same "
          f"checkpoint path: all {len(a)} "
          f"tensors ({n_mom} momenta) bitwise equal to the run that never stopped")


def bad_inputs(tmp):
    model = os.path.join(tmp, "linear.onnx")
    f = lambda k: os.path.join(tmp, f"{k}.npy")  # noqa: E731
    np.save(f("x64"), np.zeros((8, 3, 2, 2)))
    np.save(f("x8"), np.zeros((8, 3, 2, 2), np.float32))
    np.save(f("xshape"), np.zeros((8, 3, 4, 1), np.float32))
    np.save(f("ybig"), np.array([0, 1, 2, 3, 4, 0, 1, 2], np.int64))
    np.save(f("x2"), np.zeros((2, 3, 2, 2), np.float32))
    np.save(f("y2"), np.zeros(2, np.int64))
    np.save(f("y8"), np.zeros(8, np.int64))
    cases = [("missing file", f("nope"), f("y8"), "nope.npy"),
             ("float64 data", f("x64"), f("y8"), "float32"),
             ("shape", f("xshape"), f("y8"), "do not match"),
             ("label range", f("x8"), f("ybig"), "outside [0, 4)"),
             ("fewer samples than a batch", f("x2"), f("y2"), "fewer than one batch")]
    for what, x, y, needle in cases:
        r = run([model, "--batch", "4", "--data", x, "--labels", y], check_rc=False)
        lines = r.stderr.strip().splitlines()
        last = lines[-1] if lines else ""
        check(r.returncode != 0 and needle in last and "error" in last,
              f"bad data ({what}): {last}")
    ck = os.path.join(tmp, "lin_ck.onnx")
    run([model, "--batch", "4", "--data", f("x8"), "--labels", f("y8"), "--save", ck])
    r = run([model, "--batch", "2", "--data", f("x8"), "--labels", f("y8"), "--resume", ck],
            check_rc=False)
    check(r.returncode != 0 and "batch 4" in r.stderr,
          f"resume at another batch: {r.stderr.strip()}")


def token_model(path, emb, w):
    """tokens [N, T] int64 -> Gather(emb) -> MatMul(w) -> logits [N, T, V]: a language model."""
    t = emb.shape[0]
    g = helper.make_graph(
        [helper.make_node("Gather", ["emb", "input"], ["h"]),
         helper.make_node("MatMul", ["h", "w"], ["logits"])], "lm",
        [helper.make_tensor_value_info("input", TensorProto.INT64, ["batch", 5])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", 5, t])],
        [numpy_helper.from_array(emb, "emb"), numpy_helper.from_array(w, "w")])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), path)


def token_data(tmp):
    """A data set of int64 token windows [N, T] and next-token labels [N, T] with some
    -100s: with lr 0 each step's loss is the mean cross-entropy over its batch's labelled
    tokens, the held-out loss over the held-out set's; float data for it is refused."""
    rng = np.random.default_rng(5)
    v, d, t, n, b = 6, 3, 5, 10, 2
    emb, w = rng.standard_normal((v, d)).astype(np.float32), rng.standard_normal((d, v)).astype(np.float32)
    model = os.path.join(tmp, "lm.onnx")
    token_model(model, emb, w)
    x = rng.integers(0, v, (n, t)).astype(np.int64)
    y = rng.integers(0, v, (n, t)).astype(np.int64)
    y[rng.random((n, t)) < 0.3] = -100
    f = lambda k: os.path.join(tmp, f"lm_{k}.npy")  # noqa: E731
    np.save(f("x"), x), np.save(f("y"), y), np.save(f("xe"), x[:3]), np.save(f("ye"), y[:3])
    r = run([model, "--batch", str(b), "--data", f("x"), "--labels", f("y"), "--epochs", "2",
             "--lr", "0", "--optimizer", "adamw", "--weight-decay", "0", "--seed", "3",
             "--eval-data", f("xe"), "--eval-labels", f("ye")])
    logits = (emb[x] @ w)  # [n, t, v]

    def mean_ce(idx):
        z, lab = logits[idx].reshape(-1, v), y[idx].reshape(-1)
        keep = lab != -100
        return float(ce(z[keep].astype(np.float64), lab[keep]).mean())

    got = [float(v_) for v_ in re.findall(r"^step \d+ loss (\S+)$", r.stdout, re.M)]
    want = []
    for epoch in range(2):
        order = outcore_order(n, 3, epoch)
        want += [mean_ce(order[s * b:(s + 1) * b]) for s in range(n // b)]
    worst = max(abs(a - c) for a, c in zip(got, want)) if len(got) == len(want) else 1.0
    check(worst < 1e-5, f"token data: {len(got)} steps, each the mean over its labelled tokens "
                        f"(worst {worst:.1e})")
    ev = re.findall(r"eval loss (\S+)", r.stdout.replace(",", ""))
    we = mean_ce(list(range(3)))
    check(len(ev) == 2 and abs(float(ev[-1]) - we) < 1e-5,
          f"token data: held-out loss {ev[-1] if ev else '?'} == {we:.6f} (ignored tokens "
          f"not counted)")
    np.save(f("xf"), x.astype(np.float32))
    r = run([model, "--batch", str(b), "--data", f("xf"), "--labels", f("y")], check_rc=False)
    last = r.stderr.strip().splitlines()[-1] if r.stderr.strip() else ""
    check(r.returncode != 0 and "int64 token ids" in last, f"token data as float32: {last}")


def attention_model(path):
    """tokens [N, 4] -> embedding [N, 4, 8] -> one attention head with Dropout(0.5) on its
    probabilities -> logits [N, 4, 6]: the pattern --attention fused replaces."""
    rng = np.random.default_rng(9)
    w = {k: rng.standard_normal(s).astype(np.float32) * 0.5
         for k, s in (("emb", (6, 8)), ("wq", (8, 8)), ("wk", (8, 8)), ("wv", (8, 8)), ("wo", (8, 6)))}
    c = lambda name, v: helper.make_node("Constant", [], [name], value=numpy_helper.from_array(  # noqa: E731
        np.array(v), name))
    nodes = [helper.make_node("Gather", ["emb", "input"], ["h"]),
             helper.make_node("MatMul", ["h", "wq"], ["q"]),
             helper.make_node("MatMul", ["h", "wk"], ["k"]),
             helper.make_node("MatMul", ["h", "wv"], ["v"]),
             helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 2, 1]),
             helper.make_node("MatMul", ["q", "kt"], ["s"]),
             c("scale", np.float32(0.35)), helper.make_node("Mul", ["s", "scale"], ["ss"]),
             helper.make_node("Softmax", ["ss"], ["p"], axis=-1),
             c("ratio", np.float32(0.5)), c("train", np.bool_(True)),
             helper.make_node("Dropout", ["p", "ratio", "train"], ["pd"]),
             helper.make_node("MatMul", ["pd", "v"], ["a"]),
             helper.make_node("MatMul", ["a", "wo"], ["logits"])]
    g = helper.make_graph(nodes, "att",
                          [helper.make_tensor_value_info("input", TensorProto.INT64, ["batch", 4])],
                          [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", 4, 6])],
                          [numpy_helper.from_array(v, k) for k, v in w.items()])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), path)


def attention_dropout_eval(tmp):
    """Dropout inside a fused attention is off in evaluation, as the unfused Dropout is: with
    lr 0 the held-out loss is the same for fused and unfused, and for any seed; training
    losses (dropout on) equal between the two, as the fused node draws Dropout's keys."""
    model = os.path.join(tmp, "att.onnx")
    attention_model(model)
    rng = np.random.default_rng(2)
    f = lambda k: os.path.join(tmp, f"att_{k}.npy")  # noqa: E731
    np.save(f("x"), rng.integers(0, 6, (8, 4)).astype(np.int64))
    np.save(f("y"), rng.integers(0, 6, (8, 4)).astype(np.int64))
    out = {}
    for att in ("unfused", "fused"):
        for seed in ("1", "2"):
            r = run([model, "--batch", "2", "--data", f("x"), "--labels", f("y"), "--lr", "0",
                     "--seed", seed, "--eval-data", f("x"), "--eval-labels", f("y"),
                     "--attention", att])
            out[att, seed] = (re.findall(r"^step \d+ loss (\S+)$", r.stdout, re.M),
                              re.findall(r"eval loss (\S+)", r.stdout.replace(",", "")),
                              "attention blocks fused" in r.stderr)
    ev = {v[1][0] for v in out.values()}
    check(len(ev) == 1 and out["fused", "1"][2] and not out["unfused", "1"][2] and
          out["fused", "1"][0] == out["unfused", "1"][0] and
          out["fused", "1"][0] != out["fused", "2"][0],
          f"attention dropout: training losses fused == unfused ({out['fused', '1'][0][:2]}), "
          f"another seed differs; held-out loss {sorted(ev)} for both and every seed")


def main():
    with tempfile.TemporaryDirectory() as tmp:
        for fn in (order_and_eval, resume_after_kill, bad_inputs, token_data,
                   attention_dropout_eval):
            try:
                fn(tmp)
            except Exception as e:  # noqa: BLE001
                failures.append(f"{fn.__name__}: {e}")
                print(f"FAIL {fn.__name__}: {e}")
    print(f"{'ok' if not failures else 'not ok'} - outcore-run on data sets: order, evaluation, "
          f"resume, bad data")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
