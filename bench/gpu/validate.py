#!/usr/bin/env python3
"""The Python half of scripts/gpu-validate (the bash script runs the steps and
calls this for the parts that need more than a shell):

    validate.py tokens --vocab V --count N -o FILE     the token file of a vocabulary
    validate.py reference METRICS.jsonl -o FILE.json   per-step losses of a CPU run
    validate.py manifest BUNDLE --commit ... --checks NAME...   what the bundle holds, for the report
    validate.py ceilings -o FILE.json                  device copy GB/s and bf16 GEMM TFLOP/s (torch)
    validate.py attention BUNDLE -o FILE.json          PyTorch's fused attention kernels at the medium model's shape
    validate.py flash-kernels --ptx FILE.ptx -o FILE.json   the runtime's flash kernels alone, checked against
                                                       float32 attention and timed beside PyTorch's, per shape
    validate.py report BUNDLE [--quiet]                the table; exit 1 if a correctness check failed

Only `ceilings`, `attention` and `flash-kernels` need torch; the rest is the standard library, so that
`prepare` runs with any python3.
"""
import argparse
import array
import csv
import ctypes
import datetime
import json
import os
import random
import re
import statistics
import sys

# Loss tolerances against the f32 CPU run, relative to the loss (absolute
# below a loss of 1), and why they are what they are.
TOLERANCES = {"f32": (1e-4, "f32, TF32 off"), "bf16": (2e-2, "bf16 compute, f32 masters")}
H100_BF16_DENSE_FLOPS = 989e12  # H100 SXM, dense bf16 tensor cores (NVIDIA's data sheet)
# FlashAttention-3's published H100 figures, as its paper's abstract states
# them (FlashAttention-2 is measured in the run, through PyTorch).
FLASH_ATTENTION_3_PUBLISHED = (
    "FlashAttention-3 (Shah et al. 2024, arXiv:2407.08608; H100 SXM5): forward in FP16/BF16 up to 740 TFLOP/s, "
    "75% of the peak, at its best shape; FlashAttention-2 at 35% of the peak on the H100")
COPY_BYTES = 1 << 30
GEMM_SIZE = 8192
CEILING_ROUNDS, CEILING_REPEATS = 5, 10
ATTENTION_WARMUP, ATTENTION_ROUNDS = 3, 20
# Calls a timed round queues back to back: the host's time to issue a call
# (Python, ctypes, autograd) overlaps the device's work on the previous one
# instead of being timed as device time.
ATTENTION_CALLS_PER_ROUND = 10
# The commands of a decomposed attention (what a fused attention kernel
# replaces), by their labels: the scores, the softmax, the product with the
# values, and their gradients (the backward pass recomputes the scores).
ATTENTION_LABEL = re.compile(r"^(grad_)?h\d+_attn(_scores|_probs|_dscores|_dprobs|_dq|_dk|_dv)?$")
# The shapes `flash-kernels` runs the runtime's flash kernels at: (what,
# batch, query heads, key heads, sequence, head dim), causal, bf16. The first
# is the medium model's layer; the others FlashAttention's benchmark lengths.
FLASH_SHAPES = [("GPT-2 medium", 8, 16, 16, 1024, 64), ("head dim 128", 4, 16, 16, 2048, 128),
                ("grouped heads, long", 1, 32, 8, 8192, 128)]
# The runtime's kernels alone again at the second shape with a rotary
# position embedding inside (theta 10,000, as Llama 2's): checked against
# float32 attention over the rotated queries and keys, and timed beside
# that shape's rows without it.
FLASH_ROPE_SHAPE = ("head dim 128, RoPE inside", 4, 16, 16, 2048, 128)
FLASH_ROPE_THETA = 1e4
# Normwise error bound of the kernels' bf16 result and gradients against
# float32 attention from the same bf16 inputs: P, O and dS are rounded to
# bf16 (2^-9 each), the same bound as the kernels' emulated test.
FLASH_ERROR_BOUND = 1e-2


# ----------------------------------------------------------------------------
# prepare: tokens and CPU references


def write_tokens(vocab, count, path):
    """A learnable sequence (each token has two possible successors, so the loss
    can fall well below log(vocab) and the correctness runs compare losses that
    move), seeded: the same file every time."""
    rng = random.Random(vocab)
    successors = [(rng.randrange(vocab), rng.randrange(vocab)) for _ in range(vocab)]
    tokens = array.array("H", [0])
    for _ in range(count - 1):
        tokens.append(successors[tokens[-1]][rng.getrandbits(1)])
    if sys.byteorder != "little":
        tokens.byteswap()
    with open(path, "wb") as f:
        tokens.tofile(f)


