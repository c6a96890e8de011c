"""Measures a device profile through PyTorch's own kernels: what the simulator interpolates to predict the step of a
PyTorch job on this machine (issue 40). Writes achieved FLOP/s and bytes/s as curves over size per op kind, the
launch and synchronisation overheads and, with --collectives, gloo collectives between local processes.

    PYTHONPATH=python python3 -m shardscope.calibrate --out PROFILE.json [--device cuda|cpu] [--quick] [--passes N]

Profile format (version 1): {"format": "shardscope-device-profile", "version": 1, "source": "pytorch", "machine":
{...}, "date", "settings": {...}, "gemm": {dtype: [{"layout", "m", "n", "k", "batch", "seconds", "flop_per_s"}]},
"attention": {dtype: [{"kernel", "batch_heads", "seq", "head_dim", "forward_s", "backward_s"}]},
"elementwise": {op: {dtype: [{"elements", "bytes", "seconds", "bytes_per_s"}]}}, "optimizer": {name: [{"parameters",
"tensors", "seconds"}]}, "copy": {"host_to_device"|"device_to_host": [{"bytes", "seconds"}]}, "overheads":
{"launch_s", "synchronize_s"}, "collectives": {kind: [{"ranks", "bytes", "seconds"}]}}. A GEMM's layout names the
Linear pass it times: "forward" y = x·Wᵀ (m = rows, n = out, k = in), "input_grad" dx = dy·W (m, n = in, k = out),
"weight_grad" dW = dyᵀ·x (m = out, n = in, k = rows), "batched" a batched product (batch > 1). Times are CUDA-event
times over repeated calls after a warm-up (wall time on the CPU), the median of three repetitions. With --passes N
(default 3; 1 with --quick) the whole grid is measured N times, one pass after another, and each point's time is its
median over the passes (its rate recomputed from it), so a machine whose speed drifts over seconds gives every point
the same mix of moments, as `shardscope-cli calibrate --passes` does for our kernels; collectives are measured once.
"""
import argparse
import json
import os
import platform
import socket
import statistics
import sys
import time

FORMAT = "shardscope-device-profile"
VERSION = 1


def progress(message):
    print(f"calibrate: {message}", file=sys.stderr, flush=True)


class Timer:
    """Seconds per call of fn, repeated until a repetition lasts at least min_s; median of three repetitions."""

    def __init__(self, torch, device, min_s):
        self.torch, self.device, self.min_s = torch, device, min_s

    def _run(self, fn, reps):
        if self.device.type == "cuda":
            begin = self.torch.cuda.Event(enable_timing=True)
            end = self.torch.cuda.Event(enable_timing=True)
            begin.record()
            for _ in range(reps):
                fn()
            end.record()
            end.synchronize()
            return begin.elapsed_time(end) / 1e3
        start = time.perf_counter()
        for _ in range(reps):
            fn()
        return time.perf_counter() - start

    def __call__(self, fn):
        fn()  # warm-up: kernel selection, workspace
        if self.device.type == "cuda":
            self.torch.cuda.synchronize(self.device)
        once = max(self._run(fn, 1), 1e-7)
        reps = max(1, min(1000, int(self.min_s / once)))
        return statistics.median(self._run(fn, reps) / reps for _ in range(3))


