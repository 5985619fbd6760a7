"""The evaluator's logits and loss for `tgc compile --emit=tg` graphs match a
float64 PyTorch model of each family with random weights.

Tolerance: both sides compute in float64 with the same formulas up to
reassociation (~1e-16 per op over a few hundred ops), so 1e-10 relative
leaves six orders of magnitude of margin while any semantic slip (a wrong
layout, epsilon, mask or rotation) shows up at 1e-3 or worse."""
import json
import os
import tempfile
import unittest

import torch

from tgtest import models, safetensors_io
from tgtest.configs import MISTRAL, QWEN2
from tgtest.tools import param_specs, random_params, rel_err, run

CASES = {
    "gpt2-odd-vocab": ({"model_type": "gpt2", "vocab_size": 61, "n_positions": 16, "n_embd": 24,
                        "n_layer": 2, "n_head": 3, "n_inner": None, "layer_norm_epsilon": 1e-5,
                        "activation_function": "gelu_new", "tie_word_embeddings": True}, 2, 7),
    "gpt2-untied-erf-gelu": ({"model_type": "gpt2", "vocab_size": 50, "n_positions": 9, "n_embd": 16,
                              "n_layer": 1, "n_head": 1, "n_inner": 40, "layer_norm_epsilon": 1e-3,
                              "activation_function": "gelu", "tie_word_embeddings": False}, 3, 9),
    "llama-gqa-2kv": ({"model_type": "llama", "vocab_size": 53, "hidden_size": 32, "intermediate_size": 40,
                       "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
                       "max_position_embeddings": 32, "rms_norm_eps": 1e-6, "rope_theta": 10000.0,
                       "tie_word_embeddings": False}, 2, 11),
    "llama-mqa-tied": ({"model_type": "llama", "vocab_size": 37, "hidden_size": 24, "intermediate_size": 20,
                        "num_hidden_layers": 1, "num_attention_heads": 3, "num_key_value_heads": 1,
                        "max_position_embeddings": 8, "rms_norm_eps": 1e-5, "rope_theta": 500.0,
                        "tie_word_embeddings": True}, 1, 8),
}

# Issue 13: config fields that change the math, one case each (plus one with
# all of a family's at once). Each fails when its field is ignored.
_G = CASES["gpt2-odd-vocab"][0]
_L = CASES["llama-gqa-2kv"][0]
# Head dim 16, theta 1e4: wavelengths 6.3, 20, 63, 199, 628, 1987, 6283,
# 19869; with 512 original positions and factors 0.5 / 8 the bands are
# below 64 (kept), 64..1024 (smoothed: 199, 628) and above (divided by 8).
_LLAMA3 = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 0.5,
           "high_freq_factor": 8.0, "original_max_position_embeddings": 512}
CASES.update({
    "gpt2-no-scale-attn-weights": (dict(_G, scale_attn_weights=False), 2, 7),
    "gpt2-scale-by-inverse-layer-idx": (dict(_G, n_layer=3, scale_attn_by_inverse_layer_idx=True), 2, 7),
    "gpt2-reorder-and-upcast-attn": (dict(_G, reorder_and_upcast_attn=True), 2, 7),
    "gpt2-all-attention-options": (dict(_G, n_layer=3, scale_attn_weights=False,
                                        scale_attn_by_inverse_layer_idx=True,
                                        reorder_and_upcast_attn=True, resid_pdrop=0.0,
                                        embd_pdrop=0.0, attn_pdrop=0.0), 2, 7),
    "qwen2": (QWEN2, 2, 11),
    "mistral-within-window": (MISTRAL, 2, 8),
    "mistral-no-window": (dict(MISTRAL, sliding_window=None), 2, 11),
    # Sequences longer than the window: keys t - W < s <= t (W = 8 and 3).
    "mistral-sliding-window": (MISTRAL, 2, 20),
    "mistral-window-3": (dict(MISTRAL, sliding_window=3), 2, 11),
    "qwen2-tied": (dict(QWEN2, tie_word_embeddings=True, num_key_value_heads=4), 2, 9),
    "llama-head-dim": (dict(_L, head_dim=12), 2, 11),
    "llama-attention-bias": (dict(_L, attention_bias=True), 2, 11),
    "llama-mlp-bias": (dict(_L, mlp_bias=True), 2, 11),
    "llama-rope-linear": (dict(_L, rope_scaling={"type": "linear", "factor": 4.0}), 2, 11),
    "llama-rope-llama3": (dict(_L, max_position_embeddings=64, rope_scaling=_LLAMA3), 2, 30),
    "llama-rope-default": (dict(_L, rope_scaling={"rope_type": "default"}), 2, 11),
    "llama3.1-like-all": (dict(_L, head_dim=6, attention_bias=True, mlp_bias=True,
                               rope_theta=500000.0, max_position_embeddings=64,
                               rope_scaling=dict(_LLAMA3, factor=2.0), attention_dropout=0.0,
                               pretraining_tp=1, rope_parameters=None), 2, 30),
})


class ForwardVsTorch(unittest.TestCase):
    def check(self, name):
        cfg, batch, seq = CASES[name]
        gen = torch.Generator().manual_seed(hash(name) % 2**31)
        with tempfile.TemporaryDirectory() as tmp:
            cfg_path = os.path.join(tmp, "config.json")
            with open(cfg_path, "w") as f:
                json.dump(cfg, f)
            mlir = os.path.join(tmp, "model.mlir")
            run("tgc", "compile", cfg_path, "--emit=tg", "--dtype=f64",
                f"--batch={batch}", f"--seq={seq}", "-o", mlir)
            with open(mlir) as f:
                params = random_params(param_specs(f.read()), gen)
            tokens = torch.randint(0, cfg["vocab_size"], (batch, seq), generator=gen, dtype=torch.int32)
            targets = torch.randint(0, cfg["vocab_size"], (batch, seq), generator=gen, dtype=torch.int32)
            inputs = os.path.join(tmp, "in.safetensors")
            safetensors_io.save(inputs, {**params, "tokens": tokens, "targets": targets})
            out = os.path.join(tmp, "out.safetensors")
            run("tg-eval", mlir, "--inputs", inputs, "-o", out, "--arith=f64")
            got = safetensors_io.load(out)
        loss, logits = models.loss(cfg, params, tokens.long(), targets.long())
        self.assertLess(rel_err(got["logits"], logits), 1e-10)
        self.assertLess(abs(got["loss"].item() - loss.item()) / abs(loss.item()), 1e-10)


for _name in CASES:
    setattr(ForwardVsTorch, f"test_{_name.replace('-', '_')}",
            lambda self, n=_name: self.check(n))

if __name__ == "__main__":
    unittest.main()
