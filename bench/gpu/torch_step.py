#!/usr/bin/env python3
"""The PyTorch side of scripts/gpu-validate: the training step of a TGC GPT-2
artifact, written the way one writes it in PyTorch, timed on the same GPU.

Same model, data and optimizer as the artifact compiled from MODEL.json and
TRAIN.json:
- GPT-2 with Hugging Face semantics: learned position embeddings, pre-LN
  blocks, Conv1D weights [in, out], GELU tanh approximation ('gelu_new'), LM
  head tied to wte, F.scaled_dot_product_attention(is_causal=True); no dropout
  (TGC has none).
- TRAIN.json's "precision": "bf16" as TGC defines it (docs/cli.md,
  passes/train/TrainStep.cpp): the forward and backward run on bf16 copies of
  f32 master weights, the logits are cast to f32 for the loss, the gradients
  come back to f32, and clipping and AdamW are f32.
- Batches by the data contract of docs/cli.md from the same uint16 token file.
- clip_grad_norm_ with TRAIN.json's grad_clip_norm, torch.optim.AdamW
  (fused=True) with its betas, eps and weight decay on rank >= 2 parameters
  only, and its learning-rate schedule.
- --init starts from the artifact's own initial weights (tgrun --steps 0
  --save-weights), so that the losses of both sides can be compared.

Each step is timed like tgrun's step_ms: build the batch, step, read the loss
(which waits for the GPU). --mode compile wraps the loss (forward and
backward) in torch.compile; the optimizer step stays eager (fused AdamW).

    torch_step.py --model M.json --train T.json --data tokens.bin --mode eager --out r.json
    torch_step.py --device cpu --tiny      # smoke test: a tiny model, f32, on the CPU
"""
import argparse
import json
import math
import os
import random
import struct
import sys
import time

import torch
import torch.nn.functional as F

# --tiny: examples/models/gpt2-tiny.json in f32 (the CPU smoke test, run from
# the repository).
TINY_MODEL = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples",
                          "models", "gpt2-tiny.json")
TINY_TRAIN = {"batch_size": 8, "seq_len": 32, "seed": 1234, "precision": "fp32",
              "optimizer": {"type": "adamw", "lr": 3e-3, "betas": [0.9, 0.95], "eps": 1e-8,
                            "weight_decay": 0.1},
              "grad_clip_norm": 1.0, "lr_schedule": "constant", "micro_batches": 1}

HAS_SDPA = hasattr(F, "scaled_dot_product_attention")
HAS_COMPILE = hasattr(torch, "compile")


def read_tokens(path):
    """A flat little-endian uint16 token file as an int64 tensor (torch has no
    general uint16 before 2.3, hence int16 and a mask)."""
    with open(path, "rb") as f:
        raw = bytearray(f.read())
    return torch.frombuffer(raw, dtype=torch.int16).to(torch.int64) & 0xFFFF


def read_safetensors(path):
    """F32/BF16 tensors of a safetensors file (the `safetensors` package is not
    required on the GPU machine)."""
    dtypes = {"F32": torch.float32, "BF16": torch.bfloat16, "F16": torch.float16}
    with open(path, "rb") as f:
        (length,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(length))
        data = bytearray(f.read())
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        dtype = dtypes[info["dtype"]]
        count = (end - begin) // torch.empty((), dtype=dtype).element_size()
        flat = torch.frombuffer(data, dtype=dtype, count=count, offset=begin)
        tensors[name] = flat.reshape(info["shape"]).clone()
    return tensors


def parameter_shapes(cfg):
    """Hugging Face GPT-2 parameter names (without "transformer.") and shapes."""
    d, v, n = cfg["n_embd"], cfg["vocab_size"], cfg["n_positions"]
    inner = cfg.get("n_inner") or 4 * d
    shapes = {"wte.weight": [v, d], "wpe.weight": [n, d]}
    for i in range(cfg["n_layer"]):
        h = f"h.{i}."
        shapes.update({h + "ln_1.weight": [d], h + "ln_1.bias": [d],
                       h + "attn.c_attn.weight": [d, 3 * d], h + "attn.c_attn.bias": [3 * d],
                       h + "attn.c_proj.weight": [d, d], h + "attn.c_proj.bias": [d],
                       h + "ln_2.weight": [d], h + "ln_2.bias": [d],
                       h + "mlp.c_fc.weight": [d, inner], h + "mlp.c_fc.bias": [inner],
                       h + "mlp.c_proj.weight": [inner, d], h + "mlp.c_proj.bias": [d]})
    shapes.update({"ln_f.weight": [d], "ln_f.bias": [d]})
    return shapes


