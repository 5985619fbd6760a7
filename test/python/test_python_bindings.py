"""The Python bindings (issue 14, first part): `tgc.Trainer` over the
runtime's C API trains a compiled program exactly as tgrun does (bit for
bit, same artifact, data and init) and as PyTorch in float64 (within 1e-4 a
step), reads and writes weights by Hugging Face name, evaluates and gives
logits, round-trips checkpoints, and turns misuse into Python exceptions,
never a crash."""
import gc
import json
import os
import subprocess
import sys
import tempfile
import unittest

import numpy as np
import torch

from tgtest import configs, models, safetensors_io
from tgtest.reference import batch, torch_training
from tgtest.tools import BIN, model_param_specs, random_params, run

PYTHON_DIR = os.path.join(BIN, "..", "python")
sys.path.insert(0, PYTHON_DIR)
import tgc  # noqa: E402  (the package the build writes to build/python)

TRAIN = configs.train_config()
STEPS = 5
FAMILIES = {"gpt2": configs.GPT2, "llama": configs.LLAMA}


class PythonBindings(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        gen = torch.Generator().manual_seed(14)
        json.dump(TRAIN, open(cls.path("train.json"), "w"))
        cls.programs, cls.init, cls.params, cls.tokens = {}, {}, {}, {}
        for family, model in FAMILIES.items():
            json.dump(model, open(cls.path(family + ".json"), "w"))
            run("tgc", "compile", cls.path(family + ".json"), "--train", cls.path("train.json"),
                "-o", cls.path(family + ".tgx"))
            cls.programs[family] = cls.path(family + ".tgx")
            params = random_params(model_param_specs(cls.path(family + ".json"),
                                                     cls.path("train.json"),
                                                     cls.path(family + ".mlir")), gen)
            cls.init[family] = cls.path(family + "-init.safetensors")
            safetensors_io.save(cls.init[family], {k: v.float() for k, v in params.items()})
            cls.params[family] = {k: v.float().double() for k, v in params.items()}
            tokens = torch.randint(0, model["vocab_size"], (173,), generator=gen).numpy()
            cls.tokens[family] = tokens.astype(np.uint16)
            cls.tokens[family].tofile(cls.path(family + "-tokens.bin"))

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    @classmethod
    def path(cls, name):
        return os.path.join(cls.tmp.name, name)

    def trainer(self, family, init=True):
        return tgc.Trainer(tgc.Program(self.programs[family]),
                           init=self.init[family] if init else None)

    def batch(self, family, step):
        x, y = batch(self.tokens[family], TRAIN, step)
        return x.numpy(), y.numpy()

    def test_import_from_the_build(self):
        out = subprocess.run([sys.executable, "-c", "import tgc; print(tgc.version())"],
                             env=dict(os.environ, PYTHONPATH=PYTHON_DIR), capture_output=True,
                             text=True)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertRegex(out.stdout.strip(), r"^\d+\.\d+\.\d+$")

    def test_matches_tgrun_bit_for_bit_and_torch(self):
        for family in FAMILIES:
            with self.subTest(family):
                m = self.path(family + "-metrics.jsonl")
                run("tgrun", self.programs[family], "--init", self.init[family], "--data",
                    self.path(family + "-tokens.bin"), "--steps", STEPS, "--metrics", m,
                    "--save-weights", self.path(family + "-final.safetensors"))
                expected = [json.loads(line)["loss"] for line in open(m)]
                with self.trainer(family) as t:
                    losses = [t.step(*self.batch(family, s)) for s in range(STEPS)]
                    self.assertEqual(losses, expected)
                    self.assertEqual(t.steps_done, STEPS)
                    weights = t.weights()
                saved = safetensors_io.load(self.path(family + "-final.safetensors"))
                self.assertEqual(set(weights), set(saved))
                for name, array in weights.items():
                    self.assertTrue(np.array_equal(array, saved[name].numpy()), name)
                ref, _, _ = torch_training(FAMILIES[family], TRAIN, self.params[family],
                                           self.tokens[family], STEPS)
                for step, (got, want) in enumerate(zip(losses, ref)):
                    self.assertLess(abs(got - want), 1e-4, f"step {step + 1}")

    def test_eval_logits_and_weights(self):
        family = "llama"
        with self.trainer(family) as t:
            x, y = self.batch(family, 0)
            before = t.eval(x, y)
            self.assertEqual(t.steps_done, 0)
            self.assertLess(abs(before - t.step(x, y)) / before, 1e-6)
            rows = x[:TRAIN["batch_size"]]
            logits = t.logits(rows)
            self.assertEqual(logits.shape, (TRAIN["batch_size"], TRAIN["seq_len"],
                                            FAMILIES[family]["vocab_size"]))
            trained = {k: torch.from_numpy(v).double() for k, v in t.weights().items()}
            with torch.no_grad():
                ref = models.logits(FAMILIES[family], trained, torch.from_numpy(rows).long())
            self.assertLess((torch.from_numpy(logits).double() - ref).norm() / ref.norm(), 1e-5)
            # A replaced weight is what the trainer then holds and evaluates.
            name, shape, dtype = t.parameters()[0]
            value = np.full(shape, 0.01, dtype=dtype)
            t.set_weight(name, value)
            self.assertTrue(np.array_equal(t.weights()[name], value))
            self.assertNotEqual(t.eval(x, y), before)

    def test_checkpoints_round_trip(self):
        family = "gpt2"
        ckpt = self.path("py.safetensors")
        with self.trainer(family) as t:
            for s in range(2):
                t.step(*self.batch(family, s))
            t.save_checkpoint(ckpt, data_position=2)
            third = t.step(*self.batch(family, 2))
        with self.trainer(family, init=False) as t:
            self.assertEqual(t.load_checkpoint(ckpt), 2)
            self.assertEqual(t.steps_done, 2)
            self.assertEqual(t.step(*self.batch(family, 2)), third)

    def test_the_documented_example_runs(self):
        doc = open(os.path.join(os.path.dirname(__file__), "..", "..", "docs", "embedding.md")).read()
        example = doc.split("```python\n", 1)[1].split("```", 1)[0]
        work = self.path("example")
        os.makedirs(work, exist_ok=True)
        os.symlink(self.programs["gpt2"], os.path.join(work, "step.tgx"))
        os.symlink(self.path("gpt2-tokens.bin"), os.path.join(work, "tokens.bin"))
        out = subprocess.run([sys.executable, "-c", example], cwd=work, capture_output=True,
                             text=True, env=dict(os.environ, PYTHONPATH=PYTHON_DIR))
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIn("step 3: loss", out.stdout)
        self.assertTrue(os.path.exists(os.path.join(work, "ckpt.safetensors")))

    def test_misuse_raises_never_crashes(self):
        family = "gpt2"
        x, y = self.batch(family, 0)
        program = tgc.Program(self.programs[family])
        t = tgc.Trainer(program, init=self.init[family])
        # The trainer holds its program: dropping the caller's reference is safe.
        del program
        gc.collect()
        t.step(x, y)
        with self.assertRaisesRegex(TypeError, "inputs must hold integer token ids"):
            t.step(x.astype(np.float32), y)
        with self.assertRaisesRegex(ValueError, r"targets has shape \(4, 5\), expected \(4, 6\)"):
            t.step(x, y[:, :5])
        bad = x.copy()
        bad[0, 0] = FAMILIES[family]["vocab_size"]
        with self.assertRaisesRegex(tgc.TgcError, r"tokens\[0\] is 29, outside the vocabulary"):
            t.step(bad, y)
        with self.assertRaisesRegex(KeyError, "no parameter 'nope'"):
            t.weight("nope")
        with self.assertRaisesRegex(KeyError, "no parameter 'nope'"):
            t.set_weight("nope", np.zeros(3))
        name, shape, _ = t.parameters()[0]
        with self.assertRaisesRegex(ValueError, "has shape"):
            t.set_weight(name, np.zeros((1,) + shape))
        with self.assertRaisesRegex(tgc.TgcError, "non-finite"):
            t.set_weight(name, np.full(shape, np.inf))
        # Weights large enough to overflow: the step fails, and so do the
        # next ones, naming the step that diverged.
        for n, s, d in t.parameters():
            t.set_weight(n, np.full(s, 1e30, dtype=d))
        with self.assertRaisesRegex(tgc.TgcError, "training diverged at step 2"):
            t.step(x, y)
        with self.assertRaisesRegex(tgc.TgcError, "went non-finite at step 2"):
            t.step(x, y)
        with self.assertRaisesRegex(tgc.TgcError, "cannot read"):
            t.load_checkpoint(self.path("missing.safetensors"))
        t.close()
        with self.assertRaisesRegex(tgc.TgcError, "the trainer is closed"):
            t.step(x, y)
        with self.assertRaisesRegex(tgc.TgcError, "junk.tgx: not a .tgx artifact"):
            tgc.Trainer(tgc.Program(b"\0" * 64, name="junk.tgx"))
        with self.assertRaisesRegex(TypeError, "takes a tgc.Program"):
            tgc.Trainer(self.programs[family])


if __name__ == "__main__":
    unittest.main()
