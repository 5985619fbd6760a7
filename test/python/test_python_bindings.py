"""The Python bindings and the documented examples (issue 14): `tgc.compile`
over the compiler's C API builds programs in process from paths or dicts,
with diagnostics as data; `tgc.Trainer` over the runtime's C API trains a
program exactly as tgrun does (bit for bit, same artifact, data and init)
and as PyTorch in float64 (within 1e-4 a step), reads and writes weights by
Hugging Face name, evaluates and gives logits, round-trips checkpoints, and
turns misuse into Python exceptions, never a crash. The C and Python
examples of docs/embedding.md are built and run."""
import ctypes
import gc
import json
import os
import subprocess
import sys
import tempfile
import unittest
import warnings

import numpy as np
import torch

from tgtest import configs, models, safetensors_io
from tgtest.reference import batch, torch_training
from tgtest.tools import BIN, run, write_family

PYTHON_DIR = os.path.join(BIN, "..", "python")
ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
sys.path.insert(0, PYTHON_DIR)
import tgc  # noqa: E402  (the package the build writes to build/python)

TRAIN = configs.train_config()
STEPS = 5
FAMILIES = {"gpt2": configs.GPT2, "llama": configs.LLAMA}


def same_blas_kernels_env():
    """The environment in which tgrun multiplies matrices with the kernels this
    process's OpenBLAS runs, as bit-for-bit comparisons need: where OpenBLAS did
    not know the CPU, tgrun restarts itself with better kernels (tgrun
    --version), which this process, having loaded OpenBLAS already, cannot."""
    if not tgc._capi.lib.tg_better_blas_core():
        return os.environ
    openblas = ctypes.CDLL("libopenblas.so.0")  # the one this process has loaded
    openblas.openblas_get_corename.restype = ctypes.c_char_p
    return dict(os.environ, OPENBLAS_CORETYPE=openblas.openblas_get_corename().decode())


