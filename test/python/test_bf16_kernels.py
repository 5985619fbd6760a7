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
(`--no-fuse=loss`: they round the same values once each). So must the
parameters' bf16 copies kept between steps (tg-carry-compute-copies): the
step reads the copy its AdamW kernel wrote, or that the runtime wrote from
weights or a checkpoint, instead of casting each parameter first (on one
rank and on two data-parallel ones).
"""
import json
import os
import re
import tempfile
import unittest

import numpy as np

from tgtest import safetensors_io
from tgtest.tools import TINY_MODELS as MODELS, TINY_TRAIN as TRAIN, fusion_remarks, run, train_short

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

    def test_compute_copies_match_the_casts(self):
        with tempfile.TemporaryDirectory() as tmp:
            for name, model in MODELS.items():
                with self.subTest(model=name):
                    path = lambda suffix: os.path.join(tmp, f"{name}-{suffix}")
                    vocab = json.load(open(model))["vocab_size"]
                    tokens = path("tokens.bin")
                    np.random.default_rng(3).integers(0, vocab, 4000).astype(np.uint16).tofile(tokens)
                    stats = {}
                    for tag, flags in (("carried", ()), ("cast", ("--no-fuse=compute-copies",))):
                        common = (model, "--train", TRAIN, "--dtype=bf16", "--gemm=generated", *flags)
                        run("tgc", "compile", *common, "-o", path(f"{tag}.tgx"))
                        stats[tag] = json.loads(run("tgc", "compile", *common, "--stats=json"))
                    # A bf16 copy of every parameter, in the state; the casts'
                    # dispatches are gone (the AdamW kernels write the copies).
                    self.assertEqual(stats["carried"]["compute_copy_bytes"],
                                     stats["carried"]["param_bytes"] // 2)
                    self.assertEqual(stats["cast"]["compute_copy_bytes"], 0)
                    self.assertLess(stats["carried"]["commands"], stats["cast"]["commands"])
                    self.assertLess(stats["carried"]["kernel_bytes"], stats["cast"]["kernel_bytes"])
                    # The runtime writes the copies from weights (--init) and
                    # from a checkpoint (--resume): trained weights, not the
                    # initialisation, so a stale copy would show.
                    run("tgrun", path("cast.tgx"), "--data", tokens, "--steps", 2,
                        "--save-weights", path("init.safetensors"))
                    train = lambda tag, *flags: run(
                        "tgrun", path(f"{tag}.tgx"), "--data", tokens, "--init",
                        path("init.safetensors"), *flags)
                    for tag in ("carried", "cast"):
                        train(tag, "--steps", STEPS, "--metrics", path(f"{tag}.jsonl"),
                              "--save-weights", path(f"{tag}.safetensors"))
                    checkpoints = path("checkpoints")
                    train("carried", "--steps", STEPS // 2, "--checkpoint-dir", checkpoints,
                          "--checkpoint-every", STEPS // 2)
                    train("carried", "--steps", STEPS, "--checkpoint-dir", checkpoints,
                          "--checkpoint-every", STEPS // 2, "--resume",
                          "--metrics", path("resumed.jsonl"),
                          "--save-weights", path("resumed.safetensors"))
                    losses = lambda tag: [(m["step"], m["loss"], m["grad_norm"])
                                          for m in map(json.loads, open(path(f"{tag}.jsonl")))
                                          if "loss" in m]
                    self.assertEqual(len(losses("carried")), STEPS)
                    self.assertEqual(losses("carried"), losses("cast"))
                    self.assertEqual(losses("resumed"), losses("carried")[STEPS // 2:])
                    # Two data-parallel ranks: each writes its own copies.
                    for tag, flags in (("dp-carried", ()), ("dp-cast", ("--no-fuse=compute-copies",))):
                        run("tgc", "compile", model, "--train", TRAIN, "--dtype=bf16",
                            "--gemm=generated", "--mesh", "dp=2", *flags, "-o", path(f"{tag}.tgx"))
                        train(tag, "-n", 2, "--steps", STEPS // 2,
                              "--save-weights", path(f"{tag}.safetensors"))
                    carried = safetensors_io.load(path("carried.safetensors"))
                    for tag in ("cast", "resumed"):
                        other = safetensors_io.load(path(f"{tag}.safetensors"))
                        self.assertEqual(sorted(other), sorted(carried))
                        for key in carried:
                            np.testing.assert_array_equal(carried[key].numpy(), other[key].numpy(),
                                                          err_msg=f"{tag} {key}")
                    dp = [safetensors_io.load(path(f"{tag}.safetensors")) for tag in ("dp-carried", "dp-cast")]
                    for key in carried:
                        np.testing.assert_array_equal(dp[0][key].numpy(), dp[1][key].numpy(),
                                                      err_msg=f"dp=2 {key}")


if __name__ == "__main__":
    unittest.main()
