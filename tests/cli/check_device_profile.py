#!/usr/bin/env python3
"""Issue 40 from the command line: `calibrate --quick` writes a device profile in the documented format
(assets/devices/FORMAT.md), `simulate --device-profile` times the step from it, `run --json` reports every step's
time with batch loading apart, and `run --simulate-beside` sets the simulated step beside the executed one.

What is held, each derived without the code under test:
- the profile: every figure a positive finite number, `flop_per_s` = 2·m·n·k·batch / seconds;
- simulate uses it: every time in the profile doubled (kernels, overheads, collectives; the concurrency slowdown is a
  ratio and stays) doubles the simulated step, since log-log interpolation, the floor below the smallest size and the
  throughput held above the largest are all linear in the times; only the per-op rounding to whole ns differs;
- run --json: one step time and one load time a step, the median the lower median of steps 2 and later, and the
  steps and loads inside the run; --simulate-beside: the kinds add up to the step, each error (sim − exec) / exec.
Usage: check_device_profile.py CLI"""
import json
import math
import os
import subprocess
import sys
import tempfile

cli = sys.argv[1]
work = tempfile.mkdtemp(prefix="shardscope-profile-")


def call(*args):
    done = subprocess.run([cli, *args], capture_output=True, text=True)
    assert done.returncode == 0, f"{args}: exit {done.returncode}: {done.stderr}"
    return done


# ---- calibrate --quick: the format ----
profile_path = os.path.join(work, "cpu.json")
done = call("calibrate", "--backend", "cpu", "--out", profile_path, "--quick", "--passes", "2")
assert "calibrate: wrote " + profile_path in done.stderr, done.stderr  # progress goes to stderr
assert "pass 2 of 2: " in done.stderr, done.stderr  # the grid measured twice, one pass after the other
assert done.stdout == "", done.stdout
assert not os.path.exists(profile_path + ".tmp"), "the temporary file was left behind"
profile = json.load(open(profile_path))
assert profile["format"] == "shardscope-device-profile"
assert profile["version"] == 2 and profile["source"] == "shardscope" and profile["backend"] == "cpu"
assert profile["machine"]["name"] and profile["date"].endswith("Z")
assert profile["settings"]["passes"] == 2, profile["settings"]


def positive(x, where):
    assert isinstance(x, (int, float)) and math.isfinite(x) and x > 0, f"{where}: {x}"


layouts = set()
for i, g in enumerate(profile["gemm"]["float32"]):
    for key in ("m", "n", "k", "batch", "seconds"):
        positive(g[key], f"gemm.float32[{i}].{key}")
    layouts.add(g["layout"])
    flops = 2 * g["m"] * g["n"] * g["k"] * g["batch"]
    assert math.isclose(g["flop_per_s"], flops / g["seconds"], rel_tol=1e-12), g
assert {"forward", "input_grad", "weight_grad"} <= layouts, layouts
for op in ("relu", "relu_backward", "mse_loss", "mse_loss_backward", "bias_add", "bias_grad", "zero"):
    for i, p in enumerate(profile["elementwise"][op]["float32"]):
        positive(p["bytes"], f"elementwise.{op}[{i}].bytes")
        positive(p["seconds"], f"elementwise.{op}[{i}].seconds")
for name in ("adam", "adamw", "sgd", "momentum"):
    for p in profile["optimizer"][name]:
        positive(p["parameters"], name)
        positive(p["seconds"], name)
for kind in ("all_reduce", "all_gather", "reduce_scatter", "broadcast"):
    for p in profile["collectives"][kind]:
        assert p["ranks"] == 2, p
        positive(p["bytes"], kind)
        positive(p["seconds"], kind)
