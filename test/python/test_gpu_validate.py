"""scripts/gpu-validate without a GPU: `prepare` writes a bundle, `run` says
there is no GPU (exit 77), and `report` on the bundle fails the correctness
checks that did not run. The report's attention rows are checked on what a
GPU run leaves: a profile of a decomposed attention (here the tiny GPT-2's,
profiled on the CPU; forward before the loss, backward after) and PyTorch's
fused kernels' times. The flash kernels' harness (`validate.py
flash-kernels`) is checked against the kernels' header, compiled, and its
report rows on what a GPU run leaves."""
import ctypes
import importlib.util
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

import numpy as np

from tgtest.tools import run

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SCRIPT = os.path.join(ROOT, "scripts", "gpu-validate")
VALIDATE = os.path.join(ROOT, "bench", "gpu", "validate.py")
TINY = os.path.join(ROOT, "examples", "models", "gpt2-tiny.json")
TRAIN = os.path.join(ROOT, "examples", "train", "tiny.json")
ATTENTION_LABEL = re.compile(r"^(grad_)?h\d+_attn(_scores|_probs|_dscores|_dprobs|_dq|_dk|_dv)?$")
# What `validate.py attention` writes on a GPU: one kernel timed, one missing.
SDPA = {"batch": 8, "heads": 16, "seq": 1024, "head_dim": 64, "torch": "2.11.0", "forward_flops": 1.7e10,
        "kernels": {"cuDNN": {"forward_ms": 0.1, "backward_ms": 0.25, "forward_tflops": 170.0,
                              "backward_tflops": 170.0},
                    "FlashAttention-2": {"error": "No available kernel. Aborting execution."}}}
# What `validate.py flash-kernels` writes on a GPU: a shape whose errors are
# within the bound, and one whose key gradient is not.
TIMES = {"forward_ms": 0.5, "backward_ms": 1.25, "forward_tflops": 200.0, "backward_tflops": 200.0}
FLASH_KERNELS = {"ptx": "FlashAttention.ptx", "error_bound": 1e-2, "torch": "2.11.0",
                 "resources": {"forward_d64": {"registers": 167, "local_bytes": 0}},
                 "resources_more_blocks": {"forward_d64": {"registers": 128, "local_bytes": 16}}, "shapes": [
    {"label": "GPT-2 medium", "batch": 8, "heads": 16, "key_heads": 16, "seq": 1024, "head_dim": 64,
     "forward_flops": 1.7e10, "tgc": dict(TIMES, errors={"result": 2e-3, "query_grad": 3e-3, "key_grad": 3e-3,
                                                         "value_grad": 2e-3}),
     "tgc_more_blocks": {"forward_ms": 0.4, "backward_ms": 1.0, "forward_tflops": 250.0, "backward_tflops": 250.0,
                         "errors": {"result": 2e-3, "query_grad": 3e-3, "key_grad": 3e-3, "value_grad": 2e-3}},
     "tgc_summed": {"forward_ms": 0.45, "backward_ms": 0.9, "forward_tflops": 222.0, "backward_tflops": 278.0,
                    "errors": {"result": 2e-3, "query_grad": 4e-3, "key_grad": 3e-3, "value_grad": 2e-3}},
     "torch": {"cuDNN": TIMES, "FlashAttention-2": {"error": "No available kernel."}}},
    {"label": "grouped heads, long", "batch": 1, "heads": 32, "key_heads": 8, "seq": 8192, "head_dim": 128,
     "forward_flops": 5.5e11, "tgc": dict(TIMES, errors={"result": 2e-3, "query_grad": 3e-3, "key_grad": 0.4,
                                                         "value_grad": 2e-3}),
     "tgc_summed": {"error": "cuLaunchKernel key_value_grads_adding_query: too many resources requested"},
     "torch": {}}]}

# What the run's ncu step leaves: ncu's own lines, then one CSV row per
# launch and counter (two launches of a fold, one of a flash kernel).
NCU_HEADER = ('"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size",'
              '"Grid Size","Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"')
NCU_LAUNCHES = {("0", "k27_reduce_sum_0"): (33900, 61.7, 23.9, 23.2, 128, 512, 256),
                ("1", "k27_reduce_sum_0"): (34100, 60.1, 23.5, 23.0, 128, 512, 256),
                ("2", "tg_flash_attention_forward_d64"): (159000, 11.6, 42.1, 17.7, 167, 2048, 128)}
NCU_METRIC_NAMES = ["gpu__time_duration.sum", "dram__throughput.avg.pct_of_peak_sustained_elapsed",
                    "sm__throughput.avg.pct_of_peak_sustained_elapsed",
                    "sm__warps_active.avg.pct_of_peak_sustained_active", "launch__registers_per_thread",
                    "launch__grid_size", "launch__block_size"]
NCU_CSV = "\n".join(
    ["==PROF== Connected to process 1519 (tgrun)", "tgrun: random initial weights (seed 1234)", NCU_HEADER] +
    [",".join(f'"{v}"' for v in (launch, "1519", "tgrun", "127.0.0.1", kernel, "1", "7", "(256, 1, 1)",
                                   "(512, 1, 1)", "0", "9.0", "Command line profiler metrics", metric,
                                   "ns" if metric == "gpu__time_duration.sum" else "",
                                   f"{value:,}" if metric == "gpu__time_duration.sum" else value))
     for (launch, kernel), values in NCU_LAUNCHES.items() for metric, value in zip(NCU_METRIC_NAMES, values)]) + "\n"


