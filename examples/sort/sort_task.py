"""The sorting task of the main job: problems of 7 random digits, a separator,
the same digits sorted, and an end mark, 16 tokens each:

    3 1 4 1 5 9 2 > 1 1 2 3 4 5 9 ;

Token ids: digits 0-9, '>' = 10, ';' = 11 (vocab 12). A training window of 64
tokens always starts on a problem boundary: the data contract starts sample i
of step s at ((s*B + i)*T) mod (N - T), a multiple of 16 when T and N - T are.

    sort_task.py make TOKENS.bin [--problems N] [--seed S]
    sort_task.py evaluate WEIGHTS.safetensors MODEL.json [--problems N]

`evaluate` runs the trained GPT-2 (numpy, greedy decoding) on fresh problems
and prints how many it sorts exactly. Only numpy is needed."""
import argparse
import json
import math
import struct
import sys

import numpy as np

DIGITS, SEP, END, PROBLEM = 7, 10, 11, 16


def problems(rng, count):
    digits = rng.integers(0, 10, size=(count, DIGITS))
    sep = np.full((count, 1), SEP)
    end = np.full((count, 1), END)
    return np.concatenate([digits, sep, np.sort(digits, axis=1), end], axis=1)


def make(path, count, seed):
    # N - T must be a multiple of PROBLEM (T = 64 = 4 problems): N = 16 * count.
    tokens = problems(np.random.default_rng(seed), count).reshape(-1).astype("<u2")
    tokens.tofile(path)
    print(f"wrote {path}: {count} sorting problems, {tokens.size} tokens")


def load_safetensors(path):
    with open(path, "rb") as f:
        (size,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(size))
        data = f.read()
    dtypes = {"F32": "<f4", "F64": "<f8"}
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        out[name] = np.frombuffer(data[begin:end], dtype=dtypes[info["dtype"]]).reshape(info["shape"])
    return out


def layer_norm(x, w, b, eps):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * w + b


def gelu_tanh(x):
    return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))


def logits(cfg, p, tokens):
    """GPT-2 forward (Hugging Face layouts) for a batch of token rows."""
    d, h, eps = cfg["n_embd"], cfg["n_head"], cfg["layer_norm_epsilon"]
    b, t = tokens.shape
    x = p["transformer.wte.weight"][tokens] + p["transformer.wpe.weight"][:t]
    mask = np.triu(np.full((t, t), -np.inf), 1)
    for i in range(cfg["n_layer"]):
        pre = f"transformer.h.{i}."
        a = layer_norm(x, p[pre + "ln_1.weight"], p[pre + "ln_1.bias"], eps)
        qkv = a @ p[pre + "attn.c_attn.weight"] + p[pre + "attn.c_attn.bias"]
        q, k, v = (z.reshape(b, t, h, d // h).transpose(0, 2, 1, 3) for z in np.split(qkv, 3, axis=-1))
        s = q @ k.transpose(0, 1, 3, 2) / math.sqrt(d // h) + mask
        s = np.exp(s - s.max(-1, keepdims=True))
        o = (s / s.sum(-1, keepdims=True)) @ v
        x = x + o.transpose(0, 2, 1, 3).reshape(b, t, d) @ p[pre + "attn.c_proj.weight"] + p[pre + "attn.c_proj.bias"]
        m = layer_norm(x, p[pre + "ln_2.weight"], p[pre + "ln_2.bias"], eps)
        m = gelu_tanh(m @ p[pre + "mlp.c_fc.weight"] + p[pre + "mlp.c_fc.bias"])
        x = x + m @ p[pre + "mlp.c_proj.weight"] + p[pre + "mlp.c_proj.bias"]
    x = layer_norm(x, p["transformer.ln_f.weight"], p["transformer.ln_f.bias"], eps)
    return x @ p["transformer.wte.weight"].T


def evaluate(weights, model_json, count, seed):
    cfg = json.load(open(model_json))
    p = {k: v.astype(np.float64) for k, v in load_safetensors(weights).items()}
    batch = problems(np.random.default_rng(seed), count)
    seq = batch[:, :DIGITS + 1]
    for _ in range(DIGITS):  # greedy decoding of the sorted digits
        nxt = logits(cfg, p, seq)[:, -1].argmax(-1)
        seq = np.concatenate([seq, nxt[:, None]], axis=1)
    answer, truth = seq[:, DIGITS + 1:], batch[:, DIGITS + 1:2 * DIGITS + 1]
    exact = int((answer == truth).all(axis=1).sum())
    digits = float((answer == truth).mean())
    print(f"sorting accuracy on {count} fresh problems: {exact}/{count} sorted exactly "
          f"({100 * exact / count:.1f}%), {100 * digits:.1f}% of output digits right")
    for row in range(3):
        print("  " + " ".join(map(str, batch[row, :DIGITS])) + "  ->  " + " ".join(map(str, answer[row])))
    return exact / count


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    m = sub.add_parser("make")
    m.add_argument("tokens")
    m.add_argument("--problems", type=int, default=20000)
    m.add_argument("--seed", type=int, default=0)
    e = sub.add_parser("evaluate")
    e.add_argument("weights")
    e.add_argument("model")
    e.add_argument("--problems", type=int, default=500)
    e.add_argument("--seed", type=int, default=12345)
    args = parser.parse_args()
    if args.command == "make":
        make(args.tokens, args.problems, args.seed)
    else:
        evaluate(args.weights, args.model, args.problems, args.seed)


if __name__ == "__main__":
    sys.exit(main())
