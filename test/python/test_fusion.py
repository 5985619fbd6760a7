"""Fusion (issue 12): the fused program computes what the unfused one does.

tg-fuse-elementwise merges elementwise chains into one kernel, and
tg-fuse-into-rows elementwise prologues and epilogues into norm and softmax
row kernels, and exec-fuse-horizontal runs one small kernel's dispatches over
like buffers as one, without recomputing anything; every op still rounds to its
own type. So a step compiled with fusion must give bitwise the same losses,
gradient norms and weights as the same step compiled with `--no-fusion`
(and with each fusion off alone; flash attention, which rounds differently,
is off in all of them), in float32 and float64 (the CPU target runs no bf16
GEMMs), for both model families. (The fused programs are also the ones
test_tgrun_vs_torch compares with PyTorch in float64.) `--stats` must show
fewer launches and fewer kernel bytes, and the AdamW update of every
parameter as one kernel.
"""
import json
import os
import re
import unittest

import numpy as np

from tgtest.tools import ScratchDirTest, run, run_status, train_short

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
MODELS = {name: os.path.join(ROOT, "examples", "models", f"{name}.json")
          for name in ("gpt2-tiny", "llama-tiny")}
TRAIN = os.path.join(ROOT, "examples", "train", "tiny.json")
STEPS = 6
# Flash attention (tg-fuse-attention) is off in all of them: it computes the
# same function with other roundings (test_flash_attention checks it). So is
# the loss with its gradient in one kernel, whose loss sums each row's
# exponentials as the gradient stores them (another association of the f64
# sum than the loss alone, so the loss may differ in its last bit):
# test_loss_with_gradient compares it.
VARIANTS = {"fused": ["--no-fuse=attention,loss"], "unfused": ["--no-fusion"],
            "no-elementwise": ["--no-fuse=elementwise,attention,loss"],
            "no-rows": ["--no-fuse=rows,attention"],
            "no-gemm-bias": ["--no-fuse=gemm-bias,attention,loss"],
            "no-gemm-layouts": ["--no-fuse=gemm-layouts,attention,loss"],
            "no-gemm-residual": ["--no-fuse=gemm-residual,attention,loss"],
            "no-horizontal": ["--no-fuse=horizontal,attention,loss"],
            "with-loss": ["--no-fuse=attention"]}