def gemm_curves(torch, device, timer, dtypes, sizes_m, sizes_nk, max_flop):
    """Each Linear pass over the grid, leaving out products above max_flop[dtype] (throughput is flat there; the
    simulator holds the largest measured figure beyond the grid)."""
    out = {}
    for name in dtypes:
        dtype = getattr(torch, name)
        points = []
        for m in sizes_m:
            for n in sizes_nk:
                for k in sizes_nk:
                    if 2.0 * m * n * k > max_flop.get(name, float("inf")):
                        continue
                    x = torch.randn(m, k, device=device, dtype=dtype)
                    w = torch.randn(n, k, device=device, dtype=dtype)
                    dy = torch.randn(m, n, device=device, dtype=dtype)
                    passes = {"forward": (lambda: torch.nn.functional.linear(x, w), m, n, k),
                              "input_grad": (lambda: dy @ w, m, k, n),
                              "weight_grad": (lambda: dy.t() @ x, n, k, m)}
                    for layout, (fn, pm, pn, pk) in passes.items():
                        seconds = timer(fn)
                        points.append({"layout": layout, "m": pm, "n": pn, "k": pk, "batch": 1, "seconds": seconds,
                                       "flop_per_s": 2.0 * pm * pn * pk / seconds})
                    del x, w, dy
        out[name] = points
        progress(f"gemm {name}: {len(points)} points")
    return out


def batched_gemm_curves(torch, device, timer, dtypes, shapes):
    """Attention's score and context products: [batch, m, k] x [batch, k, n]."""
    for name in dtypes:
        dtype = getattr(torch, name)
        for batch, m, n, k in shapes:
            a = torch.randn(batch, m, k, device=device, dtype=dtype)
            b = torch.randn(batch, k, n, device=device, dtype=dtype)
            seconds = timer(lambda: torch.bmm(a, b))
            yield name, {"layout": "batched", "m": m, "n": n, "k": k, "batch": batch, "seconds": seconds,
                         "flop_per_s": 2.0 * batch * m * n * k / seconds}


def attention_curves(torch, device, timer, dtypes, shapes):
    """scaled_dot_product_attention forward and forward + backward per kernel PyTorch picks for the shape."""
    out = {}
    sdpa = getattr(torch.nn.functional, "scaled_dot_product_attention", None)
    if sdpa is None:
        return out
    for name in dtypes:
        dtype = getattr(torch, name)
        points = []
        for batch_heads, seq, head_dim in shapes:
            q, k, v = (torch.randn(1, batch_heads, seq, head_dim, device=device, dtype=dtype, requires_grad=True)
                       for _ in range(3))
            grad = torch.randn(1, batch_heads, seq, head_dim, device=device, dtype=dtype)
            forward = timer(lambda: sdpa(q, k, v, is_causal=True))
            both = timer(lambda: sdpa(q, k, v, is_causal=True).backward(grad))
            points.append({"kernel": "sdpa-default", "batch_heads": batch_heads, "seq": seq, "head_dim": head_dim,
                           "forward_s": forward, "backward_s": max(both - forward, 0.0)})
        out[name] = points
        progress(f"attention {name}: {len(points)} points")
    return out


