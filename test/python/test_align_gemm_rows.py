"""tg-align-gemm-rows: the padded products compute what the unpadded ones do.

The CUDA target pads the operands of GEMMs whose stored rows are not 16-byte
aligned (the tiny models' vocabulary of 67, like GPT-2's 50257) with zeros
and slices the product back. Zeros add nothing to a sum, and the library
sums each product's K terms in order, so a step with the padding must give
bitwise the same losses, gradient norms and weights as without it. The CPU
target can run the pass too (`--align-gemm-rows`, off by default there):
checked on both model families, in float32 and float64, on one rank and on
two tensor-parallel ranks (each with half of the vocabulary).
"""
import json
import os
import re
import unittest

import numpy as np

from tgtest.tools import (TINY_MODELS as MODELS, TINY_TRAIN as TRAIN, ScratchDirTest,
                          fusion_remarks, run, train_short)

STEPS = 6


class AlignGemmRows(ScratchDirTest):
    def train(self, model, tag, *flags):
        metrics, weights = train_short(model, TRAIN, STEPS, self.dir, tag, *flags)
        steps = [(m["step"], m["loss"], m["grad_norm"]) for m in metrics]
        self.assertEqual(len(steps), STEPS)
        return steps, weights

    def test_same_step_with_and_without_padding(self):
        for name, model in MODELS.items():
            for dtype in ("f32", "f64"):
                with self.subTest(model=name, dtype=dtype):
                    tag = f"{name}-{dtype}"
                    steps, weights = self.train(model, tag + "-plain", f"--dtype={dtype}")
                    padded_steps, padded_weights = self.train(
                        model, tag + "-padded", f"--dtype={dtype}", "--align-gemm-rows")
                    self.assertEqual(steps, padded_steps)
                    self.assertEqual(sorted(weights), sorted(padded_weights))
                    for key in weights:
                        np.testing.assert_array_equal(weights[key], padded_weights[key],
                                                      err_msg=key)

    def test_tensor_parallel_vocabulary_is_padded_per_rank(self):
        model = MODELS["gpt2-tiny"]
        tokens = os.path.join(self.dir, "gpt2-tiny.json.bin")
        train_short(model, TRAIN, 1, self.dir, "tokens")  # writes the token file
        results = []
        for flags in ((), ("--align-gemm-rows",)):
            tag = "tp2" + "".join(flags).replace("-", "_")
            artifact = os.path.join(self.dir, tag + ".tgx")
            run("tgc", "compile", model, "--train", TRAIN, "--mesh=tp=2", *flags, "-o", artifact)
            metrics = os.path.join(self.dir, tag + ".jsonl")
            run("tgrun", "-n", 2, artifact, "--data", tokens, "--steps", STEPS,
                "--metrics", metrics)
            results.append([(m["step"], m["loss"], m["grad_norm"])
                            for m in map(json.loads, open(metrics)) if "loss" in m])
        self.assertEqual(len(results[0]), STEPS)
        self.assertEqual(results[0], results[1])

    def remarks(self, *flags):
        err = fusion_remarks(MODELS["gpt2-tiny"], TRAIN, self.dir, *flags)
        return re.findall(r"remark: stored rows not 16-byte aligned[^\n]*", err)

    def test_on_for_cuda_off_for_the_cpu(self):
        # The logits of @train_step, @eval_step and @logits, the gradient
        # of the last hidden state (K = vocabulary) and of the tied
        # embedding (M = vocabulary).
        cuda = self.remarks("--target", "cuda", "--dtype=bf16")
        self.assertEqual(len(cuda), 5, cuda)
        self.assertIn("M x K x N 32 x 64 x 67 padded with zeros to 32 x 64 x 128, "
                      "the product sliced back", cuda[0])
        self.assertTrue(any("67 x 256 x 64 padded with zeros to 128 x 256 x 64" in r
                            for r in cuda), cuda)
        self.assertEqual(self.remarks(), [])
        self.assertEqual(self.remarks("--target", "cuda", "--align-gemm-rows=false"), [])
        # --gemm=generated: no library to align for.
        self.assertEqual(self.remarks("--align-gemm-rows", "--gemm=generated"), [])


if __name__ == "__main__":
    unittest.main()
