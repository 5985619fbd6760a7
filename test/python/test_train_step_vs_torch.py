"""20 steps of `train_step` on the evaluator (float64) against a float64
PyTorch model trained by torch.optim.AdamW on the same data order.

Tolerances (issue 3): per-step loss within 1e-9 and final weights within 1e-9
relative L2. Both sides run the same float64 arithmetic up to reassociation;
Adam's division by sqrt(v) + eps amplifies rounding for elements whose
gradients are tiny, which is why the bound is 1e-9 and not 1e-12."""
import json
import os
import tempfile
import unittest

import numpy as np
import torch

from tgtest import safetensors_io
from tgtest.configs import GPT2, GPT2_FIELDS, LLAMA, LLAMA_FIELDS, MISTRAL, train_config
from tgtest.reference import batch, learning_rate, torch_training
from tgtest.tools import param_specs, random_params, rel_err, run

STEPS = 20

CASES = {
    "gpt2-tied-constant": (GPT2, train_config()),
    "gpt2-untied-clip-micro-cosine": (
        dict(GPT2, tie_word_embeddings=False, vocab_size=23, n_head=4),
        train_config(batch_size=6, micro_batches=3, grad_clip_norm=0.5,
                     lr_schedule={"type": "cosine", "warmup_steps": 3, "min_lr": 1e-3, "decay_steps": 12})),
    "llama-gqa-clip-cosine": (
        LLAMA, train_config(grad_clip_norm=0.5,
                            lr_schedule={"type": "cosine", "warmup_steps": 5, "min_lr": 2e-3, "decay_steps": 10})),
    "llama-tied-micro": (
        dict(LLAMA, tie_word_embeddings=True, num_key_value_heads=1, vocab_size=19),
        train_config(batch_size=4, micro_batches=2, seq_len=5)),
    # Issue 13: head_dim, attention/MLP biases and llama3 rope scaling; GPT-2
    # without 1/sqrt(d) and with 1/(layer + 1).
    "llama-head-dim-biases-llama3": (LLAMA_FIELDS, train_config(grad_clip_norm=0.5)),
    "llama-rope-linear": (dict(LLAMA, rope_scaling={"type": "linear", "factor": 3.0}), train_config()),
    "gpt2-attention-scales": (GPT2_FIELDS, train_config(grad_clip_norm=0.5)),
    # Mistral's sliding window (3) over sequences of 6: attention_grad's mask.
    "mistral-sliding-window": (dict(MISTRAL, sliding_window=3), train_config()),
}


class TrainStepVsTorch(unittest.TestCase):
    def check(self, name):
        model_cfg, cfg = CASES[name]
        gen = torch.Generator().manual_seed(sum(map(ord, name)))
        tokens = torch.randint(0, model_cfg["vocab_size"], (97,), generator=gen).numpy().astype(np.uint16)
        with tempfile.TemporaryDirectory() as tmp:
            paths = {k: os.path.join(tmp, k) for k in ("model.json", "train.json", "step.mlir", "in", "out")}
            json.dump(model_cfg, open(paths["model.json"], "w"))
            json.dump(cfg, open(paths["train.json"], "w"))
            run("tgc", "compile", paths["model.json"], "--train", paths["train.json"], "--emit=tg",
                "--dtype=f64", "-o", paths["step.mlir"])
            specs = param_specs(open(paths["step.mlir"]).read())
            params = random_params(specs, gen)
            state = dict(params)
            for n, shape in specs:
                state["adam_m:" + n] = torch.zeros(shape, dtype=torch.float64)
                state["adam_v:" + n] = torch.zeros(shape, dtype=torch.float64)
            losses, norms, lrs = [], [], []
            for step in range(STEPS):
                x, y = batch(tokens, cfg, step)
                safetensors_io.save(paths["in"], {**state, "step": torch.tensor(step, dtype=torch.int32),
                                                  "tokens": x.int(), "targets": y.int()})
                run("tg-eval", paths["step.mlir"], "--inputs", paths["in"], "-o", paths["out"], "--arith=f64")
                out = safetensors_io.load(paths["out"])
                losses.append(out["loss"].item())
                norms.append(out["grad_norm"].item())
                lrs.append(out["lr"].item())
                for n, _ in specs:
                    state[n] = out["param:" + n]
                    state["adam_m:" + n] = out["adam_m:" + n]
                    state["adam_v:" + n] = out["adam_v:" + n]

        ref_losses, ref_norms, ref_params = torch_training(model_cfg, cfg, params, tokens, STEPS)
        for step in range(STEPS):
            self.assertLess(abs(losses[step] - ref_losses[step]), 1e-9, f"loss at step {step}")
            self.assertLess(abs(norms[step] - ref_norms[step]) / ref_norms[step], 1e-9, f"grad norm at step {step}")
            self.assertAlmostEqual(lrs[step], learning_rate(cfg, step), delta=1e-15)
        for n, _ in specs:
            self.assertLess(rel_err(state[n], ref_params[n]), 1e-9, n)
        if "grad_clip_norm" in cfg:  # the case must exercise clipping
            self.assertTrue(any(v > cfg["grad_clip_norm"] for v in ref_norms))
        self.assertLess(losses[-1], losses[0])  # it trains


for _name in CASES:
    setattr(TrainStepVsTorch, f"test_{_name.replace('-', '_')}",
            lambda self, n=_name: self.check(n))

if __name__ == "__main__":
    unittest.main()
