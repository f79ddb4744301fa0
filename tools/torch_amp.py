"""PyTorch AMP as the tools compare outcore-run --precision with it: the autocast context and
the optimizer step (through torch.amp.GradScaler for float16).

    amp = torch_amp.dtype_of("bf16")                       # torch.bfloat16; None for fp32
    scaler = torch_amp.scaler_for("fp16", "cuda")          # a GradScaler, or None
    with torch_amp.autocast("cuda", amp):
        loss = lossf(model(x), y)
    torch_amp.step(loss, opt, scaler)                      # backward + optimizer step
"""
import torch


def dtype_of(precision):
    return {"bf16": torch.bfloat16, "fp16": torch.float16}.get(precision)


def scaler_for(precision, device_type):
    return torch.amp.GradScaler(device_type) if precision == "fp16" else None


def autocast(device_type, dtype):
    """torch.autocast in dtype, or a disabled one for None (float32)."""
    return torch.autocast(device_type, dtype=dtype or torch.bfloat16, enabled=dtype is not None)


def step(loss, opt, scaler):
    """loss.backward() and opt.step(), scaled and unscaled by the GradScaler when there is one."""
    if scaler:
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
    else:
        loss.backward()
        opt.step()
