#!/usr/bin/env python3
"""Every GPU check of ../shared/GPU_CHECKLIST.md in one call, run by run_gpu_checks.sh from the bundle
(tests/gpu/make_bundle.sh): the gpu-labelled tests; every strategy on 1 and 2 ranks (ranks sharing the GPU) on
cuda against the cpu backend and against the pytorch-2 prediction; pytorch_reference.py against run --backend cuda
at the same phases (memory_allocated, max_memory_allocated, memory_reserved); the cuBLAS workspace question; the
step-time ratio against PyTorch; a real GPU out-of-memory; a recorded trace. Writes OUT/report.json, OUT/report.md,
OUT/cuda-ddp.sstrace and OUT/commands.log (4 files).

Without a usable GPU every GPU check says "skipped: no GPU (<reason>)" and the script exits 0; with one it exits 1
when a check failed. Window screenshots are not taken on the GPU machine (no display server, no Xvfb, and GLFW 3.3
cannot open an EGL surface without one): the recorded trace comes back instead and is what the window draws —
`xvfb-run shardscope --trace cuda-ddp.sstrace --screenshot shot.png` on the build machine.

usage: gpu_checks.py BUNDLE OUT
"""
import json
import os
import platform
import statistics
import subprocess
import sys
import time

BUNDLE = os.path.abspath(sys.argv[1])
OUT = os.path.abspath(sys.argv[2])
CLI = os.path.join(BUNDLE, "bin", "shardscope-cli")
GPU_TEST = os.path.join(BUNDLE, "bin", "test_cuda_backend")
SCRIPTS = os.path.join(BUNDLE, "scripts")
PYTHON = os.environ.get("PYTHON", "python3")
# SHARDSCOPE_GPU_CHECKS_BACKEND=cpu: a dry run of the checks' own logic on the cpu backend (cpu against cpu, exact
# accounting, no out-of-memory run), so a mistake in this script is found on the build machine, not in GPU time.
BACKEND = os.environ.get("SHARDSCOPE_GPU_CHECKS_BACKEND", "cuda")
ACCOUNTING = "pytorch-2" if BACKEND == "cuda" else "exact"
os.makedirs(OUT, exist_ok=True)
log = open(os.path.join(OUT, "commands.log"), "w")
checks = []

# The strategies' job: small enough that all twenty runs take seconds, big enough for real GEMMs and buckets.
JOB = ["--model", "mlp:4x512:relu", "--batch", "64", "--steps", "3"]
# Loss agreement cuda vs cpu: fp32 GEMMs summing 512 products in another order differ by ~sqrt(512) × 2^-24 relative
# per layer; through 4 layers, 3 Adam steps (lr 1e-3) that stays far below 1e-4. A bound, not the figure: the
# measured difference is reported.
LOSS_RELATIVE_BOUND = 1e-4
ALL_STRATEGIES = "single,dp,balanced-dp,ddp,zero1,zero2,zero3,mp,pp-gpipe,pp-1f1b"
STRATEGIES = os.environ.get("SHARDSCOPE_GPU_CHECKS_STRATEGIES", ALL_STRATEGIES).split(",")


def sh(cmd, timeout=300, env=None):
    """Runs cmd; returns (exit code, stdout, stderr, seconds) and logs it (output cut to 4 kB)."""
    start = time.monotonic()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
        rc, out, err = p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired as e:
        rc, out, err = 124, e.stdout or "", (e.stderr or "") + f"\ntimed out after {timeout} s"
        out = out.decode() if isinstance(out, bytes) else out
        err = err.decode() if isinstance(err, bytes) else err
    except OSError as e:
        rc, out, err = 127, "", str(e)
    secs = time.monotonic() - start
    log.write(f"$ {' '.join(cmd)}\n# exit {rc} in {secs:.1f} s\n{out[-4000:]}{err[-4000:]}\n")
    log.flush()
    return rc, out, err, secs


def add(name, status, summary, figures=None):
    checks.append({"name": name, "status": status, "summary": summary, "figures": figures or {}})
    print(f"[{status:>7}] {name}: {summary}", flush=True)


def cli_json(args, timeout=300):
    rc, out, err, secs = sh([CLI, *args, "--json"], timeout)
    try:
        return rc, json.loads(out), err, secs
    except json.JSONDecodeError:
        return rc, None, err, secs