def initial_parameters(cfg, seed):
    """tgrun's initialisation scheme (normal(0, 0.02), residual projections
    0.02/sqrt(2 layers), norms 1, biases 0), not its random numbers: used when
    no --init is given, where only the timing matters."""
    gen = torch.Generator().manual_seed(seed)
    params = {}
    for name, shape in parameter_shapes(cfg).items():
        if name.endswith(".bias"):
            params[name] = torch.zeros(shape)
        elif "ln_" in name:
            params[name] = torch.ones(shape)
        else:
            std = 0.02 / math.sqrt(2 * cfg["n_layer"]) if name.endswith("c_proj.weight") else 0.02
            params[name] = torch.randn(shape, generator=gen) * std
    return params


def batch(tokens, train, step):
    """The data contract: sample i of step s starts at ((s*B + i)*T) mod (N - T)."""
    b, t, n = train["batch_size"], train["seq_len"], tokens.numel()
    starts = [((step * b + i) * t) % (n - t) for i in range(b)]
    x = torch.stack([tokens[o:o + t] for o in starts])
    y = torch.stack([tokens[o + 1:o + t + 1] for o in starts])
    return x, y


def learning_rate(train, step):
    """TRAIN.json's schedule at 0-based step `step` (docs/cli.md)."""
    lr, schedule = train["optimizer"]["lr"], train.get("lr_schedule", "constant")
    if schedule == "constant":
        return lr
    warmup, min_lr = schedule.get("warmup_steps", 0), schedule.get("min_lr", 0.0)
    if step < warmup:
        return lr * (step + 1) / warmup
    progress = min(1.0, (step - warmup) / schedule["decay_steps"])
    return min_lr + 0.5 * (lr - min_lr) * (1 + math.cos(math.pi * progress))


def causal_attention(q, k, v):
    if HAS_SDPA:
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)
    # PyTorch < 2 (the CPU smoke test only; main() refuses it on a GPU).
    t = q.shape[-2]
    scores = (q @ k.transpose(-1, -2)) / math.sqrt(q.shape[-1])
    mask = torch.ones(t, t, dtype=torch.bool, device=q.device).tril()
    scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    return F.softmax(scores, dim=-1) @ v


