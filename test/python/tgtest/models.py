"""Float64 PyTorch references of the model families (GPT-2; Llama, Qwen2 and
Mistral, which share Llama's layers), with Hugging Face
semantics and parameter names/layouts (GPT-2 Conv1D [in, out]; Llama
nn.Linear [out, in])."""
import math

import torch
import torch.nn.functional as F


def _attention(q, k, v, scale_weights=True, layer_divisor=None, window=None):
    """Causal attention; k/v heads are shared by groups of query heads.
    GPT2Attention's options: scores / sqrt(head dim) only when
    `scale_weights` (scale_attn_weights), then / `layer_divisor` (layer_idx + 1
    under scale_attn_by_inverse_layer_idx). Mistral's `window`: position i
    attends to j only where i - window < j."""
    group = q.shape[1] // k.shape[1]
    k = k.repeat_interleave(group, dim=1)
    v = v.repeat_interleave(group, dim=1)
    t = q.shape[2]
    scores = q @ k.transpose(-2, -1)
    if scale_weights:
        scores = scores / math.sqrt(q.shape[-1])
    if layer_divisor is not None:
        scores = scores / float(layer_divisor)
    mask = torch.ones(t, t, dtype=torch.bool).tril()
    if window is not None:
        mask &= torch.ones(t, t, dtype=torch.bool).triu(-(window - 1))
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
        # reorder_and_upcast_attn only changes the precision (float64 here).
        o = _merge(_attention(q, k, v, cfg.get("scale_attn_weights", True),
                              i + 1 if cfg.get("scale_attn_by_inverse_layer_idx", False) else None))
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


def _inv_freq(cfg, dh):
    """transformers' ROPE_INIT_FUNCTIONS for rope_scaling None/default,
    linear and llama3 (_compute_llama3_parameters), in float64."""
    theta = cfg.get("rope_theta", 10000.0)
    inv_freq = 1.0 / (theta ** (torch.arange(0, dh, 2, dtype=torch.float64) / dh))
    scaling = cfg.get("rope_scaling")
    kind = None if scaling is None else scaling.get("rope_type", scaling.get("type"))
    if kind in (None, "default"):
        return inv_freq
    factor = scaling["factor"]
    if kind == "linear":
        return inv_freq / factor
    assert kind == "llama3", kind
    low_freq_factor = scaling["low_freq_factor"]
    high_freq_factor = scaling["high_freq_factor"]
    old_context_len = scaling["original_max_position_embeddings"]
    low_freq_wavelen = old_context_len / low_freq_factor
    high_freq_wavelen = old_context_len / high_freq_factor
    wavelen = 2 * math.pi / inv_freq
    inv_freq_llama = torch.where(wavelen > low_freq_wavelen, inv_freq / factor, inv_freq)
    smooth_factor = (old_context_len / wavelen - low_freq_factor) / (high_freq_factor - low_freq_factor)
    smoothed_inv_freq = (1 - smooth_factor) * inv_freq_llama / factor + smooth_factor * inv_freq_llama
    is_medium_freq = ~(wavelen < high_freq_wavelen) * ~(wavelen > low_freq_wavelen)
    return torch.where(is_medium_freq, smoothed_inv_freq, inv_freq_llama)


def _rope(x, cfg):
    dh, t = x.shape[-1], x.shape[2]
    inv_freq = _inv_freq(cfg, dh)
    freqs = torch.outer(torch.arange(t, dtype=torch.float64), inv_freq)
    emb = torch.cat((freqs, freqs), dim=-1)
    return x * emb.cos() + _rotate_half(x) * emb.sin()


def llama_logits(cfg, p, tokens):
    h = cfg["num_attention_heads"]
    kv = cfg.get("num_key_value_heads", h)
    eps = cfg.get("rms_norm_eps", 1e-6)
    # Qwen2 (Qwen2Attention): q/k/v_proj with biases, o_proj and the MLP without.
    qwen2 = cfg["model_type"] == "qwen2"
    # MistralConfig's sliding_window: 4096 by default, None for none.
    window = cfg.get("sliding_window", 4096) if cfg["model_type"] == "mistral" else None
    qkv_bias = qwen2 or cfg.get("attention_bias", False)
    o_bias = not qwen2 and cfg.get("attention_bias", False)
    mlp_bias = not qwen2 and cfg.get("mlp_bias", False)
    x = p["model.embed_tokens.weight"][tokens]

    def linear(x, name, bias):
        # nn.Linear(in, out, bias=bias): [out, in] weight, [out] bias.
        y = x @ p[name + ".weight"].T
        return y + p[name + ".bias"] if bias else y

    # LlamaAttention's shapes: head_dim from the config, else hidden / heads.
    d = cfg["hidden_size"]
    hd = cfg.get("head_dim") or d // h
    shapes = {"self_attn.q_proj": (h * hd, d), "self_attn.k_proj": (kv * hd, d),
              "self_attn.v_proj": (kv * hd, d), "self_attn.o_proj": (d, h * hd),
              "mlp.gate_proj": (cfg["intermediate_size"], d), "mlp.up_proj": (cfg["intermediate_size"], d),
              "mlp.down_proj": (d, cfg["intermediate_size"])}
    for i in range(cfg["num_hidden_layers"]):
        pre = f"model.layers.{i}."
        for name, shape in shapes.items():
            assert tuple(p[pre + name + ".weight"].shape) == shape, (name, p[pre + name + ".weight"].shape, shape)
            bias = o_bias if name == "self_attn.o_proj" else \
                qkv_bias if name.startswith("self_attn") else mlp_bias
            assert (pre + name + ".bias" in p) == bias, name
            if bias:
                assert tuple(p[pre + name + ".bias"].shape) == shape[:1], name
    for i in range(cfg["num_hidden_layers"]):
        pre = f"model.layers.{i}."
        a = _rms_norm(x, p[pre + "input_layernorm.weight"], eps)
        # _heads splits the projection's width: heads * head_dim, whatever
        # head_dim is (hidden / heads or the config's head_dim).
        q = _rope(_heads(linear(a, pre + "self_attn.q_proj", qkv_bias), h), cfg)
        k = _rope(_heads(linear(a, pre + "self_attn.k_proj", qkv_bias), kv), cfg)
        v = _heads(linear(a, pre + "self_attn.v_proj", qkv_bias), kv)
        x = x + linear(_merge(_attention(q, k, v, window=window)), pre + "self_attn.o_proj", o_bias)
        m = _rms_norm(x, p[pre + "post_attention_layernorm.weight"], eps)
        m = F.silu(linear(m, pre + "mlp.gate_proj", mlp_bias)) * linear(m, pre + "mlp.up_proj", mlp_bias)
        x = x + linear(m, pre + "mlp.down_proj", mlp_bias)
    x = _rms_norm(x, p["model.norm.weight"], eps)
    head = p["model.embed_tokens.weight"] if cfg.get("tie_word_embeddings", False) else p["lm_head.weight"]
    return x @ head.T


def logits(cfg, params, tokens):
    fn = gpt2_logits if cfg["model_type"] == "gpt2" else llama_logits
    return fn(cfg, params, tokens)


def loss(cfg, params, tokens, targets):
    out = logits(cfg, params, tokens)
    return F.cross_entropy(out.reshape(-1, out.shape[-1]), targets.reshape(-1)), out