class PythonBindings(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        gen = torch.Generator().manual_seed(14)
        json.dump(TRAIN, open(cls.path("train.json"), "w"))
        cls.programs, cls.init, cls.params, cls.tokens = {}, {}, {}, {}
        for family, model in FAMILIES.items():
            cls.init[family], cls.params[family], cls.tokens[family] = write_family(
                cls.path, family, model, cls.path("train.json"), gen, 173)
            run("tgc", "compile", cls.path(family + ".json"), "--train", cls.path("train.json"),
                "-o", cls.path(family + ".tgx"))
            cls.programs[family] = cls.path(family + ".tgx")

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

    def test_warns_once_where_openblas_misses_the_cpu(self):
        core = tgc._capi.lib.tg_better_blas_core()
        tgc._blas_warned = False
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            for _ in range(2):
                self.trainer("gpt2").close()
        blas = [str(w.message) for w in caught if "OPENBLAS_CORETYPE" in str(w.message)]
        self.assertEqual(blas, [f"OpenBLAS does not know this CPU and chose kernels without "
                                f"AVX2: the matrix products run several times slower than they "
                                f"could; start Python with OPENBLAS_CORETYPE={core.decode()}"]
                         if core else [])

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
                subprocess.run([os.path.join(BIN, "tgrun"), self.programs[family], "--init",
                                self.init[family], "--data", self.path(family + "-tokens.bin"),
                                "--steps", str(STEPS), "--metrics", m, "--save-weights",
                                self.path(family + "-final.safetensors")],
                               env=same_blas_kernels_env(), check=True, capture_output=True)
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

    def test_compile_in_process(self):
        """tgc.compile (the compiler's C API) from a path or dicts gives a
        program that trains exactly as the one tgc wrote; errors come back
        as diagnostics, warnings on the program."""
        family = "llama"
        reference = None
        for model, train in [(self.path(family + ".json"), self.path("train.json")),
                             (FAMILIES[family], TRAIN)]:
            program = tgc.compile(model, train=train)
            self.assertEqual(program.diagnostics, [])
            with tgc.Trainer(program, init=self.init[family]) as t:
                losses = [t.step(*self.batch(family, s)) for s in range(3)]
            if reference is None:
                with self.trainer(family) as t:
                    reference = [t.step(*self.batch(family, s)) for s in range(3)]
            self.assertEqual(losses, reference)
        program = tgc.compile(dict(FAMILIES[family], new_knob=3), train=TRAIN, mesh="dp=2")
        self.assertTrue(any(d.severity == "warning" and "new_knob" in d.message
                            for d in program.diagnostics))
        with self.assertRaises(tgc.CompileError) as caught:
            tgc.compile(dict(FAMILIES[family], num_key_value_heads=3), train=TRAIN)
        self.assertIn("num_key_value_heads", str(caught.exception))
        self.assertEqual(caught.exception.diagnostics[0].severity, "error")
        with self.assertRaisesRegex(tgc.CompileError, "mesh axis 'pp'"):
            tgc.compile(FAMILIES[family], train=TRAIN, mesh="pp=2")
        with self.assertRaisesRegex(tgc.CompileError, r"x\.mlir:1:\d+: .*expected"):
            tgc.compile(self.write("x.mlir", "module { func.func"), train=TRAIN)

    def test_compile_switches_fusion_and_attention(self):
        """tgc.compile takes tgc's fusion switches (--fuse, --no-fuse,
        --no-fusion, --fusion-remarks) and --cuda-attention; each changes the program, or
        is refused by name."""
        family = "gpt2"
        default = tgc.compile(FAMILIES[family], train=TRAIN)
        with tgc.Trainer(default, init=self.init[family]) as t:
            reference = [t.step(*self.batch(family, s)) for s in range(3)]
        for no_fuse in ["horizontal", ["gemm-bias", "rows"], "all"]:
            program = tgc.compile(FAMILIES[family], train=TRAIN, no_fuse=no_fuse)
            self.assertNotEqual(program.data, default.data, no_fuse)
            with tgc.Trainer(program, init=self.init[family]) as t:
                losses = [t.step(*self.batch(family, s)) for s in range(3)]
            for got, want in zip(losses, reference):  # other roundings where kernels differ
                self.assertLess(abs(got - want), 1e-5 * abs(want), no_fuse)
        remarks = [d for d in tgc.compile(FAMILIES[family], train=TRAIN, fusion_remarks=True).diagnostics
                   if d.severity == "remark"]
        for decision in ["fused horizontally", "fused into the kernel of", "computed with its gradient in one kernel",
                         "bias add fused into the GEMM's epilogue"]:
            self.assertTrue(any(d.message.startswith(decision) for d in remarks), decision)
        self.assertEqual(default.diagnostics, [])
        with self.assertRaisesRegex(tgc.CompileError, "tgc_options.no_fuse: 'bogus' is not a fusion pass; use "
                                    "one of: elementwise, rows, .*horizontal, compute-copies, or \"all\""):
            tgc.compile(FAMILIES[family], train=TRAIN, no_fuse="horizontal,bogus")
        # --fuse: GELU's epilogue on the CPU (the runtime's pass over the rows),
        # the same losses up to rounding; an unknown name refused by name.
        program = tgc.compile(FAMILIES[family], train=TRAIN, fuse=["gemm-activation"])
        self.assertNotEqual(program.data, default.data)
        with tgc.Trainer(program, init=self.init[family]) as t:
            for s, want in enumerate(reference):
                self.assertLess(abs(t.step(*self.batch(family, s)) - want), 1e-5 * abs(want))
        self.assertEqual(tgc.compile(FAMILIES[family], train=TRAIN, fuse="gemm-activation",
                                     no_fuse="gemm-activation").data, default.data)
        with self.assertRaisesRegex(tgc.CompileError, "tgc_options.fuse: 'bogus' is not a fusion pass; use "
                                    "one of: elementwise, "):
            tgc.compile(FAMILIES[family], train=TRAIN, fuse="bogus")
        with self.assertRaisesRegex(tgc.CompileError, "tgc_options.cuda_attention chooses how the GPU computes "
                                    "attention: set target to \"cuda\""):
            tgc.compile(FAMILIES[family], train=TRAIN, cuda_attention="cudnn")
        with self.assertRaisesRegex(tgc.CompileError, "tgc_options.cuda_attention: 'fast' is not a way"):
            tgc.compile(FAMILIES[family], train=TRAIN, target="cuda", cuda_attention="fast")

    def test_options_of_another_build_are_refused(self):
        """The ctypes layout of tgc_options must be the library's: a package
        and a library of different builds raise ImportError, never crash."""
        code = ("import ctypes, tgc._compiler as c\n"
                "class Older(ctypes.Structure):\n"
                "    _fields_ = c.Options._fields_[:-3]\n"
                "c.Options = Older\n"
                "try:\n"
                "    c.library()\n"
                "except ImportError as e:\n"
                "    print(e)\n")
        result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                env=dict(os.environ, PYTHONPATH=PYTHON_DIR))
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("they are of different builds; rebuild TGC", result.stdout)

    def write(self, name, text):
        with open(self.path(name), "w") as f:
            f.write(text)
        return self.path(name)

    def test_ranks_of_a_multi_rank_program(self):
        """Under mpirun each Python process is one rank (the session joins
        the launcher's ranks): on dp=2 x tp=2 the losses are tgrun -n 4's
        bit for bit, and the weights gathered to rank 0 are its."""
        family = "gpt2"
        program = self.path("gpt2-dp2-tp2.tgx")
        run("tgc", "compile", self.path("gpt2.json"), "--train", self.path("train.json"),
            "--mesh", "dp=2,tp=2", "-o", program)
        m = self.path("ranks.jsonl")
        env = dict(same_blas_kernels_env(), OMPI_ALLOW_RUN_AS_ROOT="1",
                   OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
                   PYTHONPATH=os.pathsep.join([PYTHON_DIR, os.path.dirname(__file__)]))
        subprocess.run([os.path.join(BIN, "tgrun"), "-n", "4", program, "--init", self.init[family],
                        "--data", self.path(family + "-tokens.bin"), "--steps", "3", "--metrics",
                        m, "--save-weights", self.path("r.safetensors")],
                       check=True, capture_output=True, env=env, timeout=120)
        expected = [json.loads(line)["loss"] for line in open(m)]
        script = f"""
import json, numpy as np, tgc
from tgtest.reference import batch
t = tgc.Trainer(tgc.Program({program!r}), init={self.init[family]!r})
tokens = np.fromfile({self.path(family + '-tokens.bin')!r}, dtype="<u2")
train = json.load(open({self.path('train.json')!r}))
losses = []
for s in range(3):
    x, y = batch(tokens, train, s)
    rows = slice(t.first_row, t.first_row + t.rows)  # this rank's rows of the batch
    losses.append(t.step(x.numpy()[rows], y.numpy()[rows]))
w = t.weights()
if t.rank == 0:
    np.savez({self.path('py-ranks.npz')!r}, **w)
    print(json.dumps(losses))
t.close()
"""
        result = subprocess.run(["mpirun", "-n", "4", "--oversubscribe", "--bind-to", "none",
                                 sys.executable, "-c", script], capture_output=True, text=True,
                                env=env, timeout=180)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(json.loads(result.stdout.strip().splitlines()[-1]), expected)
        saved = safetensors_io.load(self.path("r.safetensors"))
        got = np.load(self.path("py-ranks.npz"))
        for name in saved:
            self.assertTrue(np.array_equal(got[name], saved[name].numpy()), name)

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

    def test_compute_copies_follow_every_write(self):
        # A bf16 step reads each parameter's bf16 copy, which its AdamW kernel
        # writes; the runtime must write the copies again after every write
        # of the state from outside within a session (a weight, a
        # checkpoint), or the next step would read the old weights' copies.
        # Against the program that casts the parameters every step, the
        # losses are the same bits.
        family = "gpt2"
        programs = {}
        for tag, flags in (("copies", ()), ("casts", ("--no-fuse=compute-copies",))):
            programs[tag] = self.path(f"{family}-bf16-{tag}.tgx")
            run("tgc", "compile", self.path(family + ".json"), "--train", self.path("train.json"),
                "--dtype=bf16", "--gemm=generated", *flags, "-o", programs[tag])
        losses = {}
        for tag, program in programs.items():
            ckpt = self.path(f"{family}-bf16-{tag}.safetensors")
            with tgc.Trainer(tgc.Program(program), init=self.init[family]) as t:
                run_steps = lambda first: [t.step(*self.batch(family, s)) for s in range(first, first + 2)]
                losses[tag] = run_steps(0)
                t.save_checkpoint(ckpt, data_position=2)
                name = "transformer.h.0.mlp.c_fc.weight"
                t.set_weight(name, t.weight(name) * 0.5)
                losses[tag] += run_steps(2)
                t.load_checkpoint(ckpt)
                losses[tag] += run_steps(2)
        self.assertEqual(losses["copies"], losses["casts"])
        # The halved weight changed the steps after it, and the checkpoint
        # undid it.
        self.assertNotEqual(losses["copies"][2:4], losses["copies"][4:6])

    def example(self, language):
        """The ```language block of docs/embedding.md, and a directory holding
        what it reads (config.json, train.json, step.tgx, tokens.bin)."""
        doc = open(os.path.join(ROOT, "docs", "embedding.md")).read()
        work = self.path("example-" + language)
        os.makedirs(work, exist_ok=True)
        for name, source in [("config.json", "gpt2.json"), ("train.json", "train.json"),
                             ("step.tgx", "gpt2.tgx"), ("tokens.bin", "gpt2-tokens.bin")]:
            os.symlink(self.path(source), os.path.join(work, name))
        return doc.split(f"```{language}\n", 1)[1].split("```", 1)[0], work

    def test_the_documented_python_example_runs(self):
        example, work = self.example("python")
        out = subprocess.run([sys.executable, "-c", example], cwd=work, capture_output=True,
                             text=True, env=dict(os.environ, PYTHONPATH=PYTHON_DIR))
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIn("step 3: loss", out.stdout)
        self.assertTrue(os.path.exists(os.path.join(work, "ckpt.safetensors")))

    def test_the_documented_c_example_runs(self):
        example, work = self.example("c")
        with open(os.path.join(work, "example.c"), "w") as f:
            f.write(example)
        lib = os.path.join(BIN, "..", "lib")
        build = subprocess.run(
            ["cc", "-std=c11", "-Wall", "-Werror", "example.c", "-o", "example",
             "-I" + os.path.join(ROOT, "compiler", "include"),
             "-I" + os.path.join(ROOT, "runtime", "include"), "-L" + lib, "-ltgc_compiler",
             "-ltg_runtime", "-Wl,-rpath," + os.path.abspath(lib)],
            cwd=work, capture_output=True, text=True)
        self.assertEqual(build.returncode, 0, build.stderr)
        out = subprocess.run(["./example"], cwd=work, capture_output=True, text=True)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertRegex(out.stdout, r"step 1: loss \d+\.\d{4}")

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
