"""Every pass on every IR input the repository has: errors, never crashes.

A pass given IR it does not expect (another pass's input, a function that
returns nothing, a declaration without a body) must report it and fail, not
crash: `tg-opt` runs each registered tg and exec pass, at module level and
nested on functions, over every split of every lit test input, the valid
tg programs of the parser's fuzz corpus, and a module of declarations. A run
that dies of a signal or prints LLVM's crash banner fails the test, with the
pass and the input named so that it can be rerun by hand. (This sweep found
tg-autodiff crashing on a function returning nothing, tg-cpu-approximate-math
on a vector exp alone in a module, and five passes on declarations.)
"""
import concurrent.futures
import glob
import os
import subprocess
import tempfile
import unittest

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
TG_OPT = os.path.join(os.environ.get("TGC_BIN", os.path.join(ROOT, "build", "bin")), "tg-opt")
CRASH_BANNER = "PLEASE submit a bug report"
# Function declarations under the names the passes look up.
DECLARATIONS = """\
func.func private @forward(tensor<4xf32>) -> tensor<f32>
func.func private @train_step(tensor<4xf32>) -> tensor<f32>
func.func private @eval_step(tensor<4xf32>) -> tensor<f32>
"""


def registered_passes():
    """The tg and exec passes tg-opt registers, from its --help."""
    text = subprocess.run([TG_OPT, "--help"], capture_output=True, text=True, check=True).stdout
    names = []
    for line in text.splitlines():
        word = line.strip().split(" ")[0]
        if word.startswith("--tg-") or word.startswith("--exec-"):
            names.append(word[2:])
    return names


def inputs(scratch):
    files = sorted(glob.glob(os.path.join(ROOT, "test", "lit", "**", "*.mlir"), recursive=True))
    corpus = os.path.join(ROOT, "test", "fuzz", "corpus", "tg_parser")
    files += sorted(f for f in glob.glob(os.path.join(corpus, "*.mlir"))
                    if not os.path.basename(f).startswith("invalid-"))
    declarations = os.path.join(scratch, "declarations.mlir")
    with open(declarations, "w") as f:
        f.write(DECLARATIONS)
    return files + [declarations]


def crashed(pipeline, path):
    """None, or why running `pipeline` over `path` counts as a crash."""
    try:
        result = subprocess.run([TG_OPT, path, "--split-input-file", f"--pass-pipeline={pipeline}"],
                                capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired:
        return "hung for 60 s"
    if result.returncode < 0:
        return f"killed by signal {-result.returncode}"
    if CRASH_BANNER in result.stderr:
        return "LLVM crash banner"
    return None


class PassRobustnessTest(unittest.TestCase):
    maxDiff = None

    def test_no_pass_crashes_on_any_input(self):
        passes = registered_passes()
        self.assertGreater(len(passes), 20, "tg-opt --help lists the passes")
        with tempfile.TemporaryDirectory() as scratch:
            runs = [(pipeline, path) for path in inputs(scratch) for name in passes
                    for pipeline in (f"builtin.module({name})",
                                     f"builtin.module(func.func({name}))")]
            with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
                outcomes = list(pool.map(lambda run: crashed(*run), runs))
        failures = [f"tg-opt {os.path.relpath(path, ROOT)} --split-input-file "
                    f"'--pass-pipeline={pipeline}': {why}"
                    for (pipeline, path), why in zip(runs, outcomes) if why]
        self.assertEqual(failures, [], "\n".join(failures))


if __name__ == "__main__":
    unittest.main()