positive(profile["overheads"]["executor_op_s"], "overheads.executor_op_s")
# Our attention core (what a block leaves once its GEMMs and elementwise kernels are out) and, at each of its shapes,
# selective recomputation's kernel timed on its own: forward only.
attention = profile["attention"]["float32"]
shapes = lambda kernel: sorted((p["batch_heads"], p["seq"], p["head_dim"]) for p in attention if p["kernel"] == kernel)
assert shapes("shardscope-block-rest") and shapes("shardscope-block-rest") == shapes("shardscope-attention-recompute"), attention
for p in attention:
    positive(p["forward_s"], f"attention {p['kernel']} forward_s")
    # (A block's backward is timed as forward + backward less a forward timed apart: on a busy machine it can come
    # out 0, so only the recomputation's, which has none, is held here.)
    assert p["kernel"] != "shardscope-attention-recompute" or p["backward_s"] == 0, p

# ---- simulate --device-profile uses it ----


def doubled(node):
    """Every time in the profile doubled (keys ending in seconds or _s), throughputs halved."""
    if isinstance(node, dict):
        out = {}
        for key, value in node.items():
            if isinstance(value, (int, float)) and not isinstance(value, bool) and (key == "seconds" or key.endswith("_s")) \
                    and key != "seconds_taken":
                out[key] = 2 * value
            elif key == "flop_per_s":
                out[key] = value / 2
            else:
                out[key] = doubled(value)
        return out
    if isinstance(node, list):
        return [doubled(v) for v in node]
    return node


slow_path = os.path.join(work, "cpu-doubled.json")
json.dump(doubled(profile), open(slow_path, "w"))


def simulate(path, *args):
    return json.loads(call("simulate", "--json", "--steps", "2", "--device-profile", path, *args).stdout)


for args in (["--model", "mlp:5x96:relu", "--strategy", "single", "--batch", "24"],
             ["--model", "mlp:4x128:relu", "--strategy", "ddp", "--world", "2", "--batch", "16", "--optimizer", "sgd"]):
    base, slow = simulate(profile_path, *args), simulate(slow_path, *args)
    assert base["device_profile"]["path"] == profile_path and base["device_profile"]["source"] == "shardscope"
    assert base["device_profile"]["profiled_ops"] > 0 and base["device_profile"]["roofline_ops"] == 0, base["device_profile"]
    # Each op's time is rounded to a whole ns in both runs: at most 1 ns an op on the step's critical path
    # (2 × 0.5 for the doubled side's rounding, 0.5 for the base's, doubled); events bound the ops.
    tolerance = base["events"]
    assert abs(slow["step_time_ns"] - 2 * base["step_time_ns"]) <= tolerance, (args, base["step_time_ns"], slow["step_time_ns"])
    if "ddp" in args:
        assert base["device_profile"]["collectives_from_profile"]
        assert base["collectives"] and abs(slow["collectives"][0]["time_ns"] - 2 * base["collectives"][0]["time_ns"]) <= 2
# A CPU's profile with the default GPU preset: the text says whose times and whose capacity.
text = call("simulate", "--model", "mlp:5x96:relu", "--strategy", "single", "--device-profile", profile_path).stdout
assert f"times are those of the profile's machine ({profile['machine']['name']}); memory capacity is the H100-80 preset's" in text, text
roofline = json.loads(call("simulate", "--json", "--model", "mlp:5x96:relu", "--strategy", "single").stdout)
assert roofline["device_profile"] is None

# ---- run --json: step times; --simulate-beside ----
steps = 4
report = json.loads(call("run", "--json", "--backend", "cpu", "--model", "mlp:3x64:relu", "--strategy", "ddp", "--world", "2",
                         "--batch", "8", "--steps", str(steps), "--device-profile", profile_path, "--simulate-beside").stdout)
