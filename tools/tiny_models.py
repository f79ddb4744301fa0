"""Tiny members of torchvision's CNN families, built from torchvision's own blocks, for
the PyTorch 2.x round-trip fixtures CI runs (tests/data/torch2, tools/torch_roundtrip.py
fixtures). Each keeps its family's ops -- squeeze-excitation, Hardswish/Hardsigmoid, SiLU,
stochastic depth, Dropout, channel split and shuffle, LayerNorm and channels-last MatMul,
BatchNorm in every form -- at a few
thousand parameters, so
the exports can be committed. 32x32 inputs, 10 classes."""
from functools import partial

import torch.nn as nn
from torchvision.models import convnext, efficientnet, mobilenetv3, regnet, resnet, shufflenetv2


def tiny_resnet():
    """conv-BN-ReLU-maxpool stem, two BasicBlocks (one with a strided 1x1 downsample),
    global average pooling, a linear head: ResNet-18's ops."""
    def down(cin, cout):
        return nn.Sequential(nn.Conv2d(cin, cout, 1, stride=2, bias=False), nn.BatchNorm2d(cout))
    return nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1, bias=False), nn.BatchNorm2d(8), nn.ReLU(inplace=True),
        nn.MaxPool2d(3, stride=2, padding=1),
        resnet.BasicBlock(8, 8),
        resnet.BasicBlock(8, 16, stride=2, downsample=down(8, 16)),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(16, 10))


def tiny_mobilenet_v3():
    """MobileNetV3: Hardswish, ReLU, squeeze-excitation with Hardsigmoid, a Dropout head."""
    c = partial(mobilenetv3.InvertedResidualConfig, width_mult=1.0)
    setting = [c(16, 3, 16, 16, True, "RE", 2, 1), c(16, 3, 32, 24, False, "HS", 2, 1),
               c(24, 5, 48, 24, True, "HS", 1, 1)]
    return mobilenetv3.MobileNetV3(setting, last_channel=32, num_classes=10)


def tiny_efficientnet():
    """EfficientNet: SiLU, squeeze-excitation with Sigmoid, stochastic depth, Dropout."""
    c = partial(efficientnet.MBConvConfig, width_mult=1.0, depth_mult=1.0)
    setting = [c(1, 3, 1, 16, 8, 1), c(4, 3, 2, 8, 16, 2)]
    return efficientnet.EfficientNet(setting, dropout=0.2, stochastic_depth_prob=0.2,
                                     num_classes=10, last_channel=32)


def tiny_regnet():
    """RegNetY: grouped convolutions, squeeze-excitation with ReLU and Sigmoid."""
    params = regnet.BlockParams.from_init_params(depth=2, w_0=8, w_a=8.0, w_m=2.0,
                                                 group_width=8, se_ratio=0.25)
    return regnet.RegNet(params, num_classes=10, stem_width=8)


def tiny_shufflenet():
    """ShuffleNetV2: channel split (Slice / SplitToSequence), channel shuffle (Transpose)."""
    return shufflenetv2.ShuffleNetV2([2, 1, 2], [8, 16, 32, 64, 64], num_classes=10)


def tiny_convnext():
    """ConvNeXt: channels-last blocks (Transpose, LayerNormalization, MatMul, Gelu, layer
    scale Mul), LayerNorm2d downsampling, stochastic depth."""
    c = convnext.CNBlockConfig
    return convnext.ConvNeXt([c(8, 16, 1), c(16, None, 1)], stochastic_depth_prob=0.1,
                             layer_scale=0.5, num_classes=10)


class TinyFCN(nn.Module):
    """A segmentation head as torchvision's FCN / DeepLabV3 end: a strided backbone, a
    dilated 3x3 convolution, per-pixel class scores upsampled bilinearly to the input
    (F.interpolate -> Resize); labels are one class per pixel."""

    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(3, 8, 3, stride=2, padding=1, bias=False), nn.BatchNorm2d(8), nn.ReLU(),
            nn.Conv2d(8, 8, 3, padding=2, dilation=2, bias=False), nn.BatchNorm2d(8), nn.ReLU(),
            nn.Conv2d(8, 10, 1))

    def forward(self, x):
        import torch.nn.functional as F
        return F.interpolate(self.body(x), size=x.shape[-2:], mode="bilinear",
                             align_corners=False)


def tiny_fcn():
    return TinyFCN()


def tiny_swin():
    """Swin Transformer: patch embedding, window attention with a relative-position bias table
    read through an index buffer (GatherND / Gather), shifted windows and their attention mask
    (ScatterND / slice assignments into zeros), patch merging, LayerNorm, GELU MLPs."""
    from torchvision.models import swin_transformer
    return swin_transformer.SwinTransformer(patch_size=[4, 4], embed_dim=8, depths=[2, 2],
                                            num_heads=[1, 2], window_size=[2, 2],
                                            stochastic_depth_prob=0.0, num_classes=10)


def tiny_swin_v2():
    """Swin Transformer V2: cosine attention (F.normalize: ReduceL2, Clip, Div) with a learnt
    logit scale (Clip, Exp), a continuous relative-position bias from a small MLP over a
    log-spaced coordinate table (a module buffer: it must not train), post-norm blocks,
    PatchMergingV2. Not in Debian's torchvision 0.14."""
    from torchvision.models import swin_transformer as st
    return st.SwinTransformer(patch_size=[4, 4], embed_dim=8, depths=[2, 2], num_heads=[1, 2],
                              window_size=[2, 2], stochastic_depth_prob=0.0, num_classes=10,
                              block=st.SwinTransformerBlockV2,
                              downsample_layer=st.PatchMergingV2)


def tiny_maxvit():
    """MaxViT: MBConv with squeeze-excitation, block and grid attention whose scores are
    Einsums, a relative-position bias (GatherND), LayerNorm, GELU. The BatchNorm momentum is
    given: torchvision 0.14 (Debian's) defaults to 0.99, later ones to 0.01."""
    from torchvision.models import maxvit
    return maxvit.MaxVit(input_size=(32, 32), stem_channels=8, partition_size=2,
                         block_channels=[8, 16], block_layers=[1, 1], head_dim=4,
                         stochastic_depth_prob=0.0, num_classes=10,
                         norm_layer=partial(nn.BatchNorm2d, eps=1e-3, momentum=0.01))


def tiny_r3d():
    """A video ResNet (R3D): Conv3d stem without bias (the default exporter writes the missing
    bias as zeros of shape [M, 2]), BatchNorm3d, torchvision's video BasicBlock with
    Conv3DSimple and a strided Conv2Plus1D block, global average pooling over (T, H, W).
    Clips [N, 3, 4, 16, 16] (CLIPS)."""
    from torchvision.models.video import resnet as vr
    down = nn.Sequential(nn.Conv3d(8, 16, 1, stride=2, bias=False), nn.BatchNorm3d(16))
    return nn.Sequential(
        nn.Conv3d(3, 8, (3, 3, 3), padding=1, bias=False), nn.BatchNorm3d(8), nn.ReLU(inplace=True),
        vr.BasicBlock(8, 8, vr.Conv3DSimple),
        vr.BasicBlock(8, 16, vr.Conv2Plus1D, stride=2, downsample=down),
        nn.AdaptiveAvgPool3d(1), nn.Flatten(), nn.Linear(16, 10))


def tiny_mvit():
    """MViTv2: a Conv3d patch embedding, multiscale attention whose queries and keys are pooled
    by depthwise Conv3d + LayerNorm, decomposed relative positions (Einsums with a batch index
    and four free indices: "bythwc,hkc->bythwk", merged by Reshapes), residual pooling, a class
    token. Clips [N, 3, 4, 16, 16] (CLIPS): 2 x 4 x 4 tokens."""
    from torchvision.models.video import mvit
    blocks = [mvit.MSBlockConfig(num_heads=1, input_channels=8, output_channels=8,
                                 kernel_q=[3, 3, 3], kernel_kv=[3, 3, 3], stride_q=[1, 1, 1],
                                 stride_kv=[1, 2, 2]),
              mvit.MSBlockConfig(num_heads=2, input_channels=8, output_channels=16,
                                 kernel_q=[3, 3, 3], kernel_kv=[3, 3, 3], stride_q=[1, 2, 2],
                                 stride_kv=[1, 1, 1])]
    return mvit.MViT(spatial_size=(16, 16), temporal_size=4, block_setting=blocks,
                     residual_pool=True, residual_with_cls_embed=False, rel_pos_embed=True,
                     proj_after_attn=True, dropout=0.0, stochastic_depth_prob=0.0,
                     num_classes=10)