# --- Always: where the libraries come from, PyTorch, the GPUs ---------------------------------------------------
def library_check():
    resolved, missing = {}, []
    for name in sorted(os.listdir(os.path.join(BUNDLE, "bin"))):
        rc, out, err, _ = sh(["ldd", os.path.join(BUNDLE, "bin", name)])
        for line in out.splitlines():
            parts = line.split()
            if len(parts) >= 3 and parts[1] == "=>":
                resolved[parts[0]] = parts[2]
                if parts[2] == "not":
                    missing.append(f"{name}: {parts[0]}")
    status = "failed" if missing else "passed"
    add("libraries", status, "missing: " + ", ".join(missing) if missing else f"{len(resolved)} libraries resolved",
        {"resolved": resolved, "LD_LIBRARY_PATH": os.environ.get("LD_LIBRARY_PATH", "")})


def torch_check():
    code = ("import json, torch; c = torch.cuda.is_available(); print(json.dumps({'torch': torch.__version__, "
            "'cuda_available': c, 'cuda': torch.version.cuda, 'nccl': '.'.join(map(str, torch.cuda.nccl.version())) if c else None, "
            "'gpu': torch.cuda.get_device_name(0) if c else None}))")
    rc, out, err, _ = sh([PYTHON, "-c", code], 120)
    if rc != 0:
        add("pytorch", "skipped", f"{PYTHON} cannot import torch: {err.strip().splitlines()[-1] if err.strip() else rc}")
        return None
    info = json.loads(out)
    add("pytorch", "passed", f"torch {info['torch']}, CUDA {info['cuda']}, GPU {info['gpu']}", info)
    return info


def gpu_inventory():
    rc, data, err, _ = cli_json(["gpus"])
    if data is None:
        add("gpus", "failed", f"shardscope-cli gpus --json failed (exit {rc}): {err.strip()}")
        return None, f"gpus failed: {err.strip()}"
    if data.get("gpus"):
        add("gpus", "passed", ", ".join(f"{g.get('name')} ({g.get('total_bytes', g.get('memory_bytes', '?'))} B)" for g in data["gpus"]), data)
        return data, None
    add("gpus", "skipped", f"no GPU: {data.get('reason')}", data)
    return None, data.get("reason") or "no usable GPU"


# --- GPU checks -------------------------------------------------------------------------------------------------
def gpu_tests():
    result = os.path.join(OUT, ".gtest.json")
    rc, out, err, secs = sh([GPU_TEST, f"--gtest_output=json:{result}"], 420)
    try:
        data = json.load(open(result))
        os.remove(result)
    except (OSError, json.JSONDecodeError):
        add("gpu_tests", "failed", f"test_cuda_backend exit {rc}, no result file: {err.strip()[-300:]}")
        return
    failed, skipped, passed = [], [], 0
    for suite in data.get("testsuites", []):
        for t in suite.get("testsuite", []):
            name = f"{suite['name']}.{t['name']}"
            if t.get("failures"):
                failed.append({"test": name, "message": t["failures"][0].get("failure", "")[:600]})
            elif t.get("result") == "SKIPPED":
                skipped.append(name)
            else:
                passed += 1
    status = "failed" if failed or rc != 0 else "passed"
    add("gpu_tests", status, f"{passed} passed, {len(failed)} failed, {len(skipped)} skipped in {secs:.0f} s",
        {"passed": passed, "failed": failed, "skipped": skipped})


