"""Evaluation and generation (issue 13, item 5), against float64 PyTorch.

The artifact's eval_step gives the loss of the current weights without an
update: tgrun --eval-data reports it (and the perplexity) after the last
step and every --eval-every steps, equal to PyTorch's loss of the same
weights on the same batches, to the loss the training step reports for the
batch before updating, and the same on 1, 2 and 4 ranks (data, tensor
parallel). The logits function drives `tgrun generate`: every greedy token
is the argmax of PyTorch's float64 logits for the sequence so far (its last
seq_len tokens, as the generator windows it), sampling is seeded and stays
within the top k, and bad requests fail by name."""
import json
import math
import os
import tempfile
import unittest

import numpy as np
import torch

from tgtest import configs, models
from tgtest.reference import batch, torch_training
from tgtest.tools import run, run_status, write_family

TRAIN = configs.train_config()  # batch 4, seq 6, lr 1e-2, constant
SEQ = TRAIN["seq_len"]
FAMILIES = {"gpt2": configs.GPT2, "llama": configs.LLAMA}


def metrics(path):
    return [json.loads(line) for line in open(path)]


class EvalGenerate(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.artifacts, cls.params, cls.init, cls.tokens = {}, {}, {}, {}
        gen = torch.Generator().manual_seed(13)
        json.dump(TRAIN, open(cls.path("train.json"), "w"))
        for family, model in FAMILIES.items():
            cls.init[family], cls.params[family], cls.tokens[family] = write_family(
                cls.path, family, model, cls.path("train.json"), gen, 157)
            cls.artifacts[family] = cls.compile(family)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    @classmethod
    def path(cls, name):
        return os.path.join(cls.tmp.name, name)

    @classmethod
    def compile(cls, family, *flags, name=None):
        out = cls.path((name or family) + ".tgx")
        run("tgc", "compile", cls.path(family + ".json"), "--train", cls.path("train.json"),
            *flags, "-o", out)
        return out

    def torch_eval(self, family, params, batches):
        """PyTorch's mean loss of `params` over the first `batches` batches."""
        model = FAMILIES[family]
        with torch.no_grad():
            losses = [models.loss(model, params, *batch(self.tokens[family], TRAIN, k))[0].item()
                      for k in range(batches)]
        return sum(losses) / batches

    def tgrun_eval(self, family, *flags, artifact=None, ranks=1, batches=3):
        m = self.path(family + "-eval.jsonl")
        args = ["-n", ranks] if ranks > 1 else []
        out = run("tgrun", *args, artifact or self.artifacts[family], "--init", self.init[family],
                  "--data", self.path(family + "-tokens.bin"), "--eval-data",
                  self.path(family + "-tokens.bin"), "--eval-batches", batches, "--metrics", m,
                  *flags)
        return metrics(m), out

    def test_eval_matches_torch_and_the_training_step(self):
        for family in FAMILIES:
            with self.subTest(family):
                lines, out = self.tgrun_eval(family, "--steps", 0)
                self.assertEqual(len(lines), 1)
                ref = self.torch_eval(family, self.params[family], 3)
                # float32 forward, three batches of 24 tokens: measured ~1e-7.
                self.assertLess(abs(lines[0]["eval_loss"] - ref) / ref, 1e-5)
                self.assertAlmostEqual(lines[0]["eval_perplexity"], math.exp(lines[0]["eval_loss"]),
                                       places=9)
                self.assertEqual(lines[0]["eval_tokens"], 3 * TRAIN["batch_size"] * SEQ)
                self.assertIn("eval at step 0: loss", out)
                # The first training step reports the loss of the same weights
                # on batch 0 before it updates them: the same forward.
                one, _ = self.tgrun_eval(family, "--steps", 0, batches=1)
                m = self.path("step.jsonl")
                run("tgrun", self.artifacts[family], "--init", self.init[family], "--data",
                    self.path(family + "-tokens.bin"), "--steps", 1, "--metrics", m)
                step = metrics(m)[0]["loss"]
                self.assertLess(abs(one[0]["eval_loss"] - step) / step, 1e-6)

    def test_eval_during_training_sees_the_updated_weights(self):
        family = "llama"
        lines, _ = self.tgrun_eval(family, "--steps", 4, "--eval-every", 2, batches=2)
        evals = [line for line in lines if "eval_loss" in line]
        self.assertEqual([e["step"] for e in evals], [2, 4])
        self.assertEqual(len([line for line in lines if "grad_norm" in line]), 4)
        for e in evals:
            _, _, trained = torch_training(FAMILIES[family], TRAIN, self.params[family],
                                           self.tokens[family], e["step"])
            ref = self.torch_eval(family, trained, 2)
            # Four f32 AdamW steps at lr 1e-2 drift ~1e-6 from float64.
            self.assertLess(abs(e["eval_loss"] - ref) / ref, 1e-4, f"step {e['step']}")
        self.assertNotEqual(evals[0]["eval_loss"], evals[1]["eval_loss"])

    def test_eval_on_several_ranks_matches_one(self):
        one = {f: self.tgrun_eval(f, "--steps", 0)[0][0]["eval_loss"] for f in FAMILIES}
        for family, mesh in [("gpt2", "dp=2"), ("llama", "tp=2"), ("gpt2", "dp=2,tp=2")]:
            with self.subTest(family=family, mesh=mesh):
                artifact = self.compile(family, "--mesh", mesh, name=family + mesh.replace(",", "-"))
                ranks = 4 if "," in mesh else 2
                lines, _ = self.tgrun_eval(family, "--steps", 0, artifact=artifact, ranks=ranks)
                self.assertLess(abs(lines[0]["eval_loss"] - one[family]) / one[family], 1e-6)

    def generate(self, family, prompts, *flags, init=None):
        return run("tgrun", "generate", self.artifacts[family], "--init", init or self.init[family],
                   *[a for p in prompts for a in ("--prompt", " ".join(map(str, p)))],
                   *flags).splitlines()

    def torch_next_logits(self, family, sequence):
        """PyTorch's float64 logits for the token after `sequence`, from its
        last SEQ tokens (positions from 0), as the generator windows it."""
        window = torch.tensor([sequence[-SEQ:]], dtype=torch.int64)
        with torch.no_grad():
            return models.logits(FAMILIES[family], self.params[family], window)[0, -1]

    def prompts(self, family, count=6):
        rng = np.random.default_rng(len(family))
        # Lengths from 1 to past seq_len (6): the window slides.
        return [rng.integers(0, FAMILIES[family]["vocab_size"], size=n).tolist()
                for n in [1, 3, 5, 6, 8, 2][:count]]

    def test_greedy_tokens_are_the_float64_argmax(self):
        for family in FAMILIES:
            with self.subTest(family):
                prompts = self.prompts(family)
                lines = self.generate(family, prompts, "--max-new-tokens", 5)
                self.assertEqual(len(lines), len(prompts))
                exact = 0
                for prompt, line in zip(prompts, lines):
                    new = [int(t) for t in line.split()]
                    self.assertEqual(len(new), 5)
                    sequence = list(prompt)
                    for token in new:
                        logits = self.torch_next_logits(family, sequence)
                        best = logits.max().item()
                        # float32 logits: a near-tie may resolve either way.
                        self.assertGreaterEqual(logits[token].item(), best - 1e-4 * max(1, abs(best)))
                        exact += logits.argmax().item() == token
                        sequence.append(token)
                self.assertEqual(exact, 5 * len(prompts))

    def test_sampling_is_seeded_and_stays_in_the_top_k(self):
        family = "gpt2"
        prompts = self.prompts(family, 5)
        flags = ["--max-new-tokens", 5, "--temperature", 5, "--top-k", 3]
        first = self.generate(family, prompts, *flags, "--seed", 1)
        self.assertEqual(first, self.generate(family, prompts, *flags, "--seed", 1))
        self.assertNotEqual(first, self.generate(family, prompts, *flags, "--seed", 2))
        for prompt, line in zip(prompts, first):
            sequence = list(prompt)
            for token in map(int, line.split()):
                logits = self.torch_next_logits(family, sequence)
                third = torch.topk(logits, 3).values[-1].item()
                self.assertGreaterEqual(logits[token].item(), third - 1e-4 * max(1, abs(third)))
                sequence.append(token)
        # top-k 1 is greedy whatever the temperature.
        self.assertEqual(self.generate(family, prompts, "--max-new-tokens", 5, "--temperature", 2,
                                       "--top-k", 1),
                         self.generate(family, prompts, "--max-new-tokens", 5))

    def test_stop_token_ends_a_sequence(self):
        family = "llama"
        prompts = self.prompts(family, 3)
        greedy = [line.split() for line in self.generate(family, prompts, "--max-new-tokens", 5)]
        stop = greedy[0][1]
        stopped = [line.split() for line in
                   self.generate(family, prompts, "--max-new-tokens", 5, "--stop", stop)]
        for full, cut in zip(greedy, stopped):
            expected = full[:full.index(stop) + 1] if stop in full else full
            self.assertEqual(cut, expected)

    def test_bad_requests_fail_by_name(self):
        family = "gpt2"
        artifact = self.artifacts[family]
        data = self.path(family + "-tokens.bin")
        dp = self.compile(family, "--mesh", "dp=2", name="gpt2-dp-generate")
        code, _, err = run_status("tgrun", "generate", dp, "--init", self.init[family],
                                  "--prompt", "1 2")
        self.assertEqual(code, 1)
        self.assertIn("has no 'logits' function", err)
        self.assertIn("without --mesh", err)
        vocab = FAMILIES[family]["vocab_size"]
        code, _, err = run_status("tgrun", "generate", artifact, "--init", self.init[family],
                                  "--prompt", f"1 {vocab}")
        self.assertEqual(code, 1)
        self.assertIn(f"--prompt #1 has the token id {vocab}, outside the program's vocabulary", err)
        for flags, message in [
                (["--prompt", "1 x"], "--prompt #1 is not a list of token ids"),
                (["--prompt", "1", "--top-k", "3"], "--top-k samples, so it needs a --temperature"),
                (["--prompt", "1", "--temperature", "-1"], "--temperature needs a number >= 0"),
                ([], "give the prompts with --prompt or --prompts FILE")]:
            code, _, err = run_status("tgrun", "generate", artifact, "--init", self.init[family],
                                      *flags)
            self.assertNotEqual(code, 0, flags)
            self.assertIn(message, err)
        code, _, err = run_status("tgrun", "generate", artifact, "--prompt", "1")
        self.assertEqual(code, 2)
        self.assertIn("give the weights with either --init or --checkpoint", err)
        code, _, err = run_status("tgrun", artifact, "--data", data, "--eval-every", 2)
        self.assertEqual(code, 2)
        self.assertIn("--eval-every and --eval-batches need --eval-data", err)
        code, _, err = run_status("tgrun", artifact, "--data", data, "--eval-data",
                                  self.path("missing.bin"))
        self.assertEqual(code, 1)
        self.assertIn("missing.bin", err)


if __name__ == "__main__":
    unittest.main()
