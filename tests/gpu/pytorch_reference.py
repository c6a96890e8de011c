#!/usr/bin/env python3
"""PyTorch reference for the CUDA backend: the same MLP job ShardScope runs, printing torch.cuda.memory_allocated()
and max_memory_allocated() at ShardScope's phases (model_created, wrapped, forward, before_step, after_step) and the
step time, so a GPU run can be held against PyTorch on the same GPU (issue "Executor II", item 5).

Not run by CTest (no torch on CI). On a GPU machine with PyTorch 2.x:

    python3 tests/gpu/pytorch_reference.py --layers 20 --width 2000 --batch 2048 --steps 3           # world 1
    python3 tests/gpu/pytorch_reference.py --world 2 --strategy ddp --layers 20 --width 2000 --batch 1024 --steps 3

and beside it, with the same settings (--batch is per rank in both):

    shardscope-cli run --model mlp:20x2000:relu --strategy single --batch 2048 --steps 3 --backend cuda --json
    shardscope-cli memory --model mlp:20x2000:relu --strategy single --batch 2048 --steps 3 --accounting pytorch-2

--strategy ddp / zero1 at --world 1 make a process group of one (gloo, or --backend nccl: the NCCL path of a GPU per
rank, the only one a one-GPU machine can show). World 2 starts two processes with the gloo backend that share GPU 0 (gloo, unlike NCCL, allows that), as
../shared/PYTORCH_MEMORY.md suggests; with two GPUs pass --spread to put rank r on GPU r.
The data are random (ShardScope's batch source is not reproduced): compare memory and time, not losses.
"""
import argparse
import json
import os
import time


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--layers", type=int, default=3)
    p.add_argument("--width", type=int, default=16)
    p.add_argument("--relu", action=argparse.BooleanOptionalAction, default=True)
    p.add_argument("--batch", type=int, default=16, help="samples per rank")
    p.add_argument("--steps", type=int, default=3)
    p.add_argument("--optimizer", choices=["adam", "adamw", "sgd", "momentum"], default="adam")
    p.add_argument("--loss", choices=["mse", "cross-entropy"], default="mse")
    p.add_argument("--world", type=int, default=1)
    p.add_argument("--strategy", choices=["single", "ddp", "zero1"], default="single",
                   help="zero1: DDP + ZeroRedundancyOptimizer, the recipe of PyTorch's ZeRO tutorial")
    p.add_argument("--history", metavar="FILE",
                   help="rank 0 records the caching allocator's history (torch.cuda.memory._record_memory_history) "
                        "and writes every alloc / free with its size and Python frames, and where each phase fell, "
                        "to FILE as JSON: what PyTorch allocated, one by one, to hold against ShardScope's plan")
    p.add_argument("--bucket-cap-mb", type=float, default=None,
                   help="DistributedDataParallel(bucket_cap_mb=); left out by default, as users do: PyTorch 2.x then "
                        "makes its first bucket 1 MiB (_DEFAULT_FIRST_BUCKET_BYTES), which an explicit 25 does not")
    p.add_argument("--gradient-as-bucket-view", action="store_true",
                   help="DistributedDataParallel(gradient_as_bucket_view=True)")
    p.add_argument("--backend", choices=["gloo", "nccl"], default="gloo",
                   help="process group backend (nccl needs a GPU per rank: world 1 on a one-GPU machine)")
    p.add_argument("--spread", action="store_true", help="rank r on GPU r instead of all on GPU 0")
    p.add_argument("--port", type=int, default=29511)
    p.add_argument("--json", action="store_true", help="one JSON line per rank instead of text")
    return p.parse_args()


def build_model(args, torch):
    layers = []
    for i in range(args.layers):
        layers.append(torch.nn.Linear(args.width, args.width))  # with bias, as ShardScope's mlp
        if args.relu and i + 1 < args.layers:
            layers.append(torch.nn.ReLU())
    return torch.nn.Sequential(*layers)


def optimizer_settings(args, torch):
    """The optimizer class and its arguments (ShardScope's defaults: Adam / AdamW lr 1e-3, SGD lr 1e-2)."""
    return {"adam": (torch.optim.Adam, {"lr": 1e-3}), "adamw": (torch.optim.AdamW, {"lr": 1e-3}),
            "momentum": (torch.optim.SGD, {"lr": 1e-2, "momentum": 0.9}),
            "sgd": (torch.optim.SGD, {"lr": 1e-2})}[args.optimizer]


