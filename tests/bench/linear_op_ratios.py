#!/usr/bin/env python3
"""Issue 40, a diagnostic beside bench_timeline: how our CPU executor's Linear ops run against their simulated
price, op by op, with the drift of a noisy machine taken out as far as it can be. Each round calibrates afresh
(`calibrate --passes 1`, ~16 s), then runs each held-out job (`run --backend cpu --chrome`) and simulates it with
that round's profile (`simulate --chrome`); it prints, per job and round, the executed / simulated ratio of the
median Linear forward and backward (hidden layers, steps 2 and later; GPT-2: its blocks and lm_head), and the
median over rounds. A ratio away from 1 in every round is the model's; one that moves between rounds is the
machine's. (2026-11-28, 2 vCPUs, medians: single-thread MLPs 1.08-1.19 in one half hour and 2.04 in the next, two-rank
MLPs 0.87-1.23, GPT-2 0.89-0.99.)
Usage (from the repository root, nothing else running): tests/bench/linear_op_ratios.py CLI [ROUNDS] [JOB...]"""
import json
import os
import statistics
import subprocess
import sys
import tempfile

JOBS = {  # bench_timeline's held-out jobs
    "single": "--model mlp:6x384:relu --batch 96 --optimizer adam --strategy single --world 1",
    "ddp": "--model mlp:6x512:relu --batch 64 --optimizer momentum --strategy ddp --world 2",
    "zero1": "--model mlp:4x640:relu --batch 80 --optimizer adam --strategy zero1 --world 2",
    "gpipe": "--model mlp:8x448:relu --batch 128 --optimizer adam --strategy pp-gpipe --world 2 --stages 2 --micro-batches 4",
    "gpt2": "--model hf:tests/bench/heldout/gpt2-heldout/config.json --batch 6 --seq 48 --optimizer adam "
            "--strategy single --world 1 --loss cross-entropy",
}


def call(cli, args):
    done = subprocess.run([cli, *args], capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"{' '.join(args[:3])} ...: exit {done.returncode}: {done.stderr.strip()[-400:]}")


def linear_medians(trace_path):
    """The median duration of the Linear forwards and backwards of steps 2 and later (fc0's backward, which
    computes no input gradient, left out)."""
    trace = json.load(open(trace_path))
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    durations = {"forward": [], "backward": []}
    for e in events:
        name = e.get("name", "")
        if e.get("ph") != "X" or e.get("args", {}).get("step", 0) < 2 or "bucket" in name or name == "fc0 backward":
            continue
        if name.startswith(("fc", "h.", "lm_head")):
            durations["forward" if name.endswith("forward") else "backward"].append(e["dur"])
    return {k: statistics.median(v) for k, v in durations.items() if v}


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    cli, rounds = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 6
    jobs = sys.argv[3:] or list(JOBS)
    unknown = [j for j in jobs if j not in JOBS]
    if unknown:
        sys.exit(f"unknown job {unknown[0]}: one of {', '.join(JOBS)}")
    work = tempfile.mkdtemp(prefix="shardscope-linear-ratios-")
    profile, executed, simulated = (os.path.join(work, n) for n in ("profile.json", "exec.json", "sim.json"))
    ratios = {(j, k): [] for j in jobs for k in ("forward", "backward")}
    for r in range(1, rounds + 1):
        call(cli, ["calibrate", "--backend", "cpu", "--out", profile, "--passes", "1"])
        for j in jobs:
            args = JOBS[j].split() + ["--steps", "6"]
            call(cli, ["run", "--backend", "cpu", *args, "--chrome", executed])
            call(cli, ["simulate", *args, "--device-profile", profile, "--chrome", simulated])
            e, s = linear_medians(executed), linear_medians(simulated)
            line = []
            for k in ("forward", "backward"):
                if k in e and k in s:
                    ratios[(j, k)].append(e[k] / s[k])
                    line.append(f"{k} {e[k] / s[k]:.3f}")
            print(f"round {r} {j:7s} executed / simulated: {', '.join(line)}", flush=True)
    for (j, k), values in ratios.items():
        if values:
            print(f"{j:7s} {k:8s} median {statistics.median(values):.3f} (rounds {min(values):.3f} to {max(values):.3f})")


if __name__ == "__main__":
    main()
