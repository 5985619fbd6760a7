"""ZeRO-1 (tgc --zero 1): the AdamW moments split over the data-parallel
ranks, gradients reduce-scattered and the updated chunks all-gathered. On 4
CPU ranks the runs follow the single-rank run, checkpoints move between
meshes with and without ZeRO, and tgc --stats counts the chunks.

Tolerances are test_tgrun_ranks.py's (per-step loss within 1e-4, weights
within 1e-3 relative L2): ZeRO only changes where the update is computed,
not its float32 arithmetic, so the runs agree as closely as plain data
parallelism does; a chunk updated twice or not at all, a moment at the
wrong offset, or a norm counting a chunk twice moves the loss by far more
within a few steps.
"""
import json
import os
import shutil
import subprocess
import unittest

from test_tgrun_ranks import CONFIG, STEPS, TP_MODELS, RankRuns, read_metrics
from tgtest.tools import BIN, run, run_status


def zero(mesh):
    """Compile flags for ZeRO-1 on `mesh`."""
    return mesh, ("--zero", "1")


class Zero(RankRuns, unittest.TestCase):
    def compile_tp(self, family, mesh=None, flags=()):
        return self.compile(family, mesh, TP_MODELS, "-tp", flags)

    def single(self, family):
        """The single-rank run of `family` (TP_MODELS), trained once."""
        runs = self.__class__.__dict__.get("_single") or {}
        if family not in runs:
            runs[family] = self.train(self.compile_tp(family), 1, f"{family}-single")
            type(self)._single = runs
        return runs[family]

    def check_follows(self, family, meshes):
        single, single_weights = self.single(family)
        for mesh, ranks in meshes:
            with self.subTest(family=family, mesh=mesh):
                steps, weights = self.train(self.compile_tp(family, *zero(mesh)), ranks,
                                            f"{family}-{mesh}-zero")
                self.assert_follows(steps, weights, single, single_weights)

    def test_gpt2_zero_follows_one_rank(self):
        self.check_follows("gpt2", (("dp=2,tp=2", 4), ("dp=4", 4)))

    def test_llama_zero_follows_one_rank(self):
        self.check_follows("llama", (("dp=2,tp=2", 4),))

    def test_resume_across_meshes(self):
        """10 steps on dp=2 x tp=2 with ZeRO, then 10 on one rank from its
        checkpoint (whole moments); 10 on one rank, then 10 on dp=2 x tp=2
        with ZeRO; and 10 on dp=4, then 10 on dp=2, both with ZeRO (chunks
        of another size, and no tensor-parallel split at all): all on the
        single-rank trajectory."""
        single, _ = self.single("llama")
        for first, then in (((zero("dp=2,tp=2"), 4), ((None, ()), 1)),
                            (((None, ()), 1), (zero("dp=2,tp=2"), 4)),
                            ((zero("dp=4"), 4), (zero("dp=2"), 2))):
            with self.subTest(first=first[0][0], then=then[0][0]):
                ckpt = self.path(f"zero-resume-{first[0][0]}-{then[0][0]}")
                metrics = ckpt + ".jsonl"
                for ((mesh, flags), ranks), steps in ((first, 10), (then, STEPS)):
                    run("tgrun", *(["-n", ranks] if ranks > 1 else []),
                        self.compile_tp("llama", mesh, flags), "--data", self.data,
                        "--steps", steps, "--checkpoint-dir", ckpt, "--metrics", metrics,
                        *(["--resume"] if steps == STEPS else []))
                resumed = read_metrics(metrics)
                self.assertEqual([s["step"] for s in resumed], list(range(1, STEPS + 1)))
                for a, b in zip(resumed, single):
                    self.assertLess(abs(a["loss"] - b["loss"]), 1e-4, (a, b))

    def test_each_rank_writes_its_part_of_a_checkpoint(self):
        """On dp=2 x tp=2 with ZeRO a checkpoint is a directory in which
        every rank wrote the pieces of the state it holds (its shard of the
        parameters, its chunk of the moments), each piece once, beside an
        index: together the four files hold the single-rank checkpoint's
        bytes (headers and padding aside), each about a quarter. (The resume test
        above shows that they hold the right state.) A damaged piece, a
        missing one or a changed index stops a resume on every rank with
        the file named; a save that fails on one rank fails on all and
        keeps the previous checkpoint."""
        ckpt = self.path("sharded-ckpt")
        run("tgrun", "-n", 4, self.compile_tp("gpt2", *zero("dp=2,tp=2")), "--data", self.data,
            "--steps", 2, "--checkpoint-dir", ckpt)
        step = os.path.join(ckpt, "step-00000002")
        names = sorted(os.listdir(step))
        self.assertEqual(names, ["checkpoint.index.json"] +
                         [f"rank-0000{r}.safetensors" for r in range(4)])
        whole_dir = self.path("whole-ckpt")
        run("tgrun", self.compile_tp("gpt2"), "--data", self.data, "--steps", 2,
            "--checkpoint-dir", whole_dir)
        whole = os.path.getsize(os.path.join(whole_dir, "step-00000002.safetensors"))
        sizes = [os.path.getsize(os.path.join(step, n)) for n in names[1:]]
        # Four headers and the padding are ~13% of this tiny model's state.
        self.assertLess(abs(sum(sizes) / whole - 1), 0.2, (sizes, whole))
        for size in sizes:
            self.assertLess(abs(size / sum(sizes) - 0.25), 0.1, sizes)

        def damaged(name, damage):
            copy = self.path(f"damaged-{name}")
            shutil.copytree(ckpt, copy)
            damage(os.path.join(copy, "step-00000002", name))
            return copy

        def flip_last_byte(path):
            data = bytearray(open(path, "rb").read())
            data[-1] ^= 1
            open(path, "wb").write(data)

        def change_step(path):
            text = open(path).read()
            open(path, "w").write(text.replace('"step": 2', '"step": 1'))

        for ranks, name, damage, message in (
                (4, "rank-00002.safetensors", flip_last_byte, "checksum mismatch"),
                (1, "rank-00001.safetensors", os.remove, "No such file"),
                (1, "checkpoint.index.json", change_step, "index.checksum does not match")):
            with self.subTest(name=name, ranks=ranks):
                program = self.compile_tp("gpt2", *(zero("dp=2,tp=2") if ranks > 1 else ()))
                code, _, err = run_status("tgrun", *(["-n", ranks] if ranks > 1 else []),
                                          program, "--data", self.data, "--steps", 3,
                                          "--checkpoint-dir", damaged(name, damage), "--resume")
                self.assertNotEqual(code, 0)
                self.assertIn("cannot resume from the newest checkpoint", err)
                self.assertIn(f"step-00000002/{name}", err)
                self.assertIn(message, err)
                if ranks > 1:  # the launcher may stop the others before they say it
                    self.assertRegex(err, r"rank \d: cannot resume")

        # A save that cannot be done fails on every rank, in bounded time,
        # and keeps the previous checkpoint: an immutable file where rank 0
        # must prepare step 3's directory.
        blocker = os.path.join(ckpt, "step-00000003.partial")
        open(blocker, "w").close()
        if subprocess.run(["chattr", "+i", blocker], capture_output=True).returncode != 0:
            self.skipTest("chattr +i is not available here (the file system or the container "
                          "does not allow immutable files)")
        try:
            program = self.compile_tp("gpt2", *zero("dp=2,tp=2"))
            code, _, err = run_status("tgrun", "-n", 4, program, "--data", self.data,
                                      "--steps", 3, "--checkpoint-dir", ckpt, "--resume")
        finally:
            subprocess.run(["chattr", "-i", blocker])
        self.assertNotEqual(code, 0)
        self.assertIn("step-00000003.partial: cannot create the checkpoint's directory", err)
        self.assertIn("rank 0: ", err)  # the launcher may stop the others before they say it
        self.assertFalse(os.path.exists(os.path.join(ckpt, "step-00000003")))
        out = run("tgrun", "-n", 4, program, "--data", self.data, "--steps", 2,
                  "--checkpoint-dir", ckpt, "--resume")
        self.assertIn("resumed from " + step + " (step 2)", out)

    def test_stats_follow_the_analytic_formulas(self):
        """tgc --stats per rank for GPT-2 (L layers, hidden d, vocabulary V
        padded to Vp, f32) with ZeRO-1 over D data ranks: each parameter
        tensor of N local elements (its tp share) has moments of
        C = ceil(N / D) elements; the gradients are reduce-scattered (D x C
        each) and the new chunks all-gathered (C each); the data axis
        all-reduces only the loss and the squared-norm sums (one per set of
        axes a gradient is split over); the tensor axis as without ZeRO
        (test_tgrun_ranks.py)."""
        model = TP_MODELS["gpt2"]
        json.dump(model, open(self.path("gpt2-stats.json"), "w"))
        L, d, V = model["n_layer"], model["n_embd"], model["vocab_size"]
        inner, P = 4 * d, model["n_positions"]
        M = CONFIG["micro_batches"]
        for dp, tp in ((2, 1), (4, 1), (2, 2)):
            with self.subTest(dp=dp, tp=tp):
                out = subprocess.run(
                    [os.path.join(BIN, "tgc"), "compile", self.path("gpt2-stats.json"), "--train",
                     self.train_json, "--mesh", f"dp={dp},tp={tp}", "--zero", "1", "--stats=json"],
                    capture_output=True, text=True, check=True).stdout
                stats = json.loads(out)
                Vp = -(-V // tp) * tp
                layer = [d, d, d * 3 * d // tp, 3 * d // tp, d * d // tp, d, d, d,
                         d * inner // tp, inner // tp, inner * d // tp, d]
                tensors = [Vp * d // tp, P * d] + L * layer + [d, d]
                chunks = sum(-(-n // dp) for n in tensors)
                self.assertEqual(stats["param_bytes"], 4 * sum(tensors))
                self.assertEqual(stats["optimizer_bytes"], 8 * chunks)
                comm = stats["communication"]
                self.assertEqual(comm["reduce_scatter_bytes"], 4 * dp * chunks)
                self.assertEqual(comm["all_gather_bytes"], 4 * chunks)
                N = CONFIG["batch_size"] // dp // M * CONFIG["seq_len"]
                tensor_bytes = 4 * (M * ((4 * L + 2) * N * d + 3 * N) + 1) if tp > 1 else 0
                norm_sums = 2 if tp > 1 else 1
                self.assertEqual(comm["all_reduce_bytes"], tensor_bytes + 4 * (1 + norm_sums))
                tensor_collectives = M * (4 * L + 5) + 1 if tp > 1 else 0
                self.assertEqual(comm["collectives"], tensor_collectives + 1 + norm_sums
                                 + 2 * len(tensors))


if __name__ == "__main__":
    unittest.main()