class PhaseRecorder:
    """memory_allocated / max_memory_allocated / memory_reserved at each of ShardScope's phases. With `history`, the
    caching allocator's history is recorded from construction on, each phase marks where it fell in it, and
    write_history saves every event as {action, addr, size, stream, frames (innermost 6, file:line:function)}."""

    def __init__(self, torch, device, history):
        self.torch, self.device, self.history = torch, device, history
        self.records, self.marks = [], []
        if history:
            torch.cuda.memory._record_memory_history(enabled="all", context="all", stacks="python", max_entries=1000000)

    def _trace(self):
        return self.torch.cuda.memory._snapshot()["device_traces"][self.device.index]

    def __call__(self, name, step):
        cuda = self.torch.cuda
        cuda.synchronize(self.device)
        if self.history:
            self.marks.append({"phase": name, "step": step, "index": len(self._trace())})
        self.records.append({"phase": name, "step": step, "allocated": cuda.memory_allocated(self.device),
                             "max_allocated": cuda.max_memory_allocated(self.device),
                             "reserved": cuda.memory_reserved(self.device)})

    def write_history(self, path, result):
        """Saves the history with `result`'s torch, gpu, phases and base_allocated, and stops recording."""
        events = []
        for e in self._trace():
            frames = [f"{os.path.basename(f.get('filename', '?'))}:{f.get('line', 0)}:{f.get('name', '?')}"
                      for f in (e.get("frames") or [])[:6]]
            events.append({"action": e.get("action"), "addr": e.get("addr"), "size": e.get("size"),
                           "stream": e.get("stream"), "frames": frames})
        with open(path, "w") as f:
            json.dump({"torch": result["torch"], "gpu": result["gpu"], "phases": result["phases"], "marks": self.marks,
                       "base_allocated": result["base_allocated"], "events": events}, f)
        self.torch.cuda.memory._record_memory_history(enabled=None)


def run(rank, args):
    import torch
    import torch.distributed as dist

    device = torch.device("cuda", rank if args.spread else 0)
    torch.cuda.set_device(device)
    distributed = args.world > 1 or args.strategy != "single"
    if distributed:
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ.setdefault("MASTER_PORT", str(args.port))
        dist.init_process_group(args.backend, rank=rank, world_size=args.world)
    torch.manual_seed(1234 + rank)
    phase = PhaseRecorder(torch, device, history=bool(args.history) and rank == 0)
    torch.cuda.reset_peak_memory_stats(device)
    base = torch.cuda.memory_allocated(device)  # another rank's tensors do not count: each process has its own
    model = build_model(args, torch).to(device)
    phase("model_created", 0)
    if args.strategy in ("ddp", "zero1"):
        bucket = {} if args.bucket_cap_mb is None else {"bucket_cap_mb": args.bucket_cap_mb}
        model = torch.nn.parallel.DistributedDataParallel(model, device_ids=[device.index],
                                                          gradient_as_bucket_view=args.gradient_as_bucket_view, **bucket)
        phase("wrapped", 0)
    cls, kwargs = optimizer_settings(args, torch)
    if args.strategy == "zero1":
        from torch.distributed.optim import ZeroRedundancyOptimizer
        optimizer = ZeroRedundancyOptimizer(model.parameters(), optimizer_class=cls, **kwargs)
    else:
        optimizer = cls(model.parameters(), **kwargs)
    loss_fn = torch.nn.MSELoss() if args.loss == "mse" else torch.nn.CrossEntropyLoss()
    step_times = []
    for step in range(1, args.steps + 1):
        # The loop of ShardScope's plans (engine/strategy/local_training.h): zero_grad first, so .grad lives from
        # the backward through the optimizer step to the next step's zero_grad (set_to_none=True, the 2.x default).
        optimizer.zero_grad(set_to_none=True)
        x = torch.randn(args.batch, args.width, device=device)
        if args.loss == "mse":
            y = torch.randn(args.batch, args.width, device=device)
        else:
            y = torch.randint(0, args.width, (args.batch,), device=device)
        torch.cuda.synchronize(device)
        start = time.perf_counter()
        loss = loss_fn(model(x), y)  # as local_training.h: the output is not kept; loss, x, y live until rebound
        phase("forward", step)
        loss.backward()
        phase("before_step", step)
        optimizer.step()
        phase("after_step", step)
        torch.cuda.synchronize(device)
        step_times.append(time.perf_counter() - start)  # includes the phase synchronisations, as ShardScope's phases
    result = {"rank": rank, "world": args.world, "torch": torch.__version__, "gpu": torch.cuda.get_device_name(device),
              "base_allocated": base, "phases": phase.records, "step_times_s": step_times}
    if phase.history:
        phase.write_history(args.history, result)
    if args.json:
        print(json.dumps(result), flush=True)
    else:
        print(f"rank {rank} on {result['gpu']} (torch {result['torch']}), world {args.world}, {args.strategy}")
        for r in phase.records:
            print(f"  step {r['step']} {r['phase']:<12} allocated {r['allocated']:>14,} B  "
                  f"max {r['max_allocated']:>14,} B  reserved {r['reserved']:>14,} B")
        print("  step times: " + ", ".join(f"{t * 1e3:.3f} ms" for t in step_times), flush=True)
    if distributed:
        dist.destroy_process_group()


def main():
    args = parse_args()
    if args.world > 1 and args.strategy == "single":
        args.strategy = "ddp"
    if args.world == 1:
        run(0, args)
        return
    import torch.multiprocessing as mp
    mp.spawn(run, args=(args,), nprocs=args.world, join=True)


if __name__ == "__main__":
    main()