class TinyActs(nn.Module):
    """The pointwise activations beyond ReLU, each once, on a small CNN: LeakyReLU, ELU, PReLU
    (a slope per channel), SELU, Softplus, Mish; torch.maximum of two convolutions and of an
    activation with itself plus a shift initialised at 0 (every element ties: PyTorch gives
    each side half, so the shift's first step is half the sum of its gradients), torch.minimum
    with a learnt per-channel cap; exp, log, abs, neg and reciprocal of activations."""

    def __init__(self):
        super().__init__()
        import torch
        self.stem = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1, bias=False), nn.BatchNorm2d(8),
                                  nn.LeakyReLU(0.1))
        self.c1 = nn.Sequential(nn.Conv2d(8, 8, 3, padding=1), nn.ELU(0.7))
        self.c2 = nn.Sequential(nn.Conv2d(8, 16, 3, stride=2, padding=1), nn.PReLU(16))
        self.c3 = nn.Sequential(nn.Conv2d(16, 16, 1), nn.SELU())
        self.a = nn.Sequential(nn.Conv2d(16, 16, 1), nn.Softplus())
        self.b = nn.Sequential(nn.Conv2d(16, 16, 1), nn.Mish())
        self.shift = nn.Parameter(torch.zeros(16, 1, 1))
        self.cap = nn.Parameter(torch.full((16, 1, 1), 0.7))
        self.fc = nn.Linear(16, 10)

    def forward(self, x):
        import torch
        h = self.c3(self.c2(self.c1(self.stem(x))))
        m = torch.maximum(self.a(h), self.b(h))
        m = torch.maximum(m, m + self.shift)
        m = torch.minimum(m, self.cap)
        g = torch.exp(torch.neg(torch.abs(h)))  # a gate in (0, 1]
        r = torch.reciprocal(1.0 + torch.log(1.0 + m.abs()))
        return self.fc((g * m + r).mean((2, 3)))


def tiny_acts():
    return TinyActs()


class TinyMatMul(nn.Module):
    """torch.matmul beyond equal batch dims, each with a gradient: per-head weights broadcast
    over the batch ((N, H, T, d) @ (H, d, e)), a weight with a leading 1 ((1, e, e), the
    matrix it is), batch dims that broadcast on both sides ((N, 1, T, d) @ (1, H, d, e)), a
    vector on the right ((.., e) @ (e,)) and on the left ((T,) @ (N, T, C))."""

    def __init__(self):
        super().__init__()
        import torch
        self.stem = nn.Sequential(nn.Conv2d(3, 8, 3, stride=2, padding=1), nn.ReLU(),
                                  nn.AvgPool2d(4))  # (N, 8, 4, 4): 16 tokens of 8
        self.heads = nn.Parameter(torch.randn(2, 4, 6) * 0.5)
        self.shared = nn.Parameter(torch.randn(1, 6, 6) * 0.4)
        self.v = nn.Parameter(torch.randn(6) * 0.4)
        self.tw = nn.Parameter(torch.randn(16) * 0.3)
        self.fc = nn.Linear(52, 10)

    def forward(self, x):
        import torch
        h = self.stem(x).flatten(2).transpose(1, 2)  # (N, 16, 8)
        q = h.reshape(h.shape[0], 16, 2, 4).transpose(1, 2)  # (N, 2, 16, 4)
        a = torch.tanh(torch.matmul(q, self.heads))  # (N, 2, 16, 6)
        a = torch.matmul(a, self.shared)
        s = torch.matmul(a, self.v)  # (N, 2, 16)
        m = torch.matmul(q.mean(1, keepdim=True), self.heads.unsqueeze(0))  # (N, 2, 16, 6)
        pooled = torch.matmul(self.tw, h)  # (N, 8)
        return self.fc(torch.cat([s.flatten(1), pooled, m.mean(2).flatten(1)], 1))


def tiny_matmul():
    return TinyMatMul()


class TinyNorms(nn.Module):
    """GroupNorm with 4 groups and with 1 (PoolFormer's), and InstanceNorm2d with affine
    parameters: every exporter writes each as InstanceNormalization (GroupNorm between two
    Reshapes, its scale ones and shift zeros, its own affine after), SiLU and ReLU after; then
    F.normalize (ReduceL2) of the pooled features with the first sample's row zeroed: an
    all-zero vector, whose norm's gradient PyTorch takes as 0."""

    def __init__(self):
        super().__init__()
        self.c1, self.g1 = nn.Conv2d(3, 16, 3, padding=1), nn.GroupNorm(4, 16)
        self.c2, self.g2 = nn.Conv2d(16, 16, 3, stride=2, padding=1), nn.GroupNorm(1, 16)
        self.c3, self.n3 = nn.Conv2d(16, 16, 3, padding=1), nn.InstanceNorm2d(16, affine=True)
        self.fc = nn.Linear(16, 10)

    def forward(self, x):
        import torch
        import torch.nn.functional as F
        h = F.silu(self.g1(self.c1(x)))
        h = F.silu(self.g2(self.c2(h)))
        h = F.relu(self.n3(self.c3(h)))
        p = h.mean((2, 3))
        keep = (torch.arange(p.shape[0]) > 0).to(p.dtype).unsqueeze(1)  # sample 0's row: zeros
        return self.fc(p + F.normalize(p * keep, dim=1))


def tiny_norms():
    return TinyNorms()


class TinyGather(nn.Module):
    """torch.gather (GatherElements) of activations at fixed indices, each with a gradient:
    a relative shift along the tokens (Transformer-XL's, Funnel's: row i read from i + j mod
    T), and a gather along the channels that reads some twice and some never (the gradient
    adds the twice-read ones)."""

    def __init__(self):
        super().__init__()
        import torch
        self.stem = nn.Sequential(nn.Conv2d(3, 8, 3, stride=2, padding=1), nn.ReLU(),
                                  nn.AvgPool2d(4))  # (N, 8, 4, 4): 16 tokens of 8
        self.q = nn.Linear(8, 16)
        t = torch.arange(16)
        self.register_buffer("shift", ((t[:, None] + t[None, :]) % 16).expand(2, 16, 16).clone())
        self.register_buffer("pick", torch.tensor([0, 2, 2, 5, 7, 7, 1, 3]).view(1, 1, 8)
                             .expand(2, 16, 8).clone())
        self.fc = nn.Linear(16 + 8, 10)

    def forward(self, x):
        import torch
        h = self.stem(x).flatten(2).transpose(1, 2)  # (N, 16, 8)
        s = torch.tanh(self.q(h))  # (N, 16, 16): a score per token pair
        r = torch.gather(s, 2, self.shift)  # (N, 16, 16): row i shifted by i
        c = torch.gather(h, 2, self.pick)  # (N, 16, 8): channels 2 and 7 twice, 4 and 6 never
        return self.fc(torch.cat([r.mean(1), c.mean(1)], 1))


def tiny_gather():
    return TinyGather()


class TinyBicubic(nn.Module):
    """F.interpolate(mode="bicubic"), each with a gradient: a learnt position table resized
    to the feature map as DINOv2 and ViTs with interpolate_pos_encoding do (3x3 to 4x4,
    align_corners False), and the features upsampled x2 (align_corners True)."""

    def __init__(self):
        super().__init__()
        import torch
        self.stem = nn.Sequential(nn.Conv2d(3, 8, 3, stride=2, padding=1), nn.ReLU(),
                                  nn.AvgPool2d(4))  # (N, 8, 4, 4)
        self.pos = nn.Parameter(torch.randn(1, 8, 3, 3) * 0.5)
        self.conv = nn.Conv2d(8, 8, 3, padding=1)
        self.fc = nn.Linear(8, 10)

    def forward(self, x):
        import torch.nn.functional as F
        h = self.stem(x)
        h = h + F.interpolate(self.pos, size=(4, 4), mode="bicubic", align_corners=False)
        h = F.interpolate(h, scale_factor=2, mode="bicubic", align_corners=True)
        return self.fc(self.conv(h).relu().mean((2, 3)))


def tiny_bicubic():
    return TinyBicubic()


