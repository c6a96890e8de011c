#!/usr/bin/env python3
"""Every GPU check of ../shared/GPU_CHECKLIST.md in one call, run by run_gpu_checks.sh from the bundle
(tests/gpu/make_bundle.sh): the gpu-labelled tests; every strategy on 1 and 2 ranks (ranks sharing the GPU) on
cuda against the cpu backend and against the pytorch-2 prediction; a tiny GPT-2 (fp32 and bf16) against PyTorch
on the GPU; gpt2-tiny under every strategy and both recomputation modes, cuda against cpu and the prediction;
pytorch_reference.py against run --backend cuda at the same phases (memory_allocated, max_memory_allocated,
memory_reserved); the cuBLAS workspace question; the step-time ratio against PyTorch; a real GPU out-of-memory;
recorded traces. Writes OUT/report.json, OUT/report.md, OUT/cuda-ddp.sstrace, OUT/cuda-single.sstrace,
OUT/cuda-gpt2-small.sstrace (a GPT-2-small run's trace), OUT/pytorch-allocations.json (PyTorch's allocator
history of each reference job) and OUT/commands.log (7 files).
SHARDSCOPE_GPU_CHECKS_ONLY=name,name runs only those checks.

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
# A GPU machine is lent for minutes: past this many seconds (SHARDSCOPE_GPU_CHECKS_DEADLINE_S, default 1500) the
# checks not yet begun say "skipped: out of time" and every command is cut at what is left, so a report always
# comes back. The report is rewritten after each check, so even a run killed from outside leaves what it measured.
DEADLINE = time.monotonic() + float(os.environ.get("SHARDSCOPE_GPU_CHECKS_DEADLINE_S", "1500"))
os.makedirs(OUT, exist_ok=True)
log = open(os.path.join(OUT, "commands.log"), "w")
checks = []
report_state = {"started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "gpu_reason": None}


def seconds_left():
    return DEADLINE - time.monotonic()

# The strategies' job: small enough that all twenty runs take seconds, big enough for real GEMMs and buckets.
JOB = ["--model", "mlp:4x512:relu", "--batch", "64", "--steps", "3"]
# The tiny GPT-2 of issue 21 (2 blocks, width 128, 4 heads, vocab 512, context 64; dropout 0.1 at every site, so
# the device's dropout masks are compared too): every kernel of the transformer path, in seconds.
GPT2_JOB = ["--model", "hf:" + os.path.join(BUNDLE, "assets", "models", "gpt2-tiny", "config.json"), "--batch", "8",
            "--steps", "3"]
# Loss agreement cuda vs cpu: fp32 GEMMs summing 512 products in another order differ by ~sqrt(512) × 2^-24 relative
# per layer; through 4 layers, 3 Adam steps (lr 1e-3) that stays far below 1e-4. A bound, not the figure: the
# measured difference is reported.
LOSS_RELATIVE_BOUND = 1e-4
# bf16 / fp16 (parameters and gradients 16-bit, the MLP's activations fp32): a gradient summed in another order can
# round to the neighbouring 16-bit value (2^-8 relative for bf16), which Adam's normalised step turns into a
# parameter a few lr·2^-8 away; the loss moves far less than 1e-2 for that.
LOSS_RELATIVE_BOUND_16_BIT = 1e-2
ALL_STRATEGIES = "single,dp,balanced-dp,ddp,zero1,zero2,zero3,mp,pp-gpipe,pp-1f1b"
STRATEGIES = os.environ.get("SHARDSCOPE_GPU_CHECKS_STRATEGIES", ALL_STRATEGIES).split(",")


def sh(cmd, timeout=300, env=None):
    """Runs cmd; returns (exit code, stdout, stderr, seconds) and logs it (output cut to 4 kB)."""
    start = time.monotonic()
    timeout = max(1, min(timeout, int(seconds_left())))
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
    write_report()


def in_time(name):
    """False (and the check recorded as skipped) once the deadline has passed."""
    if seconds_left() > 5:
        return True
    add(name, "skipped", "out of time (SHARDSCOPE_GPU_CHECKS_DEADLINE_S)")
    return False


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
    rc, out, err, secs = sh([GPU_TEST, f"--gtest_output=json:{result}"], 240)
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


def pytorch_gpt2():
    """The tiny GPT-2 trained by ShardScope (its cpu backend) against the same model in this machine's PyTorch
    (2.x) on the GPU, fp32 and bf16 mixed precision, with the tolerances derived in check_gpt2_against_torch.py;
    the build machine's CTest holds the same runs against Debian's PyTorch 1.13 on the CPU."""
    script = os.path.join(SCRIPTS, "check_gpt2_against_torch.py")
    config = os.path.join(SCRIPTS, "gpt2-tiny-no-dropout", "config.json")
    env = dict(os.environ, SHARDSCOPE_TORCH_DEVICE="cuda" if BACKEND == "cuda" else "cpu")
    runs = []
    for variant in (["adam"], ["adam", "--dtype", "bf16"]):
        rc, out, err, secs = sh([PYTHON, script, CLI, config, *variant], 300, env)
        lines = out.strip().splitlines()
        runs.append({"variant": " ".join(variant), "exit": rc, "seconds": round(secs, 1),
                     "losses": [l for l in lines if l.startswith("step ")],
                     "result": lines[-1] if rc == 0 and lines else err.strip()[-600:]})
    exits = {r["exit"] for r in runs}
    status = "skipped" if exits == {77} else "passed" if exits == {0} else "failed"  # 77: PyTorch not importable
    add("pytorch_gpt2", status,
        "; ".join(f"{r['variant']}: exit {r['exit']}: {r['result']}" for r in runs), {"runs": runs})


def loss_bound(dtype):
    return LOSS_RELATIVE_BOUND if dtype == "fp32" else LOSS_RELATIVE_BOUND_16_BIT


def strategy_runs(dtypes=("fp32",), strategies=STRATEGIES, worlds=(1, 2), name="strategies", job=JOB, extra=()):
    rows = []
    batch = int(job[job.index("--batch") + 1])
    for dtype, strategy in [(d, s) for d in dtypes for s in strategies]:
        for world in ([1] if strategy == "single" else worlds):
            flags = [*job, "--strategy", strategy, "--world", str(world), "--dtype", dtype, *extra]
            if strategy in ("pp-gpipe", "pp-1f1b"):
                flags += ["--stages", str(world), "--micro-batches", "4"]
            if strategy == "balanced-dp":
                flags += ["--gpu0-batch", str(batch // 2)]
            if strategy in ("zero2", "zero3"):  # DeepSpeed's 5e8-element default buckets would be 2 GB of fp32 each
                flags += ["--reduce-bucket-mb", "16", "--allgather-bucket-mb", "16"]
            row = {"strategy": strategy, "world": world, "dtype": dtype, "extra": " ".join(extra)}
            if seconds_left() < 10:
                row["status"] = "not run"
                row["reason"] = "out of time"
                rows.append(row)
                continue
            rc_c, cuda, err_c, _ = cli_json(["run", *flags, "--backend", BACKEND], 90)
            rc_p, cpu, err_p, _ = cli_json(["run", *flags, "--backend", "cpu"], 90)
            rc_m, predicted, _, _ = cli_json(["memory", *flags, "--accounting", ACCOUNTING], 60)
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
            bound = loss_bound(dtype)
            if losses and max(losses) > bound:
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
            row["loss_scale"] = [r.get("loss_scale") for r in cuda["ranks"]]
            row["skipped_steps"] = [r.get("skipped_steps") for r in cuda["ranks"]]
            row["status"] = "failed" if problems else "passed"
            row["problems"] = problems
            rows.append(row)
    failed = [r for r in rows if r["status"] == "failed"]
    ran = [r for r in rows if r["status"] not in ("not applicable", "not run")]
    worst = max((r.get("loss_max_relative_difference") or 0.0 for r in ran), default=0.0)
    add(name, "failed" if failed else "passed",
        f"{len(ran) - len(failed)} of {len(ran)} runs agree (cuda vs cpu loss within "
        f"{', '.join(f'{loss_bound(d):g} ({d})' for d in dtypes)}, largest {worst:.2e}; measured == predicted per "
        f"phase)", {"runs": rows})


def gpt2_step_time():
    """GPT-2 small (12 blocks, width 768, context 256, batch 4; dropout off on both sides) on the GPU: ShardScope's
    step against PyTorch's eager step of the same model (gpt2_step_time.py), fp32, Adam. The dry run times the
    tiny GPT-2 against made-up PyTorch times instead (the small one takes 16 s a step on two cores)."""
    model, seq = ("gpt2", "256") if BACKEND == "cuda" else ("gpt2-tiny", "32")
    config = json.load(open(os.path.join(BUNDLE, "assets", "models", model, "config.json")))
    config.update(attn_pdrop=0.0, embd_pdrop=0.0, resid_pdrop=0.0)
    path = os.path.join(OUT, ".gpt2-no-dropout.json")
    with open(path, "w") as f:
        json.dump(config, f)
    theirs = [1.0, 1.0]
    if BACKEND == "cuda":
        rc, out, err, _ = sh([PYTHON, os.path.join(SCRIPTS, "gpt2_step_time.py"), path, "4", seq, "4"], 240)
        try:
            theirs = json.loads(out.strip().splitlines()[-1])["step_times_s"]
        except (ValueError, IndexError, KeyError):
            add("step_time_gpt2", "failed", f"gpt2_step_time.py exit {rc}: {err.strip()[-400:]}")
            return
    step_time(["--model", "hf:" + path, "--strategy", "single", "--batch", "4", "--seq", seq, "--steps", "4"],
              theirs, "step_time_gpt2", "cuda-gpt2-small.sstrace")
    os.remove(path)


def gpt2_checkpointing():
    """Activation checkpointing executed on the GPU: the recomputed forward in backward (full: the whole block;
    selective: attention's probabilities from the saved Q and K), against the cpu backend and the prediction."""
    for mode in ("full", "selective"):
        strategy_runs(("fp32", "fp16"), [s for s in ("single", "ddp", "pp-1f1b") if s in STRATEGIES], (2,),
                      f"gpt2_checkpoint_{mode}", GPT2_JOB,
                      ("--checkpoint", mode))


def shardscope_phases(flags):
    rc, run, err, _ = cli_json(["run", *flags, "--backend", BACKEND])
    rc_m, predicted, _, _ = cli_json(["memory", *flags, "--accounting", ACCOUNTING])
    return run, predicted, err


def json_objects(text):
    """Every JSON object in `text`. The reference's ranks are processes of their own printing to one pipe, so two
    ranks' lines can arrive glued together ("}{"): decode object after object instead of line by line."""
    decoder, objects, at = json.JSONDecoder(), [], 0
    while (at := text.find("{", at)) >= 0:
        try:
            value, end = decoder.raw_decode(text, at)
        except json.JSONDecodeError:
            at += 1
            continue
        if isinstance(value, dict):
            objects.append(value)
        at = end
    return objects


def reference_comparison(name, torch_args, flags):
    """pytorch_reference.py beside run --backend cuda; returns the PyTorch step times."""
    rc, out, err, _ = sh([PYTHON, os.path.join(SCRIPTS, "pytorch_reference.py"), *torch_args, "--json"], 400)
    torch_ranks = json_objects(out)
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


def step_time(flags, torch_step_times, name, keep_trace=None):
    """ShardScope's step time read off a recorded run of 4 steps: from one step's batch load to the next one's, less
    the load (PyTorch's timer starts after its batch is made on the device), the median of steps 2 and 3 (rank 0);
    PyTorch's = the median of its step times after the first. A difference of two whole runs' times would drown the
    steps in the set-up's variation (cuBLAS and NCCL start-up: tenths of a second)."""
    args = list(flags)
    args[args.index("--steps") + 1] = "4"
    trace, chrome = os.path.join(OUT, ".steps.sstrace"), os.path.join(OUT, ".steps.json")
    rc, run, err, _ = cli_json(["run", *args, "--backend", BACKEND, "--out", trace])
    rc_export, _, export_err, _ = sh([CLI, "trace", "export", trace, "--chrome", chrome])
    try:
        events = json.load(open(chrome))
        events = events["traceEvents"] if isinstance(events, dict) else events
    except (OSError, json.JSONDecodeError):
        add(name, "failed", f"run exit {rc} ({(run or {}).get('error') or err.strip()[-300:]}); trace export exit "
                            f"{rc_export}: {export_err.strip()[-300:]}")
        return
    finally:
        if keep_trace and os.path.exists(trace):  # comes back, to read where the step's time goes
            os.replace(trace, os.path.join(OUT, keep_trace))
        for path in (trace, chrome):
            if os.path.exists(path):
                os.remove(path)
    ops = sorted((e for e in events if e.get("ph") == "X"), key=lambda e: e["ts"])
    loads = [e for e in ops if e["name"].startswith("load batch")]
    loads = [e for e in loads if e.get("pid") == loads[0].get("pid")] if loads else []
    if len(loads) < 4:
        add(name, "failed", f"{len(loads)} batch loads in the trace of 4 steps")
        return
    steps = [(loads[k + 1]["ts"] - loads[k]["ts"] - loads[k]["dur"]) / 1e6 for k in (1, 2)]
    ours = statistics.median(steps)
    load = statistics.median(e["dur"] for e in loads[1:]) / 1e6
    theirs = statistics.median(torch_step_times[1:] or torch_step_times)
    add(name, "passed", f"ShardScope {ours * 1e3:.2f} ms per step (+ {load * 1e3:.2f} ms loading its batch from the "
                        f"host), PyTorch {theirs * 1e3:.2f} ms: ratio {ours / theirs:.2f}",
        {"shardscope_step_s": ours, "shardscope_batch_load_s": load, "pytorch_step_s": theirs, "ratio": ours / theirs,
         "shardscope_steps_s": steps})


def allocation_histories(jobs):
    """PyTorch's caching-allocator history (every alloc and free, with sizes and Python frames) for each reference
    job, in one file, OUT/pytorch-allocations.json: what to hold ShardScope's plans against allocation by allocation.
    Runs of their own, not the reference_comparison runs: recording a Python stack at every allocation slows PyTorch,
    and those runs' step times are the ones step_time compares against."""
    histories = {}
    for name, torch_args in jobs:
        path = os.path.join(OUT, f".{name}.history.json")
        rc, out, err, _ = sh([PYTHON, os.path.join(SCRIPTS, "pytorch_reference.py"), *torch_args, "--history", path,
                              "--json"], 300)
        try:
            histories[name] = json.load(open(path))
            os.remove(path)
        except (OSError, json.JSONDecodeError):
            histories[name] = {"error": f"exit {rc}: {err.strip()[-600:]}"}
    with open(os.path.join(OUT, "pytorch-allocations.json"), "w") as f:
        json.dump(histories, f)
    failed = [n for n, h in histories.items() if "error" in h]
    add("pytorch_allocations", "failed" if failed else "passed",
        ", ".join(f"{n}: {len(h.get('events', []))} events" if "error" not in h else f"{n}: {h['error'][-200:]}"
                  for n, h in histories.items()) + " (pytorch-allocations.json)")


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
    """The small DDP job (two ranks sharing the GPU: the communication path) and the seed single-GPU job (20 ×
    Linear(2000), batch 2048: GEMMs long enough that the trace's op times can be held against their FLOPs)."""
    results = []
    for name, flags in (("cuda-ddp.sstrace", [*JOB, "--strategy", "ddp", "--world", "2"]),
                        ("cuda-single.sstrace", ["--model", "mlp:20x2000:relu", "--strategy", "single", "--batch",
                                                 "2048", "--steps", "2"])):
        trace = os.path.join(OUT, name)
        rc, out, err, _ = sh([CLI, "run", *flags, "--backend", BACKEND, "--out", trace])
        rc_check, check_out, check_err, _ = sh([CLI, "trace", "check", trace])
        results.append((name, rc, rc_check, check_out.strip().splitlines()[-1] if check_out.strip() else check_err.strip(),
                        os.path.getsize(trace) if os.path.exists(trace) else 0))
    add("trace", "passed" if all(rc == 0 and rc_check == 0 for _, rc, rc_check, _, _ in results) else "failed",
        "; ".join(f"{name}: run exit {rc}, trace check exit {rc_check}: {line}" for name, rc, rc_check, line, _ in results),
        {"files": {name: size for name, _, _, _, size in results}})


def write_report():
    started, gpu_reason = report_state["started"], report_state["gpu_reason"]
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
    library_check()
    torch_info = torch_check()
    inventory, report_state["gpu_reason"] = gpu_inventory()
    if BACKEND != "cuda":
        inventory, report_state["gpu_reason"] = {}, None
        add("dry_run", "passed", f"SHARDSCOPE_GPU_CHECKS_BACKEND={BACKEND}: the GPU checks run on the {BACKEND} backend")
    torch_ok = torch_info is not None and bool(torch_info.get("cuda_available"))
    single = ["--model", "mlp:20x2000:relu", "--strategy", "single", "--world", "1", "--batch", "2048", "--steps", "3"]
    ddp = ["--model", "mlp:1x1000", "--strategy", "ddp", "--world", "2", "--batch", "64", "--steps", "3"]
    # PyTorch's ZeRO tutorial: DDP over 20 × Linear(2000, 2000), ZeroRedundancyOptimizer(Adam), 20 samples a rank.
    zero1 = ["--model", "mlp:20x2000", "--strategy", "zero1", "--world", "2", "--batch", "20", "--steps", "3"]
    torch_single = ["--layers", "20", "--width", "2000", "--batch", "2048", "--steps", "3"]
    torch_ddp = ["--layers", "1", "--width", "1000", "--no-relu", "--world", "2", "--strategy", "ddp", "--batch", "64",
                 "--steps", "3"]
    torch_zero1 = ["--layers", "20", "--width", "2000", "--no-relu", "--world", "2", "--strategy", "zero1", "--batch",
                   "20", "--steps", "3"]
    times = {}

    def reference(name, torch_args, flags):
        times[name] = reference_comparison(name, torch_args, flags)

    def timing(name, flags, reference_name):
        if BACKEND != "cuda":  # the dry run: the cpu backend against made-up PyTorch times
            times.setdefault(reference_name, [1.0, 1.0])
        if times.get(reference_name):
            step_time(flags, times[reference_name], name)
        else:
            add(name, "skipped", f"no PyTorch step times ({reference_name} did not run)")

    # Most telling first: PyTorch's own figures and ours beside them, then every strategy, then the rest, so a
    # machine taken back early still leaves the answers that matter most. Each check says whether it needs PyTorch
    # with CUDA; the step times need it only on a GPU (the dry run times itself against made-up PyTorch times).
    checks_in_order = [
        ("pytorch_reference_single", lambda: reference("pytorch_reference_single", torch_single, single), True),
        ("pytorch_reference_ddp", lambda: reference("pytorch_reference_ddp", torch_ddp, ddp), True),
        ("pytorch_reference_zero1", lambda: reference("pytorch_reference_zero1", torch_zero1, zero1), True),
        ("cublas_workspace", cublas_workspaces, True),
        ("pytorch_allocations", lambda: allocation_histories(
            [("single", torch_single), ("ddp", torch_ddp), ("zero1", torch_zero1)]), True),
        ("pytorch_gpt2", pytorch_gpt2, BACKEND == "cuda"),
        ("strategies", strategy_runs, False),
        ("strategies_16_bit", lambda: strategy_runs(("bf16", "fp16"), STRATEGIES, (2,), "strategies_16_bit"), False),
        ("strategies_gpt2", lambda: strategy_runs(("fp32", "bf16"), STRATEGIES, (2,), "strategies_gpt2", GPT2_JOB), False),
        ("gpt2_checkpointing", gpt2_checkpointing, False),
        ("trace", recorded_trace, False),
        ("out_of_memory", out_of_memory, False),
        ("gpu_tests", gpu_tests, False),
        ("step_time_single", lambda: timing("step_time_single", single, "pytorch_reference_single"), BACKEND == "cuda"),
        ("step_time_ddp", lambda: timing("step_time_ddp", ddp, "pytorch_reference_ddp"), BACKEND == "cuda"),
        ("step_time_gpt2", gpt2_step_time, BACKEND == "cuda"),
    ]
    if BACKEND != "cuda":  # no real out-of-memory run on the cpu backend
        checks_in_order = [c for c in checks_in_order if c[0] != "out_of_memory"]
    only = [n for n in os.environ.get("SHARDSCOPE_GPU_CHECKS_ONLY", "").split(",") if n]
    for name, check, needs_torch in checks_in_order:
        if only and name not in only:
            continue
        if inventory is None:
            add(name, "skipped", f"no GPU: {report_state['gpu_reason']}")
        elif needs_torch and not torch_ok:
            add(name, "skipped", "PyTorch with CUDA is not importable")
        elif in_time(name):
            check()
    failed = [c["name"] for c in checks if c["status"] == "failed"]
    print(f"report: {os.path.join(OUT, 'report.md')}; {len(failed)} failed" + (f": {', '.join(failed)}" if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
