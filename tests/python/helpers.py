"""Shared by the recorder's tests: paths, running the recorder on a script, the C++ CLI, and the figures a test
derives by hand from how PyTorch works (never from the recorder's output)."""
import glob
import json
import os
import shutil
import socket
import subprocess
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
PYTHON_DIR = os.path.join(REPO, "python")
SCRIPTS = os.path.join(HERE, "scripts")
if PYTHON_DIR not in sys.path:
    sys.path.insert(0, PYTHON_DIR)

F32 = 4  # bytes of a float32


def env():
    e = dict(os.environ)
    e["PYTHONPATH"] = PYTHON_DIR + (os.pathsep + e["PYTHONPATH"] if e.get("PYTHONPATH") else "")
    e.setdefault("OMP_NUM_THREADS", "1")
    return e


def record(out, script, *args, device="cpu", extra=(), timeout=120):
    """Runs `python -m shardscope.record --out OUT --device DEVICE -- SCRIPT ARGS` as a user would (the script runs
    on $TRAIN_DEVICE = DEVICE); returns the CompletedProcess."""
    command = [sys.executable, "-m", "shardscope.record", "--out", out, "--device", device, *extra, "--",
               os.path.join(SCRIPTS, script), *(str(a) for a in args)]
    e = env()
    e["TRAIN_DEVICE"] = device
    return subprocess.run(command, env=e, capture_output=True, text=True, timeout=timeout)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cli():
    """The shardscope-cli to check files with: $SHARDSCOPE_CLI, else on PATH, else a build in this checkout."""
    path = os.environ.get("SHARDSCOPE_CLI")
    if path:
        return path if os.access(path, os.X_OK) else None
    found = shutil.which("shardscope-cli")
    if found:
        return found
    for candidate in sorted(glob.glob(os.path.join(REPO, "build*", "app", "shardscope-cli"))):
        if os.access(candidate, os.X_OK):
            return candidate
    return None


def require_cli(test):
    path = cli()
    if path is None:
        raise unittest.SkipTest("shardscope-cli not found: set SHARDSCOPE_CLI to a built shardscope-cli "
                                "(e.g. build/app/shardscope-cli) to check the recorded traces with the C++ reader")
    return path


def run_cli(*args):
    return subprocess.run([cli(), *args], capture_output=True, text=True, timeout=120)


def cli_json(*args):
    result = run_cli(*args)
    if result.returncode != 0:
        raise AssertionError(f"shardscope-cli {' '.join(args)} exited {result.returncode}: {result.stderr}")
    return json.loads(result.stdout)


# ---------------------------------------------------------------- figures derived from how PyTorch works

def linear_bytes(fan_in, fan_out):
    """nn.Linear(fan_in, fan_out): weight fan_out x fan_in and bias fan_out, float32."""
    return (fan_in * fan_out + fan_out) * F32


def storage_bytes(t):
    s = t.untyped_storage() if hasattr(t, "untyped_storage") else t.storage()
    s = getattr(s, "_storage", s)
    return int(s.nbytes())


def mse_result_bytes(rows, cols, device="cpu"):
    """The storage mse_loss(reduction='mean') returns: PyTorch computes the element-wise loss into a tensor of the
    input's size and reduces it into that storage (1.13 and 2.x CPU keep the input-sized storage under the 0-d
    result), so ask PyTorch itself rather than assume 4 bytes."""
    import torch
    a = torch.zeros(rows, cols, device=device)
    return storage_bytes(torch.nn.functional.mse_loss(a, torch.zeros(rows, cols, device=device)))


def adam_step_state_bytes():
    """What Adam keeps per parameter besides exp_avg and exp_avg_sq: its 'step' (a float32 scalar tensor on the CPU
    since 1.12; a Python number before)."""
    import torch
    p = torch.nn.Parameter(torch.zeros(3))
    opt = torch.optim.Adam([p])
    p.grad = torch.zeros(3)
    opt.step()
    step = opt.state[p]["step"]
    return storage_bytes(step) if isinstance(step, torch.Tensor) else 0


def record_function_bytes():
    """What this PyTorch's record_function keeps while Optimizer.step runs (the CPU device's
    `--record-function-bytes`): 1.x returns a uint8 tensor from torch.ops.profiler._record_function_enter (its size is
    sizeof(at::RecordFunction)); 2.x an object. Asked of a fresh interpreter, as the recorded scripts run."""
    probe = ("import torch\n"
             "r = torch.autograd.profiler.record_function('probe')\n"
             "r.__enter__()\n"
             "h = getattr(r, 'handle', None)\n"
             "print(h.numel() * h.element_size() if isinstance(h, torch.Tensor) else 0)\n"
             "r.__exit__(None, None, None)\n")
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env(), timeout=60)
    if result.returncode != 0:
        raise AssertionError(result.stderr)
    return int(result.stdout.strip())


def only_nonzero(categories):
    return {k: v for k, v in categories.items() if v}


def phases(trace, rank):
    """[(phase, step, {category: bytes}, allocated)] of one rank, replaying its Alloc / Free events."""
    from shardscope import trace_reader
    return [(name, step, only_nonzero(cats), allocated) for name, step, cats, allocated, _ in
            trace_reader.phase_bytes(trace, rank)]
