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
