#!/usr/bin/env python3
"""PyTorch's time for the GPT-2 training step that bench_executor's BM_Gpt2Step measures, on the same machine.

The model is tests/torch/check_gpt2_against_torch.py's (transformers' GPT2LMHeadModel op for op, eager attention,
dropout off), AdamW (lr 1e-3), one thread. A step is zero_grad(set_to_none=True), forward, loss, backward,
optimizer.step(); the first step (AdamW's state created) is left out. Per steady step: wall and process CPU time,
and model GFLOP/s by Megatron's count (3 × forward: 24·s·h² + 4·s²·h a block and 2·s·h·V for the LM head).

Run: OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 /usr/bin/python3 tests/bench/pytorch_gpt2_step.py [--small] [--steps N]
Compare with: OPENBLAS_NUM_THREADS=1 build/tests/bench/bench_executor --benchmark_filter=BM_Gpt2Step
"""
import argparse
import json
import os
import statistics
import sys
import time

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests", "torch"))
import check_gpt2_against_torch as gpt  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", action="store_true", help="GPT-2 small's shape, seq 256, batch 4 (default: gpt2-tiny, seq 64, batch 8)")
    parser.add_argument("--steps", type=int, default=2, help="timed steady steps per repeat (default 2)")
    parser.add_argument("--repeats", type=int, default=2, help="repeats; the median is reported (default 2)")
    args = parser.parse_args()
    torch.set_num_threads(1)
    config = json.load(open(os.path.join(ROOT, "assets", "models", "gpt2" if args.small else "gpt2-tiny", "config.json")))
    config.setdefault("n_inner", None)
    gpt.SEQ, gpt.BATCH = (256, 4) if args.small else (64, 8)
    init = gpt.initial_parameters(config)
    walls, cpus = [], []
    for _ in range(args.repeats):
        p = {k: v.clone().requires_grad_(True) for k, v in init.items()}
        optimizer = torch.optim.AdamW(list(p.values()), lr=1e-3)
        ids, targets = gpt.token_batch(0, config["vocab_size"])

        def step():
            optimizer.zero_grad(set_to_none=True)
            gpt.forward_loss(p, config, ids, targets).backward()
            optimizer.step()

        step()
        wall0, cpu0 = time.perf_counter(), time.process_time()
        for _ in range(args.steps):
            step()
        walls.append((time.perf_counter() - wall0) / args.steps)
        cpus.append((time.process_time() - cpu0) / args.steps)
    s, h, layers, vocab = gpt.SEQ, config["n_embd"], config["n_layer"], config["vocab_size"]
    flops = 3 * gpt.BATCH * (layers * (24 * s * h * h + 4 * s * s * h) + 2 * s * h * vocab)
    wall = statistics.median(walls)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} thread(s), {'GPT-2 small shape' if args.small else 'gpt2-tiny'}, "
          f"seq {s}, batch {gpt.BATCH}, AdamW")
    print(f"per step (median of {args.repeats} x {args.steps}): wall {wall * 1e3:.1f} ms, process CPU "
          f"{statistics.median(cpus) * 1e3:.1f} ms, model {flops / wall * 1e-9:.1f} GFLOP/s")


if __name__ == "__main__":
    main()
