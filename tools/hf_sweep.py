#!/usr/bin/env python3
"""Hugging Face transformers from PyPI (built from small configs: no download), exported by
torch's default exporter (torch.onnx.export(dynamo=True, optimize=False): initializers in an
external data file, torch's default) and by its legacy one (TrainingMode.TRAINING, opset 17),
each trained one SGD step by outcore-run's cpu backend: does it import and train, and is its
loss PyTorch's (float32, the same weights and batch)? One line a model and exporter, and a
markdown table with --table. A gap finder for the glue modeling code writes around the
network; the fixtures that check gradients against float64 are tools/tiny_hf.py's.

    python tools/hf_sweep.py [--models bert,llama] [--exporters dynamo,legacy] [--table out.md]

Needs torch 2.x, onnx, onnxscript and transformers (a venv: see tests/py/test_torch2_exports.py)
and a built outcore-run (BUILD, default build).
"""
import argparse
import contextlib
import os
import re
import subprocess
import sys
import tempfile
import warnings

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RUN = os.path.join(ROOT, os.environ.get("BUILD", "build"), "outcore-run")
VOCAB, T = 96, 16
TXT = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
           vocab_size=VOCAB, max_position_embeddings=64)
DEC = dict(TXT, num_key_value_heads=2)
VIS = dict(image_size=64, num_channels=3)  # 32: the last BatchNorms see 2 values a channel
STAGES4 = dict(hidden_sizes=[8, 16, 24, 32], depths=[1, 1, 1, 1])
# name: (model type, head, config, model class or None for the Auto class of the head)
CASES = {
    "bert": ("bert", "seq", TXT, None),
    "roberta": ("roberta", "seq", dict(TXT, pad_token_id=1), None),
    # the workaround outcore's message gives: position ids passed in, not made from the ids
    "roberta_positions": ("roberta", "seq_pos", dict(TXT, pad_token_id=1), None),
    "distilbert": ("distilbert", "seq", dict(dim=32, n_layers=2, n_heads=4, hidden_dim=64,
                                             vocab_size=VOCAB, max_position_embeddings=64), None),
    "albert": ("albert", "seq", dict(TXT, embedding_size=16), None),
    "electra": ("electra", "seq", dict(TXT, embedding_size=32), None),
    "deberta_v2": ("deberta-v2", "seq", TXT, None),
    "t5": ("t5", "t5", dict(d_model=32, d_kv=8, d_ff=64, num_layers=2, num_heads=4,
                            vocab_size=VOCAB, decoder_start_token_id=0), None),
    "gpt2": ("gpt2", "lm", dict(n_embd=32, n_layer=2, n_head=4, vocab_size=VOCAB,
                                n_positions=64), None),
    "gpt_neox": ("gpt_neox", "lm", TXT, None),
    "gptj": ("gptj", "lm", dict(n_embd=32, n_layer=2, n_head=4, vocab_size=VOCAB,
                                n_positions=64, rotary_dim=4), None),
    "opt": ("opt", "lm", dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                              ffn_dim=64, vocab_size=VOCAB, max_position_embeddings=64,
                              word_embed_proj_dim=32), None),
    "bloom": ("bloom", "lm", dict(hidden_size=32, n_layer=2, n_head=4, vocab_size=VOCAB), None),
    "falcon": ("falcon", "lm", dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                                    vocab_size=VOCAB), None),
    "llama": ("llama", "lm", DEC, None),
    "mistral": ("mistral", "lm", DEC, None),
    "qwen2": ("qwen2", "lm", DEC, None),
    "qwen3": ("qwen3", "lm", dict(DEC, head_dim=8), None),
    "gemma": ("gemma", "lm", dict(DEC, head_dim=8), None),
    "gemma2": ("gemma2", "lm", dict(DEC, head_dim=8), None),
    "phi": ("phi", "lm", TXT, None),
    "olmo": ("olmo", "lm", DEC, None),
    "bart": ("bart", "t5", dict(d_model=32, encoder_layers=1, decoder_layers=1,
                                encoder_attention_heads=4, decoder_attention_heads=4,
                                encoder_ffn_dim=64, decoder_ffn_dim=64, vocab_size=VOCAB,
                                max_position_embeddings=64), None),
    "marian": ("marian", "t5", dict(d_model=32, encoder_layers=1, decoder_layers=1,
                                    encoder_attention_heads=4, decoder_attention_heads=4,
                                    encoder_ffn_dim=64, decoder_ffn_dim=64, vocab_size=VOCAB,
                                    max_position_embeddings=64, pad_token_id=0,
                                    decoder_start_token_id=0), None),
    "mpnet": ("mpnet", "seq", TXT, None),
    "xlm_roberta": ("xlm-roberta", "seq", dict(TXT, pad_token_id=1), None),
    "funnel": ("funnel", "seq", dict(vocab_size=VOCAB, block_sizes=[1, 1], d_model=32, n_head=4,
                                     d_head=8, d_inner=64), None),
    "convbert": ("convbert", "seq", dict(TXT, embedding_size=32), None),
    "gpt_bigcode": ("gpt_bigcode", "lm", dict(n_embd=32, n_layer=2, n_head=4, vocab_size=VOCAB,
                                              n_positions=64), None),
    "stablelm": ("stablelm", "lm", DEC, None),
    "starcoder2": ("starcoder2", "lm", DEC, None),
    "mixtral": ("mixtral", "lm", dict(DEC, num_local_experts=2, num_experts_per_tok=1), None),
    "mamba": ("mamba", "lm", dict(hidden_size=32, num_hidden_layers=2, vocab_size=VOCAB,
                                  state_size=4), None),
    "vit": ("vit", "img", dict(VIS, **TXT, patch_size=8), None),
    "deit": ("deit", "img", dict(VIS, **TXT, patch_size=8), "DeiTForImageClassification"),
    "beit": ("beit", "img", dict(VIS, **TXT, patch_size=8), None),
    "dinov2": ("dinov2", "img", dict(VIS, **TXT, patch_size=8), None),
    "swin": ("swin", "img", dict(VIS, patch_size=2, embed_dim=16, depths=[1, 1],
                                 num_heads=[2, 2], window_size=4), None),
    "convnext": ("convnext", "img", dict(VIS, **STAGES4), None),
    "convnextv2": ("convnextv2", "img", dict(VIS, **STAGES4), None),
    "resnet": ("resnet", "img", dict(VIS, hidden_sizes=[16, 32], depths=[1, 1],
                                     embedding_size=16), None),
    "regnet": ("regnet", "img", dict(VIS, hidden_sizes=[16, 32], depths=[1, 1],
                                     embedding_size=16, groups_width=8), None),
    "mobilenet_v2": ("mobilenet_v2", "img", dict(VIS, depth_multiplier=0.35), None),
    "mobilevit": ("mobilevit", "img", dict(VIS, hidden_sizes=[32, 48, 64],
                                           neck_hidden_sizes=[8, 8, 16, 16, 24, 32, 64]), None),
    "segformer": ("segformer", "img", dict(VIS, hidden_sizes=[16, 32, 32, 64],
                                           depths=[1, 1, 1, 1], decoder_hidden_size=32), None),
    "levit": ("levit", "img", dict(VIS, image_size=128), "LevitForImageClassification"),
    "poolformer": ("poolformer", "img", dict(VIS, hidden_sizes=[16, 32, 32, 64],
                                             depths=[1, 1, 1, 1]), None),
    "focalnet": ("focalnet", "img", dict(VIS, embed_dim=16, depths=[1, 1], patch_size=2), None),
    "swinv2": ("swinv2", "img", dict(VIS, patch_size=2, embed_dim=16, depths=[1, 1],
                                     num_heads=[2, 2], window_size=4), None),
    "pvt": ("pvt", "img", dict(VIS, hidden_sizes=[16, 32, 32, 64], depths=[1, 1, 1, 1],
                               num_attention_heads=[1, 2, 4, 8]), None),
}


