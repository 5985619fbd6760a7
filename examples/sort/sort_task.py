"""The sorting task of the main job: problems of 7 random digits, a separator,
the same digits sorted, and an end mark, 16 tokens each:

    3 1 4 1 5 9 2 > 1 1 2 3 4 5 9 ;

Token ids: digits 0-9, '>' = 10, ';' = 11 (vocab 12). A training window of 64
tokens always starts on a problem boundary: the data contract starts sample i
of step s at ((s*B + i)*T) mod (N - T), a multiple of 16 when T and N - T are.

    sort_task.py make TOKENS.bin [--problems N] [--seed S]
    sort_task.py evaluate PROGRAM.tgx WEIGHTS.safetensors [--problems N] [--tgrun PATH]

`evaluate` decodes fresh problems greedily with `tgrun generate` (the
artifact's logits function and the trained weights) and prints how many it
sorts exactly. Only numpy is needed."""
import argparse
import os
import subprocess
import sys
import tempfile

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


def evaluate(program, weights, count, seed, tgrun):
    batch = problems(np.random.default_rng(seed), count)
    with tempfile.NamedTemporaryFile("w", suffix=".txt") as prompts:
        for row in batch[:, :DIGITS + 1]:
            prompts.write(" ".join(map(str, row)) + "\n")
        prompts.flush()
        # Greedy decoding of the sorted digits through the artifact's logits
        # function, with the trained weights.
        result = subprocess.run([tgrun, "generate", program, "--init", weights, "--prompts",
                                 prompts.name, "--max-new-tokens", str(DIGITS)],
                                capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"sort_task.py: tgrun generate failed:\n{result.stderr}")
    answer = np.array([[int(t) for t in line.split()] for line in result.stdout.splitlines()])
    truth = batch[:, DIGITS + 1:2 * DIGITS + 1]
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
    e.add_argument("program")
    e.add_argument("weights")
    e.add_argument("--problems", type=int, default=500)
    e.add_argument("--seed", type=int, default=12345)
    e.add_argument("--tgrun", default=os.path.join(os.path.dirname(__file__), "..", "..",
                                                   "build", "bin", "tgrun"))
    args = parser.parse_args()
    if args.command == "make":
        make(args.tokens, args.problems, args.seed)
    else:
        evaluate(args.program, args.weights, args.problems, args.seed, args.tgrun)


if __name__ == "__main__":
    sys.exit(main())
