#!/usr/bin/env python3
"""Issue 40's GPU figures in one call: our CUDA executor and PyTorch on the same held-out jobs, one after the other
on the same GPU, and our kernels' device profile. Measures only; the comparison with `simulate --device-profile`
is made afterwards on the build machine from what comes back (the flags of every job are in the report).

Parts, in this order (each writes as it goes, so a run cut short keeps what it measured):
  executor  shardscope-cli run --backend cuda --json --simulate-beside on each held-out job of
            pytorch_truth.steptime_jobs (the MLPs and GPT-2 small), fp32 and --dtype bf16: every step's time
            (step_times_ns, batch loading apart), the step per kind of time beside the shipped h200-shardscope
            profile's, and the executed trace as a gzipped Chrome export (JOB.json.gz).
  pytorch   pytorch_truth.py's steptime worker on the same jobs: PyTorch eager fp32 and autocast-bf16, then 3 steps
            of each under torch.profiler (busy / idle per step; the autocast jobs' traces, gzipped).
  profile   shardscope-cli calibrate --backend cuda --passes N: the profile of our own kernels.

usage: time_checks.py CLI OUT [--parts executor,pytorch,profile] [--passes N] [--profile-timeout S] [--backend cuda|cpu]
  --backend cpu: the dry run on the build machine (toy sizes, the cpu backend; PyTorch's part on the CPU is skipped).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)
import pytorch_truth  # noqa: E402  (the held-out jobs, defined once)

START = time.monotonic()


def log(text):
    print(f"[{time.monotonic() - START:6.1f}s] {text}", flush=True)


def gpt2_config_without_dropout(out_dir, toy):
    """transformers' GPT-2 small config (or the tiny one in the dry run) with every dropout off, as PyTorch's job."""
    name = "gpt2-tiny" if toy else "gpt2"
    config = json.load(open(os.path.join(ROOT, "assets", "models", name, "config.json")))
    config.update(attn_pdrop=0.0, embd_pdrop=0.0, resid_pdrop=0.0)
    path = os.path.join(out_dir, f"{name}-no-dropout.json")
    with open(path, "w") as f:
        json.dump(config, f)
    return path


def executor_flags(job, gpt2_config):
    """The CLI flags of one of pytorch_truth's held-out jobs (single device, as PyTorch runs it)."""
    if job["kind"] == "mlp":
        model = f"mlp:{job['layers']}x{job['width']}" + (":relu" if job["relu"] else "")
        flags = ["--model", model, "--loss", "mse"]
    else:
        flags = ["--model", "hf:" + gpt2_config, "--seq", str(job["seq"])]
    flags += ["--batch", str(job["batch"]), "--optimizer", job["optimizer"], "--strategy", "single", "--world", "1"]
    # PyTorch's autocast-bf16 is set beside our --dtype bf16 (16-bit parameters and GEMMs), as issue 40 asks.
    if job["precision"] == "autocast-bf16":
        flags += ["--dtype", "bf16"]
    return flags


