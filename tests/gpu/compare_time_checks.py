#!/usr/bin/env python3
"""Sets what a lease's time_checks.py measured beside what we simulate, on the build machine (no GPU needed):
  - each held-out job on our CUDA executor against `simulate --device-profile OURS` (our kernels' profile);
  - each held-out job in PyTorch (eager fp32, autocast-bf16) against `simulate --device-profile THEIRS` (the profile
    measured through PyTorch), with PyTorch's settings (--precision autocast-bf16; GPT-2 as transformers runs it:
    --implementation hf and its attention);
  - our executor's step against PyTorch's on the same job (issue 40's "at PyTorch's speed").
Prints a Markdown table of each and the mean absolute error of each simulation; --json writes them too.

usage: compare_time_checks.py CLI TIME_DIR OUR_PROFILE TORCH_PROFILE [--json OUT]
  TIME_DIR: time_checks.py's output (time-checks.json, pytorch-steptime.json, the GPT-2 config it wrote).
"""
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import time_checks  # noqa: E402  (the held-out jobs' flags, defined once)


def simulate(cli, flags, profile):
    cmd = [cli, "simulate", *flags, "--steps", "2", "--device-profile", profile, "--json"]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode:
        raise RuntimeError(f"{' '.join(cmd)}: exit {p.returncode}: {p.stderr.strip()[-400:]}")
    return json.loads(p.stdout)["step_time_ns"] / 1e9


def pytorch_flags(job, gpt2_config):
    """The held-out job as PyTorch ran it: autocast rather than 16-bit parameters; transformers' GPT-2."""
    flags = time_checks.executor_flags(dict(job, precision="fp32"), gpt2_config)
    if job["precision"] == "autocast-bf16":
        flags += ["--precision", "autocast-bf16"]
    if job["kind"] == "hf":
        flags += ["--implementation", "hf", "--attention", job["attention"]]
    return flags


def table(title, rows):
    lines = [f"### {title}", "", "| job | measured ms | simulated ms | error |", "|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['job']} | {r['measured_s'] * 1e3:.2f} | {r['simulated_s'] * 1e3:.2f} | {r['error']:+.1%} |")
    errors = [abs(r["error"]) for r in rows]
    if errors:
        lines.append(f"\nmean absolute error {statistics.mean(errors):.1%}, largest {max(errors):.1%}")
    return "\n".join(lines)


def profiled_table(jobs):
    """PyTorch's steps under its profiler (pytorch_truth.profiled_steps): how much of each the GPU was busy, and the
    host ops the longest idle gaps waited for; a step the simulator under-predicts with the GPU idle is the host's."""
    lines = ["\n### PyTorch's steps under torch.profiler: GPU busy and idle per step", "",
             "| job | step ms (profiled) | GPU busy ms | idle ms | idle in forward / backward / optimizer ms | kernels | "
             "idle waiting on (ms) |", "|---|---|---|---|---|---|---|"]
    for result in jobs:
        p = result.get("profiled")
        if not p:
            continue
        waits = ", ".join(f"{w['cpu_op']} {w['s_per_step'] * 1e3:.2f}" for w in p["idle_before"][:3])
        phases = " / ".join(f"{p['phases'][ph]['idle_s_per_step'] * 1e3:.2f}" for ph in ("forward", "backward", "optimizer"))
        lines.append(f"| {result['spec']['name']} | {p['span_s_per_step'] * 1e3:.2f} | {p['busy_s_per_step'] * 1e3:.2f} | "
                     f"{p['idle_s_per_step'] * 1e3:.2f} | {phases} | {p['gpu_operations_per_step']:.0f} | {waits} |")
    return "\n".join(lines)


def main():
    if len(sys.argv) < 5:
        print(__doc__.strip().splitlines()[-2], file=sys.stderr)
        return 2
    cli, time_dir, ours, theirs = sys.argv[1:5]
    measured = json.load(open(os.path.join(time_dir, "time-checks.json")))
    pytorch = json.load(open(os.path.join(time_dir, "pytorch-steptime.json")))
    gpt2_config = next(os.path.join(time_dir, f) for f in os.listdir(time_dir) if f.endswith("-no-dropout.json"))
    executor_rows, pytorch_rows, speed_rows = [], [], []
    for run in measured["executor"]:
        if run.get("median_step_s"):
            flags = [f if not f.startswith("hf:") else "hf:" + gpt2_config for f in run["flags"]]
            simulated = simulate(cli, flags, ours)
            executor_rows.append({"job": run["job"], "measured_s": run["median_step_s"], "simulated_s": simulated,
                                  "error": simulated / run["median_step_s"] - 1})
    ours_by_flags = {tuple(r["flags"][2:]): r for r in measured["executor"] if r.get("median_step_s")}
    for result in pytorch["jobs"]:
        if "median_s" not in result:
            continue
        job = result["spec"]
        simulated = simulate(cli, pytorch_flags(job, gpt2_config), theirs)
        pytorch_rows.append({"job": job["name"], "measured_s": result["median_s"], "simulated_s": simulated,
                             "error": simulated / result["median_s"] - 1})
        mine = ours_by_flags.get(tuple(time_checks.executor_flags(job, gpt2_config)[2:]))
        if mine:
            speed_rows.append({"job": job["name"], "pytorch_s": result["median_s"], "ours_s": mine["median_step_s"],
                               "ratio": mine["median_step_s"] / result["median_s"]})
    print(table("Our executor against simulate with our kernels' profile", executor_rows) + "\n")
    print(table("PyTorch against simulate with PyTorch's profile", pytorch_rows) + "\n")
    print("### Our executor's step against PyTorch's (same job; ours with --dtype bf16 where PyTorch ran autocast-bf16)"
          "\n\n| job | PyTorch ms | ours ms | ratio |\n|---|---|---|---|")
    for r in speed_rows:
        print(f"| {r['job']} | {r['pytorch_s'] * 1e3:.2f} | {r['ours_s'] * 1e3:.2f} | {r['ratio']:.2f}x |")
    print(profiled_table(pytorch["jobs"]))
    if "--json" in sys.argv:
        with open(sys.argv[sys.argv.index("--json") + 1], "w") as f:
            json.dump({"executor": executor_rows, "pytorch": pytorch_rows, "speed": speed_rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
