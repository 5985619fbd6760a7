#!/usr/bin/env python3
"""One training step of a GPT-2-style model: compiled by tgc and run by tgrun,
against the same step in PyTorch eager on the CPU, side by side.

Model: GPT-2 semantics, 6 layers, n_embd 256, 8 heads, vocab 8192, tied
embeddings, gelu_new (tanh GELU), fp32. Step: batch 8 x seq 128, forward,
cross-entropy, backward, clip_grad_norm_(1.0), AdamW (constant lr).

For each thread count k (default 1 and the machine's cores) both sides run with
OPENBLAS_NUM_THREADS=k and OMP_NUM_THREADS=k; tgrun also gets --threads k and
PyTorch torch.set_num_threads(k) (PyTorch's OpenMP pool does not resize
OpenBLAS's own pthread pool, hence the environment variable, hence one
subprocess per PyTorch run). Each side runs WARMUP + STEPS steps; the figure is
the median step time over the last STEPS. tgrun's step_ms and the PyTorch loop
both time: build the batch from the token file (data contract), step.

PyTorch runs once in the default environment and again in tuned ones (see
torch_variants: OMP_WAIT_POLICY=PASSIVE for k > 1, glibc malloc thresholds
raised so that freed activations are not returned to the OS every step); each
gets its own row, ratio = torch ms / tgc ms (> 1: TGC faster).

Also measured: tgc --gemm=generated (matrix products as generated loop kernels
instead of OpenBLAS calls) at 1 thread.

    /usr/bin/python3 bench/train_step_vs_torch.py            # full run, a few minutes
    /usr/bin/python3 bench/train_step_vs_torch.py --quick    # smoke test
    /usr/bin/python3 bench/train_step_vs_torch.py --perf     # + perf profile of both (needs perf)

The tools come from build/bin (or $TGC_BIN, or --bin). Needs torch and numpy.
"""
import argparse
import ctypes
import json
import math
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

MODEL = {"model_type": "gpt2", "vocab_size": 8192, "n_positions": 128, "n_embd": 256,
         "n_layer": 6, "n_head": 8, "n_inner": None, "layer_norm_epsilon": 1e-5,
         "activation_function": "gelu_new", "tie_word_embeddings": True}
TRAIN = {"batch_size": 8, "seq_len": 128, "seed": 0, "precision": "fp32",
         "optimizer": {"type": "adamw", "lr": 3e-4, "betas": [0.9, 0.95], "eps": 1e-8,
                       "weight_decay": 0.1},
         "grad_clip_norm": 1.0, "lr_schedule": "constant", "micro_batches": 1}
NUM_TOKENS = 1 << 18


# ----------------------------------------------------------------------------
# BLAS check


def loaded_blas_libraries():
    """Shared objects mapped into this process whose name says BLAS/LAPACK/MKL."""
    libs = set()
    with open("/proc/self/maps") as maps:
        for line in maps:
            path = line.split()[-1] if len(line.split()) >= 6 else ""
            if re.search(r"blas|lapack|mkl", os.path.basename(path), re.I):
                libs.add(path)
    return sorted(libs)


def openblas_info(libs):
    """(config string, core name, threads) from the loaded OpenBLAS, or None."""
    for path in libs:
        if "openblas" not in os.path.basename(path):
            continue
        try:
            lib = ctypes.CDLL(path)
            lib.openblas_get_config.restype = ctypes.c_char_p
            lib.openblas_get_corename.restype = ctypes.c_char_p
            return (lib.openblas_get_config().decode(), lib.openblas_get_corename().decode(),
                    lib.openblas_get_num_threads())
        except (OSError, AttributeError):
            continue
    return None


