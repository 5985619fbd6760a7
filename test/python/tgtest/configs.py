"""Small model and training configurations shared by the PyTorch checks."""

GPT2 = {"model_type": "gpt2", "vocab_size": 29, "n_positions": 16, "n_embd": 16, "n_layer": 2,
        "n_head": 2, "n_inner": None, "layer_norm_epsilon": 1e-5, "activation_function": "gelu_new",
        "tie_word_embeddings": True}
LLAMA = {"model_type": "llama", "vocab_size": 31, "hidden_size": 16, "intermediate_size": 24,
         "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
         "max_position_embeddings": 16, "rms_norm_eps": 1e-6, "rope_theta": 10000.0,
         "tie_word_embeddings": False}


def train_config(eps=1e-8, **overrides):
    """A TRAIN.json dict: AdamW at lr 1e-2, constant schedule, no clipping,
    with `overrides` applied."""
    cfg = {"batch_size": 4, "seq_len": 6, "seed": 0, "precision": "fp32",
           "optimizer": {"type": "adamw", "lr": 1e-2, "betas": [0.9, 0.95], "eps": eps,
                         "weight_decay": 0.1},
           "micro_batches": 1}
    cfg.update(overrides)
    return cfg

# Issue 13's config fields that change the math, on the small models above.
# Head dim 6 (not 16 / 4), theta 1e4: wavelengths 6.3, 135, 2920; with 256
# original positions and factors 1 / 8 the three llama3 bands are all used
# (below 32 kept, 32..256 smoothed, above divided by the factor).
LLAMA_FIELDS = dict(LLAMA, head_dim=6, attention_bias=True, mlp_bias=True,
                    rope_scaling={"rope_type": "llama3", "factor": 4.0, "low_freq_factor": 1.0,
                                  "high_freq_factor": 8.0, "original_max_position_embeddings": 256})
GPT2_FIELDS = dict(GPT2, n_layer=3, scale_attn_weights=False, scale_attn_by_inverse_layer_idx=True,
                   reorder_and_upcast_attn=True)
# Qwen2: Llama's layers with biases on q/k/v (Qwen2Config's keys; its sliding
# window off, as Qwen2's released configs have it).
QWEN2 = {"model_type": "qwen2", "vocab_size": 33, "hidden_size": 16, "intermediate_size": 24,
         "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
         "max_position_embeddings": 32, "rms_norm_eps": 1e-6, "rope_theta": 1000000.0,
         "tie_word_embeddings": False, "use_sliding_window": False, "sliding_window": 4096,
         "max_window_layers": 28, "attention_dropout": 0.0, "hidden_act": "silu"}
# Mistral: Llama's layers with a sliding attention window (within it, causal
# attention; beyond it, tg.attention's window).
MISTRAL = {"model_type": "mistral", "vocab_size": 35, "hidden_size": 16, "intermediate_size": 24,
           "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
           "max_position_embeddings": 64, "rms_norm_eps": 1e-5, "rope_theta": 10000.0,
           "tie_word_embeddings": False, "sliding_window": 8, "attention_dropout": 0.0,
           "hidden_act": "silu"}