def wrap(model, kind):
    import torch

    class Wrap(torch.nn.Module):  # token ids or images in, logits out
        def __init__(self):
            super().__init__()
            self.m = model

        def forward(self, x):
            if kind == "t5":
                return self.m(input_ids=x, decoder_input_ids=x).logits
            if kind == "img":
                return self.m(pixel_values=x).logits
            if kind == "seq_pos":  # RoBERTa's positions for unpadded ids, computed from shapes
                first = self.m.config.pad_token_id + 1
                pos = torch.arange(x.shape[1]).unsqueeze(0).expand(x.shape[0], -1) + first
                return self.m(input_ids=x, position_ids=pos).logits
            return self.m(input_ids=x).logits
    return Wrap()


def build(name):
    import torch
    import transformers as tf
    mt, kind, kw, cls = CASES[name]
    cfg = tf.AutoConfig.for_model(mt, **kw)
    for a, v in list(vars(cfg).items()):  # every dropout and drop-path rate to 0
        if isinstance(v, float) and ("drop" in a or a.endswith("_pdrop")):
            setattr(cfg, a, 0.0)
    cfg.num_labels = 10
    cfg._attn_implementation = "eager"
    cfg.use_cache = False
    torch.manual_seed(0)
    auto = {"seq": tf.AutoModelForSequenceClassification,
            "seq_pos": tf.AutoModelForSequenceClassification, "lm": tf.AutoModelForCausalLM,
            "t5": tf.AutoModelForSeq2SeqLM, "img": tf.AutoModelForImageClassification}[kind]
    m = getattr(tf, cls)(cfg) if cls else auto.from_config(cfg)
    g = torch.Generator().manual_seed(1)
    if kind == "img":
        s = kw.get("image_size", 32)
        x, y = torch.randn(2, 3, s, s, generator=g), torch.randint(0, 10, (2,), generator=g)
    else:
        x = torch.randint(2, VOCAB - 2, (2, T), generator=g)
        y = (torch.randint(0, 10, (2,), generator=g) if kind.startswith("seq") else
             torch.randint(0, VOCAB, (2, T), generator=g))
    return wrap(m, kind).train(), x, y


