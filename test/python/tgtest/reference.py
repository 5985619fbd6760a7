"""The float64 PyTorch side of the training checks: the data contract, the
learning-rate schedule and torch.optim.AdamW with TRAIN.json's settings."""
import math

import numpy as np
import torch

from tgtest import models


def learning_rate(cfg, step):
    lr = cfg["optimizer"]["lr"]
    sched = cfg.get("lr_schedule", "constant")
    if sched == "constant" or sched.get("type") == "constant":
        return lr
    warm, min_lr, decay = sched.get("warmup_steps", 0), sched.get("min_lr", 0.0), sched["decay_steps"]
    if step < warm:
        return lr * (step + 1) / warm
    progress = min(max((step - warm) / decay, 0.0), 1.0)
    return min_lr + 0.5 * (lr - min_lr) * (1 + math.cos(math.pi * progress))


def batch(tokens, cfg, step):
    """The data contract: sample i of step s starts at ((s*B + i) * T) mod (N - T)."""
    b, t, n = cfg["batch_size"], cfg["seq_len"], len(tokens)
    starts = [((step * b + i) * t) % (n - t) for i in range(b)]
    x = np.stack([tokens[o:o + t] for o in starts]).astype(np.int64)
    y = np.stack([tokens[o + 1:o + t + 1] for o in starts]).astype(np.int64)
    return torch.from_numpy(x), torch.from_numpy(y)


def adamw(params, cfg):
    """torch.optim.AdamW with TRAIN.json's settings and TGC's grouping:
    weight decay on matrices only."""
    opt = cfg["optimizer"]
    params = list(params)
    groups = [{"params": [v for v in params if v.dim() >= 2], "weight_decay": opt["weight_decay"]},
              {"params": [v for v in params if v.dim() < 2], "weight_decay": 0.0}]
    return torch.optim.AdamW(groups, lr=opt["lr"], betas=tuple(opt["betas"]), eps=opt["eps"])


def torch_training(model_cfg, cfg, params, tokens, steps):
    p = {k: v.clone().requires_grad_(True) for k, v in params.items()}
    adam = adamw(p.values(), cfg)
    micro = cfg["micro_batches"]
    losses, norms = [], []
    for step in range(steps):
        for group in adam.param_groups:
            group["lr"] = learning_rate(cfg, step)
        x, y = batch(tokens, cfg, step)
        adam.zero_grad()
        total = 0.0
        for xm, ym in zip(x.chunk(micro), y.chunk(micro)):
            loss, _ = models.loss(model_cfg, p, xm, ym)
            (loss / micro).backward()
            total += loss.item() / micro
        if "grad_clip_norm" in cfg:
            norm = torch.nn.utils.clip_grad_norm_(list(p.values()), cfg["grad_clip_norm"])
        else:
            norm = torch.linalg.norm(torch.stack([v.grad.norm() for v in p.values()]))
        adam.step()
        losses.append(total)
        norms.append(norm.item())
    return losses, norms, {k: v.detach() for k, v in p.items()}