def blas_report(torch):
    """Lines saying which BLAS torch resolves to; the second value is True when it
    is OpenBLAS (with the reference BLAS the comparison is meaningless)."""
    lines = []
    for part in torch.__config__.show().replace(", ", "\n").splitlines():
        if re.search(r"blas|lapack|mkl", part, re.I):
            lines.append("torch config: " + part.strip().lstrip("- "))
    a = torch.randn(256, 256)
    (a @ a).sum().item()
    libs = loaded_blas_libraries()
    lines += ["mapped after a matmul: " + lib for lib in libs] or ["mapped after a matmul: (no BLAS library)"]
    info = openblas_info(libs)
    if info:
        lines.append(f"openblas_get_config: {info[0]}; core {info[1]}")
    for var in ("OPENBLAS_CORETYPE", "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS"):
        if var in os.environ:
            lines.append(f"environment: {var}={os.environ[var]}")
    return lines, info is not None


# ----------------------------------------------------------------------------
# The PyTorch side (runs in a subprocess per thread count)


def make_loss(torch):
    """Compact GPT-2 with Hugging Face semantics (Conv1D = addmm(bias, x, W[in,out]),
    pre-LN blocks, causal attention with a stored mask, tanh GELU, head tied to wte).
    gelu_new is F.gelu(approximate='tanh'): the same function as HF's
    NewGELUActivation, as one fused op (the faster choice for PyTorch)."""
    import torch.nn.functional as F
    d, h, L = MODEL["n_embd"], MODEL["n_head"], MODEL["n_layer"]
    eps, dh = MODEL["layer_norm_epsilon"], MODEL["n_embd"] // MODEL["n_head"]
    n = MODEL["n_positions"]
    mask = torch.ones(n, n, dtype=torch.bool).tril()
    scale = 1.0 / math.sqrt(dh)

    def conv1d(x, w, b):
        return torch.addmm(b, x.reshape(-1, x.shape[-1]), w).view(*x.shape[:-1], w.shape[1])

    def heads(x, b, t):
        return x.view(b, t, h, dh).transpose(1, 2)

    def loss(p, tokens, targets):
        b, t = tokens.shape
        x = F.embedding(tokens, p["transformer.wte.weight"]) + p["transformer.wpe.weight"][:t]
        neg = torch.tensor(torch.finfo(x.dtype).min, dtype=x.dtype)
        for i in range(L):
            pre = f"transformer.h.{i}."
            a = F.layer_norm(x, (d,), p[pre + "ln_1.weight"], p[pre + "ln_1.bias"], eps)
            q, k, v = conv1d(a, p[pre + "attn.c_attn.weight"], p[pre + "attn.c_attn.bias"]).split(d, dim=2)
            q, k, v = heads(q, b, t), heads(k, b, t), heads(v, b, t)
            s = torch.where(mask[:t, :t], (q @ k.transpose(-1, -2)) * scale, neg)
            o = (F.softmax(s, dim=-1) @ v).transpose(1, 2).reshape(b, t, d)
            x = x + conv1d(o, p[pre + "attn.c_proj.weight"], p[pre + "attn.c_proj.bias"])
            m = F.layer_norm(x, (d,), p[pre + "ln_2.weight"], p[pre + "ln_2.bias"], eps)
            m = F.gelu(conv1d(m, p[pre + "mlp.c_fc.weight"], p[pre + "mlp.c_fc.bias"]), approximate="tanh")
            x = x + conv1d(m, p[pre + "mlp.c_proj.weight"], p[pre + "mlp.c_proj.bias"])
        x = F.layer_norm(x, (d,), p["transformer.ln_f.weight"], p["transformer.ln_f.bias"], eps)
        logits = x.reshape(-1, d) @ p["transformer.wte.weight"].t()
        return F.cross_entropy(logits, targets.reshape(-1))

    return loss


