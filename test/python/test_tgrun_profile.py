"""tgrun --profile on the tiny GPT-2: a Chrome trace with one complete event
per command per step, steps one after another on the time line, GEMMs with
their FLOPs, the table of the commands that took the most time, and a bad
trace path refused before any step runs."""
import json
import os
import re
import tempfile
import unittest

import numpy as np

from tgtest.tools import run, run_status

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
MODEL = os.path.join(ROOT, "examples", "models", "gpt2-tiny.json")
TRAIN = os.path.join(ROOT, "examples", "train", "tiny.json")
STEPS = 2


class TgrunProfile(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.dir = cls.tmp.name
        vocab_size = json.load(open(MODEL))["vocab_size"]
        np.random.default_rng(5).integers(0, vocab_size, 4000).astype(np.uint16).tofile(
            cls.path("tokens.bin"))
        run("tgc", "compile", MODEL, "--train", TRAIN, "-o", cls.path("m.tgx"))
        cls.stats = json.loads(run("tgc", "compile", MODEL, "--train", TRAIN, "--stats=json"))
        cls.out = cls.train("--profile", cls.path("trace.json"),
                            "--metrics", cls.path("profiled.jsonl"))
        cls.trace = json.load(open(cls.path("trace.json")))
        cls.events = [e for e in cls.trace["traceEvents"] if e["ph"] == "X"]

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    @classmethod
    def path(cls, name):
        return os.path.join(cls.dir, name)

    @classmethod
    def train(cls, *flags):
        return run("tgrun", cls.path("m.tgx"), "--data", cls.path("tokens.bin"), "--steps", STEPS, *flags)

    def step_events(self, step):
        return [e for e in self.events if e["args"]["step"] == step]

    def test_one_event_per_command_per_step(self):
        self.assertEqual(self.trace["displayTimeUnit"], "ms")
        self.assertEqual(len(self.events), STEPS * self.stats["commands"])
        for step in range(1, STEPS + 1):
            events = self.step_events(step)
            self.assertEqual(len(events), self.stats["commands"], f"step {step}")
            self.assertEqual(sum(e["cat"] == "gemm" for e in events), self.stats["library_calls"])
        for e in self.events:
            self.assertIn(e["cat"], ("kernel", "gemm", "copy"))
            self.assertTrue(e["name"], e)
            self.assertGreaterEqual(e["dur"], 0, e)
            self.assertGreaterEqual(e["ts"], 0, e)
            self.assertEqual(e["pid"], 0)
            self.assertIsInstance(e["tid"], int)
            self.assertGreater(e["args"]["bytes"], 0, e)

    def test_steps_follow_each_other(self):
        for step in range(1, STEPS):
            end = max(e["ts"] + e["dur"] for e in self.step_events(step))
            start = min(e["ts"] for e in self.step_events(step + 1))
            self.assertGreaterEqual(start, end, f"step {step + 1} overlaps step {step}")

    def test_gemms_carry_their_flops(self):
        gemms = [e for e in self.events if e["cat"] == "gemm"]
        self.assertTrue(gemms)
        for e in gemms:
            self.assertGreater(e["args"]["flops"], 0, e)
        for e in self.events:
            if e["cat"] != "gemm":
                self.assertEqual(e["args"]["flops"], 0, e)

    def test_table_of_top_commands(self):
        lines = self.out.splitlines()
        header = next(i for i, line in enumerate(lines) if "total ms" in line)
        self.assertEqual(lines[header].split(), ["total", "ms", "share", "%", "calls", "mean", "us",
                                                 "GB/s", "TFLOP/s", "kind", "command"])
        rows = lines[header + 1:]
        self.assertEqual(len(rows), 15)
        gemm_rows = [row.split() for row in rows if row.split()[5] == "gemm"]
        self.assertTrue(gemm_rows, "no GEMM among the top commands:\n" + self.out)
        for total_ms, share, calls, mean_us, tflops, kind, *label in gemm_rows:
            self.assertEqual(int(calls), STEPS)
            self.assertGreater(float(tflops), 0)
            self.assertTrue(label)
        totals = [float(row.split()[0]) for row in rows]
        self.assertEqual(totals, sorted(totals, reverse=True))
        self.assertRegex(self.out, rf"profiled steps 1 to {STEPS} \({self.stats['commands']} commands a step")

    def test_profiling_does_not_change_the_step(self):
        self.train("--metrics", self.path("plain.jsonl"))
        losses = [[json.loads(line)[key] for key in ("loss", "grad_norm", "lr")]
                  for name in ("plain.jsonl", "profiled.jsonl") for line in open(self.path(name))]
        self.assertEqual(losses[:STEPS], losses[STEPS:])

    def test_bad_profile_path_fails_before_training(self):
        for bad in (self.dir, self.path("missing/trace.json")):
            code, out, err = run_status("tgrun", self.path("m.tgx"), "--data", self.path("tokens.bin"),
                                        "--steps", STEPS, "--profile", bad)
            self.assertEqual(code, 1, err)
            self.assertIn(f"tgrun: error: cannot open the profile file ({bad})", err)
            self.assertNotRegex(out, re.compile(r"^step ", re.M), "a step ran before the error")


if __name__ == "__main__":
    unittest.main()