class TinyTimm(nn.Module):
    """Layers of timm's CNNs that torchvision's lack, each with a gradient: NFNet's scaled
    weight standardization (ScaledStdConv2d: the weight normalised per output channel by
    F.batch_norm(w, None, None, training=True), which the default exporter writes as an
    inference-form BatchNormalization whose statistics are ReduceMeans of the weight);
    torch.split results read in part (SelectiveKernel's and Res2Net's chunks, the first and
    the last never read; MixNet's split by sizes, the second never read); TResNet's
    reflect padding before its blur, with an edge (replicate) padding; XCiT's positional
    encoding, a convolution of fixed features repeated over the batch (Tile of run-time
    data; here also twice along the width); ConViT's relative positions, written into a zeros
    tensor by index (select_scatter: ScatterElements of plan-time values) then projected; and
    VOLO's outlook aggregation, F.unfold, a learnt weight per block offset, then F.fold (Col2Im)
    with stride 2, whose blocks overlap; and VOLO's head, the tokens' maximum (torch.max over
    a dim, ReduceMax) beside their minimum (amin, ReduceMin)."""

    def __init__(self):
        super().__init__()
        import torch
        self.w1 = nn.Parameter(torch.randn(8, 3, 3, 3) * 0.5)
        self.gain = nn.Parameter(torch.ones(8, 1, 1, 1) + 0.1 * torch.randn(8, 1, 1, 1))
        self.b1 = nn.Parameter(torch.zeros(8))
        self.c2 = nn.Conv2d(4, 8, 3, padding=1)
        self.c3 = nn.Conv2d(5, 6, 3)
        self.pos = nn.Conv2d(4, 6, 1)
        self.rel = nn.Linear(3, 6)
        self.outlook = nn.Parameter(1 + 0.3 * torch.randn(54, 1))
        self.fc = nn.Linear(6, 10)

    def forward(self, x):
        import torch
        import torch.nn.functional as F
        scale = (self.gain * 27 ** -0.5).view(-1)
        w = F.batch_norm(self.w1.reshape(1, 8, -1), None, None, weight=scale, training=True,
                         momentum=0.0, eps=1e-6).reshape_as(self.w1)
        h = F.relu(F.conv2d(x, w, self.b1, stride=2, padding=1))  # (N, 8, 16, 16)
        _, b, c, _ = torch.split(h, 2, 1)  # chunks 0 and 3 never read
        h = F.relu(self.c2(torch.cat([b, c], 1)))  # (N, 8, 16, 16)
        first, _ = torch.split(h, [5, 3], 1)  # by sizes, the second never read
        h = F.pad(first, (1, 2, 2, 1), mode="reflect")  # (N, 5, 19, 19)
        h = F.pad(h, (0, 1, 1, 0), mode="replicate")  # (N, 5, 20, 20)
        h = F.relu(self.c3(h))  # (N, 6, 18, 18)
        t = torch.linspace(-1, 1, 18, dtype=x.dtype)
        feats = torch.stack([t.sin(), t.cos(), (2 * t).sin(), (2 * t).cos()])  # (4, 18)
        feats = (feats[:, :, None] * feats[:, None, :9]).unsqueeze(0)  # (1, 4, 18, 9)
        h = h + self.pos(feats).repeat(x.shape[0], 1, 1, 2)  # over the batch and the width
        cols = F.unfold(h, 3, padding=1, stride=2) * self.outlook  # (N, 54, 81)
        h = h + F.fold(cols, (18, 18), 3, padding=1, stride=2)
        ind = torch.arange(6)
        d = (ind[None, :] - ind[:, None]).to(x.dtype)  # (6, 6)
        rel = torch.zeros(1, 6, 6, 3, dtype=x.dtype)
        rel[:, :, :, 2] = d ** 2
        rel[:, :, :, 1] = d
        rel[:, :, :, 0] = -d
        bias = self.rel(rel).mean((1, 2))  # (1, 6)
        tokens = h.flatten(2)  # (N, 6, 324)
        pooled = h.mean((2, 3)) + 0.5 * tokens.max(2)[0] - 0.25 * tokens.amin(2)
        return self.fc(pooled + bias)


def tiny_timm():
    return TinyTimm()


class TinyRnn(nn.Module):
    """Recurrent layers (ONNX LSTM, GRU, RNN; unrolled at load): Sequencer2D's bidirectional
    LSTMs along a feature map's rows and along its columns (batch_first, the image's rows or
    columns as the batch), their outputs fused by a Linear; a 2-layer GRU (torch's
    linear_before_reset) over the rows as steps from a learnt initial state; and a
    bidirectional nn.RNN with ReLU over the GRU's outputs."""

    def __init__(self):
        super().__init__()
        import torch
        self.stem = nn.Conv2d(3, 6, 4, stride=4)  # (N, 6, 8, 8)
        self.along_w = nn.LSTM(6, 4, batch_first=True, bidirectional=True)
        self.along_h = nn.LSTM(6, 4, batch_first=True, bidirectional=True)
        self.fuse = nn.Linear(16, 6)
        self.gru = nn.GRU(48, 5, num_layers=2)
        self.h0 = nn.Parameter(0.1 * torch.randn(2, 1, 5))
        self.relu_rnn = nn.RNN(5, 4, nonlinearity="relu", bidirectional=True)
        self.fc = nn.Linear(6 + 8 + 5, 10)

    def forward(self, x):
        import torch
        h = self.stem(x).permute(0, 2, 3, 1)  # (N, H, W, C)
        n, hh, ww, c = h.shape
        rows, _ = self.along_w(h.reshape(n * hh, ww, c))
        cols, _ = self.along_h(h.permute(0, 2, 1, 3).reshape(n * ww, hh, c))
        rows = rows.reshape(n, hh, ww, 8)
        cols = cols.reshape(n, ww, hh, 8).permute(0, 2, 1, 3)
        h = h + self.fuse(torch.cat([rows, cols], -1))  # (N, H, W, 6)
        seq = h.permute(1, 0, 2, 3).reshape(hh, n, ww * c)  # the rows as steps
        g, last = self.gru(seq, self.h0.expand(2, n, 5).contiguous())
        r, _ = self.relu_rnn(g)
        return self.fc(torch.cat([h.mean((1, 2)), r.mean(0), last[-1]], -1))


def tiny_rnn():
    return TinyRnn()


class TinyRnnPacked(nn.Module):
    """Packed sequences (torch's pack_padded_sequence with its default enforce_sorted, lengths
    in decreasing order): a bidirectional LSTM and a GRU over sequences of their own lengths,
    padded back with zeros, summed over time, then a Linear. The legacy exporter writes the
    lengths as the recurrent nodes' run-time sequence_lens (torch.export cannot trace the
    packing). Inputs: x [N, T, 4], lengths [N] (int64). enforce_sorted False (TinyRnnUnsorted):
    lengths in any order, which the export sorts with a TopK and undoes with gathers."""

    enforce_sorted = True

    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(4, 5, batch_first=True, bidirectional=True)
        self.gru = nn.GRU(10, 3, batch_first=True)
        self.fc = nn.Linear(3, 10)

    def forward(self, x, lengths):
        from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence
        t = x.shape[1]
        s = self.enforce_sorted
        y, _ = self.lstm(pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=s))
        y, _ = pad_packed_sequence(y, batch_first=True, total_length=t)
        z, _ = self.gru(pack_padded_sequence(y, lengths, batch_first=True, enforce_sorted=s))
        z, _ = pad_packed_sequence(z, batch_first=True, total_length=t)
        return self.fc(z.sum(1))


class TinyRnnUnsorted(TinyRnnPacked):
    enforce_sorted = False


class TinyGatherPick(nn.Module):
    """torch.gather at indices the model takes as an input (a Q-value read at the actions
    taken, a score read at given classes): GatherElements of an activation and of a
    parameter at run-time int64 indices. Inputs: x [N, 8], picks [N, 3] (int64 in [0, 10)).
    The offsets are folded on the host each step; the gather's gradient is a scatter-add
    (two picks of one element add)."""

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(8, 10)
        self.fc2 = nn.Linear(3, 10)
        self.w = nn.Parameter(torch_randn(4, 5))

    def forward(self, x, picks):
        import torch
        h = torch.tanh(self.fc1(x))  # (N, 10)
        g = h.gather(1, picks)  # (N, 3)
        # along dim 0 too: rows picked per column from the first 3 of the (4, 5) parameter's
        r = self.w.gather(0, picks.remainder(2))  # (N, 3)
        return self.fc2(g * r)


class TinyScatterAdd(nn.Module):
    """Message passing as graph networks write it: per graph of the batch, node features
    x [N, 5, 4], edges [N, 2, 7] (int64 source and target nodes, an input), messages from the
    sources (gather at the edges: GatherElements at run-time indices), a Linear of them, summed
    at their targets into zeros (scatter_add: ScatterElements, reduction add, run-time
    indices), then summed again along a fixed pattern (a buffer: plan-time indices on
    run-time data), pooled, a Linear. Both scatter-adds are lowered at load to Gather's
    gradient; repeated targets add."""

    def __init__(self):
        super().__init__()
        import torch
        self.msg = nn.Linear(4, 6)
        self.fc = nn.Linear(6, 10)
        self.register_buffer("pattern", torch.tensor([[0, 2, 2, 4, 1]] * 6).t().contiguous())

    def forward(self, x, edges):
        import torch
        n, v, _ = x.shape
        src = edges[:, 0, :, None].expand(-1, -1, x.shape[2])  # (N, 7, 4)
        m = torch.tanh(self.msg(x.gather(1, src)))  # (N, 7, 6)
        dst = edges[:, 1, :, None].expand(-1, -1, m.shape[2])  # (N, 7, 6)
        h = torch.zeros(n, v, m.shape[2], dtype=x.dtype).scatter_add(1, dst, m)  # (N, 5, 6)
        idx = self.pattern[None].expand(n, -1, -1)  # (N, 5, 6)
        h = h.scatter_add(1, idx, torch.relu(h))  # run-time data, plan-time indices
        return self.fc(h.mean(1))


