"""tgrun end to end on a compiled artifact: resuming from a checkpoint gives
the losses of an uninterrupted run bit for bit, a --emit=exe binary trains
like tgrun, and corrupted or truncated artifacts and checkpoints are rejected
with a message naming the file, never a crash."""
import glob
import json
import os
import random
import re
import subprocess
import tempfile
import unittest

import numpy as np

from tgtest.tools import BIN, run, run_status

MODEL = {"model_type": "gpt2", "vocab_size": 41, "n_positions": 16, "n_embd": 16, "n_layer": 2,
         "n_head": 2, "n_inner": None, "layer_norm_epsilon": 1e-5, "activation_function": "gelu_new",
         "tie_word_embeddings": True}
TRAIN = {"batch_size": 4, "seq_len": 8, "seed": 7, "precision": "fp32",
         "optimizer": {"type": "adamw", "lr": 1e-2, "betas": [0.9, 0.95], "eps": 1e-8, "weight_decay": 0.1},
         "grad_clip_norm": 1.0,
         "lr_schedule": {"type": "cosine", "warmup_steps": 3, "min_lr": 1e-3, "decay_steps": 20}}


class TgrunCli(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.dir = cls.tmp.name
        json.dump(MODEL, open(cls.path("model.json"), "w"))
        json.dump(TRAIN, open(cls.path("train.json"), "w"))
        np.random.default_rng(3).integers(0, MODEL["vocab_size"], 301).astype(np.uint16).tofile(
            cls.path("tokens.bin"))
        run("tgc", "compile", cls.path("model.json"), "--train", cls.path("train.json"), "-o", cls.path("m.tgx"))

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    @classmethod
    def path(cls, name):
        return os.path.join(cls.dir, name)

    def train(self, *flags, artifact=None):
        tool_args = [artifact or self.path("m.tgx"), "--data", self.path("tokens.bin"), *flags]
        return run("tgrun", *tool_args)

    def metrics(self, name):
        return [json.loads(line) for line in open(self.path(name))]

    def test_restarts_with_the_blas_core_this_cpu_runs(self):
        # Where OpenBLAS did not know this CPU and chose kernels without AVX2,
        # tgrun restarts itself with OPENBLAS_CORETYPE set (OpenBLAS reads it
        # only as it loads), and --version names it; a core the user set is
        # kept, and so is a right choice.
        tool = os.path.join(BIN, "tgrun")
        env = {k: v for k, v in os.environ.items()
               if k not in ("OPENBLAS_CORETYPE", "TGRUN_OPENBLAS_CORETYPE")}
        chosen = subprocess.run([tool, "--version"], env=env, capture_output=True, text=True)
        self.assertEqual((chosen.returncode, chosen.stderr), (0, ""))
        lines = chosen.stdout.splitlines()
        self.assertIn("TGC", lines[0])
        if len(lines) > 1:  # restarted, once
            self.assertEqual(len(lines), 2, chosen.stdout)
            core = re.fullmatch(r"OpenBLAS: OPENBLAS_CORETYPE=(\w+), set by tgrun: .*", lines[1])
            self.assertIsNotNone(core, lines[1])
            self.assertIn(core.group(1), ("Cooperlake", "SkylakeX", "Haswell"))
        told = subprocess.run([tool, "--version"], env={**env, "OPENBLAS_CORETYPE": "Prescott"},
                              capture_output=True, text=True)
        self.assertEqual((told.returncode, told.stdout.count("\n"), told.stderr), (0, 1, ""))

    def test_resume_matches_uninterrupted_run(self):
        self.train("--steps", 20, "--metrics", self.path("straight.jsonl"),
                   "--save-weights", self.path("straight.safetensors"))
        ckpt = self.path("ckpt")
        self.train("--steps", 10, "--checkpoint-dir", ckpt, "--checkpoint-every", 5,
                   "--metrics", self.path("first.jsonl"))
        self.train("--steps", 20, "--checkpoint-dir", ckpt, "--checkpoint-every", 5, "--resume",
                   "--metrics", self.path("second.jsonl"), "--save-weights", self.path("resumed.safetensors"))
        straight = self.metrics("straight.jsonl")
        resumed = self.metrics("first.jsonl") + self.metrics("second.jsonl")
        self.assertEqual([m["step"] for m in resumed], list(range(1, 21)))
        for a, b in zip(straight, resumed):
            for key in ("loss", "grad_norm", "lr"):
                self.assertEqual(a[key], b[key], f"{key} at step {a['step']}")
        self.assertEqual(open(self.path("straight.safetensors"), "rb").read(),
                         open(self.path("resumed.safetensors"), "rb").read())

    def test_reports_mfu_and_what_it_loaded_and_saved(self):
        """With --peak-tflops, MFU (the artifact's FLOPs per step over the
        step time and the peak) is in the progress lines, the summary and
        the metrics; the CPU has no peak of its own, and the run says so.
        tgrun names the initial weights and the files it wrote."""
        flops = json.loads(run("tgc", "compile", self.path("model.json"), "--train",
                               self.path("train.json"), "--stats=json"))["flops_per_step"]
        out = self.train("--steps", 3, "--peak-tflops", 0.5, "--log-every", 1,
                         "--metrics", self.path("mfu.jsonl"),
                         "--save-weights", self.path("mfu.safetensors"),
                         "--checkpoint-dir", self.path("mfu-ckpt"))
        self.assertIn("against 0.5 TFLOP/s, --peak-tflops", out)
        self.assertEqual(len(re.findall(r"tok/s  MFU \d+\.\d%", out)), 3, out)
        self.assertRegex(out, r"tok/s, MFU \d+\.\d%\), final loss")
        for m in self.metrics("mfu.jsonl"):
            expected = flops / (m["step_ms"] / 1e3) / 0.5e12
            self.assertAlmostEqual(m["mfu"], expected, delta=1e-3 + 0.01 * expected)
        self.assertIn("tgrun: random initial weights (seed 7)", out)
        self.assertIn("checkpoint of step 3 written to " + self.path("mfu-ckpt") +
                      "/step-00000003.safetensors", out)
        self.assertIn("saved the weights of step 3 to " + self.path("mfu.safetensors"), out)
        out = self.train("--steps", 1, "--init", self.path("mfu.safetensors"),
                         "--metrics", self.path("no-mfu.jsonl"))
        self.assertIn("MFU not reported: tgrun knows no peak for the cpu; pass --peak-tflops", out)
        self.assertIn("initial weights from " + self.path("mfu.safetensors"), out)
        self.assertNotIn("mfu", self.metrics("no-mfu.jsonl")[0])
        self.assertIn("TGC", run("tgrun", "--version"))

    def test_plot_metrics_draws_the_run(self):
        """scripts/plot-metrics draws a run's metrics (loss, validation loss,
        gradient norm, tokens/s, MFU) into a PNG; a file that is not tgrun's
        metrics is refused with its line named."""
        self.train("--steps", 8, "--peak-tflops", 1, "--metrics", self.path("plot.jsonl"),
                   "--eval-data", self.path("tokens.bin"), "--eval-every", 4, "--eval-batches", 2)
        script = os.path.join(os.path.dirname(__file__), "..", "..", "scripts", "plot-metrics")
        result = subprocess.run([script, self.path("plot.jsonl"), "-o", self.path("plot.png")],
                                capture_output=True, text=True)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("8 steps, 2 evaluations", result.stdout)
        png = open(self.path("plot.png"), "rb").read()
        self.assertEqual(png[:8], b"\x89PNG\r\n\x1a\n")
        self.assertGreater(len(png), 10000)
        with open(self.path("plot.jsonl"), "a") as f:
            f.write("not json\n")
        result = subprocess.run([script, self.path("plot.jsonl"), "-o", self.path("bad.png")],
                                capture_output=True, text=True)
        self.assertEqual(result.returncode, 1)
        self.assertIn("plot.jsonl:11: not a JSON object", result.stderr)

    def test_sharded_weights_round_trip(self):
        """Above --max-shard-size, --save-weights writes Hugging Face shards
        and their index; --init reads the index or the directory and trains
        exactly as from the single file."""
        self.train("--steps", 3, "--save-weights", self.path("one.safetensors"))
        shards = self.path("sharded")
        os.makedirs(shards)
        self.train("--steps", 3, "--save-weights", os.path.join(shards, "model.safetensors"),
                   "--max-shard-size", "10kB")
        index = json.load(open(os.path.join(shards, "model.safetensors.index.json")))
        files = sorted(set(index["weight_map"].values()))
        self.assertGreater(len(files), 1)
        self.assertEqual(files, [f"model-{k:05d}-of-{len(files):05d}.safetensors"
                                 for k in range(1, len(files) + 1)])
        self.assertFalse(os.path.exists(os.path.join(shards, "model.safetensors")))
        sizes = 0
        for name in files:
            raw = open(os.path.join(shards, name), "rb").read()
            header = json.loads(raw[8:8 + int.from_bytes(raw[:8], "little")])
            sizes += sum(v["data_offsets"][1] - v["data_offsets"][0]
                         for k, v in header.items() if k != "__metadata__")
        self.assertEqual(index["metadata"]["total_size"], sizes)
        losses = {}
        for source in ("one.safetensors", "sharded/model.safetensors.index.json", "sharded"):
            self.train("--steps", 2, "--init", self.path(source), "--metrics", self.path("init.jsonl"))
            losses[source] = [m["loss"] for m in self.metrics("init.jsonl")]
        self.assertEqual(len(set(map(tuple, losses.values()))), 1, losses)
        code, _, err = run_status("tgrun", self.path("m.tgx"), "--data", self.path("tokens.bin"),
                                  "--max-shard-size", "0")
        self.assertEqual(code, 2)
        self.assertIn("--max-shard-size needs a size in bytes > 0", err)

    def test_emit_exe_trains_like_tgrun(self):
        exe = self.path("trainer")
        run("tgc", "compile", self.path("model.json"), "--train", self.path("train.json"), "--emit=exe", "-o", exe)
        self.train("--steps", 4, "--metrics", self.path("tgrun.jsonl"))
        code, _, err = run_status(exe, "--data", self.path("tokens.bin"), "--steps", 4,
                                  "--metrics", self.path("exe.jsonl"))
        self.assertEqual(code, 0, err)
        self.assertEqual([m["loss"] for m in self.metrics("tgrun.jsonl")],
                         [m["loss"] for m in self.metrics("exe.jsonl")])

    def expect_rejected(self, args, needle):
        code, out, err = run_status("tgrun", *args)
        self.assertIn(code, (1, 2), f"exit {code}; stderr:\n{err}")  # not a signal
        self.assertIn(needle, err)

    def test_corrupted_artifacts_are_rejected(self):
        blob = open(self.path("m.tgx"), "rb").read()
        rng = random.Random(11)
        bad = self.path("bad.tgx")
        for cut in [0, 4, 8, 100, len(blob) // 2, len(blob) - 1]:
            open(bad, "wb").write(blob[:cut])
            self.expect_rejected([bad, "--data", self.path("tokens.bin"), "--steps", 1], "bad.tgx")
        # The checksum trailer covers every byte (format version 2): any flip, in kernel
        # code, a constant or padding, is rejected before anything runs.
        for _ in range(20):
            data = bytearray(blob)
            for _ in range(rng.randrange(1, 5)):
                data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
            open(bad, "wb").write(bytes(data))
            code, _, err = run_status("tgrun", bad, "--data", self.path("tokens.bin"), "--steps", 1)
            self.assertEqual(code, 1, err)
            self.assertIn("bad.tgx: the artifact is", err)

    def test_artifact_has_a_checksum_trailer(self):
        blob = open(self.path("m.tgx"), "rb").read()
        self.assertEqual(blob[-16:-8], b"TGXSUM64")
        checksum = 0xcbf29ce484222325
        for byte in blob[:-8]:
            checksum = ((checksum ^ byte) * 0x100000001b3) % (1 << 64)
        self.assertEqual(int.from_bytes(blob[-8:], "little"), checksum)
        # The reproducer of issue 8: one changed byte in a constant or the seed trains to
        # other losses if nothing checks it.
        data = bytearray(blob)
        data[len(data) // 3] ^= 0x01
        open(self.path("mutant.tgx"), "wb").write(bytes(data))
        self.expect_rejected([self.path("mutant.tgx"), "--data", self.path("tokens.bin")],
                             "mutant.tgx: the artifact is corrupt (its contents do not match the "
                             "checksum in its trailer); re-compile the model with this tgc")

    def test_corrupted_checkpoint_is_rejected(self):
        ckpt = self.path("ckpt-corrupt")
        self.train("--steps", 3, "--checkpoint-dir", ckpt, "--checkpoint-every", 3)
        newest = sorted(glob.glob(os.path.join(ckpt, "*.safetensors")))[-1]
        data = bytearray(open(newest, "rb").read())
        data[-5] ^= 0x40
        open(newest, "wb").write(bytes(data))
        self.expect_rejected([self.path("m.tgx"), "--data", self.path("tokens.bin"), "--steps", 6,
                              "--checkpoint-dir", ckpt, "--resume"], os.path.basename(newest))
        open(newest, "wb").write(bytes(data[: len(data) // 2]))
        self.expect_rejected([self.path("m.tgx"), "--data", self.path("tokens.bin"), "--steps", 6,
                              "--checkpoint-dir", ckpt, "--resume"], os.path.basename(newest))

    def test_bad_inputs_name_the_file(self):
        self.expect_rejected([self.path("missing.tgx"), "--data", self.path("tokens.bin")], "missing.tgx")
        self.expect_rejected([self.path("m.tgx"), "--data", self.path("missing.bin")], "missing.bin")
        open(self.path("odd.bin"), "wb").write(b"\x01\x00\x02")
        self.expect_rejected([self.path("m.tgx"), "--data", self.path("odd.bin")], "odd.bin")
        np.full(50, 60000, dtype=np.uint16).tofile(self.path("big.bin"))
        self.expect_rejected([self.path("m.tgx"), "--data", self.path("big.bin")], "big.bin")
        self.expect_rejected([self.path("m.tgx"), "--data", self.path("tokens.bin"),
                              "--init", self.path("missing.safetensors")], "missing.safetensors")

    def test_unwritable_weights_path_is_refused_before_training(self):
        # The weights are written after the last step: a path that cannot
        # take them must stop the run before it trains, not lose the training.
        os.makedirs(self.path("a-directory"), exist_ok=True)
        for target, needle in [(self.path("a-directory"), "it is a directory"),
                               (self.path("missing-dir/w.safetensors"),
                                f"its directory {self.path('missing-dir')} does not exist")]:
            result = subprocess.run([os.path.join(BIN, "tgrun"), self.path("m.tgx"), "--data",
                                     self.path("tokens.bin"), "--steps", "2", "--save-weights", target],
                                    capture_output=True, text=True, timeout=60)
            self.assertEqual(result.returncode, 1, result.stderr)
            self.assertIn(f"cannot write the weights to {target}: {needle}", result.stderr)
            self.assertNotIn("step 1/", result.stdout)

    def test_fifos_and_devices_are_not_opened(self):
        # open() on a FIFO waits for a writer: tgrun must refuse it at once, not hang.
        fifo = self.path("fifo")
        if not os.path.exists(fifo):
            os.mkfifo(fifo)
        tokens, model = self.path("tokens.bin"), self.path("m.tgx")
        cases = [([fifo, "--data", tokens], f"{fifo}: cannot read the artifact (a FIFO, not a regular file)"),
                 # -n reads the artifact itself, before starting any rank.
                 (["-n", "2", fifo, "--data", tokens],
                  f"{fifo}: cannot read the artifact (a FIFO, not a regular file)"),
                 (["/dev/zero", "--data", tokens],
                  "/dev/zero: cannot read the artifact (a character device, not a regular file)"),
                 ([model, "--data", fifo], f"{fifo}: cannot open the token file (a FIFO, not a regular file)"),
                 ([model, "--data", "/dev/zero"],
                  "/dev/zero: cannot open the token file (a character device, not a regular file)"),
                 ([model, "--data", tokens, "--init", fifo],
                  f"{fifo}: cannot open: a FIFO, not a regular file; pass a safetensors file"),
                 (["generate", model, "--init", self.path("unused.safetensors"), "--prompts", fifo],
                  f"cannot read the prompts file {fifo} (a FIFO, not a regular file)")]
        for args, needle in cases:
            result = subprocess.run([os.path.join(BIN, "tgrun"), *args], capture_output=True, text=True,
                                    timeout=60)
            self.assertEqual(result.returncode, 1, result.stderr)
            self.assertIn(needle, result.stderr)

    def test_divergence_stops_the_run_and_keeps_the_last_checkpoint(self):
        # lr 1e30 without clipping: the first update blows the weights up and a later
        # step's loss is not finite. tgrun stops at that step, exits 1, writes neither
        # the final weights nor a checkpoint of the bad state.
        train = dict(TRAIN, optimizer=dict(TRAIN["optimizer"], lr=1e30, weight_decay=0.0))
        del train["grad_clip_norm"], train["lr_schedule"]
        json.dump(train, open(self.path("diverge.json"), "w"))
        run("tgc", "compile", self.path("model.json"), "--train", self.path("diverge.json"),
            "-o", self.path("diverge.tgx"))
        ckpt, weights = self.path("ckpt-diverge"), self.path("diverged.safetensors")
        args = [self.path("diverge.tgx"), "--data", self.path("tokens.bin"), "--steps", 20,
                "--checkpoint-dir", ckpt, "--checkpoint-every", 1, "--save-weights", weights]
        code, _, err = run_status("tgrun", *args)
        self.assertEqual(code, 1, err)
        match = re.search(r"diverge\.tgx: training diverged at step (\d+): the loss is \S+ and grad_norm \S+", err)
        self.assertTrue(match, err)
        self.assertIn("Lower the learning rate or set grad_clip_norm, and resume from the last checkpoint", err)
        step = int(match.group(1))
        self.assertGreater(step, 1, err)
        self.assertFalse(os.path.exists(weights))
        kept = sorted(os.path.basename(p) for p in glob.glob(os.path.join(ckpt, "*.safetensors")))
        self.assertEqual(kept[-1], "step-%08d.safetensors" % (step - 1), err)
        # The kept checkpoint is the good state before the bad step: resuming from it
        # reaches the same step and stops there again.
        code, out, err = run_status("tgrun", *args, "--resume")
        self.assertEqual(code, 1, err)
        self.assertIn("(step %d)" % (step - 1), out)
        self.assertIn("training diverged at step %d:" % step, err)


if __name__ == "__main__":
    unittest.main()