def torch_worker(args):
    import torch
    torch.set_num_threads(args.threads)
    sys.path.insert(0, os.path.join(ROOT, "test", "python"))
    from tgtest import models, safetensors_io
    from tgtest.reference import batch  # the data contract
    tokens = np.fromfile(args.data, dtype=np.uint16)
    # tgrun's own random initialisation (saved by tgrun --steps 0 --save-weights),
    # so that both sides train the same weights on the same batches.
    p = {(k if k.startswith("transformer.") else "transformer." + k): v.float().requires_grad_(True)
         for k, v in safetensors_io.load(args.init).items()}
    loss_fn = make_loss(torch)

    # The compact model is the test suite's reference GPT-2 (float32 here).
    x, y = batch(tokens, TRAIN, 0)
    with torch.no_grad():
        ours = loss_fn(p, x, y).item()
        ref = models.loss(MODEL, p, x, y)[0].item()
    assert abs(ours - ref) < 1e-4, f"compact GPT-2 loss {ours} != tgtest.models loss {ref}"

    opt = TRAIN["optimizer"]
    groups = [{"params": [v for v in p.values() if v.dim() >= 2], "weight_decay": opt["weight_decay"]},
              {"params": [v for v in p.values() if v.dim() < 2], "weight_decay": 0.0}]
    adam = torch.optim.AdamW(groups, lr=opt["lr"], betas=tuple(opt["betas"]), eps=opt["eps"])
    params = list(p.values())
    times, losses, faults = [], [], []
    for step in range(args.steps):
        faults.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt)
        start = time.perf_counter()
        x, y = batch(tokens, TRAIN, step)
        adam.zero_grad(set_to_none=True)
        loss = loss_fn(p, x, y)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, TRAIN["grad_clip_norm"])
        adam.step()
        losses.append(loss.item())
        times.append((time.perf_counter() - start) * 1e3)
    libs = loaded_blas_libraries()
    info = openblas_info(libs)
    faults.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt)
    json.dump({"step_ms": times, "loss": losses, "page_faults": np.diff(faults).tolist(),
               "torch_threads": torch.get_num_threads(),
               "openblas_threads": info[2] if info else None, "blas_libs": libs,
               "check_loss": [ours, ref]}, open(args.out, "w"))


# ----------------------------------------------------------------------------
# Driver


def thread_env(k, extra=None):
    env = dict(os.environ)
    env["OPENBLAS_NUM_THREADS"] = str(k)
    env["OMP_NUM_THREADS"] = str(k)
    env.update(extra or {})
    return env


def run_tgrun(tgrun, tgx, data, k, steps, metrics, prefix=()):
    if os.path.exists(metrics):
        os.remove(metrics)
    cmd = [*prefix, tgrun, tgx, "--data", data, "--steps", str(steps), "--threads", str(k),
           "--metrics", metrics]
    subprocess.run(cmd, env=thread_env(k), check=True, stdout=subprocess.DEVNULL)
    rows = [json.loads(line) for line in open(metrics)]
    return [r["step_ms"] for r in rows], [r["loss"] for r in rows]


def run_torch(data, init, k, steps, out, prefix=(), extra_env=None):
    cmd = [*prefix, sys.executable, os.path.abspath(__file__), "--torch-worker", "--threads", str(k),
           "--steps", str(steps), "--data", data, "--init", init, "--out", out]
    subprocess.run(cmd, env=thread_env(k, extra_env), check=True)
    return json.load(open(out))


def compile_tgx(tgc, model, train, out, extra=()):
    start = time.perf_counter()
    subprocess.run([tgc, "compile", model, "--train", train, *extra, "-o", out], check=True)
    return time.perf_counter() - start


