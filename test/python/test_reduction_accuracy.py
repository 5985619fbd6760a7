"""Long reductions keep float64's accuracy in a float32 step (issue 13 item 3):
GPT-2 124M (the real config) gives the first step's grad_norm and loss within
1e-5 relative of the same step in float64, from the same weights and batch.
A float32 accumulator, one element after another, was off by 8e-4 in
grad_norm (the squares of the 38.6M-element embedding gradient), enough to
change clipping."""
import json
import os
import tempfile
import unittest

import numpy as np

from tgtest.tools import run

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
MODEL = os.path.join(ROOT, "examples", "models", "gpt2-124m.json")
TRAIN = {"batch_size": 2, "seq_len": 64, "seed": 3, "precision": "fp32",
         "optimizer": {"type": "adamw", "lr": 1e-4, "betas": [0.9, 0.95], "eps": 1e-8,
                       "weight_decay": 0.1},
         "grad_clip_norm": 1.0}


class ReductionAccuracy(unittest.TestCase):
    def test_gpt2_124m_first_step_matches_float64(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = lambda name: os.path.join(tmp, name)
            json.dump(TRAIN, open(path("train.json"), "w"))
            np.random.default_rng(0).integers(0, 50257, 4096).astype(np.uint16).tofile(
                path("tokens.bin"))
            first = {}
            for dtype in ["f32", "f64"]:
                artifact = path(dtype + ".tgx")
                run("tgc", "compile", MODEL, "--train", path("train.json"), f"--dtype={dtype}",
                    "-o", artifact)
                if dtype == "f32":  # both steps start from these weights
                    run("tgrun", artifact, "--data", path("tokens.bin"), "--steps", 0,
                        "--save-weights", path("init.safetensors"))
                run("tgrun", artifact, "--data", path("tokens.bin"), "--steps", 1, "--init",
                    path("init.safetensors"), "--metrics", path(dtype + ".jsonl"))
                first[dtype] = json.loads(open(path(dtype + ".jsonl")).readline())
            for key in ["grad_norm", "loss"]:
                want, got = first["f64"][key], first["f32"][key]
                self.assertLess(abs(got - want) / abs(want), 1e-5,
                                f"{key}: float32 step {got!r}, float64 step {want!r}")


if __name__ == "__main__":
    unittest.main()
