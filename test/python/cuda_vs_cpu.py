"""GPU only: both model families trained 20 steps by tgrun on the GPU (fp32,
TF32 off) and on the CPU from the same artifact inputs give the same losses
within 1e-4 relative, and in bf16 within 2e-2. Exits 77 (CTest's skip code)
with "skipped: no GPU" where there is none."""
import ctypes
import json
import os
import sys
import tempfile

import numpy as np

from tgtest.tools import run

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
STEPS = 20


def has_gpu():
    try:
        cuda = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return False
    count = ctypes.c_int(0)
    return cuda.cuInit(0) == 0 and cuda.cuDeviceGetCount(ctypes.byref(count)) == 0 and count.value > 0


def losses(artifact, tokens, metrics):
    run("tgrun", artifact, "--data", tokens, "--steps", STEPS, "--metrics", metrics)
    return np.array([json.loads(line)["loss"] for line in open(metrics)])


def main():
    if not has_gpu():
        print("skipped: no GPU (libcuda.so.1 and a CUDA device are needed)")
        return 77
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        tokens = os.path.join(tmp, "tokens.bin")
        np.random.default_rng(0).integers(0, 60, 20000).astype(np.uint16).tofile(tokens)
        for model in ["gpt2-tiny", "llama-tiny"]:
            config = os.path.join(ROOT, "examples", "models", model + ".json")
            train = os.path.join(ROOT, "examples", "train", "tiny.json")
            artifacts = {}
            for name, flags in [("cpu", ["--target", "cpu", "--dtype=f32"]),
                                ("cuda-f32", ["--target", "cuda", "--dtype=f32"]),
                                ("cuda-bf16", ["--target", "cuda", "--dtype=bf16"])]:
                artifacts[name] = os.path.join(tmp, f"{model}-{name}.tgx")
                run("tgc", "compile", config, "--train", train, *flags, "-o", artifacts[name])
            reference = losses(artifacts["cpu"], tokens, os.path.join(tmp, "cpu.jsonl"))
            for name, tolerance in [("cuda-f32", 1e-4), ("cuda-bf16", 2e-2)]:
                got = losses(artifacts[name], tokens, os.path.join(tmp, name + ".jsonl"))
                worst = float(np.max(np.abs(got - reference) / np.abs(reference)))
                verdict = "ok" if worst <= tolerance else "FAIL"
                print(f"{model} {name}: max relative loss difference {worst:.2e} "
                      f"over {STEPS} steps (tolerance {tolerance:g}) {verdict}")
                if worst > tolerance:
                    failures.append(f"{model} {name}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