def strategy_runs():
    rows = []
    for strategy in STRATEGIES:
        for world in ([1] if strategy == "single" else [1, 2]):
            flags = [*JOB, "--strategy", strategy, "--world", str(world)]
            if strategy in ("pp-gpipe", "pp-1f1b"):
                flags += ["--stages", str(world), "--micro-batches", "4"]
            if strategy == "balanced-dp":
                flags += ["--gpu0-batch", "32"]
            if strategy in ("zero2", "zero3"):  # DeepSpeed's 5e8-element default buckets would be 2 GB of fp32 each
                flags += ["--reduce-bucket-mb", "16", "--allgather-bucket-mb", "16"]
            row = {"strategy": strategy, "world": world}
            rc_c, cuda, err_c, _ = cli_json(["run", *flags, "--backend", BACKEND])
            rc_p, cpu, err_p, _ = cli_json(["run", *flags, "--backend", "cpu"])
            rc_m, predicted, _, _ = cli_json(["memory", *flags, "--accounting", ACCOUNTING])
            if rc_p == 2 and rc_c == 2:
                row["status"] = "not applicable"
                row["reason"] = err_p.strip().splitlines()[-1] if err_p.strip() else ""
                rows.append(row)
                continue
            if cuda is None or not cuda.get("ok"):
                row["status"] = "failed"
                row["reason"] = (cuda or {}).get("error") or err_c.strip()[-400:]
                rows.append(row)
                continue
            problems = []
            losses = []
            for rank_c, rank_p in zip(cuda["ranks"], (cpu or {}).get("ranks", [])):
                a, b = rank_c.get("loss"), rank_p.get("loss")
                if a is not None and b is not None:
                    rel = abs(a - b) / max(abs(b), 1e-30)
                    losses.append(rel)
            row["loss_max_relative_difference"] = max(losses) if losses else None
            if losses and max(losses) > LOSS_RELATIVE_BOUND:
                problems.append(f"loss differs from cpu by {max(losses):.2e} relative")
            row["checksum_cuda"] = cuda["model_parameters"].get("param_checksum")
            row["checksum_cpu"] = (cpu or {}).get("model_parameters", {}).get("param_checksum")
            # Measured (the CUDA backend's caching allocator) against the pytorch-2 prediction, phase by phase.
            mismatches = 0
            compared = 0
            for rank_c, rank_m in zip(cuda["ranks"], (predicted or {}).get("ranks", [])):
                for ph_c, ph_m in zip(rank_c.get("phases", []), rank_m.get("phases", [])):
                    compared += 1
                    if ph_c["allocated_bytes"] != ph_m["allocated_bytes"]:
                        mismatches += 1
                        if mismatches <= 3:
                            problems.append(f"rank {rank_c['rank']} {ph_c['name']} step {ph_c['step']}: measured "
                                            f"{ph_c['allocated_bytes']} B, predicted {ph_m['allocated_bytes']} B")
            row["phases_compared"] = compared
            row["phases_differing"] = mismatches
            row["measured_peak_bytes"] = [r.get("measured_peak_bytes") for r in cuda["ranks"]]
            row["predicted_peak_bytes"] = [r.get("peak_bytes") for r in (predicted or {}).get("ranks", [])]
            row["device_memory"] = [r.get("device_memory") for r in cuda["ranks"]]
            row["status"] = "failed" if problems else "passed"
            row["problems"] = problems
            rows.append(row)
    failed = [r for r in rows if r["status"] == "failed"]
    ran = [r for r in rows if r["status"] != "not applicable"]
    worst = max((r.get("loss_max_relative_difference") or 0.0 for r in ran), default=0.0)
    add("strategies", "failed" if failed else "passed",
        f"{len(ran) - len(failed)} of {len(ran)} runs agree (cuda vs cpu loss within {LOSS_RELATIVE_BOUND:g}, largest "
        f"{worst:.2e}; measured == predicted per phase)", {"runs": rows})


def shardscope_phases(flags):
    rc, run, err, _ = cli_json(["run", *flags, "--backend", BACKEND])
    rc_m, predicted, _, _ = cli_json(["memory", *flags, "--accounting", ACCOUNTING])
    return run, predicted, err


def reference_comparison(name, torch_args, flags):
    """pytorch_reference.py beside run --backend cuda; returns the PyTorch step times."""
    rc, out, err, _ = sh([PYTHON, os.path.join(SCRIPTS, "pytorch_reference.py"), *torch_args, "--json"], 400)
    torch_ranks = []
    for line in out.splitlines():
        try:
            torch_ranks.append(json.loads(line))
        except json.JSONDecodeError:
            pass
    run, predicted, err_run = shardscope_phases(flags)
    if not torch_ranks or run is None or not run.get("ok"):
        add(name, "failed", f"pytorch exit {rc} ({err.strip()[-300:]}); shardscope: {(run or {}).get('error') or err_run.strip()[-300:]}")
        return None
    torch_ranks.sort(key=lambda r: r.get("rank", 0))
    table = []
    for rank_t, rank_s, rank_p in zip(torch_ranks, run["ranks"], (predicted or {}).get("ranks", [])):
        ours = {(p["name"], p["step"]): p for p in rank_s["phases"]}
        pred = {(p["name"], p["step"]): p for p in rank_p.get("phases", [])}
        base = rank_t.get("base_allocated", 0)  # what the process held before the model: not the job's
        for rec in rank_t.get("phases", []):
            key = (rec["phase"], rec["step"])
            table.append({"rank": rank_t.get("rank", 0), "phase": rec["phase"], "step": rec["step"],
                          "torch_allocated": rec["allocated"] - base, "torch_max_allocated": rec["max_allocated"] - base,
                          "torch_reserved": rec["reserved"],
                          "measured_allocated": ours.get(key, {}).get("allocated_bytes"),
                          "predicted_allocated": pred.get(key, {}).get("allocated_bytes"),
                          "predicted_max_allocated": pred.get(key, {}).get("max_allocated_bytes"),
                          "predicted_reserved": pred.get(key, {}).get("reserved_bytes")})
    differing = [r for r in table if r["torch_allocated"] != r["measured_allocated"]]
    add(name, "passed" if not differing else "failed",
        f"{len(table) - len(differing)} of {len(table)} phases: ShardScope's measured memory_allocated equals PyTorch's",
        {"phases": table, "torch": torch_ranks[0].get("torch"), "gpu": torch_ranks[0].get("gpu")})
    return [t for r in torch_ranks for t in r.get("step_times_s", [])]


