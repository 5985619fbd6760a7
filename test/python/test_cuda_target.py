"""The CUDA target without a GPU: every PTX module of the example models
(both families, fp32 and bf16) assembles with ptxas for sm_90a without
spilling, a CUDA artifact passes the runtime's verifier, and tgrun says
clearly that it needs a GPU. What needs a GPU is cuda_vs_cpu.py (skipped
here) and scripts/gpu-validate."""
import json
import os
import re
import shutil
import subprocess
import tempfile
import unittest

from tgtest.tools import run, run_status

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
MODELS = ["gpt2-tiny", "llama-tiny"]
PTXAS = shutil.which("ptxas") or (os.path.exists("/usr/local/cuda/bin/ptxas") and "/usr/local/cuda/bin/ptxas")


def example(kind, name):
    return os.path.join(ROOT, "examples", kind, name + ".json")


def bench_gpu(name):
    return os.path.join(ROOT, "bench", "gpu", name + ".json")


class CudaTarget(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def path(self, *names):
        return os.path.join(self.tmp.name, *names)

    def assert_refused(self, args, message):
        """tgc compile of GPT-2 tiny with `args` exits 1 saying `message`."""
        code, _, err = run_status("tgc", "compile", example("models", "gpt2-tiny"), "--train",
                                  example("train", "tiny"), *args, "-o", self.path("refused.tgx"))
        self.assertEqual(code, 1, err)
        self.assertIn(message, err)

    @unittest.skipUnless(PTXAS, "skipped: ptxas not found (install the CUDA toolkit)")
    def test_ptx_assembles_for_sm90a_without_spills(self):
        for model in MODELS + ["gpt3-175b"]:
            train = "gpt3-175b" if model == "gpt3-175b" else "tiny"
            for dtype in ["f32", "bf16"]:
                out = self.path(f"{model}-{dtype}")
                run("tgc", "compile", example("models", model), "--train", example("train", train),
                    "--target", "cuda", f"--dtype={dtype}", "--emit=ptx", "-o", out)
                for ptx in os.listdir(out):
                    self.assert_assembles_without_spills(os.path.join(out, ptx), f"{model} {dtype}")

    def medium_ptx_with_and_without(self, flag):
        """GPT-2 medium's bf16 PTX without and with tgc flag `flag` (keys ""
        and `flag`); with it, it assembles without spills where ptxas is
        found."""
        ptx = {}
        for flags in ["", flag]:
            out = self.path("medium-ptx" + flags)
            run("tgc", "compile", bench_gpu("gpt2-medium"), "--train", bench_gpu("train-gpt2-medium"),
                "--target", "cuda", "--dtype=bf16", *([flags] if flags else []), "--emit=ptx", "-o", out)
            with open(os.path.join(out, "kernels.ptx")) as f:
                ptx[flags] = f.read()
            if flags and PTXAS:
                self.assert_assembles_without_spills(os.path.join(out, "kernels.ptx"), "gpt2-medium " + flags)
        return ptx

    def assert_assembles_without_spills(self, ptx, what):
        """ptxas assembles `ptx` for sm_90a, and no function of it spills."""
        result = subprocess.run([PTXAS, "-arch=sm_90a", "-v", ptx, "-o", os.devnull],
                                capture_output=True, text=True)
        self.assertEqual(result.returncode, 0, f"{what}: {result.stderr[-2000:]}")
        entries = re.findall(r"Compiling entry function '(\w+)'", result.stderr)
        # Every function (entries and the device functions they call).
        functions = re.findall(r"Function properties for (\w+)\n\s*\d+ bytes stack frame, "
                               r"(\d+) bytes spill stores, (\d+) bytes spill loads",
                               result.stderr)
        self.assertGreater(len(entries), 10, what)
        self.assertGreaterEqual(len(functions), len(entries), result.stderr[-2000:])
        spilling = [name for name, stores, loads in functions if int(stores) or int(loads)]
        self.assertEqual(spilling, [], f"{what}: functions that spill")

    @unittest.skipUnless(PTXAS, "skipped: ptxas not found (install the CUDA toolkit)")
    def test_flash_attention_kernels_assemble_without_spills(self):
        """The runtime's flash attention kernels (the PTX nvcc made of
        runtime/backends/cuda/kernels/FlashAttention.cu for the backend)
        assemble for sm_90a without spilling, every entry point."""
        ptx = os.path.join(os.environ.get("TGC_BIN", ""), "..", "runtime", "backends", "FlashAttention.ptx")
        if not os.path.exists(ptx):
            self.skipTest("skipped: the runtime was built without nvcc (no FlashAttention.ptx)")
        result = subprocess.run([PTXAS, "-arch=sm_90a", "-v", ptx, "-o", os.devnull],
                                capture_output=True, text=True)
        self.assertEqual(result.returncode, 0, result.stderr[-2000:])
        entries = re.findall(r"Compiling entry function '(\w+)'", result.stderr)
        self.assertEqual(sorted(entries), sorted(
            f"tg_flash_attention_{kernel}_d{dim}" for dim in (64, 128)
            for kernel in ("forward", "delta", "key_value_grads", "query_grads", "key_value_grads_adding_query",
                           "query_grads_from_sum")))
        spills = re.findall(r"(\d+) bytes spill stores, (\d+) bytes spill loads", result.stderr)
        self.assertEqual(len(spills), len(entries), result.stderr[-2000:])
        self.assertEqual([s for s in spills if s != ("0", "0")], [], result.stderr)

    def test_flash_attention_artifact(self):
        """--cuda-attention=flash: bf16 attention of head dim 64 becomes the
        runtime's flash kernels (forward and gradient, one command each per
        layer), the artifact passes the runtime's verifier, and the choice
        is the CUDA target's alone."""
        model = os.path.join(ROOT, "bench", "gpu", "gpt2-flash.json")
        train = os.path.join(ROOT, "bench", "gpu", "train-flash.json")
        artifact = self.path("gpt2-flash.tgx")
        stats = json.loads(run("tgc", "compile", model, "--train", train, "--target", "cuda", "--dtype=bf16",
                               "--cuda-attention=flash", "--stats=json", "-o", artifact))
        self.assertEqual(stats["attention_calls"], 4)
        self.assertEqual([a["kernel"] for a in stats["attention"]], ["flash"] * 2)
        # f32 stays decomposed, saying why.
        stats = json.loads(run("tgc", "compile", model, "--train", train, "--target", "cuda", "--dtype=f32",
                               "--cuda-attention=flash", "--stats=json", "-o", self.path("f32.tgx")))
        self.assertEqual(stats["attention_calls"], 0)
        self.assertIn("take bf16", stats["attention"][0]["reason"])
        if subprocess.run(["sh", "-c", "ldconfig -p | grep -q 'libcuda.so.1 '"]).returncode != 0:
            code, _, err = run_status("tgrun", artifact, "--data", os.devnull, "--steps", 1)
            self.assertEqual(code, 1, err)
            self.assertIn("needs an NVIDIA GPU with its driver", err)
        code, _, err = run_status("tgc", "compile", model, "--train", train, "--cuda-attention=flash",
                                  "-o", self.path("cpu.tgx"))
        self.assertEqual(code, 1, err)
        self.assertIn("--cuda-attention chooses how the GPU computes attention: add --target cuda", err)

    def test_cudnn_attention_artifact(self):
        """--cuda-attention=cudnn, the default: the ops cuDNN's graph takes
        are marked for it (GPT-2's both layers), a Llama's rotary embedding
        then stays outside (four tg.rope kernels a layer), as it does with the
        runtime's kernels unless --fuse=attention-rope has them rotate inside,
        and the artifact passes the runtime's verifier."""
        train = os.path.join(ROOT, "bench", "gpu", "train-flash.json")
        stats = {}
        for model in ["gpt2-flash", "llama-flash"]:
            for choice, flags in (("flash", ["--cuda-attention=flash"]), ("cudnn", ["--cuda-attention=cudnn"]),
                                  ("rope", ["--cuda-attention=flash", "--fuse=attention-rope"])):
                artifact = self.path(f"{model}-{choice}.tgx")
                stats[model, choice] = json.loads(run(
                    "tgc", "compile", os.path.join(ROOT, "bench", "gpu", model + ".json"), "--train", train,
                    "--target", "cuda", "--dtype=bf16", *flags, "--stats=json", "-o", artifact))
        for model in ["gpt2-flash", "llama-flash"]:
            cudnn = stats[model, "cudnn"]
            self.assertEqual([a["kernel"] for a in cudnn["attention"]], ["cudnn"] * 2)
            self.assertEqual(cudnn["attention"][0]["reason"],
                             "cuDNN's fused attention (--cuda-attention=cudnn, the CUDA default since it ran "
                             "faster than the runtime's flash kernels at every shape measured, docs/perf.md)")
            self.assertEqual(cudnn["attention_calls"], 4)
        # The default is cuDNN's.
        default = json.loads(run(
            "tgc", "compile", os.path.join(ROOT, "bench", "gpu", "gpt2-flash.json"), "--train", train,
            "--target", "cuda", "--dtype=bf16", "--stats=json", "-o", self.path("gpt2-flash-default.tgx")))
        self.assertEqual(default["attention"], stats["gpt2-flash", "cudnn"]["attention"])
        self.assertEqual(stats["gpt2-flash", "cudnn"]["kernel_launches"],
                         stats["gpt2-flash", "flash"]["kernel_launches"])
        self.assertEqual(stats["llama-flash", "cudnn"]["kernel_launches"],
                         stats["llama-flash", "flash"]["kernel_launches"])
        self.assertEqual(stats["llama-flash", "flash"]["kernel_launches"],
                         stats["llama-flash", "rope"]["kernel_launches"] + 4 * 2)
        self.assertNotIn("RoPE inside", stats["llama-flash", "flash"]["attention"][0]["reason"])
        self.assertIn("RoPE inside", stats["llama-flash", "rope"]["attention"][0]["reason"])
        if subprocess.run(["sh", "-c", "ldconfig -p | grep -q 'libcuda.so.1 '"]).returncode != 0:
            code, _, err = run_status("tgrun", self.path("llama-flash-cudnn.tgx"), "--data", os.devnull,
                                      "--steps", 1)
            self.assertEqual(code, 1, err)
            self.assertIn("needs an NVIDIA GPU with its driver", err)

    def test_half_math_choice(self):
        """--cuda-half-math: bf16 exp and division use the fast approximations
        by default and libdevice's exact routines with =exact; f32 kernels are
        the same either way, and the CPU target refuses the option."""
        ptx = {}
        for dtype in ["f32", "bf16"]:
            for choice in ["approximate", "exact"]:
                out = self.path(f"half-math-{dtype}-{choice}")
                run("tgc", "compile", example("models", "gpt2-tiny"), "--train", example("train", "tiny"),
                    "--target", "cuda", f"--dtype={dtype}", f"--cuda-half-math={choice}", "--emit=ptx",
                    "-o", out)
                with open(os.path.join(out, "kernels.ptx")) as f:
                    ptx[dtype, choice] = f.read()
        self.assertEqual(ptx["f32", "approximate"], ptx["f32", "exact"])
        approximate, exact = ptx["bf16", "approximate"], ptx["bf16", "exact"]
        # The softmax rows divide by their sums; exp is __nv_expf's polynomial
        # (an ex2.approx.ftz on a reduced argument) or one ex2.approx.f32.
        self.assertIn("div.approx.f32", approximate)
        self.assertNotIn("div.approx.f32", exact)
        self.assertIn("div.rn.f32", exact)
        self.assertIn("ex2.approx.f32", approximate)
        self.assertNotIn("ex2.approx.f32", exact)
        self.assertLess(approximate.count("\n"), exact.count("\n"))
        self.assert_refused(["--cuda-half-math=exact"],
                            "--cuda-half-math chooses how GPU kernels compute: add --target cuda")

    def test_row_registers(self):
        """--cuda-row-registers caps the registers of row kernels (the norms'
        rows) in the PTX and leaves elementwise kernels as they were; out of
        range or without --target cuda it is refused by name."""
        ptx = {}
        for cap in ["0", "80"]:
            out = self.path(f"row-registers-{cap}")
            run("tgc", "compile", example("models", "gpt2-tiny"), "--train", example("train", "tiny"),
                "--target", "cuda", f"--cuda-row-registers={cap}", "--emit=ptx", "-o", out)
            with open(os.path.join(out, "kernels.ptx")) as f:
                ptx[cap] = dict(re.findall(r"\.entry (\w+)\([^{]*?\.maxnreg (\d+)", f.read(), re.S))
        self.assertEqual(ptx["0"].keys(), ptx["80"].keys())
        capped = {name for name in ptx["0"] if ptx["80"][name] != ptx["0"][name]}
        self.assertTrue(capped and all(ptx["80"][name] == "80" for name in capped), ptx["80"])
        self.assertTrue(any("layer_norm" in name for name in capped), capped)
        self.assertTrue(any(ptx["80"][name] == "255" for name in ptx["80"]), ptx["80"])
        self.assert_refused(["--target", "cuda", "--cuda-row-registers=300"],
                            "--cuda-row-registers=300 is out of range: give 32 to 255")
        self.assert_refused(["--cuda-row-registers=80"],
                            "--cuda-row-registers caps GPU kernels' registers: add --target cuda")

    def test_f32_partial_terms(self):
        """--cuda-f32-partial-terms: a thread sums its share of a float64
        sum in float32, so the PTX converts to float64 far less often than
        with 0 (float64 throughout); out of range or without --target cuda
        it is refused by name."""
        conversions = {}
        for terms in ["0", "256"]:
            out = self.path(f"f32-partial-terms-{terms}")
            run("tgc", "compile", example("models", "gpt2-tiny"), "--train", example("train", "tiny"),
                "--target", "cuda", "--dtype=bf16", f"--cuda-f32-partial-terms={terms}", "--emit=ptx",
                "-o", out)
            with open(os.path.join(out, "kernels.ptx")) as f:
                conversions[terms] = len(re.findall(r"cvt\.f64\.(?:bf16|f32)", f.read()))
        self.assertGreater(conversions["0"], 3 * conversions["256"], conversions)
        self.assert_refused(["--target", "cuda", "--cuda-f32-partial-terms=-1"],
                            "--cuda-f32-partial-terms=-1 is out of range: give 0 (float64 throughout) to 65536")
        self.assert_refused(["--cuda-f32-partial-terms=64"],
                            "--cuda-f32-partial-terms chooses how GPU kernels sum: add --target cuda")

    def test_column_share(self):
        """--cuda-column-share: a thread's share of a split column sum has
        at least N rows, so halving it doubles the shares, and their
        partials, of a column pass whose shares the rows limited (GPT-2
        medium's norm gradients: 128 column blocks of 8192 rows), and leaves
        the bias gradients' (limited by the device's threads) as they were;
        out of range or without --target cuda it is refused by name."""
        partials = {}
        for rows in ["32", "16"]:
            out = self.path(f"column-share-{rows}")
            run("tgc", "compile", bench_gpu("gpt2-medium"), "--train", bench_gpu("train-gpt2-medium"),
                "--target", "cuda", "--dtype=bf16", f"--cuda-column-share={rows}", "--emit=ptx",
                "-o", out)
            with open(os.path.join(out, "kernels.ptx")) as f:
                partials[rows] = dict(re.findall(r"\.global \.align \d+ \.b8 (\w+_partials0)\[(\d+)\]",
                                                 f.read()))
        self.assertEqual(partials["32"].keys(), partials["16"].keys())
        norms = [name for name in partials["32"] if "layer_norm_grad" in name]
        biases = [name for name in partials["32"] if re.match(r"k\d+_reduce_sum_0_", name)]
        self.assertTrue(norms and biases, partials["32"])
        for name in norms:
            self.assertEqual(int(partials["16"][name]), 2 * int(partials["32"][name]), name)
        for name in biases:
            self.assertEqual(partials["16"][name], partials["32"][name], name)
        self.assert_refused(["--target", "cuda", "--cuda-column-share=8"],
                            "--cuda-column-share=8 is out of range: give 16 to 4096 rows")
        self.assert_refused(["--cuda-column-share=16"],
                            "--cuda-column-share chooses how GPU kernels sum columns: add --target cuda")

    def test_last_block_combines(self):
        """--cuda-last-block-combines: each split column sum whose blocks
        join their shares (GPT-2 medium's norm and bias gradients) loses its
        second launch; its first counts its blocks per group of 32 column
        blocks in a zeroed device global (one atomic add a block, after a
        fence), and the last block fences before it reads the partials. The
        other split sums keep two launches; without --target cuda it is
        refused by name."""
        ptx = self.medium_ptx_with_and_without("--cuda-last-block-combines")
        entries = {flag: set(re.findall(r"\.entry (\w+)\(", text)) for flag, text in ptx.items()}
        arrivals = re.findall(r"\.global \.align \d+ \.b8 (\w+)_arrivals\[\d+\];", ptx["--cuda-last-block-combines"])
        combined = sorted(re.sub(r"_\d+$", "", launch) for launch in arrivals)
        self.assertEqual([re.sub(r"^k\d+_", "", kernel) for kernel in combined],
                         ["layer_norm_grad_to_reduce_sum", "reduce_sum", "layer_norm_grad_to_reduce_sum",
                          "reduce_sum", "layer_norm_grad_to_add"], combined)
        gone = {f"{kernel}_{int(launch.rsplit('_', 1)[1]) + 1}" for kernel, launch in zip(combined, sorted(arrivals))}
        self.assertEqual(entries[""] - entries["--cuda-last-block-combines"], gone)
        self.assertEqual(entries["--cuda-last-block-combines"] - entries[""], set())
        self.assertNotIn("atom.global.add", ptx[""])
        self.assertEqual(ptx["--cuda-last-block-combines"].count("atom.global.add.u32"), len(arrivals))
        # A fence after the partials' stores, and one before the last block
        # reads them, in each.
        self.assertNotIn("membar.gl", ptx[""])
        self.assertEqual(ptx["--cuda-last-block-combines"].count("membar.gl"), 2 * len(arrivals))
        self.assert_refused(["--cuda-last-block-combines"],
                            "--cuda-last-block-combines chooses how GPU kernels combine column sums: add --target cuda")

    def test_column_sums_in_row_pass(self):
        """--cuda-column-sums-in-row-pass: GPT-2 medium's three norm
        gradients (a row pass, then the column sums of their weight, bias
        and projection-bias gradients over its rows) lose a launch each: the
        row pass adds its rows' columns itself, 256 blocks (two an SM of the
        default 132, in whole groups of 8) storing a partial each, and each
        group's last block (one atomic add a block, after a fence) joins its
        8 for the combine launch, which folds 32 a column block. The other
        kernels keep their launches; without --target cuda it is refused by
        name."""
        ptx = self.medium_ptx_with_and_without("--cuda-column-sums-in-row-pass")
        fused = ptx["--cuda-column-sums-in-row-pass"]
        entries = {flag: set(re.findall(r"\.entry (\w+)\(", text)) for flag, text in ptx.items()}
        norms = sorted({re.sub(r"_\d+$", "", entry) for entry in entries[""] if "layer_norm_grad" in entry})
        self.assertEqual(len(norms), 3, norms)
        # Launches 0 (rows), 1 (column shares) and 2 (combine) become 0 and 1.
        self.assertEqual(entries[""] - entries["--cuda-column-sums-in-row-pass"], {f"{n}_2" for n in norms})
        self.assertEqual(entries["--cuda-column-sums-in-row-pass"] - entries[""], set())
        block_partials = dict(re.findall(r"\.global \.align \d+ \.b8 (\w+)_block_partials0\[(\d+)\];", fused))
        group_partials = dict(re.findall(r"\.global \.align \d+ \.b8 (\w+)_partials0\[(\d+)\];", fused))
        self.assertEqual(sorted(block_partials), [f"{n}_0" for n in norms])
        for launch, size in block_partials.items():
            # 128 column blocks, 256 blocks of f64 partials, 32 groups of them.
            self.assertEqual(int(size), 128 * 256 * 8, launch)
            self.assertEqual(int(group_partials[launch]), 128 * 32 * 8, launch)
        self.assertEqual(fused.count("atom.global.add.u32"), len(norms))
        self.assertEqual(fused.count("membar.gl"), 2 * len(norms))
        self.assertNotIn("atom.global.add", ptx[""])
        self.assert_refused(["--cuda-column-sums-in-row-pass"],
                            "--cuda-column-sums-in-row-pass chooses how GPU kernels sum columns: add --target cuda")

    def test_sm_count(self):
        """--cuda-sm-count: the grids are sized for N SMs, not the
        --cuda-arch's full part: gpt2-wide's norm gradients' row passes with
        their column sums (two blocks an SM, at most 256) get 32 blocks for
        16 SMs where they get 256 for sm_90a's 132, each then carrying its
        sums over 8 groups of rows. Out of range, or without --target cuda,
        it is refused by name."""
        blocks = {}
        for count in ["", "16"]:
            out = self.path(f"sm-count-{count or 'default'}")
            run("tgc", "compile", bench_gpu("gpt2-wide"), "--train", bench_gpu("train-check"), "--target",
                "cuda", "--dtype=bf16", "--cuda-column-sums-in-row-pass",
                *([f"--cuda-sm-count={count}"] if count else []), "--emit=ptx", "-o", out)
            with open(os.path.join(out, "kernels.ptx")) as f:
                sizes = set(re.findall(r"_block_partials0\[(\d+)\];", f.read()))
            # f64 partials of 32 column blocks a block.
            blocks[count] = {int(size) // (8 * 32) for size in sizes}
        self.assertEqual(blocks, {"": {256}, "16": {32}})
        self.assert_refused(["--target", "cuda", "--cuda-sm-count=0"],
                            "--cuda-sm-count=0 is out of range: give 1 to 1024 SMs")
        self.assert_refused(["--cuda-sm-count=16"],
                            "--cuda-sm-count sizes GPU kernels' grids: add --target cuda")

    def test_weight_gradient_stream(self):
        """--cuda-weight-gradient-stream: the weight gradients' GEMMs, which
        only the optimizer reads, run on stream 2 beside the backward pass
        (every layer's but the last product's), GPT-2 medium's in the same
        planned arena (the tiny model's first fit may differ by a buffer);
        without --target cuda it is refused by name."""
        args = [example("models", "gpt2-tiny"), "--train", example("train", "tiny"), "--target",
                "cuda", "--dtype=bf16", "--stats=json"]
        medium = [bench_gpu("gpt2-medium"), "--train", bench_gpu("train-gpt2-medium"), "--target", "cuda",
                  "--dtype=bf16", "--stats=json"]
        arenas = {}
        for flag in ([], ["--cuda-weight-gradient-stream"]):
            arenas[bool(flag)] = json.loads(run("tgc", "compile", *medium, *flag))["arena_bytes"]
            code, out, err = run_status(
                "tgc", "compile", *args, *flag, "--mlir-print-ir-after=exec-plan-buffers",
                "--mlir-print-debuginfo")
            self.assertEqual(code, 0, err)
            names = dict(re.findall(r'^(#loc\d+) = loc\("([^"]+)"', err, re.M))
            side = [names.get(loc) for loc in
                    re.findall(r"exec\.gemm\(.* on 2 .* loc\((#loc\d+)\)$", err, re.M)]
            if not flag:
                self.assertEqual(side, [])
        weights = [f"grad_h{layer}_{w}_compute" for layer in (0, 1)
                   for w in ("mlp_c_proj_w", "mlp_c_fc_w", "attn_c_proj_w", "attn_c_attn_w")]
        self.assertEqual(set(weights) - set(side), {"grad_h0_attn_c_attn_w_compute"}, side)
        self.assertEqual(arenas[True], arenas[False])
        self.assert_refused(["--cuda-weight-gradient-stream"],
                            "--cuda-weight-gradient-stream schedules GPU streams: add --target cuda")

    def test_tgrun_needs_a_gpu(self):
        """On a machine without the NVIDIA driver, a CUDA artifact is verified and
        refused with a message saying what it needs; never a crash."""
        if subprocess.run(["sh", "-c", "ldconfig -p | grep -q 'libcuda.so.1 '"]).returncode == 0:
            self.skipTest("skipped: this machine has the NVIDIA driver (cuda_vs_cpu.py runs instead)")
        tokens = self.path("tokens.bin")
        with open(tokens, "wb") as f:
            f.write(bytes(range(60)) * 100)
        for dtype in ["f32", "bf16"]:  # bf16 GEMMs pass the verifier for CUDA
            artifact = self.path(f"gpt2-cuda-{dtype}.tgx")
            run("tgc", "compile", example("models", "gpt2-tiny"), "--train", example("train", "tiny"),
                "--target", "cuda", f"--dtype={dtype}", "-o", artifact)
            code, _, err = run_status("tgrun", artifact, "--data", tokens, "--steps", 1)
            self.assertEqual(code, 1, err)
            self.assertIn(f"gpt2-cuda-{dtype}.tgx: the program was compiled for CUDA (sm_90a) and needs "
                          "an NVIDIA GPU with its driver", err)
            self.assertIn("compile the model for the CPU", err)

    def test_runtime_settings_are_refused_by_name(self):
        """TG_CUDA_GEMM_AUTOTUNE and TG_CUDA_FLASH_BACKWARD are read before the
        GPU is looked for: a value they do not take is refused by name on any
        machine."""
        artifact = self.path("gpt2-cuda-settings.tgx")
        run("tgc", "compile", example("models", "gpt2-tiny"), "--train", example("train", "tiny"),
            "--target", "cuda", "-o", artifact)

        def tgrun(variable, value):
            env = dict(os.environ, **{variable: value})
            return subprocess.run([os.path.join(os.environ.get("TGC_BIN", ""), "tgrun"), artifact,
                                   "--steps", "1", "--data", os.devnull], capture_output=True, text=True,
                                  env=env)

        refusals = [("TG_CUDA_GEMM_AUTOTUNE", value, "set it to how many of cuBLASLt's algorithms to time for "
                     "each GEMM shape, a whole number from 0 to 64") for value in ["lots", "-1", "65", "8x"]]
        refusals += [("TG_CUDA_FLASH_BACKWARD", value, "set it to 'summed' (the query gradients added up "
                      "atomically by the key blocks: fewer matrix products, not bitwise reproducible) or "
                      "'deterministic' (the default)") for value in ["atomic", "Summed", "summed "]]
        for variable, value, advice in refusals:
            result = tgrun(variable, value)
            self.assertEqual(result.returncode, 1, result.stderr)
            self.assertIn(f"gpt2-cuda-settings.tgx: {variable} is '{value}': {advice}", result.stderr)
        if subprocess.run(["sh", "-c", "ldconfig -p | grep -q 'libcuda.so.1 '"]).returncode != 0:
            for variable, value in (("TG_CUDA_GEMM_AUTOTUNE", "8"), ("TG_CUDA_FLASH_BACKWARD", "summed"),
                                    ("TG_CUDA_FLASH_BACKWARD", "deterministic")):
                result = tgrun(variable, value)
                self.assertEqual(result.returncode, 1, result.stderr)
                self.assertIn("needs an NVIDIA GPU with its driver", result.stderr)

    def test_driver_entry_points_resolve(self):
        """The CUDA toolkit's stub libcuda exports the driver's API: loading it
        checks that every entry point the backend resolves exists, and that the
        stub is recognised."""
        stub = "/usr/local/cuda/lib64/stubs/libcuda.so"
        if not os.path.exists(stub):
            self.skipTest("skipped: no CUDA toolkit stub libcuda")
        os.makedirs(self.path("stub"), exist_ok=True)
        link = self.path("stub", "libcuda.so.1")
        if not os.path.exists(link):
            os.symlink(stub, link)
        artifact = self.path("llama-cuda.tgx")
        run("tgc", "compile", example("models", "llama-tiny"), "--train", example("train", "tiny"),
            "--target", "cuda", "-o", artifact)
        env = dict(os.environ, LD_LIBRARY_PATH=self.path("stub"))
        result = subprocess.run([os.path.join(os.environ.get("TGC_BIN", ""), "tgrun"), artifact,
                                 "--steps", "1", "--data", os.devnull], capture_output=True, text=True,
                                env=env)
        self.assertEqual(result.returncode, 1, result.stderr)
        self.assertIn("the CUDA toolkit's stub libcuda was loaded instead of the driver's", result.stderr)


if __name__ == "__main__":
    unittest.main()