def kernel_profile(data, tgx, top=12):
    """Time in tgc's generated kernels by kernel name. tgrun loads the kernels from
    a memfd, which perf cannot symbolise; the .tgx embeds the same ELF image, so
    map perf's offsets in that object to the image's symbols (nm)."""
    if not shutil.which("nm"):
        return
    blob = open(tgx, "rb").read()
    start = blob.find(b"\x7fELF")
    if start < 0:
        return
    image = data + ".kernels.so"
    open(image, "wb").write(blob[start:])
    syms = sorted((int(addr, 16), name) for addr, kind, name in
                  (line.split() for line in subprocess.run(["nm", "--defined-only", image], capture_output=True,
                                                           text=True).stdout.splitlines() if len(line.split()) == 3)
                  if kind in "Tt")
    rep = subprocess.run(["perf", "report", "-i", data, "--no-children", "--dsos", "memfd:tg-kernels (deleted)",
                          "--sort", "sym", "--stdio", "-g", "none", "--percent-limit", "0"],
                         capture_output=True, text=True).stdout
    by_kernel = {}
    for m in re.finditer(r"^\s*([\d.]+)%.*?\b0x([0-9a-f]+)", rep, re.M):
        addr = int(m.group(2), 16)
        name = next((n for a, n in reversed(syms) if a <= addr), "?")
        name = re.sub(r"^k\d+_|_packed$", "", name)  # k12_layer_norm_packed -> layer_norm
        by_kernel[name] = by_kernel.get(name, 0.0) + float(m.group(1))
    print("   generated kernels by op (% of all samples, all instances summed):")
    for name, pct in sorted(by_kernel.items(), key=lambda kv: -kv[1])[:top]:
        print(f"      {pct:6.2f}%  {name}")
    print()


def perf_profile(label, cmd_prefix_fn, tmp, delay_ms, tgx=None):
    """perf record a run, print the time split by shared object and the top symbols."""
    data = os.path.join(tmp, f"perf-{label}.data")
    prefix = ["perf", "record", "-q", "-F", "999", "-D", str(delay_ms), "-o", data, "--"]
    cmd_prefix_fn(prefix)
    print(f"\nperf profile, {label} (after the first {delay_ms} ms, i.e. without start-up):")
    for sort, n in (("dso", 8), ("dso,sym", 15)):
        rep = subprocess.run(["perf", "report", "-i", data, "--no-children", "--sort", sort, "--stdio",
                              "-g", "none", "--percent-limit", "0.5"],
                             capture_output=True, text=True).stdout
        rows = [line for line in rep.splitlines() if line.strip() and not line.startswith("#")]
        for line in rows[:n]:
            print("   " + line.rstrip())
        print()
    if tgx:
        kernel_profile(data, tgx)


# PyTorch environments measured besides the default one.
# - With k > 1 PyTorch has two thread pools on the same cores: its OpenMP pool
#   (element-wise ops) and OpenBLAS's pthread pool; by default both spin when idle
#   and fight. OMP_WAIT_POLICY=PASSIVE makes the OpenMP workers sleep.
# - glibc malloc serves PyTorch's large tensors with mmap and gives freed memory
#   back to the OS, so every step page-faults its activations in again (tens of
#   thousands of faults per step). Raising the mmap and trim thresholds keeps the
#   memory in the heap (the usual alternative is jemalloc or tcmalloc).
# tgrun uses neither OpenMP nor per-step allocation (one arena planned at compile
# time), so these settings do not concern it; it runs once per k.
PASSIVE = {"OMP_WAIT_POLICY": "PASSIVE"}
MALLOC = {"MALLOC_MMAP_THRESHOLD_": str(1 << 32), "MALLOC_TRIM_THRESHOLD_": str(1 << 34)}


def torch_variants(k):
    """[(label suffix, extra environment)] of the PyTorch runs at k threads."""
    if k == 1:
        return [("", None), (", torch malloc-tuned", MALLOC)]
    return [("", None), (", torch OMP passive", PASSIVE), (", torch OMP passive + malloc-tuned", {**PASSIVE, **MALLOC})]


