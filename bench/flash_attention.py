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

    /usr/bin/python3 bench/flash_attention.py [--seq 128,512,1024,2048] [--threads 1,2]

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
MODEL = {"model_type": "gpt2", "vocab_size": 512, "n_embd": 256, "n_layer": 2, "n_head": 8,
         "n_inner": None, "layer_norm_epsilon": 1e-5, "activation_function": "gelu_new",
         "tie_word_embeddings": True}
TOKENS_PER_STEP = 2048
VARIANTS = {"flash": ["--max-score-mib", "0"], "decomposed": ["--no-fuse=attention"]}


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
    ap.add_argument("--seq", default="128,512,1024,2048")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--steps", type=int, default=5, help="steps per process (the first is not timed)")
    ap.add_argument("--repeats", type=int, default=3, help="processes per configuration")
    ap.add_argument("--bin", default=os.environ.get("TGC_BIN", os.path.join(ROOT, "build", "bin")))
    args = ap.parse_args()
    seqs = [int(s) for s in args.seq.split(",")]
    threads = [int(t) for t in args.threads.split(",")]
    print("| T | threads | decomposed ms/step | flash ms/step | flash / decomposed | "
          "RSS decomposed | RSS flash | loss decomposed | loss flash |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as tmp:
        path = lambda name: os.path.join(tmp, name)
        tokens = path("tokens.bin")
        np.random.default_rng(0).integers(0, MODEL["vocab_size"], 1 << 18).astype(np.uint16).tofile(tokens)
        for seq in seqs:
            json.dump(dict(MODEL, n_positions=seq), open(path("model.json"), "w"))
            json.dump(train_config(seq), open(path("train.json"), "w"))
            for name, flags in VARIANTS.items():
                subprocess.run([os.path.join(args.bin, "tgc"), "compile", path("model.json"), "--train",
                                path("train.json"), *flags, "-o", path(f"{name}.tgx")], check=True)
            for k in threads:
                results = {name: [] for name in VARIANTS}
                for _ in range(args.repeats):
                    for name in VARIANTS:
                        results[name].append(run_step(args.bin, path(f"{name}.tgx"), tokens, args.steps,
                                                      k, path("metrics.jsonl")))
                ms = {n: statistics.median(r[0] for r in rs) for n, rs in results.items()}
                rss = {n: max(r[2] for r in rs) for n, rs in results.items()}
                loss = {n: rs[-1][1] for n, rs in results.items()}
                print(f"| {seq} | {k} | {ms['decomposed']:.0f} | {ms['flash']:.0f} | "
                      f"{ms['flash'] / ms['decomposed']:.2f} | {rss['decomposed']:.0f} MiB | "
                      f"{rss['flash']:.0f} MiB | {loss['decomposed']:.6f} | {loss['flash']:.6f} |",
                      flush=True)


if __name__ == "__main__":
    main()
