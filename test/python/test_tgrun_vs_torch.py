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
from tgtest.configs import GPT2, GPT2_FIELDS, LLAMA, LLAMA_FIELDS, MISTRAL, QWEN2, train_config
from tgtest.reference import torch_training
from tgtest.tools import model_param_specs, random_params, rel_err, run

STEPS = 30



def tgrun_config(**overrides):
    """Sequences of 8, clipping at 1.0, and eps 1e-6 (see the module docstring)."""
    return train_config(eps=1e-6, **{"seq_len": 8, "grad_clip_norm": 1.0, **overrides})


CASES = {
    "gpt2-tied": (GPT2, tgrun_config()),
    "gpt2-odd-untied-erf-micro-cosine": (
        dict(GPT2, vocab_size=37, n_embd=12, n_head=3, n_inner=20, activation_function="gelu",
             tie_word_embeddings=False),
        tgrun_config(batch_size=6, seq_len=7, micro_batches=3,
                     lr_schedule={"type": "cosine", "warmup_steps": 5, "min_lr": 1e-3, "decay_steps": 20})),
    "llama-gqa": (LLAMA, tgrun_config()),
    "llama-mqa-tied-odd": (
        dict(LLAMA, vocab_size=23, hidden_size=24, intermediate_size=20, num_attention_heads=3,
             num_key_value_heads=1, tie_word_embeddings=True),
        tgrun_config(batch_size=3, seq_len=5)),
    # Issue 13's fields, compiled (the scaled RoPE kernel, the bias epilogues).
    "llama-head-dim-biases-llama3": (LLAMA_FIELDS, tgrun_config()),
    "gpt2-attention-scales": (GPT2_FIELDS, tgrun_config()),
    "qwen2-qkv-biases": (QWEN2, tgrun_config()),
    "mistral-within-window": (MISTRAL, tgrun_config()),
    "mistral-sliding-window": (dict(MISTRAL, sliding_window=3), tgrun_config()),
}


def read_metrics(path):
    return [json.loads(line) for line in open(path)]


class TgrunVsTorch(unittest.TestCase):
    def check(self, name, strip_prefix=False, flags=()):
        model_cfg, cfg = CASES[name]
        gen = torch.Generator().manual_seed(sum(map(ord, name)))
        tokens = torch.randint(0, model_cfg["vocab_size"], (211,), generator=gen).numpy().astype(np.uint16)
        with tempfile.TemporaryDirectory() as tmp:
            path = lambda f: os.path.join(tmp, f)
            json.dump(model_cfg, open(path("model.json"), "w"))
            json.dump(cfg, open(path("train.json"), "w"))
            tokens.tofile(path("tokens.bin"))
            run("tgc", "compile", path("model.json"), "--train", path("train.json"), "--target", "cpu",
                *flags, "-o", path("step.tgx"))
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

    def test_llama_head_dim_biases_llama3(self):
        self.check("llama-head-dim-biases-llama3")

    def test_gpt2_attention_scales(self):
        self.check("gpt2-attention-scales")

    def test_qwen2_qkv_biases(self):
        self.check("qwen2-qkv-biases")

    def test_mistral_within_window(self):
        self.check("mistral-within-window")

    def test_mistral_sliding_window(self):
        self.check("mistral-sliding-window")

    # Flash attention (tg-fuse-attention) everywhere: its kernels, not the
    # decomposition, for causal multi-head, micro-batches and odd shapes,
    # grouped-query with RoPE, and a sliding window.
    FLASH = ("--max-score-mib", "0")

    def test_gpt2_tied_flash(self):
        self.check("gpt2-tied", flags=self.FLASH)

    def test_gpt2_odd_shapes_flash(self):
        self.check("gpt2-odd-untied-erf-micro-cosine", strip_prefix=True, flags=self.FLASH)

    def test_llama_gqa_flash(self):
        self.check("llama-gqa", flags=self.FLASH)

    def test_mistral_sliding_window_flash(self):
        self.check("mistral-sliding-window", flags=self.FLASH)


if __name__ == "__main__":
    unittest.main()