class Fusion(ScratchDirTest):
    def path(self, name):
        return os.path.join(self.dir, name)

    def train(self, model, dtype, variant):
        """(metrics lines, weights) of a short run of `model` compiled as `variant`."""
        tag = f"{os.path.basename(model)}-{dtype}-{variant}"
        metrics, weights = train_short(model, TRAIN, STEPS, self.dir, tag, f"--dtype={dtype}",
                                       *VARIANTS[variant])
        steps = [(m["step"], m["loss"], m["grad_norm"]) for m in metrics]
        self.assertEqual(len(steps), STEPS)
        return steps, weights

    def test_same_step_with_and_without_each_fusion(self):
        for name, model in MODELS.items():
            for dtype in ("f32", "f64"):
                with self.subTest(model=name, dtype=dtype):
                    steps, weights = self.train(model, dtype, "fused")
                    for variant in ("unfused", "no-elementwise", "no-rows", "no-gemm-bias",
                                    "no-gemm-layouts", "no-gemm-residual", "no-horizontal"):
                        other_steps, other_weights = self.train(model, dtype, variant)
                        self.assertEqual(steps, other_steps, variant)
                        self.assertEqual(sorted(weights), sorted(other_weights))
                        for key in weights:
                            np.testing.assert_array_equal(weights[key], other_weights[key],
                                                          err_msg=f"{variant}: {key}")

    def test_loss_with_gradient(self):
        """The loss and its gradient in one kernel: the same gradients, so
        bitwise the same gradient norms and weights; the loss within a few
        ulp of its element type (f32: 2^-24, f64: 2^-53; 8 allowed)."""
        for name, model in MODELS.items():
            for dtype, ulp in (("f32", 2.0 ** -24), ("f64", 2.0 ** -53)):
                with self.subTest(model=name, dtype=dtype):
                    steps, weights = self.train(model, dtype, "fused")
                    other_steps, other_weights = self.train(model, dtype, "with-loss")
                    self.assertEqual([(s, g) for s, _, g in steps], [(s, g) for s, _, g in other_steps])
                    for (_, loss, _), (_, other, _) in zip(steps, other_steps):
                        self.assertLessEqual(abs(loss - other), 8 * ulp * abs(loss))
                    for key in weights:
                        np.testing.assert_array_equal(weights[key], other_weights[key], err_msg=key)

    def stats(self, model, *flags):
        return json.loads(run("tgc", "compile", model, "--train", TRAIN, "--stats=json", *flags))

    def test_fewer_launches_and_bytes(self):
        for name, model in MODELS.items():
            with self.subTest(model=name):
                fused, unfused = self.stats(model), self.stats(model, "--no-fusion")
                elementwise_off = self.stats(model, "--no-fuse=elementwise")
                rows_off = self.stats(model, "--no-fuse=rows")
                # With attention decomposed on both sides: flash attention's
                # kernels read the heads themselves, not through GEMMs.
                decomposed = self.stats(model, "--no-fuse=attention")
                layouts_off = self.stats(model, "--no-fuse=gemm-layouts,attention")
                horizontal_off = self.stats(model, "--no-fuse=horizontal")
                self.assertLess(fused["kernel_launches"], elementwise_off["kernel_launches"])
                # tg-fuse-into-rows: residual adds, scales and masks into
                # norm and softmax kernels.
                self.assertLess(fused["kernel_launches"], rows_off["kernel_launches"])
                self.assertLess(fused["kernel_bytes"], rows_off["kernel_bytes"])
                # exec-fuse-gemm-layouts: the heads' slices, transposes and
                # the q|k|v gradients' concatenation are GEMM strides.
                self.assertLess(decomposed["kernel_launches"], layouts_off["kernel_launches"])
                self.assertLess(decomposed["kernel_bytes"], layouts_off["kernel_bytes"])
                # exec-fuse-horizontal: each small parameter's gradient
                # square and AdamW update (and in bf16 its cast) run for all
                # parameters of a shape in one launch; the same bytes but for
                # the shared scalars (read once, not once a parameter), and a
                # pack of gradients holds its rows from the first one's
                # write, so the arena may grow by at most those rows.
                self.assertLess(fused["kernel_launches"], horizontal_off["kernel_launches"])
                self.assertLessEqual(fused["kernel_bytes"], horizontal_off["kernel_bytes"])
                self.assertGreater(fused["kernel_bytes"], 0.999 * horizontal_off["kernel_bytes"])
                self.assertLessEqual(fused["arena_bytes"], 1.1 * horizontal_off["arena_bytes"])
                # exec-fuse-gemm-residual: each block's two residual adds
                # in the projections' GEMMs (2 layers): the norm kernels no
                # longer read x or write the stream, the GEMMs read x.
                residual_off = self.stats(model, "--no-fuse=gemm-residual")
                activation = 8 * 32 * 64 * 4  # batch x tokens x hidden, f32
                self.assertEqual(residual_off["kernel_bytes"] - fused["kernel_bytes"],
                                 4 * 2 * activation + (2 * 3 * activation if name == "llama-tiny" else 0))
                self.assertEqual(fused["library_bytes"] - residual_off["library_bytes"],
                                 4 * activation + (2 * activation if name == "llama-tiny" else 0))
                # (Llama has no biases for exec-fuse-gemm-bias.)
                self.assertLessEqual(elementwise_off["kernel_launches"],
                                     unfused["kernel_launches"])
                # At least a third fewer launches and a quarter fewer bytes.
                self.assertLess(fused["kernel_launches"], 0.67 * unfused["kernel_launches"])
                self.assertLess(fused["kernel_bytes"], 0.75 * unfused["kernel_bytes"])

    def test_adamw_update_of_each_parameter_is_one_kernel(self):
        for name, model in MODELS.items():
            with self.subTest(model=name):
                # Without flash attention, whose gradient's region also
                # yields three tensors of one type (dq, dk, dv).
                code, _, ir = run_status("tgc", "compile", model, "--train", TRAIN,
                                         "--no-fuse=attention",
                                         "--mlir-print-ir-after=tg-fuse-elementwise",
                                         "-o", self.path("printed.tgx"))
                self.assertEqual(code, 0, ir)
                signature = ir.split("func.func @train_step", 1)[1].split(") -> (", 1)[0]
                params = signature.count('tg.param = "')
                # Regions yielding three tensors of one type: the new
                # parameter, first and second moment.
                results = re.findall(r"exec\.dispatch_region -> \(([^)]*)\)", ir)
                adamw = [r for r in results
                         if r.count("tensor<") == 3 and len(set(r.split(", "))) == 1]
                self.assertGreater(params, 0)
                self.assertEqual(len(adamw), params)


if __name__ == "__main__":
    unittest.main()
