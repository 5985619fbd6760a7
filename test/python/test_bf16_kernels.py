"""bf16 kernels on the CPU: `--dtype=bf16 --gemm=generated` compiles and trains.

The CPU target multiplies with OpenBLAS in f32 or f64 only, but with the
matrix products generated as loop kernels a bf16 step runs on the CPU: its
conversions to bf16 are compiler-rt builtins (__truncdfbf2, ...) that the
kernels' shared object links (LLVM's archive; libgcc lacks them). It
computes what the CUDA target's bf16 step does (bf16 values, f32 masters,
f64 sums), so its losses follow the f32 run within the tolerance
scripts/gpu-validate gives bf16 (2e-2 x max(1, loss)) for 6 steps, for both
model families. And bf16 checks the loss kernel's fused casts: it reads the
bf16 logits and writes the bf16 gradient itself (tg-fuse-into-rows), which
must give bitwise the steps of the casts as kernels of their own
(`--no-fuse=loss`: they round the same values once each).
"""
import re
import tempfile
import unittest

import numpy as np

from tgtest.tools import TINY_MODELS as MODELS, TINY_TRAIN as TRAIN, fusion_remarks, train_short

STEPS = 6


class Bf16Kernels(unittest.TestCase):
    def test_bf16_step_follows_f32(self):
        with tempfile.TemporaryDirectory() as tmp:
            for name, model in MODELS.items():
                with self.subTest(model=name):
                    f32, _ = train_short(model, TRAIN, STEPS, tmp, f"{name}-f32",
                                         "--dtype=f32", "--gemm=generated")
                    bf16, weights = train_short(model, TRAIN, STEPS, tmp, f"{name}-bf16",
                                                "--dtype=bf16", "--gemm=generated")
                    self.assertEqual(len(bf16), STEPS)
                    worst = 0.0
                    for a, b in zip(f32, bf16):
                        bound = 2e-2 * max(1.0, abs(a["loss"]))
                        self.assertLessEqual(abs(a["loss"] - b["loss"]), bound, b)
                        worst = max(worst, abs(a["loss"] - b["loss"]))
                    # bf16 rounds (8 bits of mantissa): not the f32 run itself.
                    self.assertGreater(worst, 0.0)
                    # The masters and moments stay f32.
                    self.assertTrue(all(str(w.dtype) == "torch.float32" for w in weights.values()))

    def test_loss_with_its_casts_matches_the_casts_as_kernels(self):
        with tempfile.TemporaryDirectory() as tmp:
            for name, model in MODELS.items():
                with self.subTest(model=name):
                    err = fusion_remarks(model, TRAIN, tmp, "--dtype=bf16", "--gemm=generated")
                    self.assertEqual(len(re.findall(r"fused into the loss with its gradient, which "
                                                    r"(reads|writes) through it", err)), 2, err)
                    runs = [train_short(model, TRAIN, STEPS, tmp, f"{name}-{tag}", "--dtype=bf16",
                                        "--gemm=generated", *flags)
                            for tag, flags in (("fused", ()), ("unfused", ("--no-fuse=loss",)))]
                    (fused, fused_weights), (unfused, unfused_weights) = runs
                    self.assertEqual([(m["loss"], m["grad_norm"]) for m in fused],
                                     [(m["loss"], m["grad_norm"]) for m in unfused])
                    for key in fused_weights:
                        np.testing.assert_array_equal(fused_weights[key].numpy(),
                                                      unfused_weights[key].numpy(), err_msg=key)


if __name__ == "__main__":
    unittest.main()
