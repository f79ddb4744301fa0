"""Tiny transformers for the PyTorch round-trip fixtures (tests/data/torch2): the ops of
GPT-2 at 2 layers, d 64, 4 heads, T 32 and a 64-token vocabulary, so the exports can be
committed. Written as plain modules (as nanoGPT writes GPT-2), not torch.nn.Transformer,
so every exporter sees the same ops: token and position embeddings (Gather), LayerNorm,
one Linear for Q, K and V split three ways, heads by Reshape + Transpose, Q K^T (a batched
MatMul), a causal mask (a constant lower-triangular buffer -> Equal -> Where; or, with
mask="range", Range -> Less -> Where, no buffer), Softmax,
the tanh form of GELU, residual Adds, and a language-model head tied to the token
embedding (one parameter read by Gather and by MatMul). Logits [N, T, V], labels [N, T].
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

VOCAB, D, HEADS, LAYERS, T = 64, 64, 4, 2, 32


class Attention(nn.Module):
    def __init__(self, d, heads, t, causal):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.drop = nn.Dropout(0.0)
        self.causal = causal
        if causal == "buffer":  # nanoGPT's and Hugging Face GPT-2's form
            self.register_buffer("mask", torch.tril(torch.ones(t, t)).view(1, 1, t, t),
                                 persistent=False)

    def forward(self, x):
        n, t, d = x.shape
        q, k, v = self.qkv(x).split(d, dim=2)
        q = q.view(n, t, self.heads, d // self.heads).transpose(1, 2)
        k = k.view(n, t, self.heads, d // self.heads).transpose(1, 2)
        v = v.view(n, t, self.heads, d // self.heads).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(d // self.heads))
        if self.causal == "buffer":
            att = att.masked_fill(self.mask[:, :, :t, :t] == 0, float("-inf"))
        elif self.causal == "range":  # no buffer: Range and Less, folded at plan time
            i = torch.arange(t, device=x.device)
            att = att.masked_fill(i[:, None] < i[None, :], float("-inf"))
        att = self.drop(F.softmax(att, dim=-1))
        y = (att @ v).transpose(1, 2).reshape(n, t, d)
        return self.proj(y)


class Block(nn.Module):
    def __init__(self, d, heads, t, causal, gelu="tanh"):
        super().__init__()
        self.ln1 = nn.LayerNorm(d)
        self.attn = Attention(d, heads, t, causal)
        self.ln2 = nn.LayerNorm(d)
        self.fc = nn.Linear(d, 4 * d)
        self.act = nn.GELU(approximate=gelu)
        self.out = nn.Linear(4 * d, d)
        self.drop = nn.Dropout(0.0)

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.drop(self.out(self.act(self.fc(self.ln2(x)))))


class TinyGPT(nn.Module):
    """GPT-2's structure: tokens [N, T] int64 -> logits [N, T, V]."""

    def __init__(self, vocab=VOCAB, d=D, heads=HEADS, layers=LAYERS, t=T, mask="buffer"):
        super().__init__()
        self.wte = nn.Embedding(vocab, d)
        self.wpe = nn.Embedding(t, d)
        self.blocks = nn.ModuleList(Block(d, heads, t, mask) for _ in range(layers))
        self.ln_f = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)
        self.head.weight = self.wte.weight  # tied
        for name, p in self.named_parameters():  # GPT-2's initialisation
            if p.dim() >= 2:
                nn.init.normal_(p, std=0.02 if "proj" not in name and "out" not in name
                                else 0.02 / math.sqrt(2 * layers))
            elif "ln" not in name:
                nn.init.zeros_(p)

    def forward(self, idx):
        t = idx.shape[1]
        pos = torch.arange(t, dtype=torch.long, device=idx.device)
        x = self.wte(idx) + self.wpe(pos)
        for b in self.blocks:
            x = b(x)
        return self.head(self.ln_f(x))


class PostLNBlock(nn.Module):
    """BERT's block: LayerNorm after each residual Add, the erf form of GELU."""

    def __init__(self, d, heads, t):
        super().__init__()
        self.attn = Attention(d, heads, t, causal=False)
        self.ln1 = nn.LayerNorm(d, eps=1e-12)
        self.fc = nn.Linear(d, 4 * d)
        self.act = nn.GELU()
        self.out = nn.Linear(4 * d, d)
        self.ln2 = nn.LayerNorm(d, eps=1e-12)

    def forward(self, x):
        x = self.ln1(x + self.attn(x))
        return self.ln2(x + self.out(self.act(self.fc(x))))