def step_time(flags, torch_step_times, name):
    """ShardScope's step time = (run of 4 steps − run of 1 step) / 3, which cancels set-up; PyTorch's = median of
    its step times after the first."""
    base = [f for f in flags]
    times = {}
    for steps in (1, 4):
        args = list(base)
        args[args.index("--steps") + 1] = str(steps)
        rc, run, err, _ = cli_json(["run", *args, "--backend", BACKEND])
        if run is None or not run.get("ok"):
            add(name, "failed", f"run --steps {steps} failed: {(run or {}).get('error') or err.strip()[-300:]}")
            return
        times[steps] = run["run_time_ns"] / 1e9
    ours = (times[4] - times[1]) / 3
    theirs = statistics.median(torch_step_times[1:] or torch_step_times)
    add(name, "passed", f"ShardScope {ours * 1e3:.2f} ms per step, PyTorch {theirs * 1e3:.2f} ms: ratio {ours / theirs:.2f}",
        {"shardscope_step_s": ours, "pytorch_step_s": theirs, "ratio": ours / theirs, "shardscope_runs_s": times})


def cublas_workspaces():
    rc, out, err, _ = sh([PYTHON, os.path.join(SCRIPTS, "cublas_workspace.py")], 180)
    try:
        data = json.loads(out.strip().splitlines()[-1])
    except (json.JSONDecodeError, IndexError):
        add("cublas_workspace", "failed", f"exit {rc}: {err.strip()[-300:]}")
        return
    add("cublas_workspace", "passed", data["answer"], data)


def out_of_memory():
    # Real device memory exceeded: 2^21 samples × 32768 fp32 = 256 GiB for one activation; --capacity-gib set above
    # it so the plan's own capacity check does not refuse the run first.
    trace = os.path.join(OUT, ".oom.sstrace")
    rc, out, err, _ = sh([CLI, "run", "--model", "mlp:4x32768", "--strategy", "single", "--batch", "2097152",
                          "--capacity-gib", "4096", "--backend", "cuda", "--out", trace], 300)
    rc_check, check_out, check_err, _ = sh([CLI, "trace", "info", trace, "--json"])
    caught = rc == 3 and "out of memory" in err.lower()
    add("out_of_memory", "passed" if caught and rc_check == 0 else "failed",
        f"exit {rc}: {err.strip().splitlines()[-1] if err.strip() else ''}; trace info exit {rc_check}",
        {"exit": rc, "stderr": err.strip()[-800:], "trace_info": check_out.strip()[-1500:]})
    if os.path.exists(trace):
        os.remove(trace)


def recorded_trace():
    trace = os.path.join(OUT, "cuda-ddp.sstrace")
    rc, out, err, _ = sh([CLI, "run", *JOB, "--strategy", "ddp", "--world", "2", "--backend", BACKEND, "--out", trace])
    rc_check, check_out, check_err, _ = sh([CLI, "trace", "check", trace])
    add("trace", "passed" if rc == 0 and rc_check == 0 else "failed",
        f"run exit {rc}, trace check exit {rc_check}: {check_out.strip().splitlines()[-1] if check_out.strip() else check_err.strip()}",
        {"file": os.path.basename(trace), "bytes": os.path.getsize(trace) if os.path.exists(trace) else 0})