@contextlib.contextmanager
def quiet_stdout():
    """File descriptor 1 to /dev/null (what torch's C++ prints too)."""
    sys.stdout.flush()
    saved, null = os.dup(1), os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)
    try:
        yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)
        os.close(null)


def first_line(e):
    return (str(e).strip().splitlines() or [repr(e)])[0][:200]


def run(name, exporter, tmp):
    import onnx
    import torch
    from onnx import numpy_helper
    try:
        w, x, y = build(name)
    except Exception as e:  # noqa: BLE001 -- a config this transformers cannot build
        return "build", f"not built: {first_line(e)}"
    path = os.path.join(tmp, f"{name}_{exporter}.onnx")
    try:
        with quiet_stdout():  # the exporters' progress lines and graph dumps
            if exporter == "dynamo":
                torch.onnx.export(w, (x,), path, dynamo=True, optimize=False,
                                  input_names=["input"])
            else:
                torch.onnx.export(w, (x,), path, dynamo=False, opset_version=17,
                                  training=torch.onnx.TrainingMode.TRAINING,
                                  do_constant_folding=False, input_names=["input"])
    except Exception as e:  # noqa: BLE001 -- torch's own refusal
        return "export", f"torch does not export it: {first_line(e)}"
    ref = {}  # PyTorch's loss in float32 and in float64
    with torch.no_grad():
        import copy
        for dt in (torch.float32, torch.float64):
            out = copy.deepcopy(w).to(dt)(x.to(dt) if x.is_floating_point() else x)
            yy = y
            if out.dim() == 3:
                out, yy = out.reshape(-1, out.shape[-1]), y.reshape(-1)
            ref[dt] = float(torch.nn.functional.cross_entropy(out, yy))
    xp, yp = os.path.join(tmp, "x.pb"), os.path.join(tmp, "y.pb")
    onnx.save_tensor(numpy_helper.from_array(x.numpy(), "input"), xp)
    onnx.save_tensor(numpy_helper.from_array(y.numpy(), "labels"), yp)
    r = subprocess.run([RUN, path, "--backend", "cpu", "--batch", "2", "--steps", "1",
                        "--input", xp, "--labels", yp], capture_output=True, text=True)
    if r.returncode:
        msg = [ln for ln in r.stderr.splitlines() if "notice" not in ln]
        text = (msg[0] if msg else f"exit {r.returncode}").replace(path, "<model>")
        return "refused", re.sub(r"; supported ops: .*", "", text)[:300]
    loss = float(re.findall(r"^step 0 loss (\S+)$", r.stdout, re.M)[0])
    f32, f64 = ref[torch.float32], ref[torch.float64]
    rel, rel32 = abs(loss - f64) / abs(f64), abs(f32 - f64) / abs(f64)
    # within 1e-5 of PyTorch float64, or of 3x PyTorch float32's own distance to it
    ok = rel <= max(1e-5, 3 * rel32)
    return ("trains" if ok else "differs"), (f"loss {loss:.6f}, PyTorch float64 {f64:.6f} "
                                             f"(rel {rel:.1e}; PyTorch float32 {rel32:.1e})")


TABLE_HEAD = {"dynamo": "default exporter", "legacy": "legacy exporter"}


def cell(verdict, text):
    """A table cell: ✓ and the two distances, or why not."""
    if verdict == "trains":
        m = re.search(r"rel (\S+); PyTorch float32 (\S+)\)", text)
        return f"✓ {m.group(1)} ({m.group(2)})"
    if verdict == "export":
        return "torch: no `aten::diff`" if "aten::diff" in text else "torch cannot export it"
    if verdict == "build":
        return "not built"
    why = re.search(r"node '[^']*' \((\w+), opset \d+\): (.*)", text)
    return "✗ " + (f"{why.group(1)}: {why.group(2)[:70]}" if why else text[:80])


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--models", help="comma-separated names (default: all)")
    p.add_argument("--exporters", default="dynamo,legacy")
    p.add_argument("--table", help="also write a markdown table here")
    a = p.parse_args()
    warnings.filterwarnings("ignore")
    names = a.models.split(",") if a.models else list(CASES)
    exporters = a.exporters.split(",")
    rows = {}
    with tempfile.TemporaryDirectory() as tmp:
        for n in names:
            for e in exporters:
                verdict, text = run(n, e, tmp)
                rows[(n, e)] = (verdict, text)
                print(f"{n:14s} {e:7s} {verdict:8s} {text}", flush=True)
    if a.table:  # docs/transformers.md's table: distance to float64 (PyTorch float32's)
        with open(a.table, "w") as f:
            f.write("| model | " + " | ".join(TABLE_HEAD.get(e, e) for e in exporters) + " |\n")
            f.write("|---|" + "---|" * len(exporters) + "\n")
            for n in names:
                f.write(f"| {n} | " + " | ".join(cell(*rows[(n, e)]) for e in exporters) + " |\n")
    return 0 if all(v in ("trains", "build", "export") for v, _ in rows.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
