"""Tiny Hugging Face transformers (the `transformers` package, built from configs: no
download) for the PyTorch round-trip fixtures (tests/data/torch2): the glue their modeling
code writes around the network, which torch.export puts in the ONNX file -- position ids
from a cumulative sum, token types read from a buffer by torch.gather, masks combined with
&, T5's relative-position buckets (integer abs, log, min), BLOOM's ALiBi slopes (pow, repeat),
BART's causal-mask table flattened before it is gathered from (legacy export) -- and their
layers: BERT (post-norm encoder, a pooler and classifier; its dynamo export
written with every initializer in an external data file, torch's default), Llama
(grouped-query attention, RMSNorm, rotary positions, SwiGLU), T5 (encoder-decoder, relative
attention bias, no scaling), BLOOM (ALiBi, fused QKV), BART (encoder-decoder, learnt positions
with an offset, GELU). Each wrapped to take token ids and
return logits: [N, classes] for BERT, [N, T, V] for the others (T5: the ids fed to both
encoder and decoder). Attention is the eager implementation (softmax of Q K^T), dropout 0.
"""
import torch
import transformers

VOCAB, T = 96, 16
TEXT = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
            vocab_size=VOCAB, max_position_embeddings=64)
CONFIGS = {
    "tiny_hf_bert": ("bert", "seq", dict(TEXT, hidden_dropout_prob=0.0,
                                         attention_probs_dropout_prob=0.0, num_labels=10)),
    "tiny_hf_llama": ("llama", "lm", dict(TEXT, num_key_value_heads=2, attention_dropout=0.0)),
    "tiny_hf_t5": ("t5", "t5", dict(d_model=32, d_kv=8, d_ff=64, num_layers=2, num_heads=4,
                                    vocab_size=VOCAB, dropout_rate=0.0, decoder_start_token_id=0)),
    "tiny_hf_bloom": ("bloom", "lm", dict(hidden_size=32, n_layer=2, n_head=4, vocab_size=VOCAB,
                                          hidden_dropout=0.0, attention_dropout=0.0)),
    "tiny_hf_roberta": ("roberta", "seq", dict(TEXT, pad_token_id=1, hidden_dropout_prob=0.0,
                                               attention_probs_dropout_prob=0.0, num_labels=10)),
    "tiny_hf_bart": ("bart", "t5", dict(d_model=32, encoder_layers=1, decoder_layers=1,
                                        encoder_attention_heads=4, decoder_attention_heads=4,
                                        encoder_ffn_dim=64, decoder_ffn_dim=64, vocab_size=VOCAB,
                                        max_position_embeddings=64, dropout=0.0,
                                        attention_dropout=0.0, activation_dropout=0.0)),
    # GPT-2 classifying a sequence by its last token before the padding: logits[arange(N),
    # last] at indices the host computes from the ids (a GatherND of the default export)
    "tiny_hf_gpt2_cls": ("gpt2", "seq", dict(n_embd=32, n_layer=2, n_head=4, vocab_size=VOCAB,
                                             n_positions=64, pad_token_id=1, resid_pdrop=0.0,
                                             embd_pdrop=0.0, attn_pdrop=0.0, num_labels=10)),
}
# exported by the default exporter with its initializers in <file>.data
EXTERNAL_DATA = {"tiny_hf_bert"}
# Batches right-padded with the pad token (id 1), and the attention mask of the padding as a
# second input: RoBERTa's position ids count only the tokens that are not padding (a
# cumulative sum of ids != pad, computed from the ids in the model), the padding's all equal
# to the pad id, and the mask turns into the attention's additive bias; outcore runs both on
# the host each step.
PADDED = {"tiny_hf_roberta": 1, "tiny_hf_gpt2_cls": 1}
# the legacy exporter refuses Llama's mask code (aten::diff)
NO_LEGACY = {"tiny_hf_llama": "torch's legacy exporter has no aten::diff (the mask code)"}


class Wrap(torch.nn.Module):
    """Token ids in, logits out."""

    def __init__(self, m, kind):
        super().__init__()
        self.m, self.kind = m, kind

    def forward(self, x, mask=None):
        if self.kind == "t5":
            return self.m(input_ids=x, decoder_input_ids=x).logits
        return self.m(input_ids=x, attention_mask=mask).logits


def build(name):
    mt, kind, kw = CONFIGS[name]
    cfg = transformers.AutoConfig.for_model(mt, **kw)
    cfg._attn_implementation = "eager"
    cfg.use_cache = False
    if kind == "seq":
        m = transformers.AutoModelForSequenceClassification.from_config(cfg)
    elif kind == "t5":
        m = transformers.AutoModelForSeq2SeqLM.from_config(cfg)
    else:
        m = transformers.AutoModelForCausalLM.from_config(cfg)
    if name in PADDED:  # nn.Embedding's padding_idx (no gradient for the pad row) is not in
        for e in m.modules():  # an ONNX Gather: the fixture trains that row as the file says
            if isinstance(e, torch.nn.Embedding):
                e.padding_idx = None
    return Wrap(m, kind)


def pad(name, x):
    """The fixture's batch: x, or for PADDED models x with its rows right-padded (3 and 6 pad
    tokens) and the attention mask of that padding (int64, 1 where a token is)."""
    if name not in PADDED:
        return x
    mask = torch.ones_like(x)
    for row, n in ((0, 3), (1, 6)):
        x[row, -n:] = PADDED[name]
        mask[row, -n:] = 0
    return x, mask


def classifier(name):
    """True when the model gives one row of logits a sequence (labels [N])."""
    return CONFIGS[name][1] == "seq"


HF = {name: (lambda n=name: build(n)) for name in CONFIGS}
