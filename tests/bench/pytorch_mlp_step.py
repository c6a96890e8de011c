#!/usr/bin/env python3
"""PyTorch's time for the training step that bench_executor's BM_MlpAdamStep measures, on the same machine.

The job: 20 x nn.Linear(2000, 2000) (with bias, no activation), batch 20, MSE loss, Adam (lr 1e-3), one thread
(torch.set_num_threads(1); run with OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 as the executor does). A step is
zero_grad(set_to_none=True), forward, loss, backward, optimizer.step(), as ShardScope's plan lowers it. The first
step (Adam's state created) is left out, as BM_MlpAdamStep leaves it out; the figures are per steady step, wall
and process CPU time (the CPU time is the fair one on a loaded machine).

Run: OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 /usr/bin/python3 tests/bench/pytorch_mlp_step.py [--steps N] [--repeats R]
Compare with: OPENBLAS_NUM_THREADS=1 build/tests/bench/bench_executor --benchmark_filter=BM_MlpAdamStep
"""
import argparse
import statistics
import time

import torch


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=3, help="timed steady steps per repeat (default 3)")
    parser.add_argument("--repeats", type=int, default=3, help="repeats; the median is reported (default 3)")
    parser.add_argument("--layers", type=int, default=20)
    parser.add_argument("--width", type=int, default=2000)
    parser.add_argument("--batch", type=int, default=20)
    args = parser.parse_args()

    torch.set_num_threads(1)
    torch.manual_seed(1234)
    walls, cpus = [], []
    for _ in range(args.repeats):
        model = torch.nn.Sequential(*[torch.nn.Linear(args.width, args.width) for _ in range(args.layers)])
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
        loss_fn = torch.nn.MSELoss()
        x = torch.randn(args.batch, args.width)
        y = torch.randn(args.batch, args.width)

        def step():
            optimizer.zero_grad(set_to_none=True)
            loss = loss_fn(model(x), y)
            loss.backward()
            optimizer.step()

        step()  # Adam's exp_avg / exp_avg_sq are created here
        wall0, cpu0 = time.perf_counter(), time.process_time()
        for _ in range(args.steps):
            step()
        walls.append((time.perf_counter() - wall0) / args.steps)
        cpus.append((time.process_time() - cpu0) / args.steps)
        del model, optimizer

    print(f"torch {torch.__version__}, {torch.get_num_threads()} thread(s), "
          f"{args.layers} x Linear({args.width}), batch {args.batch}, Adam")
    print(f"per step (median of {args.repeats} x {args.steps} steps): wall {statistics.median(walls) * 1e3:.1f} ms, "
          f"process CPU {statistics.median(cpus) * 1e3:.1f} ms")


if __name__ == "__main__":
    main()