def read_metrics(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def write_reference(metrics_path, out):
    rows = read_metrics(metrics_path)
    with open(out, "w") as f:
        json.dump({"source": "tgrun on the CPU (f32)", "steps": len(rows),
                   "loss": [r["loss"] for r in rows], "grad_norm": [r["grad_norm"] for r in rows]}, f, indent=1)


# Checks of MODEL run another way, each against MODEL's CPU run:
# MODEL-cudnn, cuDNN's attention (an artifact of its own); MODEL-summed,
# MODEL's artifact with the flash backward's dQ summed by the key blocks (a
# setting); artifacts compiled with opt-in flags: MODEL-bgrad, the MLP's
# first bias gradient summed by the GEMM applying GELU's derivative,
# MODEL-wgrad, the weight gradients' GEMMs on a stream of their own, and
# MODEL-lastblock, the split column sums' partials combined by the last
# block of each row group, not by a second launch, and MODEL-rowcolumns, the
# norm gradients' column sums added by their row passes.
CUDNN_SUFFIX = "-cudnn"
SUMMED_SUFFIX, SUMMED_SETTING = "-summed", "TG_CUDA_FLASH_BACKWARD=summed"
FLAG_SUFFIXES = {"-bgrad": "--fuse=gemm-bias-grad", "-wgrad": "--cuda-weight-gradient-stream",
                 "-lastblock": "--cuda-last-block-combines",
                 "-rowcolumns": "--cuda-column-sums-in-row-pass --cuda-sm-count=16"}
# What the runtime prints where an Attention command compiled for cuDNN runs
# on its own kernels (CudaBackend.cpp).
CUDNN_FALLBACK = "compiled for cuDNN run on the runtime's flash kernels instead"


def write_manifest(args):
    """BUNDLE/manifest.json: the checks and the GPT-2-medium run, with what
    prepare knew (commit, the compiler's FLOP count and arena size)."""
    def load(*parts):
        with open(os.path.join(args.bundle, *parts)) as f:
            return json.load(f)

    checks = []
    for name in args.checks:
        model, dtype = name.rsplit("-", 1)
        tolerance, why = TOLERANCES[dtype]
        suffix = next((s for s in (CUDNN_SUFFIX, SUMMED_SUFFIX, *FLAG_SUFFIXES) if model.endswith(s)), "")
        reference = model[:len(model) - len(suffix)]
        check = {"name": name, "model": model, "dtype": dtype, "steps": args.steps,
                 "reference": f"reference/{reference}.json", "tolerance": tolerance, "why": why,
                 "cudnn": suffix == CUDNN_SUFFIX}
        if suffix == SUMMED_SUFFIX:
            check["setting"] = SUMMED_SETTING
        if suffix in FLAG_SUFFIXES:
            check["flags"] = FLAG_SUFFIXES[suffix]
        checks.append(check)
    model, train = load("models", args.medium + ".json"), load("models", f"train-{args.medium}.json")
    stats = load("stats", args.medium + "-bf16.json")
    medium = {"model": args.medium, "layers": model["n_layer"], "d": model["n_embd"], "heads": model["n_head"],
              "vocab": model["vocab_size"], "seq_len": train["seq_len"], "batch_size": train["batch_size"],
              "tokens_per_step": train["batch_size"] * train["seq_len"], "steps": args.medium_steps,
              "warmup": args.warmup, "flops_per_step": stats["flops_per_step"], "arena_bytes": stats["arena_bytes"]}
    if args.base_label:
        medium["base_label"] = args.base_label
    medium["variants"] = [{"name": v.split("=", 1)[0], "flags": v.split("=", 1)[1]} for v in args.variants]
    manifest = {"commit": args.commit, "dirty": args.dirty == 1, "cuda_arch": args.cuda_arch,
                "prepared": datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z"),
                "correctness": checks, "medium": medium}
    if args.long:
        model, train = load("models", args.long + ".json"), load("models", f"train-{args.long}.json")
        heads = model["num_attention_heads"]
        manifest["long"] = {"model": args.long, "layers": model["num_hidden_layers"], "heads": heads,
                            "key_heads": model.get("num_key_value_heads", heads),
                            "head_dim": model.get("head_dim", model["hidden_size"] // heads),
                            "seq_len": train["seq_len"], "batch_size": train["batch_size"]}
    with open(os.path.join(args.bundle, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)


# ----------------------------------------------------------------------------
# ceilings (on the GPU, with torch)


def measure_ceilings(out):
    """Best of CEILING_ROUNDS rounds of CEILING_REPEATS back-to-back operations,
    timed with CUDA events: what the device can do, for the fractions below."""
    import torch

    def best_seconds(op):
        # One round of warm-up: clocks up, library handles and kernels chosen.
        times = [ms / 1e3 for ms in timed_rounds(op, CEILING_ROUNDS, CEILING_REPEATS, warmup_rounds=1)]
        return min(times), statistics.median(times)

    def copy():  # its buffers are freed on return, before the GEMM's are allocated
        src = torch.ones(COPY_BYTES, dtype=torch.uint8, device="cuda")
        dst = torch.empty_like(src)
        return best_seconds(lambda: dst.copy_(src))

    def gemm():
        a = torch.randn(GEMM_SIZE, GEMM_SIZE, device="cuda", dtype=torch.bfloat16)
        b = torch.randn(GEMM_SIZE, GEMM_SIZE, device="cuda", dtype=torch.bfloat16)
        c = torch.empty_like(a)
        return best_seconds(lambda: torch.matmul(a, b, out=c))

    copy_best, copy_median = copy()
    gemm_best, gemm_median = gemm()
    flops = 2.0 * GEMM_SIZE ** 3
    blas = getattr(torch.backends.cuda, "preferred_blas_library", None)
    result = {
        "device_name": torch.cuda.get_device_name(),
        "torch": torch.__version__, "torch_cuda": torch.version.cuda,
        "copy_bytes": COPY_BYTES,
        # A copy reads and writes every byte.
        "copy_gbps": 2 * COPY_BYTES / copy_best / 1e9, "copy_gbps_median": 2 * COPY_BYTES / copy_median / 1e9,
        "gemm_size": GEMM_SIZE,
        "gemm_tflops": flops / gemm_best / 1e12, "gemm_tflops_median": flops / gemm_median / 1e12,
        "blas_library": str(blas()).replace("_BlasBackend.", "") if blas else "Cublas",
        "rounds": CEILING_ROUNDS, "repeats": CEILING_REPEATS,
    }
    with open(out, "w") as f:
        json.dump(result, f, indent=1)
    print(f"copy {result['copy_gbps']:.0f} GB/s, bf16 GEMM {result['gemm_tflops']:.0f} TFLOP/s")


def causal_attention_flops(batch, heads, seq, head_dim):
    """Forward FLOPs of causal attention: QK^T and PV over the visible half of
    the pairs (the convention of FlashAttention's benchmarks); the backward
    pass counts 2.5 times that."""
    return 4.0 * batch * heads * seq * seq * head_dim / 2


def measure_attention(bundle_root, out):
    """Forward and backward times of PyTorch's fused attention kernels (cuDNN,
    FlashAttention-2, memory-efficient) at the medium model's shape: causal,
    bf16, random inputs; median of ATTENTION_ROUNDS, CUDA events. What TGC's
    attention is compared with in the report."""
    import torch

    medium = Bundle(bundle_root).manifest["medium"]
    batch, heads, seq = medium["batch_size"], medium["heads"], medium["seq_len"]
    head_dim = medium["d"] // heads
    try:
        from torch.nn.attention import SDPBackend
        backends = {"cuDNN": SDPBackend.CUDNN_ATTENTION, "FlashAttention-2": SDPBackend.FLASH_ATTENTION,
                    "memory-efficient": SDPBackend.EFFICIENT_ATTENTION}
    except ImportError:  # torch before 2.3
        backends = {}
    flops = causal_attention_flops(batch, heads, seq, head_dim)
    result = {"batch": batch, "heads": heads, "seq": seq, "head_dim": head_dim, "torch": torch.__version__,
              "forward_flops": flops, "kernels": {}}
    for name, backend in backends.items():
        try:
            result["kernels"][name] = measure_sdpa_shape(backend, batch, heads, heads, seq, head_dim)
        except Exception as error:  # a backend this GPU or build lacks
            result["kernels"][name] = {"error": first_line(error)}
    with open(out, "w") as f:
        json.dump(result, f, indent=1)
    for name, k in result["kernels"].items():
        print(name, " ".join(f"{key} {value:.3g}" if isinstance(value, float) else f"{key} {value}"
                             for key, value in k.items()))


# The runtime's flash kernels as ctypes sees them: FlashAttention.h's Params,
# blockRows and sharedBytes (test_gpu_validate compares them with the header,
# compiled).
FLASH_BLOCK_ROWS, FLASH_THREADS = 64, 128
FLASH_KERNELS = ("forward", "delta", "key_value_grads", "query_grads", "key_value_grads_adding_query",
                 "query_grads_from_sum")


class FlashTensor(ctypes.Structure):
    _fields_ = [("base", ctypes.c_uint64), ("batchStride", ctypes.c_int64), ("headStride", ctypes.c_int64),
                ("rowStride", ctypes.c_int64)]


class FlashParams(ctypes.Structure):
    _fields_ = ([(name, FlashTensor) for name in ("query", "key", "value", "result", "resultGrad", "queryGrad",
                                                   "keyGrad", "valueGrad")] +
                [(name, ctypes.c_uint64) for name in ("logsumexp", "delta", "ropeCos", "ropeSin", "queryGradSum")] +
                [(name, ctypes.c_int32) for name in ("batch", "queryHeads", "keyHeads", "queryLen", "keyLen",
                                                      "causal", "window")] +
                [("scale", ctypes.c_float)])


def flash_block_rows(kernel):
    """Rows (queries, or keys for the key and value gradients) a block of
    `kernel` covers."""
    return {"delta": FLASH_THREADS // 32}.get(kernel, FLASH_BLOCK_ROWS)


def flash_shared_bytes(kernel, head_dim):
    row = (head_dim + 8) * 2  # padded bf16 rows
    queries = 32 if head_dim == 128 else 64  # the key gradients' query tile
    key_value_grads = 2 * FLASH_BLOCK_ROWS * row + 4 * queries * row + 4 * queries * 4
    return {"forward": FLASH_BLOCK_ROWS * row + 4 * 64 * row,
            "delta": 0,
            "key_value_grads": key_value_grads,
            "query_grads": 2 * FLASH_BLOCK_ROWS * row + 2 * FLASH_BLOCK_ROWS * 4 + 4 * 64 * row,
            "key_value_grads_adding_query": key_value_grads + FLASH_BLOCK_ROWS * (queries + 8) * 2,
            "query_grads_from_sum": FLASH_BLOCK_ROWS * row}[kernel]


class FlashModule:
    """The PTX loaded with the CUDA driver into torch's context; launches on
    torch's current stream. With `extra_blocks`, each kernel's launch bounds
    ask for that many more resident blocks a multiprocessor (.minnctapersm),
    so that the driver's assembler gives it fewer registers: the experiment
    of more warps in flight, without rebuilding. `resources`: each kernel's
    registers a thread and local (spilled) bytes, as the driver compiled it."""

    def __init__(self, ptx_path, extra_blocks=0):
        import torch
        torch.zeros(1, device="cuda")  # torch's context, current on this thread
        self.cuda = ctypes.CDLL("libcuda.so.1")
        self.cuda.cuLaunchKernel.argtypes = [ctypes.c_void_p] + [ctypes.c_uint] * 7 + [
            ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p]
        self.module = ctypes.c_void_p()
        with open(ptx_path, "rb") as f:
            ptx = more_resident_blocks(f.read(), extra_blocks)
        self.check("cuModuleLoadData", self.cuda.cuModuleLoadData(ctypes.byref(self.module), ptx + b"\0"))
        self.functions, self.resources = {}, {}
        for d in (64, 128):
            for kernel in FLASH_KERNELS:
                function = ctypes.c_void_p()
                name = f"tg_flash_attention_{kernel}_d{d}".encode()
                self.check("cuModuleGetFunction", self.cuda.cuModuleGetFunction(ctypes.byref(function),
                                                                               self.module, name))
                shared = flash_shared_bytes(kernel, d)
                if shared:  # CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
                    self.check("cuFuncSetAttribute", self.cuda.cuFuncSetAttribute(function, 8, shared))
                self.functions[kernel, d] = function
                registers, local = ctypes.c_int(), ctypes.c_int()
                # CU_FUNC_ATTRIBUTE_NUM_REGS, CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES
                self.check("cuFuncGetAttribute", self.cuda.cuFuncGetAttribute(ctypes.byref(registers), 4, function))
                self.check("cuFuncGetAttribute", self.cuda.cuFuncGetAttribute(ctypes.byref(local), 3, function))
                self.resources[f"{kernel}_d{d}"] = {"registers": registers.value, "local_bytes": local.value}

    def check(self, what, result):
        if result:
            text = ctypes.c_char_p()
            self.cuda.cuGetErrorString(result, ctypes.byref(text))
            raise RuntimeError(f"{what}: {text.value.decode() if text.value else result}")

    def launch(self, kernel, d, rows, planes, params):
        """`kernel` over `rows` (queries, or keys for the key and value
        gradients) of `planes` planes, as the CUDA backend launches it."""
        import torch
        argument = (ctypes.c_void_p * 1)(ctypes.cast(ctypes.pointer(params), ctypes.c_void_p))
        blocks = -(-rows // flash_block_rows(kernel))
        self.check(f"cuLaunchKernel {kernel}", self.cuda.cuLaunchKernel(
            self.functions[kernel, d], blocks, planes, 1, FLASH_THREADS, 1, 1, flash_shared_bytes(kernel, d),
            torch.cuda.current_stream().cuda_stream, argument, None))


def timed_rounds(run, rounds, calls, warmup_rounds=0):
    """ms of one call of `run` in each of `rounds` rounds of `calls` calls
    queued back to back (CUDA events around a round), after `warmup_rounds`
    rounds left out."""
    import torch
    times = []
    for i in range(warmup_rounds + rounds):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(calls):
            run()
        end.record()
        end.synchronize()
        if i >= warmup_rounds:
            times.append(start.elapsed_time(end) / calls)
    return times


def time_on_stream(run):
    """Median ms of one call of `run` over ATTENTION_ROUNDS rounds of
    ATTENTION_CALLS_PER_ROUND calls after ATTENTION_WARMUP, CUDA events."""
    return statistics.median(timed_rounds(run, ATTENTION_ROUNDS, ATTENTION_CALLS_PER_ROUND, ATTENTION_WARMUP))


def measure_flash_shape(module, batch, heads, key_heads, seq, d, rope_theta=0.0, summed=False):
    """The kernels at one shape: normwise errors against float32 attention
    from the same bf16 inputs, and forward and backward times. With
    `rope_theta` the kernels rotate the queries and keys (tables of each
    position's cosines and sines in f32, from f64 angles, as the CUDA
    backend makes them), and the reference attends over q and k rotated in
    float32 and rounded to bf16 as the kernels round them, its gradients
    going back through the rotation. With `summed`, the backward the
    runtime runs under TG_CUDA_FLASH_BACKWARD=summed: the key blocks add dQ
    to an f32 sum, which a last kernel writes out."""
    import torch
    import torch.nn.functional as F
    bf16 = dict(device="cuda", dtype=torch.bfloat16)
    q = torch.randn(batch, heads, seq, d, **bf16)
    k, v = (torch.randn(batch, key_heads, seq, d, **bf16) for _ in range(2))
    grad = torch.randn(batch, heads, seq, d, **bf16)
    out, dq = torch.empty_like(q), torch.empty_like(q)
    dk, dv = torch.empty_like(k), torch.empty_like(v)
    lse, delta = (torch.empty(batch, heads, seq, device="cuda", dtype=torch.float32) for _ in range(2))
    cos = sin = None
    if rope_theta:
        pairs = torch.arange(d // 2, device="cuda", dtype=torch.float64)
        angles = torch.arange(seq, device="cuda", dtype=torch.float64)[:, None] * rope_theta ** (-2 * pairs / d)
        cos, sin = angles.cos().float().contiguous(), angles.sin().float().contiguous()

    def tensor(t):
        return FlashTensor(t.data_ptr(), t.stride(0), t.stride(1), t.stride(2))

    query_grad_sum = torch.empty(batch, heads, seq, d, device="cuda", dtype=torch.float32) if summed else None
    params = FlashParams(tensor(q), tensor(k), tensor(v), tensor(out), tensor(grad), tensor(dq), tensor(dk),
                         tensor(dv), lse.data_ptr(), delta.data_ptr(), cos.data_ptr() if rope_theta else 0,
                         sin.data_ptr() if rope_theta else 0, query_grad_sum.data_ptr() if summed else 0,
                         batch, heads, key_heads, seq, seq, 1, 0, 1.0 / d ** 0.5)
    key_value_grads, query_grads = (("key_value_grads_adding_query", "query_grads_from_sum") if summed
                                    else ("key_value_grads", "query_grads"))

    def forward():
        module.launch("forward", d, seq, batch * heads, params)

    def backward():
        module.launch("delta", d, seq, batch * heads, params)
        module.launch(key_value_grads, d, seq, batch * key_heads, params)
        module.launch(query_grads, d, seq, batch * heads, params)

    forward()
    backward()
    torch.cuda.synchronize()
    group = heads // key_heads
    qf, kf, vf = (t.float().requires_grad_() for t in (q, k, v))

    def rotated(x):
        if not rope_theta:
            return x
        x1, x2 = x[..., :d // 2], x[..., d // 2:]
        y = torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)
        return y + (y.bfloat16().float() - y).detach()  # rounded as the kernels round it

    ref = F.scaled_dot_product_attention(rotated(qf), rotated(kf).repeat_interleave(group, 1),
                                         vf.repeat_interleave(group, 1), is_causal=True)
    ref.backward(grad.float())

    def error(got, want):
        return float((got.float() - want).norm() / want.norm())

    errors = {"result": error(out, ref.detach()), "query_grad": error(dq, qf.grad),
              "key_grad": error(dk, kf.grad), "value_grad": error(dv, vf.grad)}
    del qf, kf, vf, ref
    flops = causal_attention_flops(batch, heads, seq, d)
    forward_ms, backward_ms = time_on_stream(forward), time_on_stream(backward)
    return {"errors": errors, "forward_ms": forward_ms, "backward_ms": backward_ms,
            "forward_tflops": flops / forward_ms / 1e9, "backward_tflops": 2.5 * flops / backward_ms / 1e9}


def measure_sdpa_shape(backend, batch, heads, key_heads, seq, d):
    """Forward and backward times of one of PyTorch's fused kernels: causal,
    bf16, random inputs."""
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import sdpa_kernel
    q = torch.randn(batch, heads, seq, d, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    k, v = (torch.randn(batch, key_heads, seq, d, device="cuda", dtype=torch.bfloat16, requires_grad=True)
            for _ in range(2))
    grad = torch.randn(batch, heads, seq, d, device="cuda", dtype=torch.bfloat16)
    gqa = {"enable_gqa": True} if key_heads != heads else {}
    state = {}

    def forward():
        state["out"] = F.scaled_dot_product_attention(q, k, v, is_causal=True, **gqa)

    def backward():
        q.grad = k.grad = v.grad = None  # fresh gradients, not sums into the last ones
        state["out"].backward(grad, retain_graph=True)

    with sdpa_kernel(backend):
        forward_ms = time_on_stream(forward)
        backward_ms = time_on_stream(backward)
    flops = causal_attention_flops(batch, heads, seq, d)
    return {"forward_ms": forward_ms, "backward_ms": backward_ms, "forward_tflops": flops / forward_ms / 1e9,
            "backward_tflops": 2.5 * flops / backward_ms / 1e9}


def more_resident_blocks(ptx, extra):
    """`ptx` (bytes) with each entry's .minnctapersm raised by `extra`."""
    return re.sub(rb"\.minnctapersm (\d+)", lambda m: b".minnctapersm %d" % (int(m.group(1)) + extra), ptx)


def first_line(error):
    return str(error).splitlines()[0][:200] if str(error) else repr(error)


def flash_shape_or_error(module, why, *shape, **options):
    """measure_flash_shape of `module` (None: it did not load, for `why`), or
    the error that stopped it."""
    try:
        if module is None:
            raise RuntimeError(why)
        return measure_flash_shape(module, *shape, **options)
    except Exception as error:
        return {"error": first_line(error)}


def measure_flash_kernels(ptx_path, out):
    """The runtime's flash kernels (the PTX the bundle's runtime build made)
    at each of FLASH_SHAPES, beside PyTorch's cuDNN and FlashAttention-2
    kernels at the same shape."""
    result = {"ptx": ptx_path, "error_bound": FLASH_ERROR_BOUND, "shapes": []}
    why = None
    try:
        import torch
        result["torch"] = torch.__version__
        module = FlashModule(ptx_path)
        result["resources"] = module.resources
    except Exception as error:  # no GPU, no driver, or the driver rejects the PTX
        module, why = None, first_line(error)
    # The same kernels asking for one more resident block a multiprocessor.
    more_blocks, why_more = None, "the kernels as built did not load"
    if module is not None:
        try:
            more_blocks = FlashModule(ptx_path, extra_blocks=1)
            result["resources_more_blocks"] = more_blocks.resources
        except Exception as error:
            why_more = first_line(error)
    try:
        from torch.nn.attention import SDPBackend
        backends = {"cuDNN": SDPBackend.CUDNN_ATTENTION, "FlashAttention-2": SDPBackend.FLASH_ATTENTION}
    except ImportError:  # torch before 2.3
        backends = {}
    for label, batch, heads, key_heads, seq, d in FLASH_SHAPES:
        shape = {"label": label, "batch": batch, "heads": heads, "key_heads": key_heads, "seq": seq,
                 "head_dim": d, "forward_flops": causal_attention_flops(batch, heads, seq, d), "torch": {}}
        shape["tgc"] = flash_shape_or_error(module, why, batch, heads, key_heads, seq, d)
        if module is not None:
            shape["tgc_more_blocks"] = flash_shape_or_error(more_blocks, why_more, batch, heads, key_heads, seq, d)
        for name, backend in backends.items():
            try:
                shape["torch"][name] = measure_sdpa_shape(backend, batch, heads, key_heads, seq, d)
            except Exception as error:  # a backend this GPU, build or shape lacks
                shape["torch"][name] = {"error": first_line(error)}
        result["shapes"].append(shape)
        print(label, json.dumps(shape["tgc"]))
    label, batch, heads, key_heads, seq, d = FLASH_ROPE_SHAPE
    shape = {"label": label, "batch": batch, "heads": heads, "key_heads": key_heads, "seq": seq,
             "head_dim": d, "rope_theta": FLASH_ROPE_THETA,
             "forward_flops": causal_attention_flops(batch, heads, seq, d), "torch": {},
             "tgc": flash_shape_or_error(module, why, batch, heads, key_heads, seq, d, FLASH_ROPE_THETA)}
    result["shapes"].append(shape)
    print(label, json.dumps(shape["tgc"]))
    # The summed backward last: a kernel that faults leaves the context
    # unusable, and the measurements before it stand.
    for shape in result["shapes"]:
        shape["tgc_summed"] = flash_shape_or_error(
            module, why, shape["batch"], shape["heads"], shape["key_heads"], shape["seq"], shape["head_dim"],
            shape.get("rope_theta", 0.0), summed=True)
        print(shape["label"], "summed", json.dumps(shape["tgc_summed"]))
    with open(out, "w") as f:
        json.dump(result, f, indent=1)


# ----------------------------------------------------------------------------
# report


class Bundle:
    def __init__(self, root):
        self.root = root
        self.manifest = self.json("manifest.json")

    def path(self, *parts):
        return os.path.join(self.root, *parts)

    def json(self, *parts):
        try:
            with open(self.path(*parts)) as f:
                return json.load(f)
        except (OSError, ValueError):
            return None

    def text(self, *parts):
        try:
            with open(self.path(*parts)) as f:
                return f.read().strip()
        except OSError:
            return ""

    def failure(self, name):
        """None if the step `name` of the run succeeded, else why not (from its
        exit status and the end of its log)."""
        rc = self.text("results", name + ".rc")
        if rc == "0":
            return None
        if not rc:
            return "did not run"
        if rc == "skipped":
            return self.text("results", name + ".log")
        lines = [line for line in self.text("results", name + ".log").splitlines() if line.strip()]
        error = next((line for line in reversed(lines) if "error" in line.lower()), lines[-1] if lines else "")
        why = f"timed out after {self.text('results', name + '.limit')} s" if rc == "124" else f"exit status {rc}"
        return f"{why}: {error.strip()[:400]}" if error else why


def fmt(value, digits=3):
    return f"{value:.{digits}g}"


def timed_steps(step_ms, warmup):
    """(median, min, max) step seconds after the warm-up steps, or None."""
    timed = step_ms[warmup:]
    if not timed:
        return None
    return statistics.median(timed) / 1e3, min(timed) / 1e3, max(timed) / 1e3


def cudnn_fallback(log_path):
    """The runtime's warning that cuDNN did not take a command, if its log
    has one."""
    try:
        with open(log_path, errors="replace") as f:
            for line in f:
                if CUDNN_FALLBACK in line:
                    return line.strip()
    except OSError:
        pass
    return None


def correctness_rows(bundle, rows):
    failed = False
    for check in bundle.manifest["correctness"]:
        name, tol = check["name"], check["tolerance"]
        how = check.get("setting") or check.get("flags")
        what = (f"{check['model']} {check['dtype']}" + (f" ({how})" if how else "")
                + f" vs CPU f32, {check['steps']} steps")
        against = f"each step: abs diff ≤ {tol:g}·max(1, loss) ({check['why']})"
        why = bundle.failure(name)
        reference = bundle.json(check["reference"])
        if why is None and reference is None:
            why = f"no CPU reference ({check['reference']})"
        if why is not None:
            rows.append(("correctness", what, f"n/a: {why}", against, "FAIL"))
            failed = True
            continue
        if check.get("cudnn"):
            fallback = cudnn_fallback(bundle.path("results", name + ".log"))
            if fallback:
                rows.append(("correctness", what, f"n/a: cuDNN did not run ({fallback})", against, "FAIL"))
                failed = True
                continue
        losses = [r["loss"] for r in read_metrics(bundle.path("results", name + ".jsonl"))]
        ref = reference["loss"]
        if len(losses) != len(ref):
            rows.append(("correctness", what, f"n/a: {len(losses)} steps ran, the reference has {len(ref)}",
                         against, "FAIL"))
            failed = True
            continue
        diffs = [abs(a - b) for a, b in zip(losses, ref)]
        rel = max(d / abs(b) for d, b in zip(diffs, ref))
        ok = all(d <= tol * max(1.0, abs(b)) for d, b in zip(diffs, ref))
        failed |= not ok
        rows.append(("correctness", what,
                     f"max abs diff {fmt(max(diffs))}, max rel {fmt(rel)}; loss {losses[0]:.4f} → {losses[-1]:.4f}",
                     against, "PASS" if ok else "FAIL"))
    return failed


def ceiling_rows(bundle, rows):
    ceilings = bundle.json("results", "ceilings.json")
    why = bundle.failure("ceilings")
    if why is not None or ceilings is None:
        why = why or "no results/ceilings.json"
        rows.append(("ceiling", "device-to-device copy", f"n/a: {why}", "", ""))
        rows.append(("ceiling", "bf16 GEMM", f"n/a: {why}", "", ""))
        return None
    rounds = (f"best of {ceilings['rounds']} rounds of {ceilings['repeats']}, CUDA events; "
              f"torch {ceilings['torch']} (CUDA {ceilings['torch_cuda']})")
    rows.append(("ceiling", f"device-to-device copy, {ceilings['copy_bytes'] >> 30} GiB (torch copy_)",
                 f"{ceilings['copy_gbps']:.0f} GB/s (read + write bytes; median round "
                 f"{ceilings['copy_gbps_median']:.0f})", rounds, ""))
    n = ceilings["gemm_size"]
    library = "cuBLASLt" if "lt" in ceilings["blas_library"].lower() else "cuBLAS, which calls cuBLASLt"
    rows.append(("ceiling", f"bf16 GEMM {n}×{n}×{n} (torch.matmul; torch's BLAS backend "
                            f"{ceilings['blas_library']}: {library})",
                 f"{ceilings['gemm_tflops']:.0f} TFLOP/s (median round {ceilings['gemm_tflops_median']:.0f})",
                 f"{ceilings['gemm_tflops'] * 1e12 / H100_BF16_DENSE_FLOPS:.2f} of 989 TFLOP/s; {rounds}", ""))
    return ceilings


# The GPT-2-medium step under the runtime's opt-in settings (scripts/gpu-validate
# runs them): the run's name, what the setting is, the environment variable,
# the marker of the log line that says what it chose (or None), and the run
# it is timed against: the default artifact's ("TGC") or a variant's (the
# summed backward changes only the runtime's flash kernels, which the flash
# variant runs). Timings: the correctness checks (MODEL-summed) say whether a
# setting computes right.
MEDIUM_SETTINGS = (
    ("medium-gemm-autotune", "GEMM autotuning", "TG_CUDA_GEMM_AUTOTUNE", "GEMM autotuning", "TGC"),
    ("medium-flash-summed", "the flash backward's dQ summed by the key blocks", SUMMED_SETTING, None,
     "TGC variant flash"),
)


def medium_rows(bundle, ceilings, rows):
    medium = bundle.manifest["medium"]
    flops, tokens, warmup = medium["flops_per_step"], medium["tokens_per_step"], medium["warmup"]
    label = (f"{medium['model']} bf16: {medium['layers']} layers, d={medium['d']}, {medium['heads']} heads, "
             f"T={medium['seq_len']}, B={medium['batch_size']}, vocab {medium['vocab']}")
    rows.append(("gpt2-medium", "model", label,
                 f"{flops / 1e12:.2f} TFLOP/step (tgc --stats flops_per_step, used for both)", ""))

    def framework_row(name, step_ms, extra):
        timing = timed_steps(step_ms, warmup)
        if timing is None:
            rows.append(("gpt2-medium", name, f"n/a: fewer than {warmup + 1} steps ran", "", ""))
            return None
        median, fastest, slowest = timing
        mfu = f"MFU {flops / median / H100_BF16_DENSE_FLOPS:.3f} of 989 TFLOP/s (H100 SXM dense bf16)"
        if ceilings:
            mfu += f", {flops / median / (ceilings['gemm_tflops'] * 1e12):.3f} of the measured GEMM ceiling"
        rows.append(("gpt2-medium", name,
                     f"{median * 1e3:.1f} ms/step ({fastest * 1e3:.1f}–{slowest * 1e3:.1f}), "
                     f"{tokens / median:,.0f} tokens/s{extra}",
                     f"{mfu}; median of steps {warmup + 1}–{len(step_ms)}, tokens/s = B·T / median step", ""))
        return tokens / median

    throughput, losses = {}, {}

    def losses_row(name, metrics, against="TGC"):
        """The losses of another TGC build's or variant's run against those
        of `against` (the default build's, or a variant's), step by step."""
        n = min(len(metrics), len(losses.get(against, [])))
        if n:
            diff = max(abs(a - b["loss"]) for a, b in zip(losses[against][:n], metrics[:n]))
            rows.append(("gpt2-medium", f"{against} vs {name}: losses", f"max abs diff {fmt(diff)} over {n} steps",
                         "bf16: other roundings where the kernels differ; information, no threshold", ""))

    why = bundle.failure("medium-tgc")
    if why is None:
        metrics = read_metrics(bundle.path("results", "medium-tgc.jsonl"))
        losses["TGC"] = [r["loss"] for r in metrics]
        # Its attention is cuDNN's unless the runtime fell back to its own.
        fallback = cudnn_fallback(bundle.path("results", "medium-tgc.log"))
        throughput["TGC"] = framework_row(
            "TGC (tgrun)", [r["step_ms"] for r in metrics],
            f"; arena {medium['arena_bytes'] / 2**30:.1f} GiB" + (f"; {fallback}" if fallback else ""))
    else:
        rows.append(("gpt2-medium", "TGC (tgrun)", f"n/a: {why}", "", ""))
    # An earlier build's step (gpu-validate prepare --base), in the same run.
    base_name = f"TGC as before: {medium.get('base_label', 'no earlier build given')}"
    why = bundle.failure("medium-base")
    if why is None:
        metrics = read_metrics(bundle.path("results", "medium-base.jsonl"))
        throughput["base"] = framework_row(base_name, [r["step_ms"] for r in metrics], "")
        losses_row("TGC as before", metrics)
    else:
        rows.append(("gpt2-medium", base_name, f"n/a: {why}", "", ""))
    # This build with more tgc flags (gpu-validate prepare --variant).
    for variant in medium.get("variants", []):
        name = f"TGC variant {variant['name']} ({variant['flags']})"
        why = bundle.failure(f"medium-variant-{variant['name']}")
        if why is not None:
            rows.append(("gpt2-medium", name, f"n/a: {why}", "", ""))
            continue
        metrics = read_metrics(bundle.path("results", f"medium-variant-{variant['name']}.jsonl"))
        speed = throughput[f"TGC variant {variant['name']}"] = framework_row(
            name, [r["step_ms"] for r in metrics], "")
        losses[f"TGC variant {variant['name']}"] = [r["loss"] for r in metrics]
        losses_row(f"variant {variant['name']}", metrics)
        if speed and throughput.get("TGC"):
            rows.append(("gpt2-medium", f"tokens/s, TGC / {name}", f"{throughput['TGC'] / speed:.2f}×",
                         "> 1: what the flags turn off pays", ""))
    # An artifact under the runtime's opt-in settings, timed against its run
    # without; where tgrun's log has a line on what the setting chose, that
    # line is a row.
    for run, label, setting, said_marker, against in MEDIUM_SETTINGS:
        name = f"{against} with {label} ({setting})"
        why = bundle.failure(run)
        if why is not None:
            rows.append(("gpt2-medium", name, f"n/a: {why}", "", ""))
            continue
        metrics = read_metrics(bundle.path("results", f"{run}.jsonl"))
        speed = framework_row(name, [r["step_ms"] for r in metrics], "")
        losses_row(label, metrics, against)
        if said_marker:
            said = next((line.split(": ", 1)[1] for line in bundle.text("results", f"{run}.log").splitlines()
                         if said_marker in line), "no report in the log")
            rows.append(("gpt2-medium", f"{label}: what it chose", said, "", ""))
        if speed and throughput.get(against):
            rows.append(("gpt2-medium", f"tokens/s, {name} / {against}", f"{speed / throughput[against]:.2f}×",
                         f"> 1: {label} pays", ""))
    for mode, name in (("eager", "PyTorch eager"), ("compile", "PyTorch torch.compile")):
        result = bundle.json("results", f"torch-{mode}.json")
        why = bundle.failure(f"torch-{mode}")
        if why is None and result and "unavailable" in result:
            why = result["unavailable"][len("n/a: "):]
        if why is not None or result is None:
            rows.append(("gpt2-medium", name, f"n/a: {why or 'no result'}", "", ""))
            continue
        extra = f"; peak {result['peak_memory_bytes'] / 2**30:.1f} GiB allocated" if "peak_memory_bytes" in result else ""
        if mode == "compile" and result["step_ms"]:
            extra += f"; step 1 (compiles) {result['step_ms'][0] / 1e3:.1f} s"
        name += f" (torch {result['torch']}, {result['adamw']} AdamW, {result['attention']} attention)"
        throughput[mode] = framework_row(name, result["step_ms"], extra)
        losses[mode] = result["loss"]
        if result.get("transformers_check"):
            rows.append(("gpt2-medium", f"{name}: the same model as transformers' GPT2LMHeadModel?",
                         result["transformers_check"], "", ""))

    eager = bundle.json("results", "torch-eager.json")
    if "TGC" in losses and "eager" in losses and eager.get("init"):
        n = min(len(losses["TGC"]), len(losses["eager"]))
        diff = max(abs(a - b) for a, b in zip(losses["TGC"][:n], losses["eager"][:n]))
        rows.append(("gpt2-medium", "same weights and batches: TGC vs PyTorch eager losses",
                     f"max abs diff {fmt(diff)} over {n} steps; step 1: {losses['TGC'][0]:.4f} vs "
                     f"{losses['eager'][0]:.4f}",
                     f"PyTorch computes in {eager['compute_dtype']} (information, no threshold)", ""))
    if throughput.get("TGC") and throughput.get("base"):
        rows.append(("gpt2-medium", "tokens/s, TGC / TGC as before",
                     f"{throughput['TGC'] / throughput['base']:.2f}×", "> 1: the changes pay", ""))
    for mode, name in (("eager", "PyTorch eager"), ("compile", "torch.compile")):
        if throughput.get("TGC") and throughput.get(mode):
            rows.append(("**headline**", f"tokens/s, TGC / {name}", f"**{throughput['TGC'] / throughput[mode]:.2f}×**",
                         "> 1: TGC faster", ""))
        else:
            rows.append(("**headline**", f"tokens/s, TGC / {name}", "n/a: one side did not run (rows above)", "", ""))


def profiled_steps(bundle, name="medium-profile"):
    """The GPT-2-medium profile's command events of its steps but the first
    (which loads modules and warms caches), and those steps; None if the
    profile did not run. `name`: the default build's, or
    medium-profile-VARIANT (a variant's)."""
    if bundle.failure(name) is not None:
        return None
    trace = bundle.json("work", name + ".json")
    if trace is None:
        return None
    events = [e for e in trace["traceEvents"] if e.get("ph") == "X"]
    steps = sorted({e["args"]["step"] for e in events})
    if len(steps) > 1:
        steps = steps[1:]
    return [e for e in events if e["args"]["step"] in steps], steps


def profile_groups(events):
    """A profile's command events summed by (category, name): one GEMM or
    attention row a layer's shape (gemm h3_attn_qkv and gemm h7_attn_qkv
    alike), one kernel row a generated kernel."""
    groups = {}
    for e in events:
        if e["cat"] in ("gemm", "attention"):
            key = (e["cat"], re.sub(r"(^|[ _])h\d+_", r"\1h*_", e["name"]))
        else:
            key = (e["cat"], e["name"].split()[0])  # k11_softmax h0_attn_probs -> k11_softmax
        g = groups.setdefault(key, {"s": 0.0, "bytes": 0.0, "flops": 0.0, "calls": 0})
        g["s"] += e["dur"] / 1e6
        g["bytes"] += e["args"]["bytes"]
        g["flops"] += e["args"]["flops"]
        g["calls"] += 1
    return groups


# The variants whose profile the run also takes to compare their GEMMs with
# the default's: the bias gradient's epilogue made the step slower by more
# than the kernel it removes (docs/perf.md, fifteenth session).
GEMM_PROFILED_VARIANTS = ("bias-grad",)


def variant_gemm_rows(bundle, rows):
    """Each GEMM whose time a step differs by more than 5% between a
    profiled variant and the default step (or that only one of them runs),
    both times side by side."""
    default = profiled_steps(bundle)
    for variant in GEMM_PROFILED_VARIANTS:
        profile = f"medium-profile-{variant}"
        profiled = profiled_steps(bundle, profile)
        if default is None or profiled is None:
            if bundle.failure(profile) is not None:
                rows.append(("GEMMs, variant " + variant, "against the default's",
                             f"n/a: {bundle.failure(profile)}", "", ""))
            continue
        ours, theirs = ({name: g["s"] / len(steps) for (kind, name), g in profile_groups(events).items()
                         if kind == "gemm"} for events, steps in (profiled, default))
        for name in sorted(set(ours) | set(theirs), key=lambda n: -ours.get(n, 0)):
            mine, base = ours.get(name, 0.0), theirs.get(name, 0.0)
            if abs(mine - base) > 0.05 * max(mine, base):
                rows.append(("GEMMs, variant " + variant, name, f"{mine * 1e3:.2f} ms/step",
                             f"default: {base * 1e3:.2f} ms/step", ""))


def profile_rows(bundle, ceilings, rows):
    """Each generated kernel's GB/s against the copy, each GEMM's TFLOP/s
    against the GEMM ceiling, from tgrun --profile of the GPT-2-medium step."""
    profiled = profiled_steps(bundle)
    if profiled is None:
        why = bundle.failure("medium-profile") or "no trace (tgrun has no --profile?)"
        rows.append(("kernels", "per-kernel GB/s and per-GEMM TFLOP/s", f"n/a: {why}", "", ""))
        return
    events, steps = profiled
    # The default step's attention is cuDNN's unless the runtime fell back.
    attention_kind = ("attention (runtime's flash kernels: cuDNN fell back)"
                      if cudnn_fallback(bundle.path("results", "medium-profile.log"))
                      else "attention (cuDNN's fused attention)")
    total_s = sum(e["dur"] for e in events) / 1e6
    groups = profile_groups(events)
    per_step = len(steps)
    rows.append(("profile", f"GPT-2-medium, tgrun --profile, steps {steps[0]}–{steps[-1]}",
                 f"{total_s / per_step * 1e3:.1f} ms of command time per step, "
                 f"{len(events) // per_step} commands per step",
                 "bytes = the operands' sizes (each read or written once)", ""))
    for (kind, name), g in sorted(groups.items(), key=lambda kv: -kv[1]["s"]):
        if g["s"] <= 0:
            continue
        calls = f"{g['calls'] // per_step}/step, {g['s'] / per_step * 1e3:.2f} ms/step, {100 * g['s'] / total_s:.1f}%"
        if kind == "gemm":
            tflops = g["flops"] / g["s"] / 1e12
            frac = f"{tflops * 1e12 / (ceilings['gemm_tflops'] * 1e12):.2f} of the GEMM ceiling" if ceilings \
                else "n/a: no ceiling"
            rows.append(("GEMM (cuBLASLt)", f"{name} ({calls})", f"{tflops:.1f} TFLOP/s", frac, ""))
        elif kind == "attention":
            tflops = g["flops"] / g["s"] / 1e12
            rows.append((attention_kind, f"{name} ({calls})", f"{tflops:.1f} TFLOP/s",
                         f"{tflops * 1e12 / H100_BF16_DENSE_FLOPS:.2f} of the bf16 dense peak (model FLOPs)", ""))
        else:
            gbps = g["bytes"] / g["s"] / 1e9
            frac = f"{gbps / ceilings['copy_gbps']:.2f} of the copy" if ceilings else "n/a: no ceiling"
            rows.append((f"{kind} (generated)" if kind == "kernel" else kind, f"{name} ({calls})",
                         f"{gbps:.0f} GB/s", frac, ""))


# The hardware counters the run's ncu step reads for each launch, and what
# the report calls them.
NCU_METRICS = {
    "gpu__time_duration.sum": "µs",
    "dram__throughput.avg.pct_of_peak_sustained_elapsed": "DRAM %",
    "sm__throughput.avg.pct_of_peak_sustained_elapsed": "SM %",
    "sm__warps_active.avg.pct_of_peak_sustained_active": "occupancy %",
    "launch__registers_per_thread": "registers",
    "launch__grid_size": "blocks",
    "launch__block_size": "threads",
}


NCU_TIME_UNITS = {"ns": 1e-3, "nsecond": 1e-3, "us": 1.0, "usecond": 1.0, "ms": 1e3, "msecond": 1e3}


def ncu_launches(path):
    """{kernel name: [{metric: value}, one per profiled launch]} from ncu's
    --csv output (one row per launch and metric); None if there is none."""
    try:
        with open(path, newline="") as f:
            lines = f.read().splitlines()
    except OSError:
        return None
    # ncu prints its own lines (==PROF== ...) before the CSV.
    start = next((i for i, line in enumerate(lines) if line.startswith('"ID"')), None)
    if start is None:
        return None
    launches = {}
    for row in csv.DictReader(lines[start:]):
        metric, value = row.get("Metric Name"), row.get("Metric Value", "").replace(",", "")
        if metric not in NCU_METRICS:
            continue
        try:
            number = float(value)
        except ValueError:
            continue
        if metric == "gpu__time_duration.sum":  # to µs
            scale = NCU_TIME_UNITS.get(row.get("Metric Unit", ""))
            if scale is None:
                continue
            number *= scale
        launches.setdefault(row["Kernel Name"], {}).setdefault(row["ID"], {})[metric] = number
    return {name: list(by_id.values()) for name, by_id in launches.items()}


def launch_rows(bundle, rows):
    """Per kernel of the GPT-2-medium step, the medians of ncu's counters over
    its profiled launches, the most time first."""
    launches = ncu_launches(bundle.path("results", "ncu.csv"))
    why = bundle.failure("ncu")
    if why is not None or not launches:
        rows.append(("launches (ncu)", "hardware counters per launch",
                     f"n/a: {why or 'no launches in results/ncu.csv'}", "", ""))
        return
    medians = {}
    for name, profiled in launches.items():
        medians[name] = {metric: statistics.median(launch[metric] for launch in profiled if metric in launch)
                         for metric in NCU_METRICS if any(metric in launch for launch in profiled)}
    total = {name: medians[name].get("gpu__time_duration.sum", 0.0) * len(launches[name]) for name in launches}
    for name in sorted(launches, key=lambda n: -total[n]):
        m = medians[name]
        # Counts of the launch (registers, blocks, threads) as integers.
        measured = ", ".join(f"{label} {m[metric]:.0f}" if metric.startswith("launch__") else
                             f"{label} {m[metric]:.1f}" for metric, label in NCU_METRICS.items() if metric in m)
        rows.append(("launches (ncu)", f"{name} ({len(launches[name])} profiled)", measured,
                     "medians over the launches; % of the device's peak", ""))


def attention_seconds(events, steps):
    """Seconds a step of a profile's attention commands: (forward,
    backward), told apart by the gradients' labels; zeros without steps."""
    if not steps:
        return 0.0, 0.0
    forward_s = backward_s = 0.0
    for e in events:
        # "KERNEL LABEL": the backward's labels are the gradients' names.
        parts = e["name"].split(maxsplit=1)
        if len(parts) == 2 and ATTENTION_LABEL.match(parts[1]):
            if parts[1].startswith("grad_"):
                backward_s += e["dur"] / 1e6
            else:
                forward_s += e["dur"] / 1e6
    return forward_s / len(steps), backward_s / len(steps)


def long_attention_rows(bundle, rows):
    """TGC's attention at a long sequence (the `long` model: FlashAttention's
    benchmark shape of 8,192 tokens, head dim 128, grouped heads), through
    the runtime's kernels and through cuDNN, from tgrun --profile: the
    issue's forward target is 60% of the bf16 dense peak."""
    long = bundle.manifest.get("long")
    if not long:
        return
    flops = causal_attention_flops(long["batch_size"], long["heads"], long["seq_len"], long["head_dim"])
    label = (f"causal, bf16, B={long['batch_size']}, H={long['heads']} ({long['key_heads']} key heads), "
             f"T={long['seq_len']}, D={long['head_dim']}; per layer, {long['layers']} layers a step")
    names = {"long-flash": "TGC, the runtime's flash kernels (--cuda-attention=flash)",
             "long-cudnn": "TGC, cuDNN's fused attention through the runtime (--cuda-attention=cudnn)"}
    for profile, name in names.items():
        profiled = profiled_steps(bundle, profile)
        fallback = cudnn_fallback(bundle.path("results", profile + ".log"))
        if profiled is None:
            why = bundle.failure(profile) or "no profile"
            rows.append(("attention, long", f"{name} ({label})", f"n/a: {why}", "", ""))
            continue
        if profile == "long-cudnn" and fallback:
            rows.append(("attention, long", name, f"n/a: cuDNN did not run ({fallback})", "", ""))
            continue
        forward_s, backward_s = attention_seconds(*profiled)
        if forward_s <= 0 or backward_s <= 0:
            rows.append(("attention, long", name, "n/a: no attention commands in the profile", "", ""))
            continue
        forward_s, backward_s = forward_s / long["layers"], backward_s / long["layers"]
        peak = flops / forward_s / H100_BF16_DENSE_FLOPS
        rows.append(("attention, long", f"{name} ({label})",
                     f"forward {forward_s * 1e3:.3f} ms ({flops / forward_s / 1e12:.0f} TFLOP/s, "
                     f"**{100 * peak:.0f}% of the bf16 dense peak**), backward {backward_s * 1e3:.3f} ms "
                     f"({2.5 * flops / backward_s / 1e12:.0f} TFLOP/s)",
                     "the issue's target: forward at 60% or more of 989 TFLOP/s; FLOPs over the causal "
                     "half of the pairs (backward: 2.5 times the forward's)", ""))


def attention_rows(bundle, rows):
    """TGC's attention (the decomposed commands, from the profile: forward
    before the loss, backward after) beside PyTorch's fused kernels at the
    same shape, per step of the medium model's layers."""
    medium = bundle.manifest["medium"]
    layers = medium["layers"]
    flops = causal_attention_flops(medium["batch_size"], medium["heads"], medium["seq_len"],
                                   medium["d"] // medium["heads"])
    label = (f"causal, bf16, B={medium['batch_size']}, H={medium['heads']}, T={medium['seq_len']}, "
             f"D={medium['d'] // medium['heads']}; ms per step of {layers} layers")
    against = "TFLOP/s over the causal half of the pairs (backward: 2.5 times the forward's FLOPs)"

    def row(name, forward_s, backward_s):
        rows.append(("attention", f"{name} ({label})",
                     f"forward {forward_s * 1e3:.2f} ms ({flops * layers / forward_s / 1e12:.0f} TFLOP/s), "
                     f"backward {backward_s * 1e3:.2f} ms ({2.5 * flops * layers / backward_s / 1e12:.0f} TFLOP/s)",
                     against, ""))

    names = {"medium-profile": "TGC, cuDNN's fused attention through the runtime (--cuda-attention=cudnn, "
                               "the default)",
             "medium-profile-decomposed":
                 "TGC, decomposed (--cuda-attention=decomposed: scores, softmax, values and their gradients)",
             "medium-profile-flash": "TGC, the runtime's flash kernels (--cuda-attention=flash)"}
    for profile, name in names.items():
        profiled = profiled_steps(bundle, profile)
        if profiled is None:
            if profile == "medium-profile" or bundle.failure(profile) is not None:
                why = bundle.failure(profile) or "no profile"
                rows.append(("attention", f"TGC ({profile})", f"n/a: {why}", "", ""))
            continue
        events, steps = profiled
        fallback = cudnn_fallback(bundle.path("results", profile + ".log"))
        if profile == "medium-profile" and fallback:
            rows.append(("attention", name, f"n/a: cuDNN did not run ({fallback})", "", ""))
            continue
        forward_s, backward_s = attention_seconds(events, steps)
        if forward_s > 0 and backward_s > 0:
            row(name, forward_s, backward_s)
        else:
            rows.append(("attention", name, "n/a: no attention commands in the profile", "", ""))
    measured = bundle.json("results", "attention.json")
    why = bundle.failure("attention")
    if measured is None or why is not None:
        rows.append(("attention", "PyTorch's fused kernels", f"n/a: {why or 'no results/attention.json'}", "", ""))
        return
    if not measured["kernels"]:
        rows.append(("attention", f"PyTorch's fused kernels (torch {measured['torch']})",
                     "n/a: this torch has no torch.nn.attention.sdpa_kernel (2.3 and later)", "", ""))
    for name, k in measured["kernels"].items():
        if "error" in k:
            rows.append(("attention", f"{name} (torch {measured['torch']})", f"n/a: {k['error']}", "", ""))
        else:
            row(f"{name} (torch {measured['torch']} SDPA)", k["forward_ms"] * layers / 1e3,
                k["backward_ms"] * layers / 1e3)


def flash_kernel_rows(bundle, rows):
    """The runtime's flash kernels alone, per shape: their errors against
    float32 attention (a check) and their times beside PyTorch's kernels."""
    measured = bundle.json("results", "flash-kernels.json")
    why = bundle.failure("flash-kernels")
    if why is not None or measured is None:
        skipped = bundle.text("results", "flash-kernels.rc") == "skipped"
        rows.append(("attention kernels", "the runtime's flash kernels",
                     f"n/a: {why or 'no results/flash-kernels.json'}", "", "" if skipped else "FAIL"))
        return not skipped
    failed = False
    bound = measured["error_bound"]
    for shape in measured["shapes"]:
        what = (f"{shape['label']}: causal, bf16, B={shape['batch']}, H={shape['heads']}"
                + (f", H_kv={shape['key_heads']}" if shape["key_heads"] != shape["heads"] else "")
                + f", T={shape['seq']}, D={shape['head_dim']}")
        tgc = shape["tgc"]
        if "error" in tgc:
            rows.append(("attention kernels", f"TGC flash kernels ({what})", f"n/a: {tgc['error']}", "", "FAIL"))
            failed = True
            continue
        worst = max(tgc["errors"].values())
        ok = worst <= bound
        failed |= not ok
        rows.append(("attention kernels", f"TGC flash kernels vs float32 attention ({what})",
                     ", ".join(f"{name} {fmt(value, 2)}" for name, value in tgc["errors"].items()),
                     f"normwise relative error ≤ {bound:g} (bf16 P, O and dS)", "PASS" if ok else "FAIL"))
        # Other builds and schedules of the same kernels: their results must
        # be as good.
        others = [("TGC flash kernels, one more block a multiprocessor", shape.get("tgc_more_blocks")),
                  ("TGC flash kernels, dQ summed by the key blocks (TG_CUDA_FLASH_BACKWARD=summed)",
                   shape.get("tgc_summed"))]
        for name, other in others:
            if other is None or "error" in other:
                continue  # the time rows below say why
            worst = max(other["errors"].values())
            failed |= worst > bound
            rows.append(("attention kernels", f"{name}, vs float32 attention ({what})",
                         ", ".join(f"{n} {fmt(value, 2)}" for n, value in other["errors"].items()),
                         f"normwise relative error ≤ {bound:g}", "PASS" if worst <= bound else "FAIL"))
        times = [("TGC flash kernels", tgc)] + [(name, other) for name, other in others if other is not None]
        times += [(f"{name} (torch {measured.get('torch', '?')})", k) for name, k in shape["torch"].items()]
        for name, k in times:
            if "error" in k:
                # The summed backward is a mode of the runtime: one that fails is a failure.
                summed = k is shape.get("tgc_summed")
                failed |= summed
                rows.append(("attention kernels", f"{name} ({what})", f"n/a: {k['error']}", "",
                             "FAIL" if summed else ""))
                continue
            rows.append(("attention kernels", f"{name} ({what})",
                         f"forward {k['forward_ms']:.3f} ms ({k['forward_tflops']:.0f} TFLOP/s, "
                         f"{k['forward_tflops'] * 1e12 / H100_BF16_DENSE_FLOPS:.0%} of peak), backward "
                         f"{k['backward_ms']:.3f} ms ({k['backward_tflops']:.0f} TFLOP/s)",
                         "TFLOP/s over the causal half of the pairs (backward: 2.5 times the forward's FLOPs); "
                         "peak: the H100's dense bf16", ""))
    rows.append(("attention kernels", "FlashAttention-3, published (not run here)", FLASH_ATTENTION_3_PUBLISHED,
                 "the paper's figures, on its own shapes; the rows above are this GPU's", ""))
    built, more = measured.get("resources"), measured.get("resources_more_blocks")
    if built:
        rows.append(("attention kernels", "registers a thread (local bytes), as built"
                     + (" → with one more block a multiprocessor" if more else ""),
                     ", ".join(f"{name} {r['registers']} ({r['local_bytes']})"
                               + (f" → {more[name]['registers']} ({more[name]['local_bytes']})"
                                  if more and name in more else "")
                               for name, r in built.items()),
                     "the driver's assembly of the PTX (.minnctapersm + 1 for the second)", ""))
    return failed


def report(root, quiet):
    bundle = Bundle(root)
    if bundle.manifest is None:
        sys.exit(f"validate.py: {root}: no manifest.json: not a bundle made by scripts/gpu-validate prepare")
    m = bundle.manifest
    gpu = bundle.text("results", "gpu.txt") or "n/a: nvidia-smi gave nothing"
    rows = [("run", "GPU", gpu, "", ""),
            ("run", "date", datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z"),
             f"bundle prepared {m['prepared']}", ""),
            ("run", "commit", m["commit"] + (" + uncommitted changes" if m["dirty"] else ""),
             f"artifacts for {m['cuda_arch']}", "")]
    build = bundle.failure("build")
    rows.append(("run", "runtime build (cmake + ninja tgrun, CUDA backend)",
                 "built" if build is None else f"n/a: {build}", "", "PASS" if build is None else "FAIL"))
    failed = build is not None
    failed |= correctness_rows(bundle, rows)
    ceilings = ceiling_rows(bundle, rows)
    medium_rows(bundle, ceilings, rows)
    attention_rows(bundle, rows)
    long_attention_rows(bundle, rows)
    failed |= flash_kernel_rows(bundle, rows)
    profile_rows(bundle, ceilings, rows)
    variant_gemm_rows(bundle, rows)
    launch_rows(bundle, rows)

    lines = [f"# scripts/gpu-validate: {'FAIL' if failed else 'PASS'}", "",
             "| section | what | measured | compared with | check |", "|---|---|---|---|---|"]
    lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in rows]
    text = "\n".join(lines) + "\n"
    with open(bundle.path("gpu-validate.md"), "w") as f:
        f.write(text)
    if not quiet:
        print(text)
        print(f"(also in {bundle.path('gpu-validate.md')})")
    return 1 if failed else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="command", required=True)
    tokens = sub.add_parser("tokens")
    tokens.add_argument("--vocab", type=int, required=True)
    tokens.add_argument("--count", type=int, required=True)
    tokens.add_argument("-o", required=True)
    ref = sub.add_parser("reference")
    ref.add_argument("metrics")
    ref.add_argument("-o", required=True)
    man = sub.add_parser("manifest")
    man.add_argument("bundle")
    man.add_argument("--commit", required=True)
    man.add_argument("--dirty", type=int, choices=(0, 1), required=True)
    man.add_argument("--cuda-arch", required=True)
    man.add_argument("--steps", type=int, required=True, help="steps of the correctness runs")
    man.add_argument("--medium", required=True, help="name of the timed model (models/NAME.json)")
    man.add_argument("--medium-steps", type=int, required=True)
    man.add_argument("--warmup", type=int, required=True)
    man.add_argument("--checks", nargs="+", required=True, help="MODEL-DTYPE of each correctness run")
    man.add_argument("--base-label", help="what the earlier build timed beside this one is (prepare --base)")
    man.add_argument("--variants", nargs="*", default=[], help="NAME=TGC_FLAGS of each variant (prepare --variant)")
    man.add_argument("--long", help="name of the long-sequence attention model (models/NAME.json)")
    ceil = sub.add_parser("ceilings")
    ceil.add_argument("-o", required=True)
    attention = sub.add_parser("attention")
    attention.add_argument("bundle")
    attention.add_argument("-o", required=True)
    flash = sub.add_parser("flash-kernels")
    flash.add_argument("--ptx", required=True, help="the runtime's FlashAttention.ptx (its build directory)")
    flash.add_argument("-o", required=True)
    sub.add_parser("ncu-metrics", help="the counters the run's ncu step reads, comma-separated")
    rep = sub.add_parser("report")
    rep.add_argument("bundle")
    rep.add_argument("--quiet", action="store_true", help="only write BUNDLE/gpu-validate.md")
    args = ap.parse_args()
    if args.command == "tokens":
        write_tokens(args.vocab, args.count, args.o)
    elif args.command == "reference":
        write_reference(args.metrics, args.o)
    elif args.command == "manifest":
        write_manifest(args)
    elif args.command == "ceilings":
        measure_ceilings(args.o)
    elif args.command == "attention":
        measure_attention(args.bundle, args.o)
    elif args.command == "flash-kernels":
        measure_flash_kernels(args.ptx, args.o)
    elif args.command == "ncu-metrics":
        print(",".join(NCU_METRICS))
    else:
        return report(args.bundle, args.quiet)
    return 0


if __name__ == "__main__":
    sys.exit(main())
