#!/usr/bin/env python3
"""PyTorch baselines for tools/gpu-check: training throughput (images/s) of a torchvision model
on the GPU, one mode per process (the memory cap is per process).
  eager       PyTorch defaults (cuDNN, TF32 convolutions), no cap
  save_on_cpu 16 GiB cap (torch.cuda.set_per_process_memory_fraction) +
              torch.autograd.graph.save_on_cpu(pin_memory=True)
  checkpoint  16 GiB cap + torch.utils.checkpoint.checkpoint_sequential: sqrt(n) segments and
              one segment per block (n) are both tried, the faster that fits is reported
  compile     torch.compile(model) (default mode), no cap
  compile-max torch.compile(model, mode="max-autotune-no-cudagraphs"), no cap
  compile-budget  16 GiB cap + torch.compile with torch._functorch.config.
              activation_memory_budget lowered (0.5, 0.3, 0.2, 0.1, 0.05, 0) until it fits;
              --budgets B1,B2,... tries those instead, in order (each try compiles anew: a
              search that starts where the last run fitted saves minutes of device time)
Each configuration tried is also said on stderr as it ends (fits / OOM), so a run cut off by a
time box still says how far it got.
--channels-last: model and input in torch.channels_last (NHWC) memory format.
--amp bf16|fp16: the forward and loss under torch.autocast (fp16 with torch.amp.GradScaler),
float32 parameters and optimizer (PyTorch AMP; outcore-run --precision's comparison).
TF32 as outcore-run's defaults, set explicitly: convolutions on (cudnn.allow_tf32), matmuls off
(cuda.matmul.allow_tf32); --tf32-matmul turns the latter on.
SGD momentum 0.9, weight decay 1e-4, CrossEntropyLoss, random data; median of timed iterations
after warm-up, CUDA-synchronised. Prints one line: MODEL MODE BATCH images/s peak_GiB [note]
(or MODEL MODE BATCH OOM - [note]); with --fallback-batches B1,B2,... an OOM at BATCH is followed
by the first of those batches that fits, in the note (what the mode can train at all under the cap).
MODEL: a torchvision model, or one of tools/export_models.py's small models.
--device cpu (with a small --image-size) runs the same code without a GPU (tools/gpu-check --emu;
no memory cap there, peak 0).
Usage: gpu_torch_bench.py MODEL MODE BATCH [--iters N] [--cap-gib G] [--device D] [--image-size S]
                         [--fallback-batches B,...] [--budgets B,...] [--profile TABLE.txt]
                         [--amp bf16|fp16]
"""
import argparse
import inspect
import math
import os
import statistics
import sys
import time

# The caching allocator with expandable segments (unless the environment sets its own
# PYTORCH_CUDA_ALLOC_CONF), as a user fitting a memory cap would run it: on an H200 (2026-11-27)
# GPT-2 b16 under torch.compile with activation_memory_budget 0.05 ran out of memory under the
# 16 GiB cap in a fresh process without it and fitted with it (peak 14.79 GiB, 42.04 samples/s).
os.environ.setdefault("PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True")
import torch  # noqa: E402
import torchvision


def build(a, dev):
    if hasattr(torchvision.models, a.model):
        model = getattr(torchvision.models, a.model)(num_classes=1000)
    else:
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import export_models  # noqa: E402
        model = export_models.build_model(a.model, a.image_size)
    return model.to(dev).train()


def seq_parts(a, model):
    """The model as a list of blocks for checkpoint_sequential; an in-place ReLU stays in the
    block of the layer it follows (alone in a segment it would modify the segment's input)."""
    S = torch.nn.Sequential
    if a.model.startswith("resnet"):
        stem = S(model.conv1, model.bn1, model.relu, model.maxpool)
        head = S(model.avgpool, torch.nn.Flatten(1), model.fc)
        return [stem, *model.layer1, *model.layer2, *model.layer3, *model.layer4, head]
    blocks, cur = [], []
    for m in model.features:  # VGG: Conv + ReLU (+ MaxPool) per block
        if isinstance(m, torch.nn.Conv2d) and cur:
            blocks.append(S(*cur))
            cur = []
        cur.append(m)
    blocks.append(S(*cur))
    return blocks + [S(model.avgpool, torch.nn.Flatten(1), *model.classifier)]


