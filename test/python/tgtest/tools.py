"""Runs the TGC tools from the build tree and prepares their inputs."""
import json
import os
import re
import subprocess
import tempfile
import unittest

import numpy as np
import torch

from tgtest import safetensors_io

BIN = os.environ.get("TGC_BIN", os.path.join(os.path.dirname(__file__), "..", "..", "..", "build", "bin"))
ROOT = os.path.join(os.path.dirname(__file__), "..", "..", "..")
# The two tiny models of the families, and their training settings.
TINY_MODELS = {name: os.path.join(ROOT, "examples", "models", f"{name}.json")
               for name in ("gpt2-tiny", "llama-tiny")}
TINY_TRAIN = os.path.join(ROOT, "examples", "train", "tiny.json")


class ScratchDirTest(unittest.TestCase):
    """Tests sharing one scratch directory, `cls.dir`, removed after them."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.dir = cls.tmp.name

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()


def run(tool, *args):
    result = subprocess.run([os.path.join(BIN, tool), *map(str, args)],
                            capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"{tool} {' '.join(map(str, args))} failed:\n{result.stderr}")
    return result.stdout


_PARAM = re.compile(r"tensor<([0-9x]*?)x?f64> \{[^}]*tg\.param = \"([^\"]+)\"")


def param_specs(mlir_text):
    """[(hf name, shape)] of the tg.param arguments of an f64 graph, in order."""
    specs, seen = [], set()
    for dims, name in _PARAM.findall(mlir_text):
        if name not in seen:
            seen.add(name)
            specs.append((name, [int(d) for d in dims.split("x") if d]))
    return specs


def model_param_specs(model_json, train_json, scratch_mlir):
    """[(hf name, shape)] of a model's parameters, from its f64 tg graph."""
    run("tgc", "compile", model_json, "--train", train_json, "--emit=tg", "--dtype=f64", "-o", scratch_mlir)
    return param_specs(open(scratch_mlir).read())


def fusion_remarks(model_json, train_json, workdir, *tgc_flags):
    """What `tgc compile --fusion-remarks` reports (its stderr); raises if the
    compile fails."""
    code, _, err = run_status("tgc", "compile", model_json, "--train", train_json,
                              "--fusion-remarks", *tgc_flags, "-o",
                              os.path.join(workdir, "remarks.tgx"))
    if code != 0:
        raise AssertionError(f"tgc compile failed:\n{err}")
    return err


def run_status(tool, *args):
    """(exit code, stdout, stderr) of a tool run that may fail."""
    result = subprocess.run([os.path.join(BIN, tool), *map(str, args)], capture_output=True, text=True)
    return result.returncode, result.stdout, result.stderr


def random_params(specs, generator):
    """Random float64 weights, larger than the real init so that every path
    of the model matters numerically; norm gains stay near 1."""
    params = {}
    for name, shape in specs:
        noise = torch.randn(shape, generator=generator, dtype=torch.float64)
        params[name] = 1.0 + 0.1 * noise if len(shape) == 1 and "norm" in name or \
            re.search(r"ln_\w+\.weight$", name) else 0.2 * noise
    return params


def rel_err(a, b):
    return (torch.linalg.norm((a - b).flatten()) / max(torch.linalg.norm(b.flatten()), 1e-300)).item()


def write_family(path, family, model, train_json, generator, num_tokens):
    """For the checks that train a small model: writes path(FAMILY.json),
    random float32 weights path(FAMILY-init.safetensors) and random uint16
    token data path(FAMILY-tokens.bin). Returns (init path, the weights as
    tgrun reads them in float64, the tokens)."""
    import json

    import numpy as np

    from tgtest import safetensors_io
    json.dump(model, open(path(family + ".json"), "w"))
    params = random_params(model_param_specs(path(family + ".json"), train_json,
                                             path(family + ".mlir")), generator)
    init = path(family + "-init.safetensors")
    safetensors_io.save(init, {k: v.float() for k, v in params.items()})
    tokens = torch.randint(0, model["vocab_size"], (num_tokens,), generator=generator)
    tokens = tokens.numpy().astype(np.uint16)
    tokens.tofile(path(family + "-tokens.bin"))
    # The float32-rounded weights tgrun reads.
    return init, {k: v.float().double() for k, v in params.items()}, tokens


def train_short(model_json, train_json, steps, workdir, tag, *tgc_flags):
    """Compiles `model_json` with `tgc_flags` and trains it `steps` steps with
    tgrun on random tokens (one file per model, seeded): returns the
    metrics lines that carry a loss and the saved weights (torch tensors)."""
    tokens = os.path.join(workdir, f"{os.path.basename(model_json)}.bin")
    if not os.path.exists(tokens):
        vocab = json.load(open(model_json))["vocab_size"]
        np.random.default_rng(3).integers(0, vocab, 4000).astype(np.uint16).tofile(tokens)
    path = lambda suffix: os.path.join(workdir, f"{tag}.{suffix}")
    run("tgc", "compile", model_json, "--train", train_json, *tgc_flags, "-o", path("tgx"))
    run("tgrun", path("tgx"), "--data", tokens, "--steps", steps, "--metrics", path("jsonl"),
        "--save-weights", path("safetensors"))
    metrics = [json.loads(line) for line in open(path("jsonl"))]
    return [m for m in metrics if "loss" in m], safetensors_io.load(path("safetensors"))
