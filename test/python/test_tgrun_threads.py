"""tgrun --threads N (issue 12): the generated kernels' large loops and the
matrix products run on one pool of N threads, and the training run is the
same at every N.

Each thread takes a contiguous block of a loop's iterations (every iteration
computes the same elements with the same operations as on one thread), whole
products of a batched matrix product, or bands of a product's rows that
OpenBLAS tiles as it tiles the whole product (runtime.md, "Threads"), so the
losses, gradient norms and final weights are required to be bitwise equal,
not merely close. 3 threads on this 2-core machine also cover uneven chunks and
a pool larger than the cores.
"""
import json
import os
import re
import tempfile
import unittest

import numpy as np

from tgtest import safetensors_io
from tgtest.tools import run, run_status

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
MODEL = os.path.join(ROOT, "examples", "models", "gpt2-tiny.json")
TRAIN = os.path.join(ROOT, "examples", "train", "tiny.json")
STEPS = 5
THREADS = (1, 2, 3)


class TgrunThreads(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.dir = cls.tmp.name
        vocab_size = json.load(open(MODEL))["vocab_size"]
        np.random.default_rng(12).integers(0, vocab_size, 20000).astype(np.uint16).tofile(
            cls.path("tokens.bin"))
        # The example's step, and one with 64 attention products of 64 x 64
        # per batched GEMM, which the pool splits by product rather than by
        # rows.
        long_train = dict(json.load(open(TRAIN)), batch_size=16, seq_len=64)
        json.dump(long_train, open(cls.path("long.json"), "w"))
        cls.configs = {"tiny": TRAIN, "long": cls.path("long.json")}
        cls.parallel_loops = {}
        for name, train in cls.configs.items():
            code, _, ir = run_status("tgc", "compile", MODEL, "--train", train, "-o",
                                     cls.path(f"{name}.tgx"),
                                     "--mlir-print-ir-after=tg-cpu-parallelize-loops")
            assert code == 0, ir
            cls.parallel_loops[name] = len(re.findall(r"func\.func private @\w+_par\d+\(", ir))

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    @classmethod
    def path(cls, name):
        return os.path.join(cls.dir, name)

    def train(self, name, threads):
        tag = f"{name}-{threads}"
        metrics, weights = self.path(f"{tag}.jsonl"), self.path(f"{tag}.safetensors")
        run("tgrun", self.path(f"{name}.tgx"), "--data", self.path("tokens.bin"), "--steps", STEPS,
            "--threads", threads, "--metrics", metrics, "--save-weights", weights)
        steps = [json.loads(line) for line in open(metrics)]
        return [(s["loss"], s["grad_norm"]) for s in steps], safetensors_io.load(weights)

    def check(self, name):
        # Without outlined loops only the matrix products would be shared.
        self.assertGreater(self.parallel_loops[name], 0)
        serial, serial_weights = self.train(name, 1)
        self.assertEqual(len(serial), STEPS)
        for threads in THREADS[1:]:
            with self.subTest(threads=threads):
                steps, weights = self.train(name, threads)
                self.assertEqual(steps, serial)
                self.assertEqual(weights.keys(), serial_weights.keys())
                for key, value in weights.items():
                    np.testing.assert_array_equal(value, serial_weights[key], err_msg=key)

    def test_tiny_step_is_the_same_on_every_thread_count(self):
        self.check("tiny")

    def test_batched_products_split_by_product(self):
        self.check("long")


if __name__ == "__main__":
    unittest.main()