def measure(a, dev, model, batch, segs):
    """images/s and peak GiB of one configuration; raises torch.cuda.OutOfMemoryError."""
    gpu = dev.type == "cuda"
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, weight_decay=1e-4)
    x = torch.randn(batch, 3, a.image_size, a.image_size, device=dev)
    with torch.no_grad():
        classes = model.eval()(x[:1]).shape[1]
    model.train()
    y = torch.randint(0, classes, (batch,), device=dev)
    lossf = torch.nn.CrossEntropyLoss()
    if a.mode == "checkpoint":
        seq = torch.nn.Sequential(*seq_parts(a, model))
        # torch >= 2 asks for use_reentrant; Debian's 1.13 (--emu runs) does not know it
        kw = {"use_reentrant": False} if "use_reentrant" in inspect.signature(
            torch.utils.checkpoint.checkpoint_sequential).parameters else {}
        fwd = lambda t: torch.utils.checkpoint.checkpoint_sequential(seq, segs, t, **kw)
        if not kw:  # reentrant checkpointing gives parameters no gradient unless the input wants one
            x.requires_grad_(True)
    elif a.mode.startswith("compile"):
        if a.mode == "compile-budget":
            import torch._functorch.config as fc
            fc.activation_memory_budget = segs
        torch._dynamo.reset()
        fwd = torch.compile(model, mode="max-autotune-no-cudagraphs" if a.mode == "compile-max"
                            else None)
    else:
        fwd = model
    if a.channels_last:
        x = x.contiguous(memory_format=torch.channels_last)

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import torch_amp  # noqa: E402
    scaler = torch_amp.scaler_for(a.amp, dev.type)

    def step():
        opt.zero_grad(set_to_none=True)
        with torch_amp.autocast(dev.type, torch_amp.dtype_of(a.amp)):
            if a.mode == "save_on_cpu":
                with torch.autograd.graph.save_on_cpu(pin_memory=True):
                    loss = lossf(fwd(x), y)
            else:
                loss = lossf(fwd(x), y)
        torch_amp.step(loss, opt, scaler)
        return loss

    sync = torch.cuda.synchronize if gpu else (lambda: None)
    if gpu:
        torch.cuda.reset_peak_memory_stats()
    for _ in range(3):
        step()
    sync()
    times = []
    for _ in range(a.iters):
        t0 = time.perf_counter()
        step()
        sync()
        times.append(time.perf_counter() - t0)
    peak = torch.cuda.max_memory_allocated() / 2**30 if gpu else 0.0
    if a.profile:  # one more step under the profiler: where PyTorch's time goes, per kernel
        from torch.profiler import ProfilerActivity, profile
        acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if gpu else [])
        with profile(activities=acts) as prof:
            step()
            sync()
        key = "cuda_time_total" if gpu else "cpu_time_total"
        with open(a.profile, "w") as f:
            f.write(prof.key_averages().table(sort_by=key, row_limit=60))
    return batch / statistics.median(times), peak


def best_at(a, dev, model, batch):
    """(images/s, peak, segments) of the fastest configuration of the mode that fits, or None."""
    if a.mode == "checkpoint":
        n = len(seq_parts(a, model))
        cands = sorted({max(1, int(math.sqrt(n))), n})
    elif a.mode == "compile-budget":  # the largest budget that fits is the fastest
        cands = [float(b) for b in a.budgets.replace(" ", ",").split(",") if b]
    else:
        cands = [0]
    best = None
    for segs in cands:
        try:
            ips, peak = measure(a, dev, model, batch, segs)
        except torch.cuda.OutOfMemoryError:
            ips = None
        except RuntimeError as e:  # torch.compile wraps an OOM in its own errors
            if "out of memory" not in str(e).lower():
                raise
            ips = None
        if dev.type == "cuda":
            torch.cuda.empty_cache()
        print(f"{a.model} {a.mode} {batch} {'segments' if a.mode == 'checkpoint' else 'config'} "
              f"{segs}: " + (f"{ips:.1f} img/s, peak {peak:.2f} GiB" if ips else "OOM"),
              file=sys.stderr, flush=True)
        if ips is not None and (best is None or ips > best[0]):
            best = (ips, peak, segs)
        if best and a.mode == "compile-budget":
            break
    return best


def main():
    p = argparse.ArgumentParser()
    p.add_argument("model")
    p.add_argument("mode", choices=["eager", "save_on_cpu", "checkpoint", "compile", "compile-max",
                                    "compile-budget"])
    p.add_argument("batch", type=int)
    p.add_argument("--iters", type=int, default=10)
    p.add_argument("--cap-gib", type=float, default=16.0)
    p.add_argument("--device", default="cuda")
    p.add_argument("--image-size", type=int, default=224)
    p.add_argument("--fallback-batches", default="")
    p.add_argument("--budgets", default="0.5,0.3,0.2,0.1,0.05,0",
                   help="compile-budget: activation_memory_budget values to try, in order")
    p.add_argument("--profile", default="", help="write a torch.profiler table (eager) here")
    p.add_argument("--channels-last", action="store_true")
    p.add_argument("--tf32-matmul", action="store_true")
    p.add_argument("--amp", choices=["bf16", "fp16"], default=None)
    a = p.parse_args()
    dev = torch.device(a.device)
    torch.backends.cudnn.allow_tf32 = True
    torch.backends.cuda.matmul.allow_tf32 = a.tf32_matmul
    if a.mode in ("save_on_cpu", "checkpoint", "compile-budget") and dev.type == "cuda":
        total = torch.cuda.get_device_properties(0).total_memory
        torch.cuda.set_per_process_memory_fraction(min(1.0, a.cap_gib * 2**30 / total), 0)
    model = build(a, dev)
    if a.channels_last:
        model = model.to(memory_format=torch.channels_last)
    segs_note = lambda r: (f" segments {r[2]}" if a.mode == "checkpoint" else
                           f" activation_memory_budget {r[2]}" if a.mode == "compile-budget" else "")
    r = best_at(a, dev, model, a.batch)
    if r:
        cl = " channels-last" if a.channels_last else ""
        amp = f" amp {a.amp}" if a.amp else ""
        print(f"{a.model} {a.mode}{cl} {a.batch} {r[0]:.1f} {r[1]:.2f}{segs_note(r)}{amp}")
        return
    note = ""
    for b in [int(v) for v in a.fallback_batches.split(",") if v]:
        fb = best_at(a, dev, model, b)
        if fb:
            note = f" (fits at batch {b}: {fb[0]:.1f} img/s, peak {fb[1]:.2f} GiB{segs_note(fb)})"
            break
    print(f"{a.model} {a.mode} {a.batch} OOM -{note or ' (no fallback batch fits)' if a.fallback_batches else note}")


if __name__ == "__main__":
    main()