class TinyBERT(nn.Module):
    """BERT's encoder with its masked-LM head: tokens [N, T] -> logits [N, T, V]; the
    decoder is tied to the word embedding and has its own bias. Labels are -100 (PyTorch's
    ignore_index) except at the masked positions."""

    def __init__(self, vocab=VOCAB, d=D, heads=HEADS, layers=LAYERS, t=T):
        super().__init__()
        self.word = nn.Embedding(vocab, d)
        self.pos = nn.Embedding(t, d)
        self.ln = nn.LayerNorm(d, eps=1e-12)
        self.blocks = nn.ModuleList(PostLNBlock(d, heads, t) for _ in range(layers))
        self.mlm_dense = nn.Linear(d, d)
        self.mlm_act = nn.GELU()
        self.mlm_ln = nn.LayerNorm(d, eps=1e-12)
        self.decoder = nn.Linear(d, vocab)
        self.decoder.weight = self.word.weight  # tied
        for name, p in self.named_parameters():  # BERT's initialisation
            if p.dim() >= 2:
                nn.init.normal_(p, std=0.02)
            elif "ln" not in name:
                nn.init.zeros_(p)

    def forward(self, idx):
        t = idx.shape[1]
        pos = torch.arange(t, dtype=torch.long, device=idx.device)
        x = self.ln(self.word(idx) + self.pos(pos))
        for b in self.blocks:
            x = b(x)
        return self.decoder(self.mlm_ln(self.mlm_act(self.mlm_dense(x))))


class TinyViT(nn.Module):
    """ViT: 4x4 patches of a 32x32 image by a strided Conv, a class token (a parameter
    expanded over the batch and concatenated), position embeddings, pre-LN blocks with the
    erf GELU, the class token's features -> 10 classes."""

    def __init__(self, d=D, heads=HEADS, layers=LAYERS, patch=4, image=32, classes=10):
        super().__init__()
        n = (image // patch) ** 2
        self.patch = nn.Conv2d(3, d, patch, stride=patch)
        self.cls = nn.Parameter(torch.zeros(1, 1, d))
        self.pos = nn.Parameter(torch.randn(1, n + 1, d) * 0.02)
        self.blocks = nn.ModuleList(Block(d, heads, n + 1, False, gelu="none")
                                    for _ in range(layers))
        self.ln = nn.LayerNorm(d, eps=1e-6)
        self.head = nn.Linear(d, classes)

    def forward(self, img):
        x = self.patch(img).flatten(2).transpose(1, 2)
        x = torch.cat([self.cls.expand(x.shape[0], -1, -1), x], dim=1) + self.pos
        for b in self.blocks:
            x = b(x)
        return self.head(self.ln(x)[:, 0])


class RMSNorm(nn.Module):
    """Llama's RMSNorm: x / sqrt(mean(x^2) + eps) * weight (Pow, ReduceMean, Add, Sqrt,
    Reciprocal or Div, Mul)."""

    def __init__(self, d, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d))

    def forward(self, x):
        return self.weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps))


def rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat((-x[..., h:], x[..., :h]), dim=-1)


class RotaryAttention(nn.Module):
    """Llama's attention: Q, K, V and output projections without bias, rotary positions
    applied to Q and K (x cos + rotate_half(x) sin: Slice, Neg, Concat), causal
    scaled_dot_product_attention (written out where torch has none: Debian's 1.13)."""

    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.q = nn.Linear(d, d, bias=False)
        self.k = nn.Linear(d, d, bias=False)
        self.v = nn.Linear(d, d, bias=False)
        self.o = nn.Linear(d, d, bias=False)

    def forward(self, x, cos, sin):
        n, t, d = x.shape
        hd = d // self.heads
        q, k, v = (p(x).view(n, t, self.heads, hd).transpose(1, 2) for p in (self.q, self.k, self.v))
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        if hasattr(F, "scaled_dot_product_attention"):
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hd))
            i = torch.arange(t, device=x.device)
            att = att.masked_fill(i[:, None] < i[None, :], float("-inf"))
            y = F.softmax(att, dim=-1) @ v
        return self.o(y.transpose(1, 2).reshape(n, t, d))