def write_report(started, gpu_reason):
    report = {"started": started, "host": platform.node(), "bundle": open(os.path.join(BUNDLE, "MANIFEST")).read()
              if os.path.exists(os.path.join(BUNDLE, "MANIFEST")) else "", "gpu": gpu_reason or "available",
              "checks": checks}
    with open(os.path.join(OUT, "report.json"), "w") as f:
        json.dump(report, f, indent=1)
    lines = [f"# ShardScope GPU checks — {platform.node()}, {started}", "",
             f"GPU: {gpu_reason or 'available'}", "", "| check | status | summary |", "|---|---|---|"]
    lines += [f"| {c['name']} | {c['status']} | {c['summary']} |" for c in checks]
    for c in checks:
        if c["name"] == "strategies" and c["figures"].get("runs"):
            lines += ["", "## Strategies, cuda vs cpu and predicted", "",
                      "| strategy | world | status | loss rel. diff | phases differing | measured peak | predicted peak | note |",
                      "|---|---|---|---|---|---|---|---|"]
            for r in c["figures"]["runs"]:
                lines.append(f"| {r['strategy']} | {r['world']} | {r['status']} | {r.get('loss_max_relative_difference')} | "
                             f"{r.get('phases_differing')} / {r.get('phases_compared')} | {r.get('measured_peak_bytes')} | "
                             f"{r.get('predicted_peak_bytes')} | {'; '.join(r.get('problems', [])) or r.get('reason', '')} |")
        if c["name"].startswith("pytorch_reference") and c["figures"].get("phases"):
            lines += ["", f"## {c['name']}: PyTorch {c['figures'].get('torch')} vs ShardScope", "",
                      "| rank | step | phase | torch allocated | measured | predicted | torch max | predicted max | torch reserved | predicted reserved |",
                      "|---|---|---|---|---|---|---|---|---|---|"]
            for r in c["figures"]["phases"]:
                lines.append(f"| {r['rank']} | {r['step']} | {r['phase']} | {r['torch_allocated']} | {r['measured_allocated']} | "
                             f"{r['predicted_allocated']} | {r['torch_max_allocated']} | {r['predicted_max_allocated']} | "
                             f"{r['torch_reserved']} | {r['predicted_reserved']} |")
    lines += ["", "Screenshots: not taken on the GPU machine (no display server); open cuda-ddp.sstrace in the window "
              "(`xvfb-run shardscope --trace cuda-ddp.sstrace --screenshot shot.png`).", ""]
    with open(os.path.join(OUT, "report.md"), "w") as f:
        f.write("\n".join(lines))


def main():
    started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    library_check()
    torch_info = torch_check()
    inventory, gpu_reason = gpu_inventory()
    if BACKEND != "cuda":
        inventory, gpu_reason = {}, None
        add("dry_run", "passed", f"SHARDSCOPE_GPU_CHECKS_BACKEND={BACKEND}: the GPU checks run on the {BACKEND} backend")
    gpu_parts = ["gpu_tests", "strategies", "pytorch_reference_single", "pytorch_reference_ddp", "cublas_workspace",
                 "step_time_single", "step_time_ddp", "out_of_memory", "trace"]
    if inventory is None:
        for name in gpu_parts:
            add(name, "skipped", f"no GPU: {gpu_reason}")
    else:
        gpu_tests()
        strategy_runs()
        torch_ok = torch_info is not None and bool(torch_info.get("cuda_available"))
        single = ["--model", "mlp:20x2000:relu", "--strategy", "single", "--world", "1", "--batch", "2048", "--steps", "3"]
        ddp = ["--model", "mlp:1x1000", "--strategy", "ddp", "--world", "2", "--batch", "64", "--steps", "3"]
        if torch_ok:
            single_times = reference_comparison("pytorch_reference_single",
                                                ["--layers", "20", "--width", "2000", "--batch", "2048", "--steps", "3"], single)
            ddp_times = reference_comparison("pytorch_reference_ddp",
                                             ["--layers", "1", "--width", "1000", "--no-relu", "--world", "2", "--strategy",
                                              "ddp", "--batch", "64", "--steps", "3"], ddp)
            cublas_workspaces()
            if single_times:
                step_time(single, single_times, "step_time_single")
            if ddp_times:
                step_time(ddp, ddp_times, "step_time_ddp")
        else:
            for name in ["pytorch_reference_single", "pytorch_reference_ddp", "cublas_workspace", "step_time_single", "step_time_ddp"]:
                add(name, "skipped", "PyTorch with CUDA is not importable")
        if BACKEND == "cuda":
            out_of_memory()
        recorded_trace()
    write_report(started, gpu_reason)
    failed = [c["name"] for c in checks if c["status"] == "failed"]
    print(f"report: {os.path.join(OUT, 'report.md')}; {len(failed)} failed" + (f": {', '.join(failed)}" if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
