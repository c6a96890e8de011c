#!/usr/bin/env python3
"""Issue 40: the profile python/shardscope/calibrate.py writes (PyTorch's kernels timed, here Debian's PyTorch on
the CPU, --quick) is one `simulate --device-profile` reads and times a step from: version 1, source "pytorch", every
op of an MLP from its curves, and every time in it doubled doubles the simulated step (log-log interpolation, its
floor and its held throughput are linear in the times; only the per-op rounding to whole ns differs).
Usage: check_torch_calibrate.py CLI REPOSITORY_ROOT    (exit 77, skipped, where PyTorch cannot be imported)"""
import json
import math
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_or_skip  # noqa: E402,F401  (before torch: skips where PyTorch cannot be imported)

cli, root = sys.argv[1], sys.argv[2]
work = tempfile.mkdtemp(prefix="shardscope-torch-profile-")
path = os.path.join(work, "torch-cpu.json")
env = dict(os.environ, PYTHONPATH=os.path.join(root, "python"))
done = subprocess.run([sys.executable, "-m", "shardscope.calibrate", "--device", "cpu", "--quick", "--out", path],
                      capture_output=True, text=True, env=env, timeout=600)
assert done.returncode == 0, done.stderr
profile = json.load(open(path))
assert profile["format"] == "shardscope-device-profile" and profile["version"] == 1 and profile["source"] == "pytorch"
for g in profile["gemm"]["float32"]:
    assert g["seconds"] > 0 and math.isclose(g["flop_per_s"], 2 * g["m"] * g["n"] * g["k"] * g["batch"] / g["seconds"], rel_tol=1e-6), g


def doubled(node):
    if isinstance(node, dict):
        return {k: (2 * v if isinstance(v, (int, float)) and not isinstance(v, bool) and (k == "seconds" or k.endswith("_s"))
                    and k != "seconds_taken" else doubled(v)) for k, v in node.items()}
    return [doubled(v) for v in node] if isinstance(node, list) else node


slow = os.path.join(work, "torch-cpu-doubled.json")
json.dump(doubled(profile), open(slow, "w"))


def simulate(p):
    out = subprocess.run([cli, "simulate", "--json", "--model", "mlp:4x96:relu", "--strategy", "single", "--batch", "32",
                          "--steps", "2", "--device-profile", p], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


base, twice = simulate(path), simulate(slow)
assert base["device_profile"]["source"] == "pytorch" and base["device_profile"]["profiled_ops"] > 0
assert base["device_profile"]["roofline_ops"] == 0, base["device_profile"]
assert abs(twice["step_time_ns"] - 2 * base["step_time_ns"]) <= base["events"], (base["step_time_ns"], twice["step_time_ns"])
print(f"ok: calibrate.py's profile read; step {base['step_time_ns']} ns, doubled {twice['step_time_ns']} ns")