class LlamaBlock(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.n1 = RMSNorm(d)
        self.attn = RotaryAttention(d, heads)
        self.n2 = RMSNorm(d)
        self.gate = nn.Linear(d, 2 * d, bias=False)
        self.up = nn.Linear(d, 2 * d, bias=False)
        self.down = nn.Linear(2 * d, d, bias=False)

    def forward(self, x, cos, sin):
        x = x + self.attn(self.n1(x), cos, sin)
        h = self.n2(x)
        return x + self.down(F.silu(self.gate(h)) * self.up(h))  # SwiGLU


class TinyLlama(nn.Module):
    """Llama's structure: token embedding (no position embedding), pre-RMSNorm blocks with
    rotary attention and a SwiGLU MLP, an untied head. The rotary table is computed in
    forward as Hugging Face's LlamaRotaryEmbedding does: the outer product of positions
    (arange) and a frequency buffer (inv_freq, not a parameter), its cos and sin."""

    def __init__(self, vocab=VOCAB, d=D, heads=HEADS, layers=LAYERS):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.blocks = nn.ModuleList(LlamaBlock(d, heads) for _ in range(layers))
        self.norm = RMSNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)
        hd = d // heads
        self.register_buffer("inv_freq", 1.0 / 10000 ** (torch.arange(0, hd, 2).float() / hd),
                             persistent=False)
        for name, p in self.named_parameters():
            if p.dim() >= 2:
                nn.init.normal_(p, std=0.02)

    def forward(self, idx):
        pos = torch.arange(idx.shape[1], device=idx.device).float()
        freqs = pos[:, None] * self.inv_freq[None, :]
        emb = torch.cat((freqs, freqs), dim=-1)
        cos, sin = emb.cos()[None, None], emb.sin()[None, None]
        x = self.emb(idx)
        for b in self.blocks:
            x = b(x, cos, sin)
        return self.head(self.norm(x))


class TinyEmbed(nn.Module):
    """Token embeddings with a padding token (nn.Embedding(padding_idx=1), as BERT's and
    most NLP models'): PyTorch gives its row no gradient, which only the default exporter's
    node metadata still says (the legacy exporter writes a plain Gather). The padded
    positions also reach the loss through a mean over the sequence."""

    def __init__(self, vocab=VOCAB, d=D):
        super().__init__()
        self.emb = nn.Embedding(vocab, d, padding_idx=1)
        self.pos = nn.Parameter(torch.randn(T, d) * 0.02)
        self.mix = nn.Linear(d, d)
        self.head = nn.Linear(d, vocab)

    def forward(self, idx):
        x = self.emb(idx) + self.pos[: idx.shape[1]]
        x = x + F.gelu(self.mix(x)) + x.mean(1, keepdim=True)
        return self.head(x)


def tiny_embed():
    return TinyEmbed()


class TinyPool(nn.Module):
    """Sequence classification by one token's features, as CLIP's text tower and Hugging
    Face's GPT-2 / Llama sequence classifiers pool: x[arange(N), ids.argmax(-1)] (the
    end-of-text token, the largest id) and x[arange(N), (ids != 0).sum(-1) - 1] (the last
    token before padding). The indices are integer glue of the token ids (the host computes
    them); torch.export writes GatherND of two coordinates a row, the legacy exporter Gathers
    of flattened rows. Labels: a class per sequence."""

    def __init__(self, vocab=VOCAB, d=D, classes=10):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.mix = nn.Linear(d, d)
        self.head = nn.Linear(2 * d, classes)

    def forward(self, idx):
        x = self.emb(idx)
        x = x + F.gelu(self.mix(x))
        rows = torch.arange(x.shape[0])
        eot = x[rows, idx.argmax(-1)]
        last = x[rows, (idx != 0).sum(-1) - 1]
        return self.head(torch.cat([eot, last], -1))


def tiny_pool():
    return TinyPool()


def tiny_gpt():
    return TinyGPT()


def tiny_llama():
    return TinyLlama()


def tiny_bert():
    return TinyBERT()


def tiny_vit():
    return TinyViT()


TRANSFORMERS = {"tiny_gpt": tiny_gpt, "tiny_bert": tiny_bert, "tiny_vit": tiny_vit,
                "tiny_llama": tiny_llama, "tiny_embed": tiny_embed, "tiny_pool": tiny_pool}
SEQUENCE = {"tiny_gpt", "tiny_bert", "tiny_llama", "tiny_embed"}  # token inputs [N, T] int64, labels [N, T]
PADDED = {"tiny_embed": 1}  # the padding token, at the sequences' last 5 positions
POOLED = {"tiny_pool"}  # token inputs [N, T] (an end-of-text token, padding 0), labels [N]


# The full-size members tools/export_models.py bundles (graphs/): GPT-2 small (124M, tied
# embeddings, T 1024), a BERT-base encoder with its masked-LM head (T 512), ViT-B/16.
def gpt2_small():
    return TinyGPT(vocab=50257, d=768, heads=12, layers=12, t=1024, mask="range")


def bert_base():
    return TinyBERT(vocab=30522, d=768, heads=12, layers=12, t=512)


def vit_b16():
    return TinyViT(d=768, heads=12, layers=12, patch=16, image=224, classes=1000)


FULL = {"gpt2_small": (gpt2_small, (1024,)), "bert_base": (bert_base, (512,)),
        "vit_b16": (vit_b16, (3, 224, 224)),
        # the emulator's stand-ins (tools/gpu-check --transformers --emu): tiny, no buffer
        "tiny_gpt_range": (lambda: TinyGPT(mask="range"), (T,)), "tiny_vit": (tiny_vit, (3, 32, 32))}