class TinyEmbeddingBag(nn.Module):
    """nn.EmbeddingBag (a bag-of-words text classifier, a recommender's sparse features):
    mean, sum and max bags of an id input [N, 5] (fixed-size bags: the offsets are implied),
    beside a dense input. torch's legacy exporter writes each as a Loop over the bags whose
    condition is a Cast of a true constant; the default exporter as a loop that runs until a
    counter reaches the bag count. Inputs: x [N, 8], ids [N, 5] (int64 in [0, 12), repeats
    within a bag)."""

    def __init__(self):
        super().__init__()
        self.mean = nn.EmbeddingBag(12, 4, mode="mean")
        self.sum = nn.EmbeddingBag(12, 4, mode="sum")
        self.max = nn.EmbeddingBag(12, 4, mode="max")
        self.fc = nn.Linear(20, 10)

    def forward(self, x, ids):
        import torch
        return self.fc(torch.cat([self.mean(ids), self.sum(ids), self.max(ids), x], 1))


class TinyEmbeddingBagMany(nn.Module):
    """nn.EmbeddingBag over more bags than one Concat takes (130: the unrolled loop's scan
    is a Concat of Concats of 64): max and sum bags of an id input [N, 3] (fixed-size bags,
    reduced at load as one ReduceMax / ReduceSum over the bag axis), and mean bags of uneven
    sizes 1, 2, 3, 4 (offsets a buffer) over the first ten ids, which stay unrolled. Input:
    ids [N, 3] (int64 in [0, 12))."""

    def __init__(self):
        import torch
        super().__init__()
        self.max = nn.EmbeddingBag(12, 4, mode="max")
        self.sum = nn.EmbeddingBag(12, 4, mode="sum")
        self.uneven = nn.EmbeddingBag(12, 4, mode="mean")
        self.register_buffer("offsets", torch.tensor([0, 1, 3, 6]))
        self.fc = nn.Linear(8, 10)

    def forward(self, ids):
        import torch
        uneven = self.uneven(ids.reshape(-1)[:10], self.offsets)  # [4, 4]
        return self.fc(torch.cat([self.max(ids), self.sum(ids) + uneven.mean(0)], 1))


class TinyEmbeddingBagOffsets(nn.Module):
    """nn.EmbeddingBag with its offsets given at run time (a recommender's multi-hot features,
    fastText's documents of any length): sum and mean bags of a flat id input [L] cut by an
    offsets input [N] (bags of uneven sizes, empty ones among them), beside a dense input.
    torch's legacy exporter writes a Loop over the bags that slices the ids from one offset to
    the next; outcore sums each id's row into its bag by a scatter-add at bag indices the host
    computes from the offsets each step (planner/ir/bag_reduce.c); torch.export's loop tests
    each bag for emptiness at run time, zeros then. Inputs: x [N, 8], ids [L] (int64 in
    [0, 12)), offsets [N] (int64, ascending, the first 0)."""

    def __init__(self):
        super().__init__()
        self.sum = nn.EmbeddingBag(12, 4, mode="sum")
        self.mean = nn.EmbeddingBag(12, 4, mode="mean")
        self.fc = nn.Linear(16, 10)

    def forward(self, x, ids, offsets):
        import torch
        return self.fc(torch.cat([self.sum(ids, offsets), self.mean(ids, offsets), x], 1))


class TinyEmbeddingBagBatch(nn.Module):
    """Sum and mean bags of a recommender's batch, more bags than outcore unrolls a loop over
    (4096): each exporter's Loop is read whole (planner/ir/bag_loop.c). Inputs: ids [L]
    (int64 in [0, 12)), offsets [N] (int64, ascending, the first 0)."""

    def __init__(self):
        super().__init__()
        self.sum = nn.EmbeddingBag(12, 4, mode="sum")
        self.mean = nn.EmbeddingBag(12, 4, mode="mean")
        self.fc = nn.Linear(8, 10)

    def forward(self, ids, offsets):
        import torch
        return self.fc(torch.cat([self.sum(ids, offsets), self.mean(ids, offsets)], 1))


class TinyEmbeddingBagWeighted(nn.Module):
    """nn.EmbeddingBag's weighted sum bags (per_sample_weights, a float input) cut by run-time
    offsets: torch.export multiplies the gathered rows by the weights before its loop, so the
    bags become the same scatter-add; torch's legacy export slices the weights per bag, which
    outcore reads whole (planner/ir/bag_loop.c). Inputs: ids [40] (int64 in [0, 50)), offsets
    [8], weights [40]."""

    def __init__(self):
        super().__init__()
        self.bag = nn.EmbeddingBag(50, 8, mode="sum")
        self.fc = nn.Linear(8, 10)

    def forward(self, ids, offsets, weights):
        return self.fc(self.bag(ids, offsets, per_sample_weights=weights))


class TinyEmbeddingBagOffsetsMax(TinyEmbeddingBagOffsets):
    """TinyEmbeddingBagOffsets with max bags: at run-time offsets, one SegmentMax (each bag's
    elementwise max, its gradient to the winning row; planner/ir/bag_reduce.c)."""

    def __init__(self):
        super().__init__()
        self.mean = nn.EmbeddingBag(12, 4, mode="max")


class TinyDLRM(nn.Module):
    """A DLRM-style recommender (Naumov et al. 2019) at toy size: dense features through a
    bottom MLP, three sparse features as nn.EmbeddingBag (sum, mean, sum) of flat ids cut by
    offsets given at run time, their pairwise dot products (bmm of the stacked vectors, the
    strictly lower triangle gathered at index buffers), then a top MLP to 2 classes. Inputs:
    dense [N, 13], then ids [3 N] (int64 in [0, 20)) and offsets [N] (ascending, the first
    0) of each sparse feature."""

    def __init__(self):
        super().__init__()
        import torch
        self.bot = nn.Sequential(nn.Linear(13, 16), nn.ReLU(), nn.Linear(16, 4), nn.ReLU())
        self.emb = nn.ModuleList([nn.EmbeddingBag(20, 4, mode=m) for m in ("sum", "mean", "sum")])
        n = 4
        self.register_buffer("li", torch.tensor([i for i in range(n) for j in range(i)]),
                             persistent=False)  # index tables, no state
        self.register_buffer("lj", torch.tensor([j for i in range(n) for j in range(i)]),
                             persistent=False)
        self.top = nn.Sequential(nn.Linear(4 + 6, 8), nn.ReLU(), nn.Linear(8, 2))

    def forward(self, dense, i0, o0, i1, o1, i2, o2):
        import torch
        x = self.bot(dense)
        ly = [e(i, o) for e, i, o in zip(self.emb, (i0, i1, i2), (o0, o1, o2))]
        t = torch.cat([x] + ly, dim=1).view(x.shape[0], -1, 4)
        z = torch.bmm(t, t.transpose(1, 2))[:, self.li, self.lj]
        return self.top(torch.cat([x, z], 1))


class TinyTied(nn.Module):
    """An embedding and an output layer sharing one weight (GPT-2's wte and lm_head): the
    exported program lists both names, the file holds one. Input: ids [N, 5] in [0, 10)."""

    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(10, 8)
        self.head = nn.Linear(8, 10, bias=False)
        self.head.weight = self.emb.weight

    def forward(self, ids):
        return self.head(self.emb(ids).mean(1))


class TinyTiedLM(TinyTied):
    """TinyTied as a language model: logits per position [N, 5, 10], whose head optimize=True
    writes as a MatMul by the embedding's transpose folded into a new initializer (the tie
    broken, unless given back)."""

    def forward(self, ids):
        return self.head(self.emb(ids))


class TinyMerged(nn.Module):
    """What torch.onnx.export's optimize=True does to a fresh transformer's parameters: two
    LayerNorms (weights all ones, biases all zeros) and zero Linear biases merged into one
    initializer each, the Linear weights (of [N, 3, 16] activations) folded transposed, and
    the head's zero bias (a Gemm's) removed. Input: x [N, 3, 8]."""

    def __init__(self):
        super().__init__()
        import torch
        self.fc1 = nn.Linear(8, 16)
        self.ln1 = nn.LayerNorm(16)
        self.fc2 = nn.Linear(16, 16)
        self.ln2 = nn.LayerNorm(16)
        self.head = nn.Linear(16, 4)
        with torch.no_grad():
            for m in (self.fc1, self.fc2, self.head):
                m.bias.zero_()

    def forward(self, x):
        x = self.ln1(self.fc1(x)).relu()
        return self.head(self.ln2(self.fc2(x) + x).mean(1))


def torch_randn(*shape):
    import torch
    return torch.randn(*shape)


