#!/usr/bin/env python3
"""PyTorch's own step time and peak memory for the bundled transformers (tools/gpu-check
--transformers): the same modules outcore runs (tools/tiny_transformers.py FULL), the same
optimizer (SGD lr 0.01, momentum 0.9, weight decay 1e-4) and a fixed batch.

    tools/gpu_torch_transformers.py MODEL MODE BATCH [--cap-gib 16] [--iters 5] [--device cuda]

MODE: eager (no cap: the in-core anchor); checkpoint (every block under
torch.utils.checkpoint, under the cap); compile (torch.compile with
torch._functorch.config.activation_memory_budget lowered from 0.5 until the step fits the
cap; --budgets B1,B2,.. tries those instead, in order: each try compiles anew, so a search that
starts where the last run fitted saves minutes of device time); compile-checkpoint
(torch.compile over the model whose blocks are checkpointed, under the cap: where no budget
fits — on the H200 ViT-B/16 b256 fitted none down to 0.01 — the compiled configuration that
does). The cap is torch.cuda.set_per_process_memory_fraction. Prints one line last:
"<samples/s> samples/s, peak <GiB> GiB[, budget <b>]" or "OOM ..." when nothing fits.
"""
import argparse
import os
import sys
import time

# The caching allocator with expandable segments (unless the environment sets its own
# PYTORCH_CUDA_ALLOC_CONF), as a user fitting a memory cap would run it: on an H200 (2026-11-27)
# GPT-2 b16 under torch.compile with activation_memory_budget 0.05 ran out of memory under the
# 16 GiB cap in a fresh process without it and fitted with it (peak 14.79 GiB, 42.04 samples/s).
os.environ.setdefault("PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True")
import torch  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tiny_transformers import FULL  # noqa: E402


def batch_of(sample, batch, dev, vocab=None, classes=1000):
    g = torch.Generator().manual_seed(0)
    if len(sample) == 1:  # tokens; next-token labels
        x = torch.randint(0, vocab, (batch, sample[0] + 1), generator=g)
        return x[:, :-1].to(dev), x[:, 1:].to(dev)
    return (torch.randn((batch,) + sample, generator=g).to(dev),
            torch.randint(0, classes, (batch,), generator=g).to(dev))


def step_fn(model, opt, x, y):
    def step():
        opt.zero_grad(set_to_none=True)
        z = model(x)
        if z.dim() == 3:
            z, yy = z.reshape(-1, z.shape[-1]), y.reshape(-1)
        else:
            yy = y
        loss = torch.nn.functional.cross_entropy(z, yy)
        loss.backward()
        opt.step()
        return loss
    return step


def checkpointed(model):
    from torch.utils.checkpoint import checkpoint
    for b in model.blocks:
        f = b.forward
        b.forward = lambda x, f=f: checkpoint(f, x, use_reentrant=False)
    return model


def measure(args, budget=None):
    dev = torch.device(args.device)
    make, sample = FULL[args.model]
    torch.manual_seed(0)
    model = make()
    for m in model.modules():
        if isinstance(m, torch.nn.Dropout):
            m.p = 0.0
    model = model.to(dev).train()
    vocab = model.wte.num_embeddings if hasattr(model, "wte") else None
    x, y = batch_of(sample, args.batch, dev, vocab,
                    model.head.out_features if hasattr(model, "head") else 1000)
    if args.mode in ("checkpoint", "compile-checkpoint"):
        model = checkpointed(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, weight_decay=1e-4)
    run = model
    if args.mode == "compile":
        import torch._functorch.config as fc
        torch._dynamo.reset()  # a new budget recompiles
        fc.activation_memory_budget = budget
        run = torch.compile(model)
    elif args.mode == "compile-checkpoint":
        run = torch.compile(model)
    step = step_fn(run, opt, x, y)
    cuda = dev.type == "cuda"
    for _ in range(2):
        step()
    if cuda:
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
    t0 = time.perf_counter()
    losses = [step().item() for _ in range(args.iters)]
    if cuda:
        torch.cuda.synchronize()
    dt = (time.perf_counter() - t0) / args.iters
    peak = torch.cuda.max_memory_allocated() / 2**30 if cuda else float("nan")
    return args.batch / dt, peak, losses


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("model", choices=sorted(FULL))
    p.add_argument("mode", choices=["eager", "checkpoint", "compile", "compile-checkpoint"])
    p.add_argument("batch", type=int)
    p.add_argument("--cap-gib", type=float, default=16.0)
    p.add_argument("--iters", type=int, default=5)
    p.add_argument("--device", default="cuda")
    p.add_argument("--budgets", default="0.5,0.3,0.2,0.1,0.05,0.02",
                   help="compile: activation_memory_budget values to try, in order")
    args = p.parse_args()
    if args.device == "cuda" and args.mode != "eager":
        total = torch.cuda.get_device_properties(0).total_memory
        torch.cuda.set_per_process_memory_fraction(min(1.0, args.cap_gib * 2**30 / total))
    budgets = [float(b) for b in args.budgets.replace(" ", ",").split(",") if b] \
        if args.mode == "compile" else [None]
    for b in budgets:
        try:
            sps, peak, losses = measure(args, b)
        except torch.cuda.OutOfMemoryError as e:
            print(f"{args.mode} budget {b}: OOM ({str(e).splitlines()[0][:100]})", flush=True)
            torch.cuda.empty_cache()
            continue
        print(f"losses {' '.join(f'{v:.4f}' for v in losses)}")
        print(f"{sps:.2f} samples/s, peak {peak:.2f} GiB" + (f", budget {b}" if b else ""))
        return 0
    print(f"OOM: {args.mode} fits no budget under {args.cap_gib} GiB")
    return 1


if __name__ == "__main__":
    sys.exit(main())
