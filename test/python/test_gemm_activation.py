"""exec-fuse-gemm-activation: GELU and its gradient as GEMM epilogues.

The CUDA target folds GPT-2's GELU (tanh approximation) into the MLP's
first GEMM (cuBLASLt GELU_AUX_BIAS) and GELU's gradient into the GEMM that
computes the gradient of its output (DGELU), in bf16 and f16, and the sum
of that gradient over the rows (the first bias's gradient) into the same
GEMM (DGELU_BGRAD) when asked (`--fuse=gemm-bias-grad`: it has not run on
a GPU yet). The CPU runtime applies the same epilogues as a pass over the
rows after the BLAS call (and a blockwise pass for the sums), and the CPU
target folds them when asked (`--fuse=gemm-activation,gemm-bias-grad`),
which is how their placement of buffers and their math are checked here
against the unfused program:
- float64: the epilogue computes GELU and its derivative in double from
  the same rounded inputs as the kernels, so the steps agree to rounding;
  AdamW's normalised update turns those ~1e-16 relative differences of a
  gradient element into up to ~1e-12 of a weight over 6 steps (measured
  1.3e-12), so weights within 1e-10 of each tensor's largest element and
  losses and gradient norms within 1e-13;
- float32: the kernels' tanh is a polynomial, the epilogue's libm's in
  double, so losses within 1e-5 (measured 2e-7).
"""
import json
import re
import unittest

import numpy as np

from tgtest.tools import (TINY_MODELS as MODELS, TINY_TRAIN as TRAIN, ScratchDirTest,
                          fusion_remarks, run, train_short)

STEPS = 6
FOLDED = "--fuse=gemm-activation,gemm-bias-grad"


class GemmActivation(ScratchDirTest):
    def train(self, tag, *flags):
        metrics, weights = train_short(MODELS["gpt2-tiny"], TRAIN, STEPS, self.dir, tag, *flags)
        self.assertEqual(len(metrics), STEPS)
        return metrics, weights

    def compare(self, dtype, loss_rtol, weight_rtol):
        plain, plain_weights = self.train(f"plain-{dtype}", f"--dtype={dtype}")
        folded, folded_weights = self.train(f"folded-{dtype}", f"--dtype={dtype}", FOLDED)
        for a, b in zip(plain, folded):
            for key in ("loss", "grad_norm"):
                self.assertLessEqual(abs(a[key] - b[key]), loss_rtol * abs(a[key]),
                                     f"step {a['step']} {key}: {a[key]} vs {b[key]}")
        if weight_rtol is None:
            return
        self.assertEqual(sorted(plain_weights), sorted(folded_weights))
        for key, x in plain_weights.items():
            x = np.asarray(x, dtype=np.float64)
            y = np.asarray(folded_weights[key], dtype=np.float64)
            scale = max(float(np.max(np.abs(x))), 1e-30)
            self.assertLessEqual(float(np.max(np.abs(x - y))), weight_rtol * scale, key)

    def test_f64_step_matches_the_unfused_one(self):
        self.compare("f64", 1e-13, 1e-10)

    def test_f32_step_matches_the_unfused_one(self):
        self.compare("f32", 1e-5, None)

    def stats(self, model, *flags):
        return json.loads(run("tgc", "compile", model, "--train", TRAIN, "--stats=json", *flags))

    def test_three_kernels_fewer_per_layer(self):
        # gpt2-tiny has 2 layers: GELU, its gradient and the sum of that
        # (the bias gradient), each once a layer.
        plain = self.stats(MODELS["gpt2-tiny"])
        folded = self.stats(MODELS["gpt2-tiny"], FOLDED)
        self.assertEqual(folded["kernel_launches"], plain["kernel_launches"] - 6)
        kept = self.stats(MODELS["gpt2-tiny"], "--fuse=gemm-activation")
        self.assertEqual(kept["kernel_launches"], plain["kernel_launches"] - 4)
        # Llama's SiLU has no epilogue: nothing changes.
        llama = [self.stats(MODELS["llama-tiny"], *flags) for flags in ((FOLDED,), ())]
        for stats in llama:
            del stats["plan_seconds"]
        self.assertEqual(llama[0], llama[1])

    def remarks(self, *flags):
        err = fusion_remarks(MODELS["gpt2-tiny"], TRAIN, self.dir, *flags)
        return re.findall(r"remark: ((?:gelu\w*|reduce_sum) folded into the GEMM's epilogue \(\w+\))", err)

    def test_on_for_cuda_off_for_the_cpu(self):
        # @train_step, @eval_step and @logits each run the 2 layers'
        # forward; only @train_step has their gradients.
        cuda = self.remarks("--target", "cuda", "--dtype=bf16")
        self.assertEqual(cuda.count("gelu folded into the GEMM's epilogue (GELU_AUX_BIAS)"), 6)
        self.assertEqual(cuda.count("gelu_grad folded into the GEMM's epilogue (DGELU)"), 2)
        # The bias gradient's sum when asked (slower on an H200: off by default).
        self.assertNotIn("reduce_sum folded into the GEMM's epilogue (DGELU_BGRAD)", cuda)
        asked = self.remarks("--target", "cuda", "--dtype=bf16", "--fuse=gemm-bias-grad")
        self.assertEqual(asked.count("reduce_sum folded into the GEMM's epilogue (DGELU_BGRAD)"), 2)
        self.assertEqual(self.remarks(), [])
        # On CUDA, the 16-bit products of mixed precision only.
        self.assertEqual(self.remarks("--target", "cuda", "--dtype=f32"), [])
        self.assertEqual(self.remarks("--target", "cuda", "--no-fuse=gemm-activation"), [])
        self.assertEqual(self.remarks("--target", "cuda", "--no-fusion"), [])


if __name__ == "__main__":
    unittest.main()