times, loads = report["step_times_ns"], report["load_batch_ns"]
assert len(times) == steps and len(loads) == steps, report
assert all(t > 0 for t in times) and all(l >= 0 for l in loads)
later = sorted(times[1:])
assert report["median_step_ns"] == later[(len(later) - 1) // 2]
# Each step with its loading inside the run. Not their sum: a step's window spans both ranks, and one rank loads the
# next batch while the other still finishes the step (a sum over steps failed so, now and then, under load).
assert all(t + l <= report["run_time_ns"] for t, l in zip(times, loads)), (times, loads, report["run_time_ns"])
beside = report["simulate_beside"]
assert beside["device_profile"] == profile_path
assert set(beside["by_kind"]) == {"gemm", "elementwise", "optimizer", "communication", "idle"}
for side in ("simulated_ns", "executed_ns"):
    assert sum(k[side] for k in beside["by_kind"].values()) == beside["step"][side], beside
assert beside["step"]["executed_ns"] == report["median_step_ns"]
# the spread the median is taken over: steps 2 and later, fastest and slowest
assert (beside["executed_fastest_ns"], beside["executed_slowest_ns"]) == (later[0], later[-1]), beside
for entry in [beside["step"], *beside["by_kind"].values()]:
    if entry["executed_ns"] > 0:
        expected = (entry["simulated_ns"] - entry["executed_ns"]) / entry["executed_ns"]
        assert math.isclose(entry["error"], expected, rel_tol=1e-12, abs_tol=1e-15), entry
    else:
        assert entry["error"] is None, entry
assert beside["by_kind"]["gemm"]["executed_ns"] > 0 and beside["by_kind"]["gemm"]["simulated_ns"] > 0
# The same step times from the run's trace file (trace info: the file's events, the header's plan).
trace_path = os.path.join(work, "run.sstrace")
report = json.loads(call("run", "--json", "--backend", "cpu", "--model", "mlp:3x64:relu", "--strategy", "zero1", "--world", "2",
                         "--batch", "8", "--steps", "3", "--out", trace_path).stdout)
info = json.loads(call("trace", "info", trace_path, "--json").stdout)
for key in ("step_times_ns", "load_batch_ns", "median_step_ns"):
    assert info[key] == report[key], (key, info[key], report[key])
assert sum(info["median_step_by_kind_ns"].values()) == info["median_step_ns"], info
# compare: the executed trace beside the scenario (simulated with the profile) and beside the simulation's own trace
# file; the scenario's simulated step and the simulated file's are the same simulation, through two paths.
scenario_path = os.path.join(work, "zero1.json")
json.dump({"model": {"spec": "mlp:3x64:relu"}, "training": {"batch": 8, "steps": 3}, "cluster": {"world": 2,
           "device_profile": profile_path}, "strategy": {"name": "zero1"}}, open(scenario_path, "w"))
sim_trace = os.path.join(work, "sim.sstrace")
call("simulate", scenario_path, "--out", sim_trace)
by_scenario = json.loads(call("compare", trace_path, scenario_path, "--json").stdout)["step_time"]
by_trace = json.loads(call("compare", trace_path, sim_trace, "--json").stdout)["step_time"]
assert by_scenario["a"]["step_ns"] == info["median_step_ns"], (by_scenario["a"], info["median_step_ns"])
assert by_scenario["b"] == by_trace["b"], (by_scenario["b"], by_trace["b"])
for kind, a in by_scenario["a"]["by_kind_ns"].items():
    assert by_scenario["difference"]["by_kind_ns"][kind] == a - by_scenario["b"]["by_kind_ns"][kind]
assert by_scenario["difference"]["step_ns"] == by_scenario["a"]["step_ns"] - by_scenario["b"]["step_ns"]
assert "Step time: the median step" in call("compare", trace_path, scenario_path).stdout
text = call("run", "--backend", "cpu", "--model", "mlp:3x64:relu", "--strategy", "single", "--batch", "8", "--steps", "3",
            "--simulate-beside").stdout
assert "Median step:" in text and "Simulated beside executed" in text and "the roofline constants" in text, text
print("ok: profile format, simulate doubles with the profile's times, step times and the simulated step beside")