def elementwise_curves(torch, device, timer, dtypes, sizes):
    """Memory-bound kernels: bytes moved (reads + writes of the op's tensors) over time."""
    out = {}
    for op in ("add", "mul", "relu", "relu_backward", "gelu", "copy", "sum_rows", "softmax", "layer_norm"):
        out[op] = {}
        for name in dtypes:
            dtype = getattr(torch, name)
            size = 4 if name == "float32" else 2
            points = []
            for elements in sizes:
                a = torch.randn(elements, device=device, dtype=dtype)
                b = torch.randn(elements, device=device, dtype=dtype)
                cols = 1024
                rows = max(1, elements // cols)
                matrix = a[: rows * cols].view(rows, cols)
                fns = {"add": (lambda: a + b, 3), "mul": (lambda: a * b, 3), "relu": (lambda: torch.relu(a), 2),
                       "relu_backward": (lambda: torch.where(a > 0, b, torch.zeros((), device=device, dtype=dtype)),
                                         3),
                       "gelu": (lambda: torch.nn.functional.gelu(a), 2), "copy": (lambda: a.clone(), 2),
                       "sum_rows": (lambda: matrix.sum(0), 1), "softmax": (lambda: torch.softmax(matrix, -1), 2),
                       "layer_norm": (lambda: torch.nn.functional.layer_norm(matrix, (cols,)), 2)}
                fn, passes = fns[op]
                seconds = timer(fn)
                moved = passes * elements * size
                points.append({"elements": elements, "bytes": moved, "seconds": seconds, "bytes_per_s": moved / seconds})
                del a, b, matrix
            out[op][name] = points
    progress(f"elementwise: {len(out)} ops")
    return out


def optimizer_curves(torch, device, timer, sizes, tensor_elements):
    """One optimizer step (PyTorch's default implementation for the device: foreach on CUDA) over parameters of
    tensor_elements each, adding up to each size."""
    out = {}
    makers = {"adam": lambda p: torch.optim.Adam(p, lr=1e-3), "adamw": lambda p: torch.optim.AdamW(p, lr=1e-3),
              "sgd": lambda p: torch.optim.SGD(p, lr=1e-2),
              "momentum": lambda p: torch.optim.SGD(p, lr=1e-2, momentum=0.9)}
    for name, make in makers.items():
        points = []
        for total in sizes:
            count = max(1, total // tensor_elements)
            each = total // count
            params = [torch.zeros(each, device=device, requires_grad=True) for _ in range(count)]
            for p in params:
                p.grad = torch.randn(each, device=device)
            optimizer = make(params)
            seconds = timer(optimizer.step)
            points.append({"parameters": each * count, "tensors": count, "seconds": seconds})
            del params, optimizer
        out[name] = points
    progress(f"optimizer: {len(out)} kinds")
    return out


def copy_curves(torch, device, timer, sizes):
    if device.type != "cuda":
        return {}
    out = {"host_to_device": [], "device_to_host": []}
    for nbytes in sizes:
        host = torch.empty(nbytes, dtype=torch.uint8, pin_memory=True)
        dev = torch.empty(nbytes, dtype=torch.uint8, device=device)
        out["host_to_device"].append({"bytes": nbytes, "pinned": True,
                                      "seconds": timer(lambda: dev.copy_(host, non_blocking=True))})
        out["device_to_host"].append({"bytes": nbytes, "pinned": True,
                                      "seconds": timer(lambda: host.copy_(dev, non_blocking=True))})
    progress("host copies")
    return out


def overheads(torch, device):
    tiny = torch.zeros(1, device=device)
    for _ in range(100):
        tiny.add_(1)
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    count = 2000
    start = time.perf_counter()
    for _ in range(count):
        tiny.add_(1)
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    launch = (time.perf_counter() - start) / count
    sync = 0.0
    if device.type == "cuda":
        start = time.perf_counter()
        for _ in range(200):
            torch.cuda.synchronize(device)
        sync = (time.perf_counter() - start) / 200
    return {"launch_s": launch, "synchronize_s": sync,
            "note": "launch_s: host time per tiny in-place add issued back to back (the per-op floor of an eager "
                    "step); synchronize_s: an idle torch.cuda.synchronize"}


def _collective_rank(rank, world, port, sizes, device_type, queue):
    import torch
    import torch.distributed as dist
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=world)
    device = torch.device(device_type, 0)
    results = {"all_reduce": [], "all_gather": [], "broadcast": []}
    for nbytes in sizes:
        t = torch.zeros(max(1, nbytes // 4), device=device)
        gathered = [torch.zeros_like(t) for _ in range(world)]
        ops = {"all_reduce": lambda: dist.all_reduce(t), "all_gather": lambda: dist.all_gather(gathered, t),
               "broadcast": lambda: dist.broadcast(t, 0)}
        for kind, fn in ops.items():
            fn()
            reps = 3 if nbytes > 2 ** 24 else 10
            dist.barrier()
            start = time.perf_counter()
            for _ in range(reps):
                fn()
            if device.type == "cuda":
                torch.cuda.synchronize(device)
            results[kind].append({"ranks": world, "bytes": nbytes, "seconds": (time.perf_counter() - start) / reps})
    if rank == 0:
        queue.put(results)
    dist.barrier()
    dist.destroy_process_group()


def collective_curves(device_type, sizes, worlds=(2,), port=29871):
    """gloo collectives between processes on this machine (ranks sharing the one GPU where there is one): the
    path ShardScope's local ranks model; NCCL between GPUs needs a GPU per rank."""
    import torch.multiprocessing as mp
    out = {"backend": "gloo", "note": "ranks are processes on this machine sharing device 0"}
    ctx = mp.get_context("spawn")
    for world in worlds:
        queue = ctx.Queue()
        procs = [ctx.Process(target=_collective_rank, args=(r, world, port + world, sizes, device_type, queue))
                 for r in range(world)]
        for p in procs:
            p.start()
        try:
            result = queue.get(timeout=120)
        except Exception as e:  # a rank that failed: say so, keep the rest of the profile
            result = {"error": repr(e)}
        for p in procs:
            p.join(timeout=30)
            if p.is_alive():
                p.kill()
        for kind, points in result.items():
            out.setdefault(kind, [])
            if isinstance(points, list):
                out[kind] += points
            else:
                out[kind] = points
    progress("collectives")
    return out


def machine(torch, device):
    info = {"host": socket.gethostname(), "platform": platform.platform(), "python": platform.python_version(),
            "torch": torch.__version__, "device": device.type, "cpu_threads": torch.get_num_threads()}
    if device.type == "cuda":
        props = torch.cuda.get_device_properties(device)
        info.update(name=torch.cuda.get_device_name(device), memory_bytes=props.total_memory,
                    multiprocessors=props.multi_processor_count, capability=f"{props.major}.{props.minor}",
                    cuda=torch.version.cuda)
    else:
        info["name"] = platform.processor() or platform.machine()
    return info


def is_time_key(key):
    return key == "seconds" or (key.endswith("_s") and not key.endswith("_per_s"))


def point_identity(point):
    """What names a measured point: everything but its times and the rates derived from them."""
    return tuple(sorted((k, v) for k, v in point.items()
                        if not is_time_key(k) and not k.endswith("_per_s") and not isinstance(v, (dict, list))))


def median_of_passes(passes):
    """One section's figures from each pass merged: each point's times the median over the passes that measured it
    (points are matched by what names them, not by position), and each rate (`*_per_s`) recomputed as the work it
    measured (rate × seconds, the same in every pass) over the median seconds."""
    first = passes[0]
    if isinstance(first, dict):
        if any(is_time_key(k) for k in first):
            merged = dict(first)
            for key in first:
                if is_time_key(key):
                    merged[key] = statistics.median(p[key] for p in passes)
            for key in first:
                if key.endswith("_per_s") and first.get("seconds"):
                    merged[key] = first[key] * first["seconds"] / merged["seconds"]
            return merged
        return {k: median_of_passes([p[k] for p in passes if k in p]) for k in first}
    if isinstance(first, list) and first and isinstance(first[0], dict):
        by_identity = {}
        for p in passes:
            for point in p:
                by_identity.setdefault(point_identity(point), []).append(point)
        return [median_of_passes(by_identity[point_identity(point)]) for point in first]
    return first


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python3 -m shardscope.calibrate", description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, help="the profile to write (JSON)")
    ap.add_argument("--device", choices=["cuda", "cpu"], help="default: cuda when PyTorch sees a GPU, else cpu")
    ap.add_argument("--quick", action="store_true", help="small grids (a check of the script, not a profile to use)")
    ap.add_argument("--passes", type=int, help="how many times the whole grid is measured, one pass after another; "
                    "each point's time is its median over the passes (default 3; 1 with --quick)")
    ap.add_argument("--collectives", action=argparse.BooleanOptionalAction, default=True,
                    help="also time gloo collectives between 2 local processes (default on)")
    args = ap.parse_args(argv)
    passes = args.passes if args.passes is not None else (1 if args.quick else 3)
    if not 1 <= passes <= 50:
        ap.error(f"--passes: {passes} is not between 1 and 50")
    import torch
    device_type = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    if device_type == "cuda" and not torch.cuda.is_available():
        ap.error("--device cuda: PyTorch sees no GPU here")
    device = torch.device(device_type, 0) if device_type == "cuda" else torch.device("cpu")
    begin = time.monotonic()
    quick = args.quick
    timer = Timer(torch, device, min_s=0.0005 if quick else 0.001)
    cuda = device.type == "cuda"
    float_types = ["float32", "bfloat16", "float16"] if cuda else ["float32"]
    profile = {"format": FORMAT, "version": VERSION, "source": "pytorch", "machine": machine(torch, device),
               "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
               "settings": {"allow_tf32_matmul": bool(torch.backends.cuda.matmul.allow_tf32) if cuda else False,
                            "quick": quick, "passes": passes}}

    def save():
        profile["seconds_taken"] = round(time.monotonic() - begin, 1)
        tmp = args.out + ".tmp"
        with open(tmp, "w") as f:
            json.dump(profile, f, indent=1)
        os.replace(tmp, args.out)

    sizes_m = [32, 128] if quick else [64, 256, 1024, 2048, 4096, 8192, 16384]
    sizes_nk = [64, 256] if quick else [256, 768, 1024, 2048, 3072, 4096, 8192]
    if not cuda and not quick:
        sizes_m, sizes_nk = [32, 128, 512, 2048], [128, 256, 512, 1024, 2048]
    max_flop = {"float32": 1.5e11, "bfloat16": 1.2e12, "float16": 1.2e12} if cuda else {"float32": 2e10}
    bmm_shapes = [(b, s, s, 64) for b in (12, 96) for s in (64, 128, 256, 512, 1024)] + \
                 [(b, s, 64, s) for b in (12, 96) for s in (64, 128, 256, 512, 1024)]
    if quick:
        bmm_shapes = [(4, 32, 32, 16), (4, 32, 16, 32)]
    sizes = [2 ** p for p in (range(10, 17, 3) if quick else range(10, 29, 2))]
    if not cuda and not quick:
        sizes = [2 ** p for p in range(10, 25, 2)]

    def measure_pass():
        part = {"overheads": overheads(torch, device)}
        part["gemm"] = gemm_curves(torch, device, timer, float_types, sizes_m, sizes_nk, max_flop)
        for name, point in batched_gemm_curves(torch, device, timer, float_types, bmm_shapes):
            part["gemm"][name].append(point)
        part["attention"] = attention_curves(torch, device, timer, float_types,
                                             [(4, 32, 16)] if quick else
                                             [(bh, s, 64) for bh in (12, 96) for s in (128, 256, 512, 1024, 2048)])
        part["elementwise"] = elementwise_curves(torch, device, timer, float_types, sizes)
        part["optimizer"] = optimizer_curves(torch, device, timer,
                                             [2 ** 12, 2 ** 16] if quick else [2 ** p for p in range(14, 29, 2)],
                                             2 ** 12 if quick else 2 ** 22)
        part["copy"] = copy_curves(torch, device, timer, [2 ** p for p in range(12, 29, 4)])
        return part

    measured = []
    for number in range(1, passes + 1):
        if passes > 1:
            progress(f"pass {number} of {passes}")
        measured.append(measure_pass())
        merged = median_of_passes(measured)
        profile.update({k: merged[k] for k in ("overheads", "gemm", "attention", "elementwise", "optimizer", "copy")})
        save()
    if args.collectives:
        profile["collectives"] = collective_curves(device_type, [2 ** p for p in (range(10, 19, 4) if quick else
                                                                                 range(10, 29, 3))])
    save()
    progress(f"wrote {args.out} in {time.monotonic() - begin:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
