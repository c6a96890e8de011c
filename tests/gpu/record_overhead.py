#!/usr/bin/env python3
"""Issue 37's cost figure: how much the Python recorder (python -m shardscope.record) slows a GPU training step.
Runs one user-style script twice, plain and under the recorder, each in its own process, and compares the median
step (CUDA-synchronised wall time around zero_grad, forward, backward and step; the first steps are warm-up).

The script is this file itself with --train: an unmodified loop over a Hugging Face GPT-2 (small: 12 blocks, width
768, seq 512, batch 8; dropout off; AdamW), or an MLP, as a user writes it. Without CUDA (the dry run on the build
machine) both run on the CPU at toy sizes.

usage: record_overhead.py OUT.json [--steps N] [--models gpt2-small,mlp]
       record_overhead.py --train MODEL STEPS      (the training script; prints step_times_ms ...)
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
WARMUP = 3


def train(model_name, steps):
    import torch
    cuda = torch.cuda.is_available()
    device = torch.device("cuda" if cuda else "cpu")
    torch.manual_seed(0)
    if model_name == "gpt2-small":
        import transformers
        size = dict(n_layer=12, n_embd=768, n_head=12, vocab_size=50257) if cuda else \
            dict(n_layer=2, n_embd=64, n_head=4, vocab_size=512)
        seq, batch = (512, 8) if cuda else (32, 2)
        config = transformers.GPT2Config(n_positions=max(seq, 64), resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0,
                                         **size)
        model = transformers.AutoModelForCausalLM.from_config(config).to(device)
        make = lambda: torch.randint(0, config.vocab_size, (batch, seq), device=device)  # noqa: E731
        loss_of = lambda ids: model(input_ids=ids, labels=ids).loss  # noqa: E731
    else:  # 24 x Linear(2048) + ReLU, batch 2048: ~27 ms a step in PyTorch eager on an H200
        width, layers, batch = (2048, 24, 2048) if cuda else (64, 4, 32)
        blocks = []
        for _ in range(layers):
            blocks += [torch.nn.Linear(width, width), torch.nn.ReLU()]
        model = torch.nn.Sequential(*blocks).to(device)
        make = lambda: (torch.randn(batch, width, device=device), torch.randn(batch, width, device=device))  # noqa
        loss_of = lambda xy: torch.nn.functional.mse_loss(model(xy[0]), xy[1])  # noqa: E731
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    times = []
    for _ in range(steps):
        batch_data = make()
        if cuda:
            torch.cuda.synchronize()
        start = time.perf_counter()
        optimizer.zero_grad(set_to_none=True)
        loss_of(batch_data).backward()
        optimizer.step()
        if cuda:
            torch.cuda.synchronize()
        times.append(time.perf_counter() - start)
    print("step_times_ms " + " ".join(f"{t * 1e3:.3f}" for t in times), flush=True)


def step_times(output):
    for line in output.splitlines():
        if line.startswith("step_times_ms "):
            return [float(x) for x in line.split()[1:]]
    return None


def measure(model_name, steps, recorded, workdir):
    cmd = [sys.executable]
    if recorded:
        cmd += ["-m", "shardscope.record", "--out", os.path.join(workdir, f"{model_name}.sstrace"), "--"]
    cmd += [os.path.abspath(__file__), "--train", model_name, str(steps)]
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"), PYTHONUNBUFFERED="1")
    start = time.monotonic()
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    times = step_times(p.stdout)
    result = {"command": " ".join(cmd), "exit": p.returncode, "wall_s": round(time.monotonic() - start, 2)}
    if times is None or len(times) <= WARMUP:
        result["error"] = (p.stderr or p.stdout)[-1500:]
        return result
    timed = times[WARMUP:]
    result.update(step_times_ms=times, median_ms=statistics.median(timed))
    trace = os.path.join(workdir, f"{model_name}.sstrace")
    if recorded and os.path.exists(trace):
        result["trace_bytes"] = os.path.getsize(trace)
    return result


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--train":
        train(sys.argv[2], int(sys.argv[3]))
        return 0
    out = sys.argv[1]
    steps = int(sys.argv[sys.argv.index("--steps") + 1]) if "--steps" in sys.argv else 12
    models = (sys.argv[sys.argv.index("--models") + 1] if "--models" in sys.argv else "gpt2-small,mlp").split(",")
    report = {"warmup_steps": WARMUP, "steps": steps, "jobs": []}
    with tempfile.TemporaryDirectory() as workdir:
        for model_name in models:
            plain = measure(model_name, steps, False, workdir)
            recorded = measure(model_name, steps, True, workdir)
            job = {"model": model_name, "plain": plain, "recorded": recorded}
            if "median_ms" in plain and "median_ms" in recorded:
                job["slowdown"] = recorded["median_ms"] / plain["median_ms"]
            report["jobs"].append(job)
            print(f"{model_name}: plain {plain.get('median_ms', plain.get('error'))} ms, recorded "
                  f"{recorded.get('median_ms', recorded.get('error'))} ms, slowdown {job.get('slowdown')}", flush=True)
            with open(out, "w") as f:
                json.dump(report, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