def load_validate():
    spec = importlib.util.spec_from_file_location("validate", VALIDATE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


class GpuValidate(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.bundle = os.path.join(cls.tmp.name, "bundle")
        # An earlier build's medium artifact to time beside this one's: any
        # artifact stands in for it here.
        base = os.path.join(cls.tmp.name, "earlier.tgx")
        run("tgc", "compile", TINY, "--train", TRAIN, "--target", "cuda", "--dtype=bf16", "-o", base)
        prepared = subprocess.run([SCRIPT, "prepare", cls.bundle, "--base", base, "--base-label", "abc1234 (before)",
                                   "--variant", "gelu=--no-fuse=gemm-activation"],
                                  capture_output=True, text=True)
        if prepared.returncode != 0:
            raise RuntimeError(f"gpu-validate prepare failed:\n{prepared.stderr}")
        cls.manifest = json.load(open(os.path.join(cls.bundle, "manifest.json")))
        # A decomposed attention's profile, where a GPU run leaves the medium
        # model's decomposed variant's.
        tgx, tokens = os.path.join(cls.tmp.name, "tiny.tgx"), os.path.join(cls.tmp.name, "tokens.bin")
        run("tgc", "compile", TINY, "--train", TRAIN, "--no-fuse=attention", "-o", tgx)
        vocab = json.load(open(TINY))["vocab_size"]
        np.random.default_rng(3).integers(0, vocab, 4000).astype(np.uint16).tofile(tokens)
        cls.profile = os.path.join(cls.bundle, "work", "medium-profile-decomposed.json")
        os.makedirs(os.path.dirname(cls.profile))
        run("tgrun", tgx, "--data", tokens, "--steps", 3, "--profile", cls.profile)
        write(os.path.join(cls.bundle, "results", "medium-profile-decomposed.rc"), "0\n")
        # The flash variant's profile (the runtime's flash kernels): one
        # layer's forward and gradient, 0.1 and 0.25 ms a step (and a kernel
        # beside them).
        flash = []
        for step in (1, 2, 3):
            for name, cat, dur in (("attention h0_attn", "attention", 100), ("attention grad_h0_attn", "attention", 250),
                                   ("k3_transpose h0_attn_q", "kernel", 10), ("gemm grad_h0_mlp_gelu", "gemm", 200),
                                   ("gemm h0_mlp_fc", "gemm", 150)):
                flash.append({"ph": "X", "name": name, "cat": cat, "ts": step * 1000, "dur": dur,
                              "args": {"step": step, "bytes": 1e6, "flops": 1e9}})
        write(os.path.join(cls.bundle, "work", "medium-profile-flash.json"), json.dumps({"traceEvents": flash}))
        write(os.path.join(cls.bundle, "results", "medium-profile-flash.rc"), "0\n")
        # The default step's profile: the same commands, run by cuDNN, 0.04
        # and 0.09 ms a step.
        cudnn = [dict(e, dur=e["dur"] * 0.4 if e["cat"] == "attention" else e["dur"]) for e in flash]
        cudnn = [dict(e, dur=90) if e["name"] == "attention grad_h0_attn" else e for e in cudnn]
        write(os.path.join(cls.bundle, "work", "medium-profile.json"), json.dumps({"traceEvents": cudnn}))
        write(os.path.join(cls.bundle, "results", "medium-profile.rc"), "0\n")
        write(os.path.join(cls.bundle, "results", "medium-profile.log"), "")
        # The bias-grad variant's: its GELU-gradient GEMM 0.3 ms a step where
        # the default's takes 0.2 (the other GEMM the same).
        bias_grad = [dict(e, dur=300) if e["name"] == "gemm grad_h0_mlp_gelu" else e for e in cudnn]
        write(os.path.join(cls.bundle, "work", "medium-profile-bias-grad.json"), json.dumps({"traceEvents": bias_grad}))
        write(os.path.join(cls.bundle, "results", "medium-profile-bias-grad.rc"), "0\n")
        # The long-sequence attention's profiles: the runtime's kernels at
        # 2 and 5 ms a layer, cuDNN's at 1.1 and 3 ms (two layers a step).
        for profile, forward, backward in (("long-flash", 2000, 5000), ("long-cudnn", 1100, 3000)):
            events = [{"ph": "X", "name": f"attention {grad}h{layer}_attn", "cat": "attention",
                       "ts": step * 1000, "dur": backward if grad else forward,
                       "args": {"step": step, "bytes": 1e6, "flops": 1e9}}
                      for step in (1, 2, 3) for layer in (0, 1) for grad in ("", "grad_")]
            write(os.path.join(cls.bundle, "work", profile + ".json"), json.dumps({"traceEvents": events}))
            write(os.path.join(cls.bundle, "results", profile + ".rc"), "0\n")
            write(os.path.join(cls.bundle, "results", profile + ".log"), "")
        write(os.path.join(cls.bundle, "results", "attention.json"), json.dumps(SDPA))
        write(os.path.join(cls.bundle, "results", "attention.rc"), "0\n")
        write(os.path.join(cls.bundle, "results", "flash-kernels.json"), json.dumps(FLASH_KERNELS))
        write(os.path.join(cls.bundle, "results", "flash-kernels.rc"), "0\n")
        write(os.path.join(cls.bundle, "results", "ncu.csv"), NCU_CSV)
        write(os.path.join(cls.bundle, "results", "ncu.rc"), "0\n")
        # The medium step and the same step compiled as before, as a GPU run
        # leaves them: 80 and 100 ms a step.
        for name, step_ms, loss in (("medium-tgc", 80.0, 11.0), ("medium-base", 100.0, 11.25),
                                    ("medium-variant-gelu", 84.0, 11.0), ("medium-gemm-autotune", 76.0, 11.0),
                                    ("medium-variant-flash", 96.0, 11.0), ("medium-flash-summed", 90.0, 11.001)):
            write(os.path.join(cls.bundle, "results", name + ".jsonl"),
                  "".join(json.dumps({"step": s + 1, "loss": loss, "step_ms": step_ms}) + "\n"
                          for s in range(25)))
            write(os.path.join(cls.bundle, "results", name + ".rc"), "0\n")
        write(os.path.join(cls.bundle, "results", "medium-gemm-autotune.log"),
              "bundle/artifacts/gpt2-medium-bf16.tgx: GEMM autotuning (TG_CUDA_GEMM_AUTOTUNE=8): 20 shapes, "
              "18 with more than one algorithm to time; 5 now run another than cuBLASLt's first choice "
              "(1 of them split over K): "
              "3.100 ms less a step over their 120 commands, of 25.000 ms in all GEMMs timed (tuning took "
              "0.40 s)\nstep 1/25 ...\n")
        # cuDNN's attention checks: the GPT-2 one fell back to the runtime's
        # kernels (its warning in the log), the Llama one ran and matches
        # the CPU's losses.
        write(os.path.join(cls.bundle, "results", "gpt2-flash-cudnn-bf16.log"),
              "bundle/artifacts/gpt2-flash-cudnn-bf16.tgx: warning: 4 attention command(s) compiled for cuDNN "
              "run on the runtime's flash kernels instead; the first, h0_attn: cuDNN (libcudnn.so.9) cannot "
              "be loaded\n")
        write(os.path.join(cls.bundle, "results", "gpt2-flash-cudnn-bf16.rc"), "0\n")
        llama = json.load(open(os.path.join(cls.bundle, "reference", "llama-flash.json")))["loss"]
        write(os.path.join(cls.bundle, "results", "llama-flash-cudnn-bf16.jsonl"),
              "".join(json.dumps({"step": s + 1, "loss": loss}) + "\n" for s, loss in enumerate(llama)))
        write(os.path.join(cls.bundle, "results", "llama-flash-cudnn-bf16.log"), "")
        write(os.path.join(cls.bundle, "results", "llama-flash-cudnn-bf16.rc"), "0\n")
        # The summed backward's Llama check: within the bf16 bound of the CPU.
        write(os.path.join(cls.bundle, "results", "llama-flash-summed-bf16.jsonl"),
              "".join(json.dumps({"step": s + 1, "loss": loss + 1e-3}) + "\n" for s, loss in enumerate(llama)))
        write(os.path.join(cls.bundle, "results", "llama-flash-summed-bf16.rc"), "0\n")
        # The bias gradient epilogue's check: beyond the bf16 bound at its
        # last step.
        gpt2 = json.load(open(os.path.join(cls.bundle, "reference", "gpt2-flash.json")))["loss"]
        write(os.path.join(cls.bundle, "results", "gpt2-flash-bgrad-bf16.jsonl"),
              "".join(json.dumps({"step": s + 1, "loss": loss + (0.5 if s == len(gpt2) - 1 else 0)}) + "\n"
                      for s, loss in enumerate(gpt2)))
        write(os.path.join(cls.bundle, "results", "gpt2-flash-bgrad-bf16.rc"), "0\n")
        # The weight gradients' stream: the CPU run's losses.
        write(os.path.join(cls.bundle, "results", "gpt2-flash-wgrad-bf16.jsonl"),
              "".join(json.dumps({"step": s + 1, "loss": loss}) + "\n" for s, loss in enumerate(gpt2)))
        write(os.path.join(cls.bundle, "results", "gpt2-flash-wgrad-bf16.rc"), "0\n")
        # The last blocks' combine: gpt2-wide's CPU run's losses.
        wide = json.load(open(os.path.join(cls.bundle, "reference", "gpt2-wide.json")))["loss"]
        write(os.path.join(cls.bundle, "results", "gpt2-wide-lastblock-bf16.jsonl"),
              "".join(json.dumps({"step": s + 1, "loss": loss}) + "\n" for s, loss in enumerate(wide)))
        write(os.path.join(cls.bundle, "results", "gpt2-wide-lastblock-bf16.rc"), "0\n")
        # The row passes' column sums: gpt2-wide's CPU run's losses too.
        write(os.path.join(cls.bundle, "results", "gpt2-wide-rowcolumns-bf16.jsonl"),
              "".join(json.dumps({"step": s + 1, "loss": loss}) + "\n" for s, loss in enumerate(wide)))
        write(os.path.join(cls.bundle, "results", "gpt2-wide-rowcolumns-bf16.rc"), "0\n")
        cls.report = subprocess.run([sys.executable, VALIDATE, "report", cls.bundle], capture_output=True, text=True)
        cls.rows = [line for line in cls.report.stdout.splitlines() if line.startswith("| attention |")]
        cls.kernel_rows = [line for line in cls.report.stdout.splitlines()
                           if line.startswith("| attention kernels |")]

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_prepare_writes_the_bundle(self):
        for name in ("gpt2-tiny-f32", "gpt2-tiny-bf16", "llama-tiny-f32", "llama-tiny-bf16", "gpt2-medium-bf16",
                     "gpt2-medium-bf16-base"):
            self.assertTrue(os.path.getsize(os.path.join(self.bundle, "artifacts", name + ".tgx")) > 0, name)
        self.assertEqual([c["name"] for c in self.manifest["correctness"]],
                         ["gpt2-tiny-f32", "gpt2-tiny-bf16", "llama-tiny-f32", "llama-tiny-bf16",
                          "gpt2-vocab-f32", "gpt2-vocab-bf16", "gpt2-wide-f32", "gpt2-wide-bf16", "gpt2-flash-bf16", "gpt2-flash-cudnn-bf16", "gpt2-flash-summed-bf16",
                          "llama-flash-bf16", "llama-flash-cudnn-bf16", "llama-flash-summed-bf16",
                          "mistral-flash-bf16", "mistral-flash-cudnn-bf16", "mistral-flash-summed-bf16",
                          "gpt2-flash-bgrad-bf16", "gpt2-flash-wgrad-bf16", "gpt2-wide-lastblock-bf16",
                          "gpt2-wide-rowcolumns-bf16"])
        # cuDNN's and the summed backward's checks compare with their model's CPU run.
        checks = {c["name"]: c for c in self.manifest["correctness"]}
        cudnn = checks["llama-flash-cudnn-bf16"]
        self.assertEqual((cudnn["reference"], cudnn["cudnn"]), ("reference/llama-flash.json", True))
        summed = checks["llama-flash-summed-bf16"]
        self.assertEqual((summed["reference"], summed["cudnn"], summed["setting"]),
                         ("reference/llama-flash.json", False, "TG_CUDA_FLASH_BACKWARD=summed"))
        # The bias gradient's epilogue: an artifact of its own, whose GEMMs
        # applying GELU's derivative also sum the rows, so the sum's kernel
        # is gone.
        bgrad = checks["gpt2-flash-bgrad-bf16"]
        self.assertEqual((bgrad["reference"], bgrad["cudnn"], bgrad["flags"]),
                         ("reference/gpt2-flash.json", False, "--fuse=gemm-bias-grad"))
        stats = {name: json.load(open(os.path.join(self.bundle, "stats", name + ".json")))
                 for name in ("gpt2-flash-bf16", "gpt2-flash-bgrad-bf16")}
        self.assertEqual(stats["gpt2-flash-bgrad-bf16"]["kernels"], stats["gpt2-flash-bf16"]["kernels"] - 1)
        self.assertLess(stats["gpt2-flash-bgrad-bf16"]["kernel_launches"],
                        stats["gpt2-flash-bf16"]["kernel_launches"])
        # The weight gradients' stream: the same kernels and arena, another
        # schedule.
        wgrad = checks["gpt2-flash-wgrad-bf16"]
        self.assertEqual((wgrad["reference"], wgrad["flags"]),
                         ("reference/gpt2-flash.json", "--cuda-weight-gradient-stream"))
        stats["gpt2-flash-wgrad-bf16"] = json.load(
            open(os.path.join(self.bundle, "stats", "gpt2-flash-wgrad-bf16.json")))
        for key in ("kernels", "commands", "arena_bytes"):
            self.assertEqual(stats["gpt2-flash-wgrad-bf16"][key], stats["gpt2-flash-bf16"][key], key)
        # The last blocks' combine, on gpt2-wide (trained on the tiny
        # models' batches): the same kernels, each norm and bias gradient's
        # column sums one launch where they were two.
        lastblock = checks["gpt2-wide-lastblock-bf16"]
        self.assertEqual((lastblock["reference"], lastblock["flags"]),
                         ("reference/gpt2-wide.json", "--cuda-last-block-combines"))
        for name in ("gpt2-wide-bf16", "gpt2-wide-lastblock-bf16"):
            stats[name] = json.load(open(os.path.join(self.bundle, "stats", name + ".json")))
        self.assertEqual(stats["gpt2-wide-lastblock-bf16"]["kernels"], stats["gpt2-wide-bf16"]["kernels"])
        self.assertEqual(stats["gpt2-wide-lastblock-bf16"]["kernel_launches"],
                         stats["gpt2-wide-bf16"]["kernel_launches"] - 9)
        # The norm gradients' column sums in their row passes: the same
        # kernels, each of the step's 5 norm gradients a launch fewer.
        rowcolumns = checks["gpt2-wide-rowcolumns-bf16"]
        self.assertEqual((rowcolumns["reference"], rowcolumns["flags"]),
                         ("reference/gpt2-wide.json", "--cuda-column-sums-in-row-pass --cuda-sm-count=16"))
        stats["gpt2-wide-rowcolumns-bf16"] = json.load(
            open(os.path.join(self.bundle, "stats", "gpt2-wide-rowcolumns-bf16.json")))
        self.assertEqual(stats["gpt2-wide-rowcolumns-bf16"]["kernels"], stats["gpt2-wide-bf16"]["kernels"])
        self.assertEqual(stats["gpt2-wide-rowcolumns-bf16"]["kernel_launches"],
                         stats["gpt2-wide-bf16"]["kernel_launches"] - 5)
        # The flash checks' models go through the runtime's flash kernels.
        for model in ("gpt2-flash", "llama-flash", "mistral-flash"):
            stats = json.load(open(os.path.join(self.bundle, "stats", model + "-bf16.json")))
            self.assertEqual(stats["attention_calls"], 4, model)
            stats = json.load(open(os.path.join(self.bundle, "stats", model + "-cudnn-bf16.json")))
            self.assertEqual([a["kernel"] for a in stats["attention"]], ["cudnn"] * 2, model)
            self.assertEqual(len(json.load(open(os.path.join(self.bundle, "reference", model + ".json")))["loss"]),
                             20)
        medium = self.manifest["medium"]
        self.assertEqual((medium["layers"], medium["heads"], medium["seq_len"], medium["batch_size"]),
                         (24, 16, 1024, 8))
        reference = json.load(open(os.path.join(self.bundle, "reference", "gpt2-tiny.json")))
        self.assertEqual(len(reference["loss"]), 20)
        # GPT-2's vocabulary (the loss's long rows) trains on the medium
        # model's tokens, the others on the tiny vocabulary's.
        reference = json.load(open(os.path.join(self.bundle, "reference", "gpt2-vocab.json")))
        self.assertEqual(len(reference["loss"]), 20)
        self.assertAlmostEqual(reference["loss"][0], math.log(50257), delta=0.5)
        self.assertEqual(sorted(os.listdir(os.path.join(self.bundle, "data"))),
                         ["tokens-v4096.bin", "tokens-v50257.bin", "tokens-v67.bin"])
        self.assertTrue(os.access(os.path.join(self.bundle, "run"), os.X_OK))

    def test_variants_are_compiled_and_timed_beside_it(self):
        # The decomposed attention and the runtime's flash kernels (cuDNN's
        # is the default), the step without horizontal fusion and the rest
        # are always there.
        self.assertEqual(self.manifest["medium"]["variants"],
                         [{"name": "gelu", "flags": "--no-fuse=gemm-activation"},
                          {"name": "decomposed", "flags": "--cuda-attention=decomposed"},
                          {"name": "flash", "flags": "--cuda-attention=flash"},
                          {"name": "unpacked", "flags": "--no-fuse=horizontal"},
                          {"name": "rows64", "flags": "--cuda-row-registers=64"},
                          {"name": "bias-grad", "flags": "--fuse=gemm-bias-grad"},
                          {"name": "f64sums", "flags": "--cuda-f32-partial-terms=0"},
                          {"name": "casts", "flags": "--no-fuse=compute-copies"},
                          {"name": "wgrad-stream", "flags": "--cuda-weight-gradient-stream"},
                          {"name": "residual", "flags": "--no-fuse=gemm-residual"},
                          {"name": "share16", "flags": "--cuda-column-share=16"},
                          {"name": "lastblock", "flags": "--cuda-last-block-combines"},
                          {"name": "rowcolumns", "flags": "--cuda-column-sums-in-row-pass"}])
        gelu = os.path.join(self.bundle, "artifacts", "gpt2-medium-bf16-variant-gelu.tgx")
        this = os.path.join(self.bundle, "artifacts", "gpt2-medium-bf16.tgx")
        self.assertGreater(os.path.getsize(gelu), 0)
        with open(gelu, "rb") as a, open(this, "rb") as b:
            self.assertTrue(a.read() != b.read(), "the flag did not change the step")
        self.assertIn("| gpt2-medium | TGC variant gelu (--no-fuse=gemm-activation) | 84.0 ms/step", self.report.stdout)
        self.assertIn("| gpt2-medium | tokens/s, TGC / TGC variant gelu (--no-fuse=gemm-activation) | 1.05× |",
                      self.report.stdout)
        result = subprocess.run([SCRIPT, "prepare", os.path.join(self.tmp.name, "bad"), "--variant", "no flags"],
                                capture_output=True, text=True)
        self.assertEqual(result.returncode, 1, result.stderr)
        self.assertIn("--variant needs NAME=TGC_FLAGS", result.stderr)

    def test_long_attention_is_profiled_through_both(self):
        long = self.manifest["long"]
        self.assertEqual((long["heads"], long["key_heads"], long["head_dim"], long["seq_len"], long["layers"]),
                         (32, 8, 128, 8192, 2))
        for attention in ("flash", "cudnn"):
            self.assertGreater(os.path.getsize(os.path.join(self.bundle, "artifacts",
                                                            f"llama-long-{attention}-bf16.tgx")), 0)
        # 4 * 32 * 8192^2 * 128 / 2 = 549.8 GFLOP a layer forward: 1.1 ms is
        # 500 TFLOP/s, 51% of 989.
        self.assertIn("| attention, long | TGC, cuDNN's fused attention through the runtime (--cuda-attention=cudnn) "
                      "(causal, bf16, B=1, H=32 (8 key heads), T=8192, D=128; per layer, 2 layers a step) | "
                      "forward 1.100 ms (500 TFLOP/s, **51% of the bf16 dense peak**), backward 3.000 ms "
                      "(458 TFLOP/s)", self.report.stdout)
        self.assertIn("forward 2.000 ms (275 TFLOP/s, **28% of the bf16 dense peak**)", self.report.stdout)

    def test_gemm_autotuning_is_timed_beside_it(self):
        self.assertIn("| gpt2-medium | TGC with GEMM autotuning (TG_CUDA_GEMM_AUTOTUNE) | 76.0 ms/step",
                      self.report.stdout)
        self.assertIn("| gpt2-medium | GEMM autotuning: what it chose | GEMM autotuning (TG_CUDA_GEMM_AUTOTUNE=8): "
                      "20 shapes, 18 with more than one algorithm to time; 5 now run another", self.report.stdout)
        self.assertIn("| gpt2-medium | tokens/s, TGC with GEMM autotuning (TG_CUDA_GEMM_AUTOTUNE) / TGC | 1.05× |",
                      self.report.stdout)

    def test_summed_flash_backward_is_timed_beside_it(self):
        # Timed against the flash variant: the default's attention is cuDNN's.
        name = ("TGC variant flash with the flash backward's dQ summed by the key blocks "
                "(TG_CUDA_FLASH_BACKWARD=summed)")
        self.assertIn(f"| gpt2-medium | {name} | 90.0 ms/step", self.report.stdout)
        self.assertIn(f"| gpt2-medium | tokens/s, {name} / TGC variant flash | 1.07× |", self.report.stdout)
        self.assertIn("| gpt2-medium | TGC variant flash vs the flash backward's dQ summed by the key blocks: "
                      "losses | max abs diff 0.001 over 25 steps", self.report.stdout)

    def test_base_needs_a_label_and_a_file(self):
        for args, message in ((["--base", TINY], "--base needs --base-label"),
                              (["--base", "/nonexistent.tgx", "--base-label", "x"], "no such file")):
            result = subprocess.run([SCRIPT, "prepare", os.path.join(self.tmp.name, "other"), *args],
                                    capture_output=True, text=True)
            self.assertEqual(result.returncode, 1, result.stderr)
            self.assertIn(message, result.stderr)

    def test_run_needs_a_gpu(self):
        env = dict(os.environ, PATH="/usr/bin:/bin")  # no nvidia-smi
        result = subprocess.run([SCRIPT, "run", self.bundle], capture_output=True, text=True, env=env)
        self.assertEqual(result.returncode, 77, result.stderr)
        self.assertIn("no GPU", result.stderr)

    def stand_in_gpu(self, name):
        """A copy of the bundle, and an environment whose stand-in nvidia-smi
        lets `run` start here."""
        bundle = os.path.join(self.tmp.name, name)
        shutil.copytree(self.bundle, bundle, symlinks=True)  # run replaces results/ and work/
        tools = os.path.join(self.tmp.name, "stand-in")
        write(os.path.join(tools, "nvidia-smi"), "#!/bin/sh\ncase \"$*\" in\n"
              "  -L) echo 'GPU 0: stand-in (UUID: GPU-0)' ;;\n"
              "  *query*) echo 'stand-in, 0 MiB, 0.0' ;;\n"
              "  *) echo 'CUDA Version: 0.0' ;;\nesac\n")
        os.chmod(os.path.join(tools, "nvidia-smi"), 0o755)
        return bundle, dict(os.environ, PATH=tools + os.pathsep + os.environ["PATH"])

    def test_run_past_its_deadline_skips_what_is_left(self):
        """--deadline 0: no step has time left, so each is skipped, saying so,
        and the report still comes (failing: its checks did not run)."""
        bundle, env = self.stand_in_gpu("deadline")
        result = subprocess.run([os.path.join(bundle, "run"), "--deadline", "0"], capture_output=True,
                                text=True, env=env, timeout=600)
        self.assertEqual(result.returncode, 1, result.stdout[-2000:] + result.stderr[-2000:])
        # (The steps that run tgrun are skipped as tgrun did not build.)
        for name in ("build", "ceilings"):
            with open(os.path.join(bundle, "results", name + ".log")) as f:
                self.assertEqual(f.read().strip(), "out of time (run --deadline 0)", name)
        self.assertIn("| run | runtime build (cmake + ninja tgrun, CUDA backend) | n/a: out of time "
                      "(run --deadline 0)", result.stdout)
        bad = subprocess.run([os.path.join(bundle, "run"), "--deadline", "soon"], capture_output=True,
                             text=True, env=env)
        self.assertEqual(bad.returncode, 1)
        self.assertIn("--deadline takes whole seconds, not 'soon'", bad.stderr)

    def test_run_only_builds_and_runs_the_steps_asked_for(self):
        """A stand-in nvidia-smi lets `run` start here: with --only it builds the
        runtime from the bundle (always), runs the flash kernels' job, which
        with no GPU behind it records why for each shape, and skips the rest."""
        bundle, env = self.stand_in_gpu("only")
        result = subprocess.run([os.path.join(bundle, "run"), "--only", "flash-kernels"], capture_output=True,
                                text=True, env=env, timeout=600)
        results = os.path.join(bundle, "results")

        def rc(name):
            with open(os.path.join(results, name + ".rc")) as f:
                return f.read().strip()
        self.assertEqual(rc("build"), "0", open(os.path.join(results, "build.log")).read()[-2000:])
        self.assertEqual(rc("flash-kernels"), "0")
        shapes = json.load(open(os.path.join(results, "flash-kernels.json")))["shapes"]
        self.assertEqual(len(shapes), 4)  # FLASH_SHAPES and the rope's
        self.assertTrue(all("error" in shape["tgc"] for shape in shapes))
        for name in ("gpt2-tiny-f32", "gpt2-flash-bf16", "ceilings", "attention", "medium-tgc"):
            self.assertEqual(rc(name), "skipped", name)
            self.assertIn("not asked for (run --only flash-kernels)",
                          open(os.path.join(results, name + ".log")).read())
        # The checks that were skipped did not pass: the run fails.
        self.assertEqual(result.returncode, 1, result.stdout[-2000:] + result.stderr[-2000:])
        self.assertIn("| attention kernels | TGC flash kernels (GPT-2 medium: causal, bf16, B=8, H=16, T=1024, "
                      "D=64) | n/a: ", result.stdout)

    def test_cudnn_checks_fail_where_cudnn_did_not_run(self):
        self.assertIn("| correctness | gpt2-flash-cudnn bf16 vs CPU f32, 20 steps | n/a: cuDNN did not run "
                      "(bundle/artifacts/gpt2-flash-cudnn-bf16.tgx: warning: 4 attention command(s) compiled for "
                      "cuDNN run on the runtime's flash kernels instead; the first, h0_attn: cuDNN "
                      "(libcudnn.so.9) cannot be loaded) |", self.report.stdout)
        row = [line for line in self.report.stdout.splitlines() if "llama-flash-cudnn bf16 vs CPU" in line]
        self.assertEqual(len(row), 1, self.report.stdout)
        self.assertTrue(row[0].endswith("| PASS |"), row[0])

    def test_summed_backward_is_checked_against_the_cpu(self):
        row = [line for line in self.report.stdout.splitlines()
               if "| llama-flash-summed bf16 (TG_CUDA_FLASH_BACKWARD=summed) vs CPU f32, 20 steps |" in line]
        self.assertEqual(len(row), 1, self.report.stdout)
        self.assertIn("max abs diff 0.001", row[0])
        self.assertTrue(row[0].endswith("| PASS |"), row[0])
        self.assertIn("| correctness | gpt2-flash-summed bf16 (TG_CUDA_FLASH_BACKWARD=summed) vs CPU f32, 20 steps "
                      "| n/a: did not run", self.report.stdout)

    def test_bias_grad_epilogue_is_checked_against_the_cpu(self):
        row = [line for line in self.report.stdout.splitlines()
               if "| gpt2-flash-bgrad bf16 (--fuse=gemm-bias-grad) vs CPU f32, 20 steps |" in line]
        self.assertEqual(len(row), 1, self.report.stdout)
        self.assertTrue(row[0].endswith("| FAIL |"), row[0])

    def test_report_fails_the_checks_that_did_not_run(self):
        self.assertEqual(self.report.returncode, 1, self.report.stderr)
        self.assertIn("# scripts/gpu-validate: FAIL", self.report.stdout)
        self.assertIn("| correctness | gpt2-tiny f32 vs CPU f32, 20 steps | n/a: did not run", self.report.stdout)

    def test_the_step_as_before_is_timed_beside_it(self):
        with open(os.path.join(self.bundle, "artifacts", "gpt2-medium-bf16-base.tgx"), "rb") as copied, \
                open(os.path.join(self.tmp.name, "earlier.tgx"), "rb") as given:
            self.assertEqual(copied.read(), given.read())
        self.assertEqual(self.manifest["medium"]["base_label"], "abc1234 (before)")
        self.assertIn("| gpt2-medium | TGC as before: abc1234 (before) | 100.0 ms/step", self.report.stdout)
        self.assertIn("| gpt2-medium | tokens/s, TGC / TGC as before | 1.25× |", self.report.stdout)
        self.assertIn("| gpt2-medium | TGC vs TGC as before: losses | max abs diff 0.25 over 25 steps",
                      self.report.stdout)

    def test_attention_measures_the_medium_models_shape(self):
        # No GPU here: each kernel records why it did not run (or, before
        # torch 2.3, there are none to choose from).
        out = os.path.join(self.tmp.name, "attention.json")
        subprocess.run([sys.executable, VALIDATE, "attention", self.bundle, "-o", out], check=True,
                       capture_output=True, text=True)
        measured = json.load(open(out))
        self.assertEqual((measured["batch"], measured["heads"], measured["seq"], measured["head_dim"]),
                         (8, 16, 1024, 64))
        self.assertEqual(measured["forward_flops"], 4.0 * 8 * 16 * 1024 * 1024 * 64 / 2)
        for kernel in measured["kernels"].values():
            self.assertIn("error", kernel)

    def test_flash_kernel_harness_matches_the_kernels_header(self):
        """validate.py launches the kernels through ctypes: its Params must lie
        as the header's, and each kernel get the shared memory it uses."""
        validate = load_validate()
        fields = [name for name, _ in validate.FlashParams._fields_]
        program = os.path.join(self.tmp.name, "layout.cpp")
        write(program, "#include \"FlashAttention.h\"\n#include <cstddef>\n#include <cstdio>\n"
                       "using namespace tg::flash;\nint main() {\n"
                       "  std::printf(\"size %zu\\n\", sizeof(Params));\n" +
              "".join(f"  std::printf(\"{f} %zu\\n\", offsetof(Params, {f}));\n" for f in fields) +
              "  for (int d = 64; d <= 128; d *= 2)\n    for (int k = 0; k < kKernels; ++k)\n"
              "      std::printf(\"%s_d%d %u %d\\n\", kernelName(Kernel(k)), d, sharedBytes(Kernel(k), d),\n"
              "                  blockRows(Kernel(k)));\n"
              "  std::printf(\"threads %d\\n\", kThreads);\n}\n")
        binary = os.path.join(self.tmp.name, "layout")
        subprocess.run(["c++", "-std=c++17", "-I", os.path.join(ROOT, "runtime", "backends", "cuda", "kernels"),
                        program, "-o", binary], check=True)
        header = {name: values for name, *values in (line.split() for line in subprocess.run(
            [binary], capture_output=True, text=True, check=True).stdout.splitlines())}
        self.assertEqual(int(header["size"][0]), ctypes.sizeof(validate.FlashParams))
        for f in fields:
            self.assertEqual(int(header[f][0]), getattr(validate.FlashParams, f).offset, f)
        self.assertEqual({name.rsplit("_d", 1)[0] for name in header if name.endswith(("_d64", "_d128"))},
                         set(validate.FLASH_KERNELS))
        for d in (64, 128):
            for kernel in validate.FLASH_KERNELS:
                shared, rows = header[f"{kernel}_d{d}"]
                self.assertEqual((int(shared), int(rows)),
                                 (validate.flash_shared_bytes(kernel, d), validate.flash_block_rows(kernel)),
                                 f"{kernel}_d{d}")
        self.assertEqual(int(header["threads"][0]), validate.FLASH_THREADS)

    def test_flash_kernels_without_a_gpu_say_why(self):
        out = os.path.join(self.tmp.name, "flash-kernels.json")
        subprocess.run([sys.executable, VALIDATE, "flash-kernels", "--ptx", os.path.join(self.tmp.name, "none.ptx"),
                        "-o", out], check=True, capture_output=True, text=True)
        measured = json.load(open(out))
        self.assertEqual([s["label"] for s in measured["shapes"]],
                         ["GPT-2 medium", "head dim 128", "grouped heads, long", "head dim 128, RoPE inside"])
        self.assertEqual(measured["shapes"][-1]["rope_theta"], 1e4)
        for shape in measured["shapes"]:
            self.assertIn("error", shape["tgc"])

    def test_flash_kernel_rows_check_errors_and_give_times(self):
        checks = [row for row in self.kernel_rows if "| TGC flash kernels vs float32 attention" in row]
        self.assertEqual(len(checks), 2, self.report.stdout)
        self.assertTrue(checks[0].endswith("| PASS |"), checks[0])
        self.assertIn("H_kv=8, T=8192, D=128", checks[1])
        self.assertIn("key_grad 0.4", checks[1])
        self.assertTrue(checks[1].endswith("| FAIL |"), checks[1])
        timed = [row for row in self.kernel_rows if "forward 0.500 ms" in row]
        self.assertEqual(len(timed), 3, self.report.stdout)  # TGC at two shapes, cuDNN at one
        self.assertIn("(200 TFLOP/s, 20% of peak)", timed[0])
        self.assertTrue(any("FlashAttention-2 (torch 2.11.0) (GPT-2 medium" in row and "n/a: No available kernel."
                            in row for row in self.kernel_rows), self.report.stdout)

    def test_flash_attention_3_published_figures_are_beside_them(self):
        published = [row for row in self.kernel_rows if "FlashAttention-3, published" in row]
        self.assertEqual(len(published), 1, self.report.stdout)
        self.assertIn("arXiv:2407.08608", published[0])
        self.assertIn("up to 740 TFLOP/s, 75% of the peak", published[0])

    def test_flash_kernels_with_query_gradients_summed(self):
        """The backward TG_CUDA_FLASH_BACKWARD=summed runs: checked like the
        kernels as built and timed beside them; one that fails to run fails
        the check (it is a mode of the runtime, not an experiment)."""
        summed = [row for row in self.kernel_rows if "dQ summed by the key blocks" in row]
        self.assertEqual(len(summed), 3, self.report.stdout)  # check and time at one shape, failure at the other
        self.assertIn("vs float32 attention (GPT-2 medium", summed[0])
        self.assertIn("query_grad 0.004", summed[0])
        self.assertTrue(summed[0].endswith("| PASS |"), summed[0])
        self.assertIn("forward 0.450 ms (222 TFLOP/s, 22% of peak), backward 0.900 ms (278 TFLOP/s)", summed[1])
        self.assertIn("(grouped heads, long: causal, bf16, B=1, H=32, H_kv=8, T=8192, D=128) | n/a: "
                      "cuLaunchKernel key_value_grads_adding_query: too many resources requested", summed[2])
        self.assertTrue(summed[2].endswith("| FAIL |"), summed[2])

    def test_flash_kernels_with_one_more_block_a_multiprocessor(self):
        """The same PTX asking for one more resident block: checked like the
        kernels as built, timed beside them, with both register counts."""
        more = [row for row in self.kernel_rows if "one more block a multiprocessor" in row]
        self.assertEqual(len(more), 3, self.report.stdout)  # check, time, resources
        self.assertIn("vs float32 attention (GPT-2 medium", more[0])
        self.assertTrue(more[0].endswith("| PASS |"), more[0])
        self.assertIn("forward 0.400 ms (250 TFLOP/s, 25% of peak), backward 1.000 ms", more[1])
        self.assertIn("forward_d64 167 (0) → 128 (16)", more[2])
        validate = load_validate()
        ptx = b".visible .entry a(\n.maxntid 128, 1, 1\n.minnctapersm 2\n{\n}\n.minnctapersm 3\n"
        self.assertEqual(validate.more_resident_blocks(ptx, 1),
                         ptx.replace(b"nctapersm 3", b"nctapersm 4").replace(b"nctapersm 2", b"nctapersm 3"))

    def test_tgc_attention_is_summed_from_the_profile(self):
        """Forward: the attention commands before the loss kernel, backward:
        after it; the report tells them apart by their labels (the gradients'
        names), since the loss kernel's name depends on what fused into it
        (on CUDA it is a slice_to_pad kernel)."""
        events = [e for e in json.load(open(self.profile))["traceEvents"] if e.get("ph") == "X"]
        steps = sorted({e["args"]["step"] for e in events})[1:]
        forward = backward = 0.0
        for step in steps:
            in_step = sorted((e for e in events if e["args"]["step"] == step), key=lambda e: e["ts"])
            loss_at = next(e["ts"] for e in in_step if "cross_entropy" in e["name"])
            for e in in_step:
                label = e["name"].split(maxsplit=1)[-1]
                if ATTENTION_LABEL.match(label):
                    self.assertEqual(label.startswith("grad_"), e["ts"] > loss_at, label)
                    if e["ts"] < loss_at:
                        forward += e["dur"] / 1e3 / len(steps)
                    else:
                        backward += e["dur"] / 1e3 / len(steps)
        self.assertGreater(forward, 0)
        self.assertGreater(backward, 0)
        tgc = [row for row in self.rows if "TGC, decomposed" in row]
        self.assertEqual(len(tgc), 1, self.report.stdout)
        self.assertIn(f"forward {forward:.2f} ms", tgc[0])
        self.assertIn(f"backward {backward:.2f} ms", tgc[0])

    def test_flash_kernels_from_the_default_steps_profile(self):
        flash = [row for row in self.rows if "runtime's flash kernels" in row]
        self.assertEqual(len(flash), 1, self.report.stdout)
        # One layer's 0.1 and 0.25 ms a step, at the medium model's FLOPs.
        self.assertIn("forward 0.10 ms", flash[0])
        self.assertIn("backward 0.25 ms", flash[0])

    def test_ncu_counters_per_kernel(self):
        """The ncu step's counters: medians over each kernel's launches, the
        kernel taking the most time first; the run asks ncu for every
        counter the report reads."""
        launches = [line for line in self.report.stdout.splitlines() if line.startswith("| launches (ncu) |")]
        self.assertEqual(len(launches), 2, self.report.stdout)
        self.assertIn("| tg_flash_attention_forward_d64 (1 profiled) | µs 159.0, DRAM % 11.6, SM % 42.1, "
                      "occupancy % 17.7, registers 167, blocks 2048, threads 128 |", launches[0])
        # 33.9 and 34.1 µs: the median is their mean.
        self.assertIn("| k27_reduce_sum_0 (2 profiled) | µs 34.0, DRAM % 60.9,", launches[1])
        metrics = subprocess.run([sys.executable, VALIDATE, "ncu-metrics"], capture_output=True, text=True)
        self.assertEqual(metrics.stdout.strip().split(","), NCU_METRIC_NAMES)
        self.assertIn("ncu-metrics", open(SCRIPT).read())

    def test_cudnn_through_the_runtime_from_its_profile(self):
        row = [row for row in self.rows if "cuDNN's fused attention through the runtime" in row]
        self.assertEqual(len(row), 1, self.report.stdout)
        self.assertIn("forward 0.04 ms", row[0])
        self.assertIn("backward 0.09 ms", row[0])
        self.assertIn("the default)", row[0])
        self.assertIn("for name in decomposed flash", open(SCRIPT).read())

    def test_bias_grad_gemms_against_the_default(self):
        """The bias-grad variant's GEMMs that differ from the default's by
        more than 5%, side by side; the rest left out."""
        gemms = [line for line in self.report.stdout.splitlines() if line.startswith("| GEMMs, variant bias-grad |")]
        self.assertEqual(gemms, ["| GEMMs, variant bias-grad | gemm grad_h*_mlp_gelu | 0.30 ms/step | "
                                 "default: 0.20 ms/step |  |"], self.report.stdout)
        self.assertIn("for name in decomposed flash bias-grad", open(SCRIPT).read())

    def test_pytorch_kernels_per_step_of_the_layers(self):
        cudnn = [row for row in self.rows if "| cuDNN (torch" in row]
        self.assertEqual(len(cudnn), 1, self.report.stdout)
        # 0.1 and 0.25 ms a layer, 24 layers; 1.72e10 FLOPs a layer forward.
        self.assertIn("forward 2.40 ms (172 TFLOP/s), backward 6.00 ms (172 TFLOP/s)", cudnn[0])
        missing = [row for row in self.rows if "FlashAttention-2" in row]
        self.assertEqual(len(missing), 1)
        self.assertIn("n/a: No available kernel", missing[0])


if __name__ == "__main__":
    unittest.main()