def make_loss(cfg, compute_dtype):
    """loss(masters, tokens, targets): the mean next-token cross-entropy, the
    model run on `compute_dtype` copies of the f32 masters."""
    d, heads, eps = cfg["n_embd"], cfg["n_head"], cfg["layer_norm_epsilon"]

    def conv1d(x, w, b):  # Hugging Face Conv1D: x @ W[in, out] + b
        return torch.addmm(b, x.reshape(-1, x.shape[-1]), w).view(*x.shape[:-1], w.shape[1])

    def split_heads(x, b, t):
        return x.view(b, t, heads, d // heads).transpose(1, 2)

    def loss(masters, tokens, targets):
        p = {name: w.to(compute_dtype) for name, w in masters.items()}
        b, t = tokens.shape
        x = F.embedding(tokens, p["wte.weight"]) + p["wpe.weight"][:t]
        for i in range(cfg["n_layer"]):
            h = f"h.{i}."
            a = F.layer_norm(x, (d,), p[h + "ln_1.weight"], p[h + "ln_1.bias"], eps)
            q, k, v = conv1d(a, p[h + "attn.c_attn.weight"], p[h + "attn.c_attn.bias"]).split(d, dim=2)
            o = causal_attention(split_heads(q, b, t), split_heads(k, b, t), split_heads(v, b, t))
            o = o.transpose(1, 2).reshape(b, t, d)
            x = x + conv1d(o, p[h + "attn.c_proj.weight"], p[h + "attn.c_proj.bias"])
            m = F.layer_norm(x, (d,), p[h + "ln_2.weight"], p[h + "ln_2.bias"], eps)
            m = F.gelu(conv1d(m, p[h + "mlp.c_fc.weight"], p[h + "mlp.c_fc.bias"]), approximate="tanh")
            x = x + conv1d(m, p[h + "mlp.c_proj.weight"], p[h + "mlp.c_proj.bias"])
        x = F.layer_norm(x, (d,), p["ln_f.weight"], p["ln_f.bias"], eps)
        logits = x.reshape(-1, d) @ p["wte.weight"].t()
        return F.cross_entropy(logits.float(), targets.reshape(-1))

    return loss


def check_against_transformers(cfg, params, tokens, targets, device):
    """The functional model against transformers' GPT2LMHeadModel, in f32 on a
    2-layer cut of the model with the same weights: a string saying how close
    they are, or why the check did not run."""
    try:
        from transformers import GPT2Config, GPT2LMHeadModel
    except ImportError:
        return "n/a: transformers is not installed"
    small = dict(cfg, n_layer=min(2, cfg["n_layer"]))
    hf_config = GPT2Config(vocab_size=small["vocab_size"], n_positions=small["n_positions"],
                           n_embd=small["n_embd"], n_layer=small["n_layer"], n_head=small["n_head"],
                           n_inner=small.get("n_inner"), layer_norm_epsilon=small["layer_norm_epsilon"],
                           activation_function=small["activation_function"], resid_pdrop=0.0,
                           embd_pdrop=0.0, attn_pdrop=0.0, tie_word_embeddings=True)
    model = GPT2LMHeadModel(hf_config).to(device).eval()
    subset = {name: w for name, w in params.items() if name in parameter_shapes(small)}
    hf_names = {name for name, _ in model.transformer.named_parameters()}
    if hf_names != set(subset):
        return f"FAIL: parameter names differ from transformers': {sorted(hf_names ^ set(subset))[:4]}"
    with torch.no_grad():
        for name, w in subset.items():
            model.transformer.get_parameter(name).copy_(w)
        logits = model(tokens).logits
        theirs = F.cross_entropy(logits.float().reshape(-1, logits.shape[-1]), targets.reshape(-1)).item()
        ours = make_loss(small, torch.float32)(subset, tokens, targets).item()
    verdict = "ok" if abs(ours - theirs) <= 1e-4 * max(1.0, abs(theirs)) else "FAIL"
    return f"{verdict}: loss {ours:.6f} here, {theirs:.6f} with transformers.GPT2LMHeadModel (2 layers, f32)"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", help="Hugging Face GPT-2 config.json (the one tgc compiled)")
    ap.add_argument("--train", help="TRAIN.json (the one tgc compiled)")
    ap.add_argument("--data", help="uint16 token file (default with --tiny: generated)")
    ap.add_argument("--init", help="initial weights, safetensors (tgrun --steps 0 --save-weights)")
    ap.add_argument("--mode", choices=("eager", "compile"), default="eager")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--tiny", action="store_true", help="tiny f32 model instead of --model/--train")
    ap.add_argument("--steps", type=int, default=25, help="steps in all")
    ap.add_argument("--warmup", type=int, default=5, help="first steps left out of the timing")
    ap.add_argument("--out", help="write the results here (JSON)")
    args = ap.parse_args()

    result = {"mode": args.mode, "device": args.device, "torch": torch.__version__, "init": args.init, "notes": []}

    def finish(code=0):
        if args.out:
            with open(args.out, "w") as f:
                json.dump(result, f, indent=1)
        return code

    if args.mode == "compile" and not HAS_COMPILE:
        result["unavailable"] = f"n/a: torch.compile needs PyTorch 2 (this is {torch.__version__})"
        print(result["unavailable"])
        return finish()
    device = torch.device(args.device)
    result["attention"] = "SDPA" if HAS_SDPA else "explicit"
    if not HAS_SDPA:
        if device.type != "cpu":
            sys.exit(f"torch_step.py: F.scaled_dot_product_attention needs PyTorch 2 (this is {torch.__version__})")
        result["notes"].append("explicit causal attention: no F.scaled_dot_product_attention before PyTorch 2")

    if args.tiny:
        cfg, train = json.load(open(TINY_MODEL)), TINY_TRAIN
    elif args.model and args.train:
        cfg, train = json.load(open(args.model)), json.load(open(args.train))
    else:
        ap.error("give --model and --train, or --tiny")
    if cfg.get("model_type") != "gpt2" or train.get("micro_batches", 1) != 1:
        sys.exit("torch_step.py: only GPT-2 models without micro-batches")
    if args.data:
        tokens = read_tokens(args.data)
    else:
        rng = random.Random(0)  # a learnable sequence: each token has 2 possible successors
        successors = [[rng.randrange(cfg["vocab_size"]) for _ in range(2)] for _ in range(cfg["vocab_size"])]
        seq = [0]
        for _ in range(1 << 14):
            seq.append(rng.choice(successors[seq[-1]]))
        tokens = torch.tensor(seq)
    compute_dtype = torch.bfloat16 if train.get("precision", "fp32") == "bf16" else torch.float32

    masters = read_safetensors(args.init) if args.init else initial_parameters(cfg, train.get("seed", 0))
    masters = {name[len("transformer."):] if name.startswith("transformer.") else name: w
               for name, w in masters.items()}
    if set(masters) != set(parameter_shapes(cfg)):
        sys.exit(f"torch_step.py: {args.init}: parameters differ from the model's: "
                 f"{sorted(set(masters) ^ set(parameter_shapes(cfg)))[:4]}")
    masters = {name: w.to(device=device, dtype=torch.float32).requires_grad_(True) for name, w in masters.items()}

    x0, y0 = batch(tokens, train, 0)
    result["transformers_check"] = check_against_transformers(cfg, masters, x0.to(device), y0.to(device), device)
    print("check:", result["transformers_check"])

    loss_fn = make_loss(cfg, compute_dtype)
    if args.mode == "compile":
        loss_fn = torch.compile(loss_fn)
    opt = train["optimizer"]  # TRAIN.json's defaults where a key is left out (docs/cli.md)
    groups = [{"params": [w for w in masters.values() if w.dim() >= 2], "weight_decay": opt.get("weight_decay", 0.01)},
              {"params": [w for w in masters.values() if w.dim() < 2], "weight_decay": 0.0}]
    fused = {"fused": True} if device.type == "cuda" else {}
    result["adamw"] = "fused" if fused else "unfused"
    if not fused:
        result["notes"].append("AdamW not fused: fused=True is for CUDA tensors")
    adamw = torch.optim.AdamW(groups, lr=opt["lr"], betas=tuple(opt.get("betas", (0.9, 0.999))),
                              eps=opt.get("eps", 1e-8), **fused)
    params = list(masters.values())
    clip = train.get("grad_clip_norm")

    def synchronize():
        if device.type == "cuda":
            torch.cuda.synchronize()

    step_ms, losses = [], []
    for step in range(args.steps):
        synchronize()
        start = time.perf_counter()
        x, y = batch(tokens, train, step)
        x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
        adamw.zero_grad(set_to_none=True)
        loss = loss_fn(masters, x, y)
        loss.backward()
        if clip:
            torch.nn.utils.clip_grad_norm_(params, clip)
        for group in adamw.param_groups:
            group["lr"] = learning_rate(train, step)
        adamw.step()
        losses.append(loss.item())
        synchronize()
        step_ms.append((time.perf_counter() - start) * 1e3)
        print(f"step {step + 1}/{args.steps}  loss {losses[-1]:.4f}  {step_ms[-1]:.1f} ms", flush=True)

    result.update(step_ms=step_ms, loss=losses, warmup=args.warmup,
                  tokens_per_step=train["batch_size"] * train["seq_len"],
                  compute_dtype=str(compute_dtype).replace("torch.", ""))
    if device.type == "cuda":
        result["device_name"] = torch.cuda.get_device_name(device)
        result["peak_memory_bytes"] = torch.cuda.max_memory_allocated(device)
    return finish()


if __name__ == "__main__":
    sys.exit(main())