def executor_part(cli, backend, out_dir, toy, report):
    gpt2_config = gpt2_config_without_dropout(out_dir, toy)
    seen = set()
    for job in pytorch_truth.steptime_jobs(toy):
        flags = executor_flags(job, gpt2_config)
        if tuple(flags) in seen:  # GPT-2's sdpa and eager jobs are one job for our executor
            continue
        seen.add(tuple(flags))
        steps = 6 if job["kind"] == "hf" else 10
        # The executed trace comes back too (a Chrome export, gzipped): where each op's time went, per op, beside
        # `simulate --chrome` of the same job on the build machine; --simulate-beside gives the same per kind of time
        # against the shipped profile of our kernels (or the one this lease measures, on the build machine later).
        trace = os.path.join(out_dir, job["name"] + ".sstrace")
        cmd = [cli, "run", *flags, "--steps", str(steps), "--backend", backend, "--json", "--out", trace,
               "--simulate-beside"]
        if backend == "cuda":  # by path: the bundle's CLI was built from another checkout than the one that travels
            cmd += ["--device-profile", os.path.join(ROOT, "assets", "devices", "h200-shardscope.json")]
        begin = time.monotonic()
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=240)
            rc, out, err = p.returncode, p.stdout, p.stderr
        except subprocess.TimeoutExpired:
            rc, out, err = 124, "", "timed out after 240 s"
        entry = {"job": job["name"], "flags": flags, "steps": steps, "exit": rc,
                 "wall_s": round(time.monotonic() - begin, 2)}
        try:
            run = json.loads(out)
            entry["step_times_ns"] = run.get("step_times_ns")
            entry["ok"] = run.get("ok")
            entry["error"] = run.get("error")
            entry["load_batch_ns"] = run.get("load_batch_ns")
            entry["simulate_beside"] = run.get("simulate_beside")
            times = entry["step_times_ns"]
            if times and len(times) > 2:  # the first two steps warm cuBLAS and the caching allocator
                entry["median_step_s"] = statistics.median(times[2:]) / 1e9
        except (json.JSONDecodeError, TypeError):
            entry["error"] = (err or out)[-1500:]
        chrome = os.path.join(out_dir, job["name"] + ".json")
        if os.path.exists(trace):
            if subprocess.run([cli, "trace", "export", trace, "--chrome", chrome], capture_output=True).returncode == 0:
                subprocess.run(["gzip", "-f", chrome])
            os.remove(trace)
        report["executor"].append(entry)
        log(f"executor {job['name']}: exit {rc}, median {entry.get('median_step_s')} s")
        write(report, out_dir)


def pytorch_part(out_dir, toy, report):
    spec = {"jobs": pytorch_truth.steptime_jobs(toy)}
    path = os.path.join(out_dir, "pytorch-steptime.json")
    cmd = [sys.executable, os.path.join(HERE, "pytorch_truth.py"), "--worker", "steptime", json.dumps(spec), path]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        report["pytorch_exit"] = p.returncode
        if p.returncode:
            report["pytorch_error"] = p.stderr[-1500:]
    except subprocess.TimeoutExpired:
        report["pytorch_exit"] = 124
    log(f"pytorch steptime: exit {report['pytorch_exit']}")
    write(report, out_dir)


def profile_part(cli, backend, out_dir, passes, timeout, report):
    path = os.path.join(out_dir, f"h200-shardscope-{backend}.json")
    cmd = [cli, "calibrate", "--backend", backend, "--passes", str(passes), "--out", path]
    if backend != "cuda":
        cmd.append("--quick")  # the dry run: that calibration runs, not a profile
    begin = time.monotonic()
    with open(os.path.join(out_dir, "calibrate.log"), "w") as progress:
        try:
            rc = subprocess.run(cmd, stdout=progress, stderr=subprocess.STDOUT, timeout=timeout).returncode
        except subprocess.TimeoutExpired:
            rc = 124
    report["profile"] = {"command": " ".join(cmd), "exit": rc, "seconds": round(time.monotonic() - begin, 1)}
    log(f"calibrate: exit {rc} in {report['profile']['seconds']} s")
    write(report, out_dir)


def write(report, out_dir):
    with open(os.path.join(out_dir, "time-checks.json"), "w") as f:
        json.dump(report, f, indent=1)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("cli")
    ap.add_argument("out")
    ap.add_argument("--parts", default="executor,pytorch,profile")
    ap.add_argument("--passes", type=int, default=3)
    ap.add_argument("--backend", default="cuda")
    ap.add_argument("--profile-timeout", type=float, default=240, help="seconds calibrate may take")
    args = ap.parse_args()
    toy = args.backend != "cuda"
    os.makedirs(args.out, exist_ok=True)
    report = {"backend": args.backend, "executor": []}
    parts = args.parts.split(",")
    if "executor" in parts:
        executor_part(args.cli, args.backend, args.out, toy, report)
    if "pytorch" in parts and not toy:
        pytorch_part(args.out, toy, report)
    if "profile" in parts:
        profile_part(args.cli, args.backend, args.out, 1 if toy else args.passes, args.profile_timeout, report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
