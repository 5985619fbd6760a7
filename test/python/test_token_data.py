"""Token data (issue 13, item 4): the same token stream packed by
scripts/pack-tokens as flat uint16, flat uint32 and a Megatron-LM indexed
dataset (documents of random lengths, concatenated in order) trains to the
same losses bit for bit; tgrun finds a Megatron dataset by itself; a run
that will read its data more than once says so; uint16 data for a
vocabulary above 65,535 is refused by the packer and by tgrun, never
truncated. (The readers' checks of damaged files are in DatasetTest.cpp.)"""
import json
import os
import struct
import subprocess
import tempfile
import unittest

import numpy as np

from tgtest.tools import BIN, run, run_status

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
PACK = os.path.join(ROOT, "scripts", "pack-tokens")
MODEL = {"model_type": "gpt2", "vocab_size": 61, "n_positions": 16, "n_embd": 16, "n_layer": 1,
         "n_head": 2, "tie_word_embeddings": True}
TRAIN = {"batch_size": 4, "seq_len": 8, "seed": 3, "precision": "fp32",
         "optimizer": {"type": "adamw", "lr": 1e-2, "betas": [0.9, 0.95], "eps": 1e-8,
                       "weight_decay": 0.1},
         "grad_clip_norm": 1.0,
         "lr_schedule": {"type": "cosine", "warmup_steps": 2, "min_lr": 1e-3, "decay_steps": 10}}


def pack(*args):
    result = subprocess.run(["/usr/bin/python3", PACK, *map(str, args)], capture_output=True,
                            text=True)
    return result.returncode, result.stdout, result.stderr


class TokenData(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.dir = cls.tmp.name
        cls.program = cls.compile(MODEL, "model")
        rng = np.random.default_rng(5)
        cls.docs = [rng.integers(0, MODEL["vocab_size"], size=int(n))
                    for n in rng.integers(0, 40, size=60)]
        np.savez(cls.path("docs.npz"), *cls.docs)

    @classmethod
    def path(cls, name):
        return os.path.join(cls.dir, name)

    @classmethod
    def compile(cls, model, name):
        json.dump(model, open(cls.path(name + ".json"), "w"))
        json.dump(TRAIN, open(cls.path("train.json"), "w"))
        run("tgc", "compile", cls.path(name + ".json"), "--train", cls.path("train.json"),
            "-o", cls.path(name + ".tgx"))
        return cls.path(name + ".tgx")

    def losses(self, data, *flags, steps=6):
        metrics = self.path("m.jsonl")
        out = run("tgrun", self.program, "--data", data, "--steps", steps, "--metrics", metrics,
                  *flags)
        return [json.loads(line)["loss"] for line in open(metrics)], out

    def test_every_format_trains_alike(self):
        code, out, err = pack("-o", self.path("flat16.bin"), self.path("docs.npz"))
        self.assertEqual(code, 0, err)
        self.assertIn("(uint16, uint16 ids)", out)
        self.assertEqual(pack("--format", "uint32", "-o", self.path("flat32.bin"),
                              self.path("docs.npz"))[0], 0)
        code, out, err = pack("--format", "megatron", "--vocab-size", MODEL["vocab_size"],
                              "-o", self.path("corpus"), self.path("docs.npz"))
        self.assertEqual(code, 0, err)
        tokens = sum(d.size for d in self.docs)
        self.assertIn(f"{tokens} tokens in {len(self.docs)} documents", out)
        stream = np.concatenate(self.docs)
        self.assertEqual(np.fromfile(self.path("flat16.bin"), "<u2").tolist(), stream.tolist())
        self.assertEqual(np.fromfile(self.path("flat32.bin"), "<u4").tolist(), stream.tolist())
        self.assertEqual(open(self.path("corpus.bin"), "rb").read(),
                         open(self.path("flat16.bin"), "rb").read())
        idx = open(self.path("corpus.idx"), "rb").read()
        self.assertEqual(idx[:18], b"MMIDIDX\x00\x00" + struct.pack("<QB", 1, 8))
        self.assertEqual(struct.unpack("<QQ", idx[18:34]), (len(self.docs), len(self.docs) + 1))

        reference, _ = self.losses(self.path("flat16.bin"))
        for data, flags, says in ((self.path("flat32.bin"), ("--data-format", "uint32"), "32-bit"),
                                  (self.path("corpus"), (), "Megatron, 60 documents, uint16"),
                                  (self.path("corpus.idx"), (), "Megatron"),
                                  (self.path("corpus.bin"), ("--data-format", "megatron"),
                                   "Megatron")):
            with self.subTest(data=os.path.basename(data), flags=flags):
                losses, out = self.losses(data, *flags)
                self.assertEqual(losses, reference)
                self.assertIn(f"{tokens} tokens of data ({says}", out)

    def test_a_run_that_wraps_around_its_data_says_so(self):
        # 200 tokens, T = 8, B = 4: one pass holds ceil(192 / 8) = 24 samples,
        # 6 steps; 7 steps read past it.
        np.save(self.path("short.npy"), np.arange(200) % MODEL["vocab_size"])
        self.assertEqual(pack("-o", self.path("short.bin"), self.path("short.npy"))[0], 0)
        code, _, err = run_status("tgrun", self.program, "--data", self.path("short.bin"),
                                  "--steps", 6)
        self.assertEqual(code, 0, err)
        self.assertNotIn("warning", err)
        code, _, err = run_status("tgrun", self.program, "--data", self.path("short.bin"),
                                  "--steps", 7)
        self.assertEqual(code, 0, err)
        self.assertIn("short.bin holds 200 tokens: one pass over it is 6 steps of 4 x 8 tokens, "
                      "and this run reads up to step 7 of it", err)

    def test_uint16_data_cannot_serve_a_large_vocabulary(self):
        big = dict(MODEL, vocab_size=70000)
        np.save(self.path("big.npy"), np.array([5, 69999, 3] * 30))
        code, _, err = pack("--format", "uint16", "--vocab-size", 70000, "-o",
                            self.path("big16.bin"), self.path("big.npy"))
        self.assertNotEqual(code, 0)
        self.assertIn("above 65,535", err)
        code, _, err = pack("-o", self.path("big16.bin"), self.path("big.npy"), "--vocab-size", 60)
        self.assertNotEqual(code, 0)
        self.assertIn("holds token id 69999, outside [0, 60)", err)
        # Packed as uint32 by default, read as uint32 by default.
        self.assertEqual(pack("--vocab-size", 70000, "-o", self.path("big32.bin"),
                              self.path("big.npy"))[0], 0)
        program = self.compile(big, "big")
        run("tgrun", program, "--data", self.path("big32.bin"), "--steps", 1)
        # The same ids truncated to 16 bits would be a silent disaster: refused.
        np.array([5, 4464, 3] * 30, dtype="<u2").tofile(self.path("big16.bin"))
        code, _, err = run_status("tgrun", program, "--data", self.path("big16.bin"),
                                  "--data-format", "uint16", "--steps", 1)
        self.assertEqual(code, 1)
        self.assertIn("big16.bin: holds uint16 token ids, but the vocabulary has 70000 tokens", err)


if __name__ == "__main__":
    unittest.main()