class TinySamePad(nn.Module):
    """Convolutions with padding="same" and even kernels: one more pad at a dim's end than at
    its start, which the legacy exporters write as auto_pad SAME_UPPER and outcore turns into a
    Pad before the Conv at load (cuDNN pads both ends alike); the default exporter writes the
    Pad itself."""

    def __init__(self):
        super().__init__()
        self.a = nn.Conv2d(3, 8, 4, padding="same")
        self.b = nn.Conv2d(8, 8, (2, 3), padding="same", bias=False)
        self.c = nn.Conv2d(8, 6, 2, padding="same")
        self.fc = nn.Linear(6, 10)

    def forward(self, x):
        import torch
        h = torch.relu(self.b(torch.relu(self.a(x))))
        h = torch.tanh(self.c(nn.functional.max_pool2d(h, 2)))
        return self.fc(h.mean((2, 3)))


def tiny_same_pad():
    return TinySamePad()


class TinyTopK(nn.Module):
    """torch.topk of activations: k-max pooling (the 4 largest responses of each channel over
    the image) and the 2 smallest channels of each pixel (largest=False), whose values train:
    the gradient reaches the chosen elements only (TopK lowered at load to a TopKOffsets
    kernel and a Gather)."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, stride=2, padding=1)
        self.fc = nn.Linear(8 * 4 + 2, 10)

    def forward(self, x):
        import torch
        h = torch.tanh(self.conv(x))  # (N, 8, 16, 16)
        kmax = h.flatten(2).topk(4, dim=2).values.flatten(1)  # (N, 32)
        low = h.topk(2, dim=1, largest=False).values.mean((2, 3))  # (N, 2)
        return self.fc(torch.cat([kmax, low], 1))


def tiny_topk():
    return TinyTopK()


class TinyTokenSelect(nn.Module):
    """Token selection as token-pruning vision transformers write it (EViT, DynamicViT): a
    score per patch token, the top 5 tokens' features gathered at TopK's indices (the
    indices computed on the device: GatherElements at an ElementOffsets kernel's offsets),
    weighted by their scores' sigmoid, pooled. Gradients reach the chosen tokens and the
    scorer through the values."""

    def __init__(self):
        super().__init__()
        self.patch = nn.Conv2d(3, 8, 8, stride=8)  # (N, 8, 4, 4): 16 tokens
        self.score = nn.Linear(8, 1)
        self.fc = nn.Linear(8, 10)

    def forward(self, x):
        t = self.patch(x).flatten(2).transpose(1, 2)  # (N, 16, 8)
        s = self.score(t)  # (N, 16, 1)
        v, i = s.topk(5, dim=1)  # (N, 5, 1)
        chosen = t.gather(1, i.expand(-1, -1, t.shape[2]))  # (N, 5, 8)
        return self.fc((chosen * v.sigmoid()).mean(1))


def tiny_token_select():
    return TinyTokenSelect()


class TinyPixelShuffle(nn.Module):
    """Sub-pixel convolution as super-resolution and GAN generators write it: a convolution to
    4x the channels, nn.PixelShuffle(2) (the legacy exporter's DepthToSpace, CRD), CELU,
    nn.PixelUnshuffle(4) (SpaceToDepth's reshapes), a convolution, pooled."""

    def __init__(self):
        super().__init__()
        self.up = nn.Conv2d(3, 16, 3, stride=2, padding=1)  # (N, 16, 16, 16)
        self.shuffle = nn.PixelShuffle(2)  # (N, 4, 32, 32)
        self.act = nn.CELU(0.7)
        self.unshuffle = nn.PixelUnshuffle(4)  # (N, 64, 8, 8)
        self.conv = nn.Conv2d(64, 8, 3, padding=1)
        self.fc = nn.Linear(8, 10)

    def forward(self, x):
        h = self.unshuffle(self.act(self.shuffle(self.up(x))))
        return self.fc(self.conv(h).mean((2, 3)))


def tiny_pixel_shuffle():
    return TinyPixelShuffle()


class TinyCumSum(nn.Module):
    """Cumulative sums of activations (x.cumsum(dim): cumulative attention, stick-breaking
    weights, running features): along the flattened image (the last axis, 256 long), along the
    channels (not the last), and in reverse (flip, cumsum, flip). CumSum of run-time data is a
    MatMul by a triangle of ones at load; its gradient the reverse sums."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, stride=2, padding=1)  # (N, 8, 16, 16)
        self.fc = nn.Linear(8, 10)

    def forward(self, x):
        import torch
        h = torch.tanh(self.conv(x)).flatten(2)  # (N, 8, 256)
        a = h.cumsum(2) / 16.0
        b = h.cumsum(1)
        c = h.flip(2).cumsum(2).flip(2) / 16.0
        return self.fc((a * b + c).mean(2))


def tiny_cumsum():
    return TinyCumSum()


class TinyReductions(nn.Module):
    """Reductions ONNX writes as ops of their own: torch.logsumexp (ReduceLogSumExp), std and
    var (their element count a ReduceProd of the shape, folded), an L1 norm (ReduceL1), and a
    sum of squares. ReduceL1, ReduceSumSquare and ReduceLogSumExp are rewritten at load into
    ReduceSum with Abs, Mul, or a max-shifted Exp and Log."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, stride=2, padding=1)  # (N, 8, 16, 16)
        self.fc = nn.Linear(8 * 4, 10)

    def forward(self, x):
        import torch
        h = self.conv(x).flatten(2)  # (N, 8, 256)
        a = torch.logsumexp(h, -1)  # (N, 8)
        b = h.std(-1)
        c = h.var(1, keepdim=True).mean(-1).expand(-1, 8)
        d = (h / h.norm(p=1, dim=-1, keepdim=True)).pow(2).sum(-1) * 100
        return self.fc(torch.cat([a, b, c, d], 1))


def tiny_reductions():
    return TinyReductions()


class TinyCircular(nn.Module):
    """Circular padding, as periodic-domain models (Fourier neural operators, climate and
    physics nets, some GAN generators) write it: convolutions with padding_mode="circular",
    and F.pad(mode="circular") along both dims. torch 2.11's default
    exporter writes Pad mode wrap (opset 19), its legacy one Slices and Concats."""

    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(3, 8, 3, stride=2, padding=1, padding_mode="circular")
        self.c2 = nn.Conv2d(8, 8, 3, padding=(0, 2), padding_mode="circular")
        self.fc = nn.Linear(8, 10)

    def forward(self, x):
        import torch.nn.functional as F
        h = F.relu(self.c1(x))  # (N, 8, 16, 16)
        h = F.pad(h, (9, 3, 1, 1), mode="circular")  # (N, 8, 18, 28)
        return self.fc(F.relu(self.c2(h)).mean((2, 3)))


def tiny_circular():
    return TinyCircular()


class TinyNllLoss(nn.Module):
    """A model that computes its own loss (outcore-plan emit --loss model): a per-pixel
    classifier whose loss is F.nll_loss(F.log_softmax(..)) with class weights (a buffer) and
    ignore_index 255 -- the legacy exporter writes a SoftmaxCrossEntropyLoss with weights over
    [N, C, H, W], the default one LogSoftmax and the NLL's own ops (GatherElements at the
    targets, Where, Div). Inputs: x [N, 3, 6, 6], targets [N, 6, 6] (int64). Output: the loss."""

    def __init__(self):
        super().__init__()
        import torch
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.conv2 = nn.Conv2d(8, 5, 1)
        self.register_buffer("class_weight", torch.tensor([1.0, 2.0, 0.5, 1.5, 3.0]))

    def forward(self, x, targets):
        import torch.nn.functional as F
        logp = F.log_softmax(self.conv2(F.relu(self.conv1(x))), 1)
        return F.nll_loss(logp, targets, weight=self.class_weight, ignore_index=255)


class TinyMath(nn.Module):
    """The element math and masks everyday models write on activations: hardshrink and
    softshrink (wavelet / sparse-coding layers), softsign, tanhshrink, a threshold, atan2
    of two feature maps (phase of a complex field), torch.sign, floor, round and ceil
    (quantization glue: no gradient through them), asin of a tanh, nan_to_num and masked_fill from a comparison, and a mask from an ArgMax (one_hot)."""

    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(3, 8, 3, stride=2, padding=1)
        self.c2 = nn.Conv2d(8, 8, 3, padding=1)
        self.fc = nn.Linear(8 * 6, 10)

    def forward(self, x):
        import torch
        import torch.nn.functional as F
        h = self.c1(x)  # (N, 8, 16, 16)
        a = F.hardshrink(h, 0.3) + F.softshrink(h, 0.2) + F.softsign(2 * h)
        b = F.tanhshrink(h) + torch.where(h > 0.1, h, -0.5) + torch.asin(0.9 * torch.tanh(h))
        phase = 4 * torch.atan2(h[:, :4], h[:, 4:] + 0.05)  # (N, 4, 16, 16)
        q = torch.sign(h) * h + (torch.floor(4 * h) - torch.round(3 * h) + torch.ceil(h)) * 0.1
        m = torch.nan_to_num(torch.log(h.clamp(min=0.0)), neginf=-3.0)  # -inf where h <= 0
        m = m.masked_fill(h.abs() <= 0.05, 0.25)
        hot = F.one_hot(h.mean((2, 3)).argmax(1), 8).float()  # (N, 8), no gradient
        g = F.relu(self.c2(a + b + q + m))
        feats = [t.mean((2, 3)) for t in (g, phase.repeat(1, 2, 1, 1), g * hot[:, :, None, None])]
        feats += [(g * g).amax((2, 3)), g.std((2, 3)), (a * b).mean((2, 3))]
        return self.fc(torch.cat(feats, 1))


def tiny_math():
    return TinyMath()


class TinyPeriodic(nn.Module):
    """Wrapped coordinates as periodic encodings and phase models write them: torch.fmod of a
    feature map by a constant (ONNX Mod, fmod 1) and by a divisor the network computes (its
    gradient -trunc(a / b)), torch.remainder (Python's %: Sub, Mul, Floor, Div), and a sine
    of the wrapped phase."""

    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(3, 8, 3, stride=2, padding=1)
        self.c2 = nn.Conv2d(8, 8, 3, padding=1)
        self.fc = nn.Linear(8 * 3, 10)

    def forward(self, x):
        import torch
        import torch.nn.functional as F
        h = self.c1(x)  # (N, 8, 16, 16)
        wrapped = torch.fmod(3 * h, 0.7) + torch.remainder(h, 0.5)
        period = F.softplus(h[:, 4:]) + 0.4  # a learnt divisor, > 0.4
        phase = torch.fmod(2 * h[:, :4], period)  # (N, 4, 16, 16), |h| / period up to ~5
        g = F.relu(self.c2(wrapped + torch.cat([torch.sin(6 * phase), phase], 1)))
        feats = [g.mean((2, 3)), wrapped.mean((2, 3)), torch.cat([phase, period], 1).amax((2, 3))]
        return self.fc(torch.cat(feats, 1))


def tiny_periodic():
    return TinyPeriodic()


class TinyProd(nn.Module):
    """torch.prod of activations: boxes' areas from their predicted sides, noisy-OR's product
    of complements over channels, and products of two ReLU outputs, often zero."""

    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(3, 8, 3, stride=2, padding=1)
        self.fc = nn.Linear(2 + 1 + 8, 10)

    def forward(self, x):
        import torch
        import torch.nn.functional as F
        h = self.c1(x)  # (N, 8, 16, 16)
        n = h.shape[0]
        sides = torch.sigmoid(h[:, :4]).reshape(n, 2, 2, 16, 16)
        areas = sides.prod(2)  # (N, 2, 16, 16)
        noisy_or = 1 - (1 - torch.sigmoid(h[:, 4:])).prod(1)  # (N, 16, 16)
        pairs = F.relu(h[:, :, 0, :2]).prod(-1)  # (N, 8), zero where either factor is
        feats = [areas.mean((2, 3)), noisy_or.mean((1, 2))[:, None], pairs]
        return self.fc(torch.cat(feats, 1))


def tiny_prod():
    return TinyProd()


class TinyGem(nn.Module):
    """Generalized-mean (GeM) pooling as image retrieval trains it: x.clamp(min=eps) ** p,
    averaged over the image, then ** (1 / p), with p a learnt parameter (both Pows read it:
    a run-time exponent, trained), and a second GeM with one p per channel."""

    def __init__(self):
        super().__init__()
        import torch
        self.c1 = nn.Conv2d(3, 8, 3, stride=2, padding=1)
        self.p = nn.Parameter(torch.ones(1) * 3.0)
        self.p_channel = nn.Parameter(torch.linspace(1.5, 4.0, 8).reshape(1, 8, 1, 1))
        self.fc = nn.Linear(16, 10)

    def forward(self, x):
        import torch.nn.functional as F
        h = F.relu(self.c1(x))  # (N, 8, 16, 16)
        g1 = F.avg_pool2d(h.clamp(min=1e-6).pow(self.p), (16, 16)).pow(1.0 / self.p)
        g2 = h.clamp(min=1e-6).pow(self.p_channel).mean((2, 3), keepdim=True)
        g2 = g2.pow(1.0 / self.p_channel)
        return self.fc(torch_cat([g1.flatten(1), g2.flatten(1)]))


def torch_cat(ts):
    import torch
    return torch.cat(ts, 1)


def tiny_gem():
    return TinyGem()


class TinyDiag(nn.Module):
    """Diagonals of activations as self-supervised and style losses read them: a Gram matrix
    of each image's channels, its diagonal (torch.diagonal: EyeLike and a masked sum from the
    default exporter, GatherND with batch_dims 2 from the legacy one), its trace
    (einsum "nii->n") and its diagonal again by einsum ("nii->ni")."""

    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(3, 8, 3, stride=2, padding=1)
        self.fc = nn.Linear(8 + 1 + 8, 10)

    def forward(self, x):
        import torch
        h = self.c1(x).flatten(2)  # (N, 8, 256)
        gram = h @ h.transpose(1, 2) / 256.0  # (N, 8, 8)
        d1 = torch.diagonal(gram, dim1=1, dim2=2)
        trace = torch.einsum("nii->n", gram)[:, None]
        d2 = torch.einsum("nii->ni", gram)
        return self.fc(torch.cat([d1, trace, d2 * d1], 1))


def tiny_diag():
    return TinyDiag()


class TinyCount(nn.Module):
    """Counts of what an activation's comparison picks, read as floats: a mean over each
    channel's positive responses ((h * m).sum() / m.sum(), m = h > 0: an integer sum of a
    mask computed while the model runs) and the fraction of each channel above its mean."""

    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(3, 8, 3, stride=2, padding=1)
        self.fc = nn.Linear(16, 10)

    def forward(self, x):
        import torch
        h = self.c1(x)  # (N, 8, 16, 16)
        m = h > 0
        positive_mean = (h * m).sum((2, 3)) / m.sum((2, 3)).float().clamp(min=1.0)
        above = (h > h.mean((2, 3), keepdim=True)).sum((2, 3)).float() / 256.0
        return self.fc(torch.cat([positive_mean, above * h.mean((2, 3))], 1))


def tiny_count():
    return TinyCount()


class TinyPick(nn.Module):
    """Features picked at indices an activation's ArgMax / TopK gives: Double DQN's
    q[arange(N), q_other.argmax(1)] and token pruning's x[arange(N)[:, None], top-k ids]
    (GatherND at device-computed indices from the default exporter)."""

    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(3, 8, 3, stride=2, padding=1)
        self.fc = nn.Linear(8 + 4 * 8, 10)

    def forward(self, x):
        import torch
        h = self.c1(x)  # (N, 8, 16, 16)
        n = h.shape[0]
        tokens = h.flatten(2).transpose(1, 2)  # (N, 256, 8)
        score = tokens.mean(2)  # (N, 256)
        best = tokens[torch.arange(n), score.argmax(1)]  # (N, 8)
        top = tokens[torch.arange(n)[:, None], score.topk(4, dim=1)[1]]  # (N, 4, 8)
        return self.fc(torch.cat([best, top.flatten(1)], 1))


def tiny_pick():
    return TinyPick()


class TinyTake(nn.Module):
    """torch.take_along_dim at an ArgMax of an activation (the default exporter wraps the
    indices with Python's % by the axis' extent, then GatherElements)."""

    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(3, 8, 3, stride=2, padding=1)
        self.fc = nn.Linear(8 + 16, 10)

    def forward(self, x):
        import torch
        h = self.c1(x)  # (N, 8, 16, 16)
        flat = h.flatten(2)  # (N, 8, 256)
        peak = torch.take_along_dim(flat, flat.argmax(2, keepdim=True), 2)[..., 0]  # (N, 8)
        rows = torch.take_along_dim(h.mean(3), h.mean((1, 3)).argmax(1)[:, None, None], 2)  # (N, 8, 1)
        return self.fc(torch.cat([peak, rows[..., 0], peak * rows[..., 0]], 1))


def tiny_take():
    return TinyTake()


class TinyUnpool(nn.Module):
    """SegNet's decoder: nn.MaxPool2d(return_indices=True) and nn.MaxUnpool2d at those
    indices, non-overlapping (2, 2) windows and overlapping (3, stride 2) ones (a max taken
    by two windows: both write it), BN and Relu between. The default exporter makes the
    indices per plane (Sub of a stride-1 MaxPool's), offsets them (Add) and writes a
    ScatterND into zeros; the legacy exporter has no aten::max_unpool2d."""

    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(3, 8, 3, padding=1)
        self.b1 = nn.BatchNorm2d(8)
        self.p1 = nn.MaxPool2d(2, return_indices=True)
        self.c2 = nn.Conv2d(8, 8, 3, padding=1)
        self.p2 = nn.MaxPool2d(3, stride=2, return_indices=True)
        self.u2 = nn.MaxUnpool2d(3, stride=2)
        self.u1 = nn.MaxUnpool2d(2)
        self.c3 = nn.Conv2d(8, 4, 3, padding=1)
        self.fc = nn.Linear(4, 10)

    def forward(self, x):
        import torch
        h, i1 = self.p1(torch.relu(self.b1(self.c1(x))))  # (N, 8, 16, 16)
        g, i2 = self.p2(self.c2(h))  # (N, 8, 7, 7)
        h = self.u2(g * 2.0, i2, output_size=h.shape[-2:]) + h
        h = self.u1(h, i1)  # (N, 8, 32, 32)
        return self.fc(torch.relu(self.c3(h)).mean((2, 3)))


def tiny_unpool():
    return TinyUnpool()


class TinyScatterMax(nn.Module):
    """Max and min aggregation over a fixed graph (a mesh or point-cloud network's
    scatter_reduce amax / amin at a buffer's indices): a 4x4 grid of nodes (a conv's
    positions), each edge's message a Linear of its source, reduced at its destination
    without (include_self=False) and with the destination's own features."""

    def __init__(self):
        super().__init__()
        import torch
        self.c1 = nn.Conv2d(3, 8, 3, stride=8, padding=1)  # (N, 8, 4, 4)
        self.msg = nn.Linear(8, 8)
        src, dst = [], []
        for i in range(16):
            for j in (i - 4, i + 4, i - 1 if i % 4 else -1, i + 1 if i % 4 != 3 else -1):
                if 0 <= j < 16:
                    src.append(j), dst.append(i)
        self.register_buffer("src", torch.tensor(src))
        self.register_buffer("dst", torch.tensor(dst))
        self.fc = nn.Linear(24, 10)

    def forward(self, x):
        import torch
        h = self.c1(x).flatten(2).transpose(1, 2)  # (N, 16, 8)
        m = torch.relu(self.msg(h[:, self.src]))  # (N, E, 8)
        idx = self.dst[None, :, None].expand(h.shape[0], -1, 8)
        hi = torch.zeros_like(h).scatter_reduce(1, idx, m, "amax", include_self=False)
        lo = h.scatter_reduce(1, idx, m - 1.0, "amin", include_self=True)
        return self.fc(torch.cat([hi.mean(1), lo.mean(1), (hi * lo).mean(1)], 1))


def tiny_scatter_max():
    return TinyScatterMax()


class TinyBucketize(nn.Module):
    """torch.bucketize of an activation into learnt embeddings (a piecewise encoding of a
    feature), and an index made from it with // and % (a bucket's row and column of a 2-d
    table): the default exporter writes bucketize as a binary search of Where, Less, Div and
    Mod of int64 and a GatherND of the boundaries; the legacy one has no aten::bucketize."""

    def __init__(self):
        super().__init__()
        import torch
        self.c1 = nn.Conv2d(3, 4, 3, stride=4, padding=1)  # (N, 4, 8, 8)
        self.register_buffer("edges", torch.tensor([-0.6, -0.2, 0.0, 0.3, 0.7]))
        self.emb = nn.Embedding(6, 4)
        self.grid = nn.Parameter(torch.randn(3, 2) * 0.5)
        self.fc = nn.Linear(12, 10)

    def forward(self, x):
        import torch
        h = self.c1(x)
        b = torch.bucketize(h.detach(), self.edges)  # (N, 4, 8, 8) in [0, 5]
        e = self.emb(b).mean((1, 2, 3))  # (N, 4)
        g = self.grid[b // 2, b % 2]  # (N, 4, 8, 8)
        return self.fc(torch.cat([e, (h * g).mean((2, 3)), h.mean((2, 3))], 1))


def tiny_bucketize():
    return TinyBucketize()


class TinyAntialias(nn.Module):
    """F.interpolate(antialias=True): bilinear to a size that does not divide the input's,
    bicubic by half (downscaling: the filter stretched) and bilinear up by 1.5 (antialias
    leaves it as is but for taps past the edge); the default exporter writes Resize with
    antialias 1 (opset 18), the legacy one has no aten::_upsample_bilinear2d_aa."""

    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(3, 6, 3, padding=1)
        self.c2 = nn.Conv2d(6, 4, 3, padding=1)
        self.fc = nn.Linear(12, 10)

    def forward(self, x):
        import torch
        import torch.nn.functional as F
        h = self.c1(x)  # (N, 6, 32, 32)
        a = F.interpolate(h, size=(11, 13), mode="bilinear", antialias=True)
        b = F.interpolate(self.c2(h), scale_factor=0.5, mode="bicubic", antialias=True)
        u = F.interpolate(b, scale_factor=1.5, mode="bilinear", antialias=True)
        return self.fc(torch.cat([a.mean((2, 3))[:, :4], b.mean((2, 3)), (u * u).mean((2, 3))], 1))


def tiny_antialias():
    return TinyAntialias()


class TinyFft(nn.Module):
    """A GFNet global filter (rfft2, a learnt complex filter, irfft2, orthonormal) and the
    magnitude of a 1-d rfft along the width (torch.fft as torch.export writes it: DFT nodes,
    the complex product on the last dim of 2; the legacy exporter has no aten::fft_rfft2)."""

    def __init__(self):
        super().__init__()
        import torch
        self.c1 = nn.Conv2d(3, 4, 3, stride=4, padding=1)  # (N, 4, 8, 8)
        self.filt = nn.Parameter(torch.randn(4, 8, 5, 2) * 0.3)
        self.fc = nn.Linear(4 + 5, 10)

    def forward(self, x):
        import torch
        h = self.c1(x)
        f = torch.fft.rfft2(h, norm="ortho") * torch.view_as_complex(self.filt)
        g = torch.fft.irfft2(f, s=(8, 8), norm="ortho") + h
        spec = torch.fft.rfft(g, dim=3).abs().mean((1, 2))  # (N, 5)
        return self.fc(torch.cat([g.mean((2, 3)), spec], 1))


def tiny_fft():
    return TinyFft()


class TinyStn(nn.Module):
    """F.grid_sample as spatial transformers and flow warping use it: a localization net's
    affine theta applied to a base grid (a buffer: the legacy exporter has no affine_grid),
    bilinear with zeros padding; a flow field a convolution predicts, added to the identity
    grid, bilinear with border padding and align_corners; the same grid widened, nearest
    with reflection padding."""

    def __init__(self):
        super().__init__()
        import torch
        self.loc = nn.Conv2d(3, 4, 3, stride=4, padding=1)
        self.theta = nn.Linear(4, 6)
        with torch.no_grad():  # near the identity transform, as STNs start
            self.theta.weight.mul_(0.1)
            self.theta.bias.copy_(torch.tensor([1.0, 0.1, 0.05, -0.1, 0.9, 0.0]))
        ys, xs = torch.meshgrid(torch.linspace(-1, 1, 16), torch.linspace(-1, 1, 16),
                                indexing="ij")
        self.register_buffer("base", torch.stack([xs, ys, torch.ones_like(xs)], -1).reshape(-1, 3))
        self.register_buffer("ident", torch.stack([xs, ys], -1)[None])  # (1, 16, 16, 2)
        self.c1 = nn.Conv2d(3, 8, 3, padding=1)
        self.flow = nn.Conv2d(8, 2, 3, padding=1)
        self.fc = nn.Linear(16, 10)

    def forward(self, x):
        import torch
        import torch.nn.functional as F
        n = x.shape[0]
        theta = self.theta(F.relu(self.loc(x)).mean((2, 3))).view(n, 2, 3)
        grid = (self.base @ theta.transpose(1, 2)).view(n, 16, 16, 2)
        x1 = F.grid_sample(x, grid, align_corners=False)  # (N, 3, 16, 16)
        h = F.relu(self.c1(x1))
        g2 = self.ident + 0.3 * torch.tanh(self.flow(h)).permute(0, 2, 3, 1)
        w1 = F.grid_sample(h, g2, padding_mode="border", align_corners=True)
        w2 = F.grid_sample(h, 1.3 * g2, mode="nearest", padding_mode="reflection",
                           align_corners=False)
        return self.fc(torch.cat([w1.mean((2, 3)), (w1 * w2).mean((2, 3))], 1))


def tiny_stn():
    return TinyStn()


class TinyGridCubic(nn.Module):
    """Bicubic F.grid_sample (ONNX GridSample mode cubic): a flow field a convolution predicts,
    added to the identity grid (a buffer) and widened past the image, sampled three ways --
    zeros padding, border padding with align_corners, reflection padding -- so the gradient
    reaches the features and, through the grid, the flow convolution."""

    def __init__(self):
        super().__init__()
        import torch
        ys, xs = torch.meshgrid(torch.linspace(-1, 1, 12), torch.linspace(-1, 1, 12),
                                indexing="ij")
        self.register_buffer("ident", torch.stack([xs, ys], -1)[None])  # (1, 12, 12, 2)
        self.c1 = nn.Conv2d(3, 6, 3, stride=2, padding=1)  # (N, 6, 16, 16)
        self.flow = nn.Conv2d(6, 2, 3, stride=2, padding=1)  # (N, 2, 8, 8)
        self.fc = nn.Linear(18, 10)

    def forward(self, x):
        import torch
        import torch.nn.functional as F
        h = F.relu(self.c1(x))
        f = F.interpolate(torch.tanh(self.flow(h)), size=(12, 12), mode="bilinear",
                          align_corners=False)
        g = 1.2 * (self.ident + 0.3 * f.permute(0, 2, 3, 1))
        a = F.grid_sample(h, g, mode="bicubic", padding_mode="zeros", align_corners=False)
        b = F.grid_sample(h, g, mode="bicubic", padding_mode="border", align_corners=True)
        c = F.grid_sample(h, g, mode="bicubic", padding_mode="reflection", align_corners=False)
        return self.fc(torch.cat([a.mean((2, 3)), (b * b).mean((2, 3)), c.mean((2, 3))], 1))


def tiny_grid_cubic():
    return TinyGridCubic()


class TinyVoxelMorph(nn.Module):
    """VoxelMorph's spatial transformer at toy size (Balakrishnan et al. 2019): a 3-D
    convolutional net predicts a displacement field from a moving and a fixed volume, added to
    the identity grid (a buffer), and F.grid_sample warps the moving volume with it -- a 5-D
    GridSample (the default exporter's opset 20; the legacy one refuses volumes): trilinear
    with border padding and align_corners (VoxelMorph's), trilinear with zeros padding, and
    nearest with reflection padding (a label map's warp). Input [N, 2, 8, 8, 8]."""

    def __init__(self):
        super().__init__()
        import torch
        zs, ys, xs = torch.meshgrid(*(torch.linspace(-1, 1, 8),) * 3, indexing="ij")
        self.register_buffer("ident", torch.stack([xs, ys, zs], -1)[None])  # (1, 8, 8, 8, 3)
        self.enc = nn.Conv3d(2, 4, 3, padding=1)
        self.flow = nn.Conv3d(4, 3, 3, padding=1)
        self.fc = nn.Linear(4, 10)

    def forward(self, x):
        import torch
        import torch.nn.functional as F
        flow = 0.4 * torch.tanh(self.flow(F.relu(self.enc(x))))  # (N, 3, 8, 8, 8)
        grid = self.ident + flow.permute(0, 2, 3, 4, 1)
        moving = x[:, :1]
        a = F.grid_sample(moving, grid, mode="bilinear", padding_mode="border", align_corners=True)
        b = F.grid_sample(moving, 1.2 * grid, mode="bilinear", padding_mode="zeros",
                          align_corners=False)
        c = F.grid_sample(x[:, 1:], grid, mode="nearest", padding_mode="reflection",
                          align_corners=False)
        fixed = x[:, 1:]
        feats = [((a - fixed) ** 2).mean((2, 3, 4)), (b * fixed).mean((2, 3, 4)),
                 (c * a).mean((2, 3, 4)), (flow ** 2).mean((1, 2, 3, 4))[:, None]]
        return self.fc(torch.cat(feats, 1))


def tiny_voxelmorph():
    return TinyVoxelMorph()


class TinyPyramid(nn.Module):
    """A pyramid pooling head (PSPNet's) over 10 x 10 features: adaptive average pools to 1, 2,
    3 and 6 bins -- 3 and 6 do not divide 10, so bins overlap; torch.export writes those as
    GatherND windows of two coordinates a row over [H, W, N, C], then sums -- each projected,
    upsampled back and concatenated; and an AdaptiveAvgPool2d((7, 7)) over 10 x 10 (VGG's
    classifier on a small input)."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 8, 3, stride=3, padding=1)  # (N, 8, 11, 11)
        self.c10 = nn.Conv2d(8, 8, 2)  # (N, 8, 10, 10)
        self.proj = nn.ModuleList([nn.Conv2d(8, 2, 1) for _ in range(4)])
        self.fc = nn.Linear(16 + 8 * 49, 10)

    def forward(self, x):
        import torch
        import torch.nn.functional as F
        h = F.relu(self.c10(F.relu(self.stem(x))))
        levels = [h]
        for bins, proj in zip((1, 2, 3, 6), self.proj):
            p = proj(F.adaptive_avg_pool2d(h, bins))
            levels.append(F.interpolate(p, size=(10, 10), mode="bilinear", align_corners=False))
        feats = torch.cat(levels, 1)  # (N, 16, 10, 10)
        seven = F.adaptive_avg_pool2d(h, (7, 7)).flatten(1)
        return self.fc(torch.cat([feats.mean((2, 3)), seven], 1))


def tiny_pyramid():
    return TinyPyramid()


class TinySoftCe(nn.Module):
    """A model whose own loss is F.cross_entropy of class probabilities (distillation's and
    mixup's soft targets): per pixel over [N, C, H, W] with class weights (a buffer), plus the
    image-level term over the pooled scores. Both exporters write SoftmaxCrossEntropyLoss with
    the float targets as its labels. Inputs: x [N, 3, 6, 6], targets [N, 5, 6, 6] (float,
    summing to 1 over the classes). Output: the loss."""

    def __init__(self):
        super().__init__()
        import torch
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.conv2 = nn.Conv2d(8, 5, 1)
        self.register_buffer("class_weight", torch.tensor([1.0, 2.0, 0.5, 1.5, 3.0]))

    def forward(self, x, targets):
        import torch.nn.functional as F
        logits = self.conv2(F.relu(self.conv1(x)))
        pixel = F.cross_entropy(logits, targets, weight=self.class_weight)
        image = F.cross_entropy(logits.mean((2, 3)), targets.mean((2, 3)))
        return pixel + 0.5 * image


TINY = {"tiny_resnet": tiny_resnet, "tiny_mobilenet_v3": tiny_mobilenet_v3,
        "tiny_efficientnet": tiny_efficientnet, "tiny_regnet": tiny_regnet,
        "tiny_shufflenet": tiny_shufflenet, "tiny_convnext": tiny_convnext,
        "tiny_fcn": tiny_fcn, "tiny_swin": tiny_swin, "tiny_swin_v2": tiny_swin_v2, "tiny_maxvit": tiny_maxvit,
        "tiny_r3d": tiny_r3d, "tiny_mvit": tiny_mvit, "tiny_acts": tiny_acts,
        "tiny_matmul": tiny_matmul, "tiny_norms": tiny_norms, "tiny_gather": tiny_gather,
        "tiny_bicubic": tiny_bicubic, "tiny_timm": tiny_timm, "tiny_rnn": tiny_rnn,
        "tiny_same_pad": tiny_same_pad, "tiny_topk": tiny_topk,
        "tiny_token_select": tiny_token_select, "tiny_pixel_shuffle": tiny_pixel_shuffle,
        "tiny_cumsum": tiny_cumsum, "tiny_reductions": tiny_reductions,
        "tiny_circular": tiny_circular, "tiny_math": tiny_math, "tiny_stn": tiny_stn,
        "tiny_pyramid": tiny_pyramid, "tiny_periodic": tiny_periodic,
        "tiny_prod": tiny_prod, "tiny_gem": tiny_gem,
        "tiny_diag": tiny_diag, "tiny_count": tiny_count,
        "tiny_pick": tiny_pick, "tiny_take": tiny_take,
        "tiny_unpool": tiny_unpool, "tiny_scatter_max": tiny_scatter_max,
        "tiny_bucketize": tiny_bucketize, "tiny_antialias": tiny_antialias,
        "tiny_fft": tiny_fft, "tiny_grid_cubic": tiny_grid_cubic,
        "tiny_voxelmorph": tiny_voxelmorph}
SEGMENTATION = {"tiny_fcn"}  # labels [N, H, W]
# exported by the default exporter alone: the legacy one refuses them (the reason in
# tests/py/test_torch2_exports.py's NO_LEGACY)
DYNAMO_ONLY = {"tiny_pyramid", "tiny_take", "tiny_unpool", "tiny_scatter_max",
               "tiny_bucketize", "tiny_antialias", "tiny_fft", "tiny_voxelmorph"}
# also exported with the default exporter's own defaults (optimize=True: literals become
# unmarked scalar initializers, which must not train)
OPTIMIZED_TOO = {"tiny_math"}
CLIPS = {"tiny_r3d": (2, 3, 4, 16, 16), "tiny_mvit": (2, 3, 4, 16, 16),
         "tiny_voxelmorph": (2, 2, 8, 8, 8)}  # video models' inputs; the others take (2, 3, 32, 32)


def example_shape(name):
    """The fixture's input shape."""
    return CLIPS.get(name, (2, 3, 32, 32))
