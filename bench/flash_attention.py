#!/usr/bin/env python3
"""Flash attention against the decomposition, whole CPU training steps.

A GPT-2 model of 2 layers, d = 256, 8 heads (head dim 32), vocabulary 512,
compiled twice by tgc for each sequence length T (one micro-batch of 2,048
tokens: batch 2048 / T): with flash attention everywhere
(`--max-score-mib 0`) and decomposed (`--no-fuse=attention`). tgrun runs the
two in turn (A B A B ...) at each thread count; per process the median
`step_ms` of the steps after the first (from --metrics), per configuration
the median over the processes, and the peak RSS (getrusage of the child).
Prints a markdown table with the ratio flash / decomposed (< 1: flash is
faster) and the losses of the last step (the same numbers up to rounding).

With `--compare rope`, a Llama model of the same size (8 query heads over
4 key/value heads, RoPE) with flash attention everywhere, its rotary
position embedding applied by the flash kernels (the default) against rope
kernels around them (`--no-fuse=attention-rope`): the losses are the same
bits.

    /usr/bin/python3 bench/flash_attention.py [--compare decomposed|rope] [--seq 128,512,1024,2048] [--threads 1,2]

The tools come from build/bin (or $TGC_BIN, or --bin). Needs numpy.
"""
import argparse
import json
import os
import statistics
import subprocess
import tempfile

import numpy as np

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
GPT2 = {"model_type": "gpt2", "vocab_size": 512, "n_embd": 256, "n_layer": 2, "n_head": 8,
        "n_inner": None, "layer_norm_epsilon": 1e-5, "activation_function": "gelu_new",
        "tie_word_embeddings": True}
LLAMA = {"model_type": "llama", "vocab_size": 512, "hidden_size": 256, "intermediate_size": 704,
         "num_hidden_layers": 2, "num_attention_heads": 8, "num_key_value_heads": 4,
         "rms_norm_eps": 1e-6, "rope_theta": 10000.0, "tie_word_embeddings": False}
TOKENS_PER_STEP = 2048
# Per comparison: the model, its positions field, and the two variants
# (baseline first) with their tgc flags.
COMPARISONS = {
    "decomposed": (GPT2, "n_positions", {"decomposed": ["--no-fuse=attention"],
                                         "flash": ["--max-score-mib", "0"]}),
    "rope": (LLAMA, "max_position_embeddings",
             {"rope outside": ["--max-score-mib", "0", "--no-fuse=attention-rope"],
              "rope inside": ["--max-score-mib", "0"]}),
}


def train_config(seq):
    return {"batch_size": TOKENS_PER_STEP // seq, "seq_len": seq, "seed": 0, "precision": "fp32",
            "optimizer": {"type": "adamw", "lr": 3e-4, "betas": [0.9, 0.95], "eps": 1e-8,
                          "weight_decay": 0.1},
            "grad_clip_norm": 1.0, "lr_schedule": "constant", "micro_batches": 1}


def run_step(binary, artifact, tokens, steps, threads, metrics):
    """(median step ms after the first, last loss, peak RSS in MiB) of one tgrun process."""
    child = subprocess.Popen([os.path.join(binary, "tgrun"), artifact, "--data", tokens,
                              "--steps", str(steps), "--threads", str(threads), "--metrics", metrics],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             env=dict(os.environ, OPENBLAS_NUM_THREADS=str(threads)))
    # wait4 gives this child's own peak RSS (getrusage's children figure is
    # the largest of all of them so far).
    _, status, usage = os.wait4(child.pid, 0)
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        raise RuntimeError(f"tgrun {artifact} failed with exit status {code}")
    rows = [json.loads(line) for line in open(metrics) if '"step_ms"' in line]
    return statistics.median(r["step_ms"] for r in rows[1:]), rows[-1]["loss"], usage.ru_maxrss / 1024


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--compare", choices=sorted(COMPARISONS), default="decomposed")
    ap.add_argument("--seq", default="128,512,1024,2048")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--steps", type=int, default=5, help="steps per process (the first is not timed)")
    ap.add_argument("--repeats", type=int, default=3, help="processes per configuration")
    ap.add_argument("--bin", default=os.environ.get("TGC_BIN", os.path.join(ROOT, "build", "bin")))
    args = ap.parse_args()
    seqs = [int(s) for s in args.seq.split(",")]
    threads = [int(t) for t in args.threads.split(",")]
    model, positions, variants = COMPARISONS[args.compare]
    base, new = variants
    print(f"| T | threads | {base} ms/step | {new} ms/step | {new} / {base} | "
          f"RSS {base} | RSS {new} | loss {base} | loss {new} |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as tmp:
        path = lambda name: os.path.join(tmp, name)
        tokens = path("tokens.bin")
        np.random.default_rng(0).integers(0, model["vocab_size"], 1 << 18).astype(np.uint16).tofile(tokens)
        for seq in seqs:
            json.dump(dict(model, **{positions: seq}), open(path("model.json"), "w"))
            json.dump(train_config(seq), open(path("train.json"), "w"))
            for name, flags in variants.items():
                subprocess.run([os.path.join(args.bin, "tgc"), "compile", path("model.json"), "--train",
                                path("train.json"), *flags, "-o", path(f"{name}.tgx")], check=True)
            for k in threads:
                results = {name: [] for name in variants}
                for _ in range(args.repeats):
                    for name in variants:
                        results[name].append(run_step(args.bin, path(f"{name}.tgx"), tokens, args.steps,
                                                      k, path("metrics.jsonl")))
                ms = {n: statistics.median(r[0] for r in rs) for n, rs in results.items()}
                rss = {n: max(r[2] for r in rs) for n, rs in results.items()}
                loss = {n: rs[-1][1] for n, rs in results.items()}
                print(f"| {seq} | {k} | {ms[base]:.0f} | {ms[new]:.0f} | {ms[new] / ms[base]:.2f} | "
                      f"{rss[base]:.0f} MiB | {rss[new]:.0f} MiB | {loss[base]:.6f} | {loss[new]:.6f} |",
                      flush=True)


if __name__ == "__main__":
    main()