def median(xs):
    return statistics.median(xs)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="few steps, for a smoke test")
    ap.add_argument("--threads", default=None,
                    help="comma-separated thread counts (default: 1 and the machine's cores)")
    ap.add_argument("--steps", type=int, default=None, help="timed steps per process (default 15, quick 3)")
    ap.add_argument("--warmup", type=int, default=None, help="untimed steps first (default 5, quick 2)")
    ap.add_argument("--repeats", type=int, default=None, help="processes per configuration (default 3, quick 1)")
    ap.add_argument("--no-generated", action="store_true", help="skip tgc --gemm=generated")
    ap.add_argument("--perf", action="store_true",
                    help="also profile both sides with perf (time by library and symbol)")
    ap.add_argument("--bin", default=os.environ.get("TGC_BIN", os.path.join(ROOT, "build", "bin")))
    ap.add_argument("--json", help="also write the results here")
    # internal: the PyTorch side
    ap.add_argument("--torch-worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--data", help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    ap.add_argument("--init", help=argparse.SUPPRESS)
    args = ap.parse_args()

    if args.torch_worker:
        args.threads = int(args.threads)
        return torch_worker(args)

    import torch
    cores = os.cpu_count() or 1
    threads = [int(t) for t in args.threads.split(",")] if args.threads else sorted({1, cores})
    steps = args.steps or (3 if args.quick else 15)
    repeats = args.repeats or (1 if args.quick else 3)
    warmup = args.warmup if args.warmup is not None else (2 if args.quick else 5)
    gen_steps, gen_warmup = (1, 1) if args.quick else (3, 1)
    tgc, tgrun = os.path.join(args.bin, "tgc"), os.path.join(args.bin, "tgrun")
    for tool in (tgc, tgrun):
        if not os.access(tool, os.X_OK):
            sys.exit(f"missing {tool}: build the project first (or pass --bin)")

    model_name = "?"
    try:
        lscpu = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
        model_name = re.search(r"Model name:\s*(.*)", lscpu).group(1).strip()
    except (OSError, AttributeError):
        pass
    print(f"machine: {model_name}, {cores} cores; torch {torch.__version__}, numpy {np.__version__}; "
          f"load average before: {os.getloadavg()[0]:.2f}")
    # tgrun restarts itself with OPENBLAS_CORETYPE where OpenBLAS did not know
    # this CPU and chose kernels without AVX2 (--version names the core): both
    # sides then run with it, so both multiply matrices with the same kernels.
    probe = subprocess.run([tgrun, "--version"], capture_output=True, text=True)
    better_core = re.search(r"OpenBLAS: OPENBLAS_CORETYPE=(\w+), set by", probe.stdout)
    if better_core:
        os.environ["OPENBLAS_CORETYPE"] = better_core.group(1)
        print(f"OpenBLAS does not know this CPU: both sides run with OPENBLAS_CORETYPE="
              f"{better_core.group(1)}, as tgrun does by itself (this process's own OpenBLAS, "
              "which reports below, loaded before)")
    lines, is_openblas = blas_report(torch)
    print("BLAS check (PyTorch):")
    for line in lines:
        print("  " + line)
    ldd = subprocess.run(["ldd", tgrun], capture_output=True, text=True).stdout
    for line in ldd.splitlines():
        if "blas" in line:
            print("  tgrun links: " + line.strip())
    if not is_openblas:
        print("WARNING: PyTorch does not use OpenBLAS here; the ratio below compares BLAS "
              "libraries, not the two systems.")

    if os.getloadavg()[0] > 0.5:
        print(f"WARNING: load average {os.getloadavg()[0]:.2f}: something else is running; the timings "
              "will be noisy (the 2-thread ones most)")
    tmp = tempfile.mkdtemp(prefix="tgc-bench-")
    try:
        path = lambda f: os.path.join(tmp, f)
        # Private copies, so that a rebuild of the build tree during the run cannot
        # swap the tools between the compile and the runs.
        for tool in (tgc, tgrun):
            shutil.copy2(tool, tmp)
        tgc, tgrun = path("tgc"), path("tgrun")
        json.dump(MODEL, open(path("model.json"), "w"), indent=1)
        json.dump(TRAIN, open(path("train.json"), "w"), indent=1)
        np.random.default_rng(0).integers(0, MODEL["vocab_size"], NUM_TOKENS, dtype=np.uint16) \
            .tofile(path("tokens.bin"))

        compile_s = compile_tgx(tgc, path("model.json"), path("train.json"), path("m.tgx"))
        stats = json.loads(subprocess.run([tgc, "compile", path("model.json"), "--train", path("train.json"),
                                           "--stats=json"], capture_output=True, text=True, check=True).stdout)
        print(f"\ntgc compile (--gemm=blas): {compile_s:.2f} s; {stats['flops_per_step'] / 1e9:.1f} GFLOP/step, "
              f"{stats['kernels']} kernels, {stats['kernel_launches']} kernel launches + "
              f"{stats['library_calls']} BLAS calls per step, arena {stats['arena_bytes'] / 2**20:.0f} MiB")
        subprocess.run([tgrun, path("m.tgx"), "--data", path("tokens.bin"), "--steps", "0", "--save-weights",
                        path("init.safetensors")], env=thread_env(1), check=True, stdout=subprocess.DEVNULL)
        tokens_per_step = TRAIN["batch_size"] * TRAIN["seq_len"]
        print(f"timing: {repeats} rounds of one process per configuration, {warmup} warm-up + {steps} timed "
              "steps each; per process the median timed step, per configuration the median over processes\n")

        # Every configuration runs in `repeats` separate processes, interleaved
        # (tgrun k, then each PyTorch variant at k, then the next k, then the next
        # round): step times of one process are steady, but differ between processes
        # by up to ~25% for PyTorch (heap layout); interleaving spreads drift evenly.
        configs = [(k, suffix, env) for k in threads for suffix, env in torch_variants(k)]
        tg_runs = {k: [] for k in threads}
        th_runs = {(k, suffix): [] for k, suffix, _ in configs}
        for rnd in range(repeats):
            for k in threads:
                tg_ms, tg_loss = run_tgrun(tgrun, path("m.tgx"), path("tokens.bin"), k, warmup + steps,
                                           path(f"m{k}.jsonl"))
                tg_runs[k].append({"median": median(tg_ms[warmup:]), "loss": tg_loss})
                print(f"  round {rnd + 1}, threads {k}: tgc {median(tg_ms[warmup:]):.1f} ms "
                      f"(timed steps {min(tg_ms[warmup:]):.0f}-{max(tg_ms[warmup:]):.0f})", flush=True)
                for kk, suffix, extra_env in configs:
                    if kk != k:
                        continue
                    th = run_torch(path("tokens.bin"), path("init.safetensors"), k, warmup + steps,
                                   path("torch.json"), extra_env=extra_env)
                    assert th["torch_threads"] == k, th
                    assert th["openblas_threads"] in (None, k), th
                    t = th["step_ms"][warmup:]
                    diff = max(abs(a - b) for a, b in zip(tg_loss, th["loss"]))
                    th_runs[(k, suffix)].append({"median": median(t), "page_faults": median(th["page_faults"][warmup:]),
                                                 "loss_max_abs_diff": diff})
                    print(f"  round {rnd + 1}, threads {k}{suffix}: torch {median(t):.1f} ms (timed steps "
                          f"{min(t):.0f}-{max(t):.0f}), OpenBLAS threads {th['openblas_threads']}, "
                          f"{median(th['page_faults'][warmup:]):.0f} page faults/step; loss step 1 "
                          f"{tg_loss[0]:.5f} (tgc) / {th['loss'][0]:.5f} (torch), max |diff| over "
                          f"{len(tg_loss)} steps {diff:.1e}", flush=True)
        results = []
        for k, suffix, extra_env in configs:
            tg = [r["median"] for r in tg_runs[k]]
            th = [r["median"] for r in th_runs[(k, suffix)]]
            results.append({"label": f"{k}{suffix}", "threads": k, "torch_env": extra_env or {},
                            "tgc_ms": median(tg), "torch_ms": median(th), "tgc_runs": tg, "torch_runs": th,
                            "torch_page_faults_per_step": median([r["page_faults"] for r in th_runs[(k, suffix)]]),
                            "loss_max_abs_diff": max(r["loss_max_abs_diff"] for r in th_runs[(k, suffix)])})

        generated = None
        if not args.no_generated:
            gen_compile_s = compile_tgx(tgc, path("model.json"), path("train.json"), path("g.tgx"),
                                        ["--gemm=generated"])
            g_ms, _ = run_tgrun(tgrun, path("g.tgx"), path("tokens.bin"), 1, gen_warmup + gen_steps,
                                path("g1.jsonl"))
            generated = {"compile_s": gen_compile_s, "ms": median(g_ms[gen_warmup:])}
            print(f"  tgc --gemm=generated, 1 thread: {generated['ms']:.1f} ms/step "
                  f"({gen_warmup} warm-up + {gen_steps} timed; compile {gen_compile_s:.2f} s)")

        span = lambda xs: f" ({min(xs):.0f}-{max(xs):.0f})" if len(xs) > 1 else ""
        print("\n| threads | tgc ms/step | torch ms/step | ratio (torch/tgc) | tgc tokens/s | torch tokens/s |")
        print("|---|---:|---:|---:|---:|---:|")
        for r in results:
            print(f"| {r['label']} | {r['tgc_ms']:.1f}{span(r['tgc_runs'])} "
                  f"| {r['torch_ms']:.1f}{span(r['torch_runs'])} "
                  f"| {r['torch_ms'] / r['tgc_ms']:.2f} | {tokens_per_step / r['tgc_ms'] * 1e3:.0f} "
                  f"| {tokens_per_step / r['torch_ms'] * 1e3:.0f} |")
        if generated:
            one = next((r for r in results if r["label"] == "1"), None)
            torch_ms = f"{one['torch_ms']:.1f}" if one else "-"
            ratio = f"{one['torch_ms'] / generated['ms']:.2f}" if one else "-"
            torch_tps = f"{tokens_per_step / one['torch_ms'] * 1e3:.0f}" if one else "-"
            print(f"| 1 (tgc --gemm=generated) | {generated['ms']:.1f} | {torch_ms} | {ratio} "
                  f"| {tokens_per_step / generated['ms'] * 1e3:.0f} | {torch_tps} |")
        if repeats > 1:
            print(f"(ms: median over {repeats} processes, in brackets the fastest and the slowest process"
                  + ("; --gemm=generated: one process" if generated else "") + ")")
        print(f"\ncompile time (tgc, --gemm=blas): {compile_s:.2f} s"
              + (f"; --gemm=generated: {generated['compile_s']:.2f} s" if generated else ""))
        flops = stats["flops_per_step"]
        for r in results:
            print(f"achieved (matmul FLOPs / step time), threads {r['label']}: "
                  f"tgc {flops / r['tgc_ms'] / 1e6:.1f} GFLOP/s, torch {flops / r['torch_ms'] / 1e6:.1f} GFLOP/s")

        print(f"load average after the timed runs (1 min): {os.getloadavg()[0]:.2f}")

        if args.perf:
            if not shutil.which("perf"):
                print("\n--perf: perf is not installed")
            else:
                delay = int(1000 + 2 * max(r["tgc_ms"] for r in results))
                for k in threads:
                    perf_profile(f"tgrun, {k} thread(s)", lambda pre: run_tgrun(
                        tgrun, path("m.tgx"), path("tokens.bin"), k, warmup + steps, path("p.jsonl"), pre),
                        tmp, delay, tgx=path("m.tgx"))
                    for suffix, env in torch_variants(k)[::len(torch_variants(k)) - 1]:
                        perf_profile(f"PyTorch, {k} thread(s){suffix or ', default environment'}",
                                     lambda pre: run_torch(path("tokens.bin"), path("init.safetensors"), k,
                                                           warmup + steps, path("p.json"), pre, extra_env=env),
                                     tmp, delay + 3000)

        if args.json:
            json.dump({"machine": model_name, "cores": cores, "blas": lines, "stats": stats,
                       "compile_s": compile_s, "warmup": warmup, "steps": steps, "repeats": repeats,
                       "results": results,
                       "generated": generated}, open(args.json, "w"), indent=1)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
