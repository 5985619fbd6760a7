"""Plans the training step of every depth from 1 to 64 layers, for both model
families: each `tgc compile --stats` exits 0 with sane JSON (issue 8: the old
planner crashed for n_layer 16, 23, 31, 32, 63, 64, 65)."""
import concurrent.futures
import json
import os
import subprocess

import pytest

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
BIN = os.environ.get("TGC_BIN", os.path.join(ROOT, "build", "bin"))
TRAIN = os.path.join(ROOT, "examples", "train", "tiny.json")
FAMILIES = {"gpt2": ("gpt2-tiny.json", "n_layer"), "llama": ("llama-tiny.json", "num_hidden_layers")}
DEPTHS = range(1, 65)


def plan(model_json):
    result = subprocess.run([os.path.join(BIN, "tgc"), "compile", model_json, "--train", TRAIN, "--stats=json"],
                            capture_output=True, text=True, timeout=120)
    return result.returncode, result.stdout, result.stderr


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_plan_every_depth(family, tmp_path):
    file, field = FAMILIES[family]
    with open(os.path.join(ROOT, "examples", "models", file)) as f:
        base = json.load(f)
    paths = {}
    for depth in DEPTHS:
        config = dict(base, **{field: depth})
        paths[depth] = tmp_path / f"{family}-{depth}.json"
        paths[depth].write_text(json.dumps(config))
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 2)) as pool:
        results = dict(zip(DEPTHS, pool.map(plan, [str(paths[d]) for d in DEPTHS])))

    stats = {}
    for depth, (code, out, err) in results.items():
        assert code == 0, f"{family} with {field} = {depth}: tgc exited {code}:\n{err}"
        s = json.loads(out)
        for key in ("param_bytes", "optimizer_bytes", "arena_bytes", "kernels", "commands", "flops_per_step"):
            assert isinstance(s[key], int) and s[key] > 0, f"{family} depth {depth}: {key} = {s[key]}"
        assert 0 <= s["peak_activation_bytes"] <= s["arena_bytes"], f"{family} depth {depth}: {s}"
        assert s["param_bytes"] + s["optimizer_bytes"] <= s["arena_bytes"], f"{family} depth {depth}: {s}"
        assert s["optimizer_bytes"] == 2 * s["param_bytes"], f"{family} depth {depth}: {s}"
        stats[depth] = s

    # Every layer adds the same parameters; activations never shrink with depth.
    per_layer = stats[2]["param_bytes"] - stats[1]["param_bytes"]
    assert per_layer > 0
    for depth in DEPTHS[1:]:
        assert stats[depth]["param_bytes"] - stats[depth - 1]["param_bytes"] == per_layer, f"{family} depth {depth}"
        assert stats[depth]["flops_per_step"] > stats[depth - 1]["flops_per_step"], f"{family} depth {depth}"
