"""Float64 PyTorch references of the two model families, with Hugging Face
semantics and parameter names/layouts (GPT-2 Conv1D [in, out]; Llama
nn.Linear [out, in])."""
import math

import torch
import torch.nn.functional as F


def _attention(q, k, v):
    """Causal attention; k/v heads are shared by groups of query heads."""
    group = q.shape[1] // k.shape[1]
    k = k.repeat_interleave(group, dim=1)
    v = v.repeat_interleave(group, dim=1)
    t = q.shape[2]
    scores = (q @ k.transpose(-2, -1)) / math.sqrt(q.shape[-1])
    mask = torch.ones(t, t, dtype=torch.bool).tril()
    scores = scores.masked_fill(~mask, float("-inf"))
    return F.softmax(scores, dim=-1) @ v


def _heads(x, n):
    b, t, d = x.shape
    return x.view(b, t, n, d // n).transpose(1, 2)


def _merge(x):
    b, h, t, d = x.shape
    return x.transpose(1, 2).reshape(b, t, h * d)


def gpt2_logits(cfg, p, tokens):
    d, h, eps = cfg["n_embd"], cfg["n_head"], cfg.get("layer_norm_epsilon", 1e-5)
    approx = "none" if cfg.get("activation_function", "gelu_new") == "gelu" else "tanh"
    t = tokens.shape[1]
    x = p["transformer.wte.weight"][tokens] + p["transformer.wpe.weight"][:t]
    for i in range(cfg["n_layer"]):
        pre = f"transformer.h.{i}."
        a = F.layer_norm(x, (d,), p[pre + "ln_1.weight"], p[pre + "ln_1.bias"], eps)
        qkv = a @ p[pre + "attn.c_attn.weight"] + p[pre + "attn.c_attn.bias"]
        q, k, v = (_heads(z, h) for z in qkv.split(d, dim=2))
        o = _merge(_attention(q, k, v))
        x = x + o @ p[pre + "attn.c_proj.weight"] + p[pre + "attn.c_proj.bias"]
        m = F.layer_norm(x, (d,), p[pre + "ln_2.weight"], p[pre + "ln_2.bias"], eps)
        m = F.gelu(m @ p[pre + "mlp.c_fc.weight"] + p[pre + "mlp.c_fc.bias"], approximate=approx)
        x = x + m @ p[pre + "mlp.c_proj.weight"] + p[pre + "mlp.c_proj.bias"]
    x = F.layer_norm(x, (d,), p["transformer.ln_f.weight"], p["transformer.ln_f.bias"], eps)
    head = p["transformer.wte.weight"] if cfg.get("tie_word_embeddings", True) else p["lm_head.weight"]
    return x @ head.T


def _rms_norm(x, w, eps):
    return w * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps))


def _rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def _rope(x, theta):
    dh, t = x.shape[-1], x.shape[2]
    inv_freq = 1.0 / (theta ** (torch.arange(0, dh, 2, dtype=torch.float64) / dh))
    freqs = torch.outer(torch.arange(t, dtype=torch.float64), inv_freq)
    emb = torch.cat((freqs, freqs), dim=-1)
    return x * emb.cos() + _rotate_half(x) * emb.sin()


def llama_logits(cfg, p, tokens):
    h = cfg["num_attention_heads"]
    kv = cfg.get("num_key_value_heads", h)
    eps, theta = cfg.get("rms_norm_eps", 1e-6), cfg.get("rope_theta", 10000.0)
    x = p["model.embed_tokens.weight"][tokens]
    for i in range(cfg["num_hidden_layers"]):
        pre = f"model.layers.{i}."
        a = _rms_norm(x, p[pre + "input_layernorm.weight"], eps)
        q = _rope(_heads(a @ p[pre + "self_attn.q_proj.weight"].T, h), theta)
        k = _rope(_heads(a @ p[pre + "self_attn.k_proj.weight"].T, kv), theta)
        v = _heads(a @ p[pre + "self_attn.v_proj.weight"].T, kv)
        x = x + _merge(_attention(q, k, v)) @ p[pre + "self_attn.o_proj.weight"].T
        m = _rms_norm(x, p[pre + "post_attention_layernorm.weight"], eps)
        m = F.silu(m @ p[pre + "mlp.gate_proj.weight"].T) * (m @ p[pre + "mlp.up_proj.weight"].T)
        x = x + m @ p[pre + "mlp.down_proj.weight"].T
    x = _rms_norm(x, p["model.norm.weight"], eps)
    head = p["model.embed_tokens.weight"] if cfg.get("tie_word_embeddings", False) else p["lm_head.weight"]
    return x @ head.T


def logits(cfg, params, tokens):
    fn = gpt2_logits if cfg["model_type"] == "gpt2" else llama_logits
    return fn(cfg, params, tokens)


def loss(cfg, params, tokens, targets):
    out = logits(cfg, params, tokens)
    return F.cross_entropy(out.reshape(-1, out.shape[-1]), targets.reshape(-1)), out
