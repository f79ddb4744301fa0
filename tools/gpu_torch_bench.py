#!/usr/bin/env python3
"""PyTorch baselines for tools/gpu-check: training throughput (images/s) of a torchvision model
on the GPU, one mode per process (the memory cap is per process).
  eager       PyTorch defaults (cuDNN, TF32 convolutions), no cap
  save_on_cpu 16 GiB cap (torch.cuda.set_per_process_memory_fraction) +
              torch.autograd.graph.save_on_cpu(pin_memory=True)
  checkpoint  16 GiB cap + torch.utils.checkpoint.checkpoint_sequential (sqrt(n) segments)
SGD momentum 0.9, weight decay 1e-4, CrossEntropyLoss, random data; median of timed iterations
after warm-up, CUDA-synchronised. Prints one line: MODEL MODE BATCH images/s peak_GiB (or OOM).
MODEL: a torchvision model, or one of tools/export_models.py's small models.
--device cpu (with a small --image-size) runs the same code without a GPU (tools/gpu-check --emu;
no memory cap there, peak 0).
Usage: gpu_torch_bench.py MODEL MODE BATCH [--iters N] [--cap-gib G] [--device D] [--image-size S]
"""
import argparse
import inspect
import math
import os
import statistics
import sys
import time

import torch
import torchvision


def main():
    p = argparse.ArgumentParser()
    p.add_argument("model")
    p.add_argument("mode", choices=["eager", "save_on_cpu", "checkpoint"])
    p.add_argument("batch", type=int)
    p.add_argument("--iters", type=int, default=10)
    p.add_argument("--cap-gib", type=float, default=16.0)
    p.add_argument("--device", default="cuda")
    p.add_argument("--image-size", type=int, default=224)
    a = p.parse_args()
    dev = torch.device(a.device)
    gpu = dev.type == "cuda"
    if a.mode != "eager" and gpu:
        total = torch.cuda.get_device_properties(0).total_memory
        torch.cuda.set_per_process_memory_fraction(min(1.0, a.cap_gib * 2**30 / total), 0)
    if hasattr(torchvision.models, a.model):
        model = getattr(torchvision.models, a.model)(num_classes=1000)
    else:
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import export_models  # noqa: E402
        model = export_models.build_model(a.model, a.image_size)
    model = model.to(dev).train()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, weight_decay=1e-4)
    x = torch.randn(a.batch, 3, a.image_size, a.image_size, device=dev)
    with torch.no_grad():
        classes = model.eval()(x[:1]).shape[1]
    model.train()
    y = torch.randint(0, classes, (a.batch,), device=dev)
    lossf = torch.nn.CrossEntropyLoss()
    if a.mode == "checkpoint":
        if a.model.startswith("resnet"):
            parts = [model.conv1, model.bn1, model.relu, model.maxpool, *model.layer1, *model.layer2,
                     *model.layer3, *model.layer4, model.avgpool, torch.nn.Flatten(1), model.fc]
        else:
            parts = [*model.features, model.avgpool, torch.nn.Flatten(1), *model.classifier]
        seq = torch.nn.Sequential(*parts)
        segs = max(1, int(math.sqrt(len(parts))))
        # torch >= 2 asks for use_reentrant; Debian's 1.13 (--emu runs) does not know it
        kw = {"use_reentrant": False} if "use_reentrant" in inspect.signature(
            torch.utils.checkpoint.checkpoint_sequential).parameters else {}
        fwd = lambda t: torch.utils.checkpoint.checkpoint_sequential(seq, segs, t, **kw)
        if not kw:  # reentrant checkpointing gives parameters no gradient unless the input wants one
            x.requires_grad_(True)
    else:
        fwd = model

    def step():
        opt.zero_grad(set_to_none=True)
        if a.mode == "save_on_cpu":
            with torch.autograd.graph.save_on_cpu(pin_memory=True):
                loss = lossf(fwd(x), y)
        else:
            loss = lossf(fwd(x), y)
        loss.backward()
        opt.step()
        return loss

    sync = torch.cuda.synchronize if gpu else (lambda: None)
    try:
        for _ in range(3):
            step()
        sync()
        times = []
        for _ in range(a.iters):
            t0 = time.perf_counter()
            step()
            sync()
            times.append(time.perf_counter() - t0)
        ips = a.batch / statistics.median(times)
        peak = torch.cuda.max_memory_allocated() / 2**30 if gpu else 0.0
        print(f"{a.model} {a.mode} {a.batch} {ips:.1f} {peak:.2f}")
    except torch.cuda.OutOfMemoryError:
        print(f"{a.model} {a.mode} {a.batch} OOM -")


if __name__ == "__main__":
    main()
