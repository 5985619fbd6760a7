"""Compiled training (tgc --target cpu, then tgrun) against a float64 PyTorch
model trained by torch.optim.AdamW from the same weights on the same token
file, 30 steps, under the data contract.

Tolerances (issue 4): per-step loss within 1e-4 absolute and final weights
within 1e-3 relative L2. The compiled step runs in float32, whose rounding
(~6e-8 relative per op) accumulates over the forward/backward and 30 Adam
updates to ~1e-6 in the loss here; the bounds leave room for larger models
without hiding real errors (a wrong gradient moves the loss by > 1e-2 within
a few steps).

AdamW's eps is 1e-6 here, not 1e-8: attention's key bias has an exactly zero
gradient (it shifts all scores of a query equally), which float32 computes as
rounding noise of ~1e-10; with eps = 1e-8 Adam's m / (sqrt(v) + eps) turns
that noise into steps of about +-lr, while float64's noise stays far below
eps. That is float32 versus float64, not an error of the compiled step, and
PyTorch in float32 does the same."""
import json
import os
import tempfile
import unittest

import numpy as np
import torch

from tgtest import safetensors_io
from tgtest.reference import torch_training
from tgtest.tools import model_param_specs, random_params, rel_err, run

STEPS = 30

GPT2 = {"model_type": "gpt2", "vocab_size": 29, "n_positions": 16, "n_embd": 16, "n_layer": 2,
        "n_head": 2, "n_inner": None, "layer_norm_epsilon": 1e-5, "activation_function": "gelu_new",
        "tie_word_embeddings": True}
LLAMA = {"model_type": "llama", "vocab_size": 31, "hidden_size": 16, "intermediate_size": 24,
         "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
         "max_position_embeddings": 16, "rms_norm_eps": 1e-6, "rope_theta": 10000.0,
         "tie_word_embeddings": False}


def train_config(**overrides):
    cfg = {"batch_size": 4, "seq_len": 8, "seed": 0, "precision": "fp32",
           "optimizer": {"type": "adamw", "lr": 1e-2, "betas": [0.9, 0.95], "eps": 1e-6,
                         "weight_decay": 0.1},
           "grad_clip_norm": 1.0, "micro_batches": 1}
    cfg.update(overrides)
    return cfg


CASES = {
    "gpt2-tied": (GPT2, train_config()),
    "gpt2-odd-untied-erf-micro-cosine": (
        dict(GPT2, vocab_size=37, n_embd=12, n_head=3, n_inner=20, activation_function="gelu",
             tie_word_embeddings=False),
        train_config(batch_size=6, seq_len=7, micro_batches=3,
                     lr_schedule={"type": "cosine", "warmup_steps": 5, "min_lr": 1e-3, "decay_steps": 20})),
    "llama-gqa": (LLAMA, train_config()),
    "llama-mqa-tied-odd": (
        dict(LLAMA, vocab_size=23, hidden_size=24, intermediate_size=20, num_attention_heads=3,
             num_key_value_heads=1, tie_word_embeddings=True),
        train_config(batch_size=3, seq_len=5)),
}


def read_metrics(path):
    return [json.loads(line) for line in open(path)]


class TgrunVsTorch(unittest.TestCase):
    def check(self, name, strip_prefix=False):
        model_cfg, cfg = CASES[name]
        gen = torch.Generator().manual_seed(sum(map(ord, name)))
        tokens = torch.randint(0, model_cfg["vocab_size"], (211,), generator=gen).numpy().astype(np.uint16)
        with tempfile.TemporaryDirectory() as tmp:
            path = lambda f: os.path.join(tmp, f)
            json.dump(model_cfg, open(path("model.json"), "w"))
            json.dump(cfg, open(path("train.json"), "w"))
            tokens.tofile(path("tokens.bin"))
            run("tgc", "compile", path("model.json"), "--train", path("train.json"), "--target", "cpu",
                "-o", path("step.tgx"))
            params = random_params(model_param_specs(path("model.json"), path("train.json"),
                                                     path("step.mlir")), gen)
            init = {(k.removeprefix("transformer.") if strip_prefix else k): v.float()
                    for k, v in params.items()}
            safetensors_io.save(path("init.safetensors"), init)
            run("tgrun", path("step.tgx"), "--data", path("tokens.bin"), "--init", path("init.safetensors"),
                "--steps", STEPS, "--metrics", path("metrics.jsonl"),
                "--save-weights", path("final.safetensors"))
            metrics = read_metrics(path("metrics.jsonl"))
            final = safetensors_io.load(path("final.safetensors"))

        # The reference starts from the float32-rounded weights tgrun read.
        start = {k: v.float().double() for k, v in params.items()}
        ref_losses, ref_norms, ref_params = torch_training(model_cfg, cfg, start, tokens, STEPS)
        self.assertEqual([m["step"] for m in metrics], list(range(1, STEPS + 1)))
        for step in range(STEPS):
            self.assertLess(abs(metrics[step]["loss"] - ref_losses[step]), 1e-4, f"loss at step {step + 1}")
            self.assertLess(abs(metrics[step]["grad_norm"] - ref_norms[step]) / ref_norms[step], 1e-3,
                            f"grad_norm at step {step + 1}")
        self.assertLess(metrics[-1]["loss"], metrics[0]["loss"], "training did not lower the loss")
        self.assertEqual(set(final), set(ref_params))
        for k, ref in ref_params.items():
            self.assertLess(rel_err(final[k].double(), ref), 1e-3, k)

    def test_gpt2_tied(self):
        self.check("gpt2-tied")

    def test_gpt2_odd_shapes(self):
        self.check("gpt2-odd-untied-erf-micro-cosine", strip_prefix=True)

    def test_llama_gqa(self):
        self.check("llama-gqa")

    def test_llama_mqa_odd_shapes(self):
        self.check("llama-mqa-tied-odd")


if __name__ == "__main__":
    unittest.main()
