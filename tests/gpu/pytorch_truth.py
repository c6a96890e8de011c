#!/usr/bin/env python3
"""Real PyTorch figures for the open issues, measured on a lent GPU in one call and kept as test data (no
ShardScope binary needed): what our predictions and importers are later held against without a GPU.

Parts (each writes OUT/<part>/..., every job in its own process so the caching allocator starts empty):
  sweep     issue 42: a randomised sweep of MLP jobs (layers, width, ReLU, batch, world 1-3 sharing the GPU over
            gloo and world 1 over NCCL, single / ddp / zero1, every optimizer, both losses, bucket cap,
            gradient-as-bucket-view, 2-3 steps) through pytorch_reference.py: all three counters at every phase of
            every rank; rank 0's allocator history (segments included) for the first DDP / ZeRO-1 jobs of each world.
  hf        issue 42: Hugging Face GPT-2 small and a small Llama under eager / sdpa attention, fp32, autocast-bf16 and
            autocast-fp16 (GradScaler): per-phase counters, the allocator history of the first two steps, and every
            tensor saved for backward in one forward (module, shape, dtype, storage), with the config used.
  fsdp2     issue 38: fully_shard jobs (units, reshard_after_forward, MixedPrecisionPolicy, world 1 NCCL, world 2-3
            gloo sharing the GPU): per-phase counters of every rank; rank 0's allocator history for some.
  snapshot  issue 37: a small HF GPT-2 trained 3 steps with torch.cuda.memory._dump_snapshot and the counters at each
            phase beside it (the snapshot's trace index where each phase fell).
  time      issue 40: python -m shardscope.calibrate (a PyTorch device profile), then the step time of five held-out
            jobs in eager fp32 and autocast-bf16, alone on the GPU.

usage: pytorch_truth.py OUT [--parts sweep,hf,fsdp2,snapshot,time] [--deadline S] [--jobs N] [--sweep N]
A part's jobs not begun before the deadline are skipped (recorded as such); every job's failure is recorded with its
error, never fatal. Without CUDA (the dry run on the build machine) jobs run on the CPU at toy sizes where they can.
"""
import argparse
import concurrent.futures as futures
import json
import os
import random
import subprocess
import sys
import tempfile
import time
import traceback

import profile_summary

HERE = os.path.dirname(os.path.abspath(__file__))
START = time.monotonic()


def elapsed():
    return time.monotonic() - START


# ---------------------------------------------------------------------------------------------------------------
# Worker side: each job is `pytorch_truth.py --worker KIND JSON`, so every job has a fresh process (and allocator).

def counters(torch, device, log, name, step, extra=None):
    record = {"phase": name, "step": step}
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        record.update(allocated=torch.cuda.memory_allocated(device), max_allocated=torch.cuda.max_memory_allocated(device),
                      reserved=torch.cuda.memory_reserved(device))
    if extra:
        record.update(extra)
    log.append(record)


WRAPPER_FRAMES = ("_call_impl", "_wrapped_call_impl", "wrapper", "decorate_context", "_fn")


def compact_history(torch, device, keep_frames=6):
    """The allocator's trace ring as plain JSON: action, addr, size, stream and the innermost frames that are not
    nn.Module's call wrappers (so a transformers module's own line is kept)."""
    events = []
    for e in torch.cuda.memory._snapshot()["device_traces"][device.index]:
        frames = [f"{os.path.basename(f.get('filename', '?'))}:{f.get('line', 0)}:{f.get('name', '?')}"
                  for f in (e.get("frames") or []) if f.get("name") not in WRAPPER_FRAMES][:keep_frames]
        events.append({"action": e.get("action"), "addr": e.get("addr"), "size": e.get("size"),
                       "stream": e.get("stream"), "frames": frames})
    return events


def history_length(torch, device):
    return len(torch.cuda.memory._snapshot()["device_traces"][device.index]) if device.type == "cuda" else 0


def hf_model(spec, torch):
    import transformers
    if spec["family"] == "gpt2":
        config = transformers.GPT2Config(**spec["config"])
    else:
        config = transformers.LlamaConfig(**spec["config"])
    try:
        model = transformers.AutoModelForCausalLM.from_config(config, attn_implementation=spec["attention"])
    except TypeError:
        config._attn_implementation = spec["attention"]
        model = transformers.AutoModelForCausalLM.from_config(config)
    return model, config, transformers.__version__


def saved_tensor_log(torch, model, ids, autocast):
    """Every tensor autograd saves in one forward: the module running, shape, dtype, storage bytes and pointer (two
    saves of one storage are one allocation)."""
    current = ["<root>"]
    names = {m: n for n, m in model.named_modules()}
    def enter(module, args):
        current.append(names.get(module, "?"))

    def leave(module, args, output):  # returns None: a hook's non-None result would replace the module's output
        current.pop()

    hooks = [m.register_forward_pre_hook(enter) for m in model.modules()]
    hooks += [m.register_forward_hook(leave) for m in model.modules()]
    saved = []

    def pack(t):
        try:
            storage = t.untyped_storage()
            nbytes, ptr = storage.nbytes(), storage.data_ptr()
        except Exception:  # a tensor without storage (e.g. a wrapper subclass)
            nbytes, ptr = -1, 0
        saved.append({"module": current[-1], "shape": list(t.shape), "dtype": str(t.dtype).replace("torch.", ""),
                      "storage_bytes": nbytes, "storage": ptr, "is_param": isinstance(t, torch.nn.Parameter),
                      "grad_fn": type(t.grad_fn).__name__ if t.grad_fn is not None else None})
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        with autocast():
            loss = model(input_ids=ids, labels=ids).loss
    for h in hooks:
        h.remove()
    del loss
    # Pointers are only for telling storages apart: number them in order of first appearance.
    order = {}
    for s in saved:
        s["storage"] = order.setdefault(s["storage"], len(order)) if s["storage"] else None
    return saved


def worker_hf(spec, out):
    import contextlib
    import torch
    cuda = torch.cuda.is_available()
    device = torch.device("cuda", 0) if cuda else torch.device("cpu")
    result = {"spec": spec, "torch": torch.__version__,
              "gpu": torch.cuda.get_device_name(device) if cuda else "cpu"}
    log = []
    torch.manual_seed(0)
    model, config, tf_version = hf_model(spec, torch)
    result.update(transformers=tf_version, config=config.to_dict(),
                  attention_used=getattr(model.config, "_attn_implementation", None))
    history = cuda and spec.get("history", True)
    if history:
        torch.cuda.memory._record_memory_history(enabled="all", context="all", stacks="python", max_entries=400000)
    marks = []
    model = model.to(device)
    if spec.get("gradient_checkpointing"):  # as an HF script turns it on: reentrant checkpointing of every block
        model.train()
        model.gradient_checkpointing_enable()
    result["parameters"] = sum(p.numel() for p in model.parameters())
    result["parameter_dtypes"] = sorted({str(p.dtype) for p in model.parameters()})
    counters(torch, device, log, "model_created", 0)
    marks.append({"phase": "model_created", "step": 0, "index": history_length(torch, device) if history else None})
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-4)
    precision = spec["precision"]
    dtype = {"autocast-bf16": torch.bfloat16, "autocast-fp16": torch.float16}.get(precision)
    autocast = (lambda: torch.autocast(device.type, dtype=dtype)) if dtype else contextlib.nullcontext
    scaler = torch.amp.GradScaler(device.type) if precision == "autocast-fp16" else None
    kernel = contextlib.nullcontext
    if spec.get("sdpa_backend"):
        from torch.nn.attention import SDPBackend, sdpa_kernel
        backend = getattr(SDPBackend, spec["sdpa_backend"])
        kernel = lambda: sdpa_kernel([backend])  # noqa: E731
    batch, seq = spec["batch"], spec["seq"]
    generator = torch.Generator(device="cpu").manual_seed(1)
    step_times = []
    for step in range(1, spec["steps"] + 1):
        optimizer.zero_grad(set_to_none=True)
        ids = torch.randint(0, config.vocab_size, (batch, seq), generator=generator).to(device)
        if cuda:
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        with kernel():
            with autocast():
                loss = model(input_ids=ids, labels=ids).loss
            counters(torch, device, log, "forward", step)
            if scaler:
                scaler.scale(loss).backward()
            else:
                loss.backward()
        counters(torch, device, log, "before_step", step)
        if scaler:
            scaler.step(optimizer)
            scaler.update()
        else:
            optimizer.step()
        counters(torch, device, log, "after_step", step)
        step_times.append(time.perf_counter() - t0)
        if history:
            marks.append({"phase": "after_step", "step": step, "index": history_length(torch, device)})
        if history and step == 2:
            result["history"] = compact_history(torch, device)
            torch.cuda.memory._record_memory_history(enabled=None)
            history = False
    result.update(phases=log, marks=marks, step_times_s=step_times, loss=float(loss))
    write_json(out, result)  # the measured phases are kept even if the saved-tensor pass below fails
    del loss
    optimizer.zero_grad(set_to_none=True)
    ids = torch.randint(0, config.vocab_size, (batch, seq), generator=generator).to(device)
    with kernel():
        result["saved_tensors"] = saved_tensor_log(torch, model, ids, autocast)
    write_json(out, result)


def mlp(torch, layers, width, relu=True):
    mods = []
    for i in range(layers):
        mods.append(torch.nn.Linear(width, width))
        if relu and i + 1 < layers:
            mods.append(torch.nn.ReLU())
    return torch.nn.Sequential(*mods)


def worker_fsdp2(spec, out):
    import torch
    import torch.multiprocessing as mp
    mp.spawn(fsdp2_rank, args=(spec, out), nprocs=spec["world"], join=True)


def fsdp2_rank(rank, spec, out):
    import torch
    import torch.distributed as dist
    cuda = torch.cuda.is_available()
    device = torch.device("cuda", 0) if cuda else torch.device("cpu")
    if cuda:
        torch.cuda.set_device(device)
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(spec["port"]))
    result = {"spec": spec, "rank": rank, "torch": torch.__version__}
    try:
        dist.init_process_group(spec["backend"], rank=rank, world_size=spec["world"])
        from torch.distributed.device_mesh import init_device_mesh
        from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
        mesh = init_device_mesh(device.type, (spec["world"],))
        history = cuda and rank == 0 and spec.get("history")
        if history:
            torch.cuda.memory._record_memory_history(enabled="all", context="all", stacks="python",
                                                     max_entries=400000)
        log, marks = [], []
        torch.manual_seed(0)
        model = mlp(torch, spec["layers"], spec["width"], spec.get("relu", True)).to(device)
        counters(torch, device, log, "model_created", 0)
        dtypes = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32, None: None}
        policy = MixedPrecisionPolicy(param_dtype=dtypes[spec.get("param_dtype")],
                                      reduce_dtype=dtypes[spec.get("reduce_dtype")])
        kwargs = dict(mesh=mesh, reshard_after_forward=spec["reshard_after_forward"], mp_policy=policy)
        if spec["units"] == "layer":
            for layer in model:
                if isinstance(layer, torch.nn.Linear):
                    fully_shard(layer, **kwargs)
        # The root keeps the 2.x default reshard_after_forward=True semantics of the user's argument too.
        fully_shard(model, **kwargs)
        counters(torch, device, log, "wrapped", 0)
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
        result["local_parameter_bytes"] = sum(p.to_local().numel() * p.to_local().element_size()
                                              for p in model.parameters())
        for step in range(1, spec["steps"] + 1):
            optimizer.zero_grad(set_to_none=True)
            x = torch.randn(spec["batch"], spec["width"], device=device)
            # The target in the output's dtype: under a bf16 param_dtype the model returns bf16, and 2.11's
            # mse_loss(bf16, fp32) fails in backward ("Found dtype Float but expected BFloat16"), as the first run
            # of these jobs did. ShardScope's fsdp makes its MSE target the same way (strategy/fsdp.cpp batch_shape).
            y = torch.randn(spec["batch"], spec["width"], device=device,
                            dtype=dtypes[spec.get("param_dtype")] or torch.float32)
            loss = torch.nn.functional.mse_loss(model(x), y)
            counters(torch, device, log, "forward", step)
            loss.backward()
            counters(torch, device, log, "before_step", step)
            optimizer.step()
            counters(torch, device, log, "after_step", step)
            if history:
                marks.append({"phase": "after_step", "step": step, "index": history_length(torch, device)})
        result.update(ok=True, phases=log, marks=marks)
        if history:
            result["history"] = compact_history(torch, device)
            torch.cuda.memory._record_memory_history(enabled=None)
        dist.barrier()
        dist.destroy_process_group()
    except Exception as e:
        result.update(ok=False, error=repr(e)[:2000], traceback=traceback.format_exc()[-3000:])
    write_json(out.replace(".json", f".rank{rank}.json"), result)


def worker_snapshot(spec, out):
    """A small HF GPT-2 trained 3 steps under _record_memory_history, dumped with _dump_snapshot (what a user's
    memory_viz file is), and the counters at every phase with the trace index where each fell."""
    import torch
    import transformers
    device = torch.device("cuda", 0)
    config = transformers.GPT2Config(**spec["config"])
    torch.manual_seed(0)
    torch.cuda.memory._record_memory_history(max_entries=400000)
    model = transformers.AutoModelForCausalLM.from_config(config).to(device)
    log = []
    counters(torch, device, log, "model_created", 0, {"index": history_length(torch, device)})
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    for step in range(1, 4):
        optimizer.zero_grad(set_to_none=True)
        ids = torch.randint(0, config.vocab_size, (spec["batch"], spec["seq"]), device=device)
        loss = model(input_ids=ids, labels=ids).loss
        counters(torch, device, log, "forward", step, {"index": history_length(torch, device)})
        loss.backward()
        counters(torch, device, log, "before_step", step, {"index": history_length(torch, device)})
        optimizer.step()
        counters(torch, device, log, "after_step", step, {"index": history_length(torch, device)})
    torch.cuda.memory._dump_snapshot(out.replace(".json", ".pickle"))
    torch.cuda.memory._record_memory_history(enabled=None)
    write_json(out, {"spec": spec, "torch": torch.__version__, "transformers": transformers.__version__,
                     "gpu": torch.cuda.get_device_name(device), "config": config.to_dict(), "phases": log,
                     "note": "index: how many entries the snapshot's device_traces[0] held when the phase was read"})


def worker_steptime(spec, out):
    """Median step time of each held-out job in PyTorch eager (fp32) or autocast-bf16, one after another in one
    process, alone on the GPU, then 3 more steps under torch.profiler summarised (profiled: busy and idle per step;
    autocast jobs' traces kept beside `out`, gzipped); the results are rewritten after each job."""
    import torch
    results = []
    for job in spec["jobs"]:
        try:
            results.append(time_one_job(torch, job, trace_dir=os.path.dirname(os.path.abspath(out))))
        except Exception as e:
            results.append({"spec": job, "error": repr(e)[:1500], "traceback": traceback.format_exc()[-2000:]})
        torch.cuda.empty_cache()
        write_json(out, {"torch": torch.__version__, "gpu": torch.cuda.get_device_name(0), "jobs": results})


def time_one_job(torch, spec, trace_dir=None):
    """One held-out job's step times (CUDA events around zero_grad, forward, backward and step; the batch made
    before, apart), then its profiled steps. Without CUDA (the dry run) on the CPU, timed by the host clock."""
    import contextlib
    cuda = torch.cuda.is_available()
    device = torch.device("cuda", 0) if cuda else torch.device("cpu")
    if cuda:
        torch.zeros(1, device=device)  # initialise CUDA first: reset_peak_memory_stats before it is "Invalid device argument"
        torch.cuda.reset_peak_memory_stats(device)
    torch.manual_seed(0)
    if spec["kind"] == "mlp":
        model = mlp(torch, spec["layers"], spec["width"], spec["relu"]).to(device)
        make = lambda: (torch.randn(spec["batch"], spec["width"], device=device),  # noqa: E731
                        torch.randn(spec["batch"], spec["width"], device=device))
        loss_of = lambda xy: torch.nn.functional.mse_loss(model(xy[0]), xy[1])  # noqa: E731
    else:
        model, config, _ = hf_model(spec, torch)
        model = model.to(device)
        make = lambda: torch.randint(0, config.vocab_size, (spec["batch"], spec["seq"]), device=device)  # noqa
        loss_of = lambda ids: model(input_ids=ids, labels=ids).loss  # noqa: E731
    optimizer = {"adam": torch.optim.Adam, "sgd": torch.optim.SGD}[spec["optimizer"]](model.parameters(), lr=1e-3)
    autocast = (lambda: torch.autocast(device.type, dtype=torch.bfloat16)) if spec["precision"] == "autocast-bf16" \
        else contextlib.nullcontext

    def step(batch, mark=lambda phase: contextlib.nullcontext()):
        optimizer.zero_grad(set_to_none=True)
        with mark("forward"), autocast():
            loss = loss_of(batch)
        with mark("backward"):
            loss.backward()
        with mark("optimizer"):
            optimizer.step()

    def timed(batch):
        if not cuda:
            begin = time.perf_counter()
            step(batch)
            return time.perf_counter() - begin
        torch.cuda.synchronize()
        begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        begin.record()
        step(batch)
        end.record()
        torch.cuda.synchronize()
        return begin.elapsed_time(end) / 1e3

    times = []
    for i in range(spec["warmup"] + spec["timed"]):
        seconds = timed(make())
        if i >= spec["warmup"]:
            times.append(seconds)
    times.sort()
    result = {"spec": spec, "step_times_s": times, "median_s": times[len(times) // 2],
              "peak_allocated": torch.cuda.max_memory_allocated(device) if cuda else None,
              "note": "CUDA events around zero_grad, forward, backward and step; the batch is made before, apart"}
    # The same step under torch.profiler (after the timed steps, so the profiler's cost is in none of them): the
    # GPU's busy and idle time per step and which host op each idle gap waited for (profile_summary.py). A failure
    # here is recorded beside the timing, which it must not lose.
    try:
        result["profiled"] = profiled_steps(torch, spec, make, step, trace_dir)
    except Exception as e:
        result["profiled_error"] = repr(e)[:1500]
    return result


def profiled_steps(torch, spec, make, step, trace_dir, steps=3):
    """`steps` steps under torch.profiler, each in record_function("shardscope_step") and its forward, backward and
    optimizer step in shardscope_forward / _backward / _optimizer, summarised by profile_summary (the whole step,
    and each phase under "phases"); an autocast job's whole trace is kept, gzipped, in trace_dir. On a machine
    without CUDA (the dry run) the host alone is profiled."""
    from torch.profiler import ProfilerActivity, profile, record_function
    cuda = torch.cuda.is_available()
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    with profile(activities=[ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])) as prof:
        for _ in range(steps):
            batch = make()
            sync()
            with record_function("shardscope_step"):
                step(batch, lambda phase: record_function("shardscope_" + phase))
            sync()
    trace = os.path.join(trace_dir or tempfile.gettempdir(), spec["name"] + ".profiler.json")
    prof.export_chrome_trace(trace)
    with open(trace) as f:
        data = json.load(f)  # Kineto's {"traceEvents": [...]}; PyTorch built without Kineto writes the list alone
    events = data["traceEvents"] if isinstance(data, dict) else data
    summary = profile_summary.summarise(events)
    summary["phases"] = {phase: profile_summary.summarise(events, "shardscope_" + phase, top=5)
                         for phase in ("forward", "backward", "optimizer")}
    if trace_dir and spec["precision"] != "fp32":  # the steps the simulator under-predicts: their whole trace
        subprocess.run(["gzip", "-f", trace])
    else:
        os.remove(trace)
    return summary


def write_json(path, value):
    with open(path + ".tmp", "w") as f:
        json.dump(value, f)
    os.replace(path + ".tmp", path)


WORKERS = {"hf": worker_hf, "fsdp2": worker_fsdp2, "snapshot": worker_snapshot, "steptime": worker_steptime}


# ---------------------------------------------------------------------------------------------------------------
# Driver side: the job lists and the pool.

GPT2_SMALL = dict(n_positions=1024, n_embd=768, n_layer=12, n_head=12, vocab_size=50257, resid_pdrop=0.0,
                  embd_pdrop=0.0, attn_pdrop=0.0)
LLAMA_SMALL = dict(vocab_size=32000, hidden_size=1024, intermediate_size=2816, num_hidden_layers=8,
                   num_attention_heads=16, num_key_value_heads=16, max_position_embeddings=1024,
                   tie_word_embeddings=False, attention_dropout=0.0)


def hf_jobs(toy):
    jobs = []
    gpt2 = dict(GPT2_SMALL, n_layer=2, n_embd=64, n_head=4, vocab_size=512) if toy else GPT2_SMALL
    llama = dict(LLAMA_SMALL, num_hidden_layers=2, hidden_size=64, intermediate_size=128, num_attention_heads=4,
                 num_key_value_heads=4, vocab_size=512) if toy else LLAMA_SMALL
    seq, batch = (32, 2) if toy else (512, 8)
    # First what no lease has measured yet: transformers' gradient_checkpointing_enable()
    for family, config, attention, precision in (("gpt2", gpt2, "eager", "fp32"), ("gpt2", gpt2, "sdpa", "fp32"),
                                                 ("llama", llama, "sdpa", "fp32"), ("gpt2", gpt2, "sdpa", "autocast-bf16"),
                                                 ("llama", llama, "sdpa", "autocast-bf16")):
        jobs.append(dict(family=family, config=config, attention=attention, precision=precision, seq=seq, batch=batch,
                         steps=3, gradient_checkpointing=True))
    for family, config in (("gpt2", gpt2), ("llama", llama)):
        for attention in ("eager", "sdpa"):
            for precision in ("fp32", "autocast-bf16"):
                jobs.append(dict(family=family, config=config, attention=attention, precision=precision, seq=seq,
                                 batch=batch, steps=3))
    jobs.append(dict(family="gpt2", config=gpt2, attention="sdpa", precision="autocast-fp16", seq=seq, batch=batch,
                     steps=3))
    jobs.append(dict(family="gpt2", config=gpt2, attention="sdpa", precision="autocast-bf16", seq=seq, batch=batch,
                     steps=3, sdpa_backend="FLASH_ATTENTION"))
    jobs.append(dict(family="gpt2", config=gpt2, attention="sdpa", precision="fp32", seq=seq, batch=batch, steps=3,
                     sdpa_backend="EFFICIENT_ATTENTION"))
    gqa = dict(llama, num_key_value_heads=max(1, llama["num_attention_heads"] // 4))
    jobs.append(dict(family="llama", config=gqa, attention="sdpa", precision="fp32", seq=seq, batch=batch, steps=3))
    for job in jobs:
        tag = job.get("sdpa_backend", job["attention"]).lower()
        job["name"] = (f"{job['family']}-{tag}-{job['precision']}" + ("-gqa" if job["config"] is gqa else "")
                       + ("-checkpoint" if job.get("gradient_checkpointing") else ""))
    return jobs


def fsdp2_jobs(toy, cuda):
    jobs = []
    base = dict(layers=3 if toy else 6, width=64 if toy else 2048, batch=8 if toy else 32, steps=2)
    variants = [dict(units="layer", reshard_after_forward=True), dict(units="layer", reshard_after_forward=False),
                dict(units="model", reshard_after_forward=True),
                dict(units="layer", reshard_after_forward=True, param_dtype="bf16", reduce_dtype="fp32"),
                dict(units="layer", reshard_after_forward=True, param_dtype="bf16", reduce_dtype="bf16"),
                dict(units="layer", reshard_after_forward=False, param_dtype="bf16")]
    worlds = [(1, "nccl" if cuda else "gloo"), (2, "gloo"), (3, "gloo")]
    for world, backend in worlds:
        for i, variant in enumerate(variants):
            if world == 3 and i > 2:
                continue
            job = dict(base, **variant, world=world, backend=backend)
            if world == 3:
                job.update(width=1000 if not toy else 50, layers=4 if not toy else 2)  # rows not divisible: padding
            job["history"] = world == 2 and i in (0, 1)
            job["name"] = (f"fsdp2-w{world}-{job['units']}-reshard{int(job['reshard_after_forward'])}-"
                           f"{job.get('param_dtype', 'fp32')}-{job.get('reduce_dtype', 'none')}-{job['layers']}x"
                           f"{job['width']}")
            jobs.append(job)
    return jobs


def sweep_jobs(count, seed, toy):
    rng = random.Random(seed)
    jobs = []
    seen_history = set()
    for i in range(count):
        world = rng.choice([1, 1, 2, 2, 2, 3])
        strategy = rng.choice(["single", "ddp", "zero1"]) if world == 1 else rng.choice(["ddp", "ddp", "zero1"])
        backend = "nccl" if world == 1 and strategy != "single" and rng.random() < 0.6 else "gloo"
        width = rng.choice([16, 64, 200, 512, 1000, 1536, 2048, 2600, 3000, 4096])
        layers = rng.randint(1, 8)
        job = dict(layers=layers, width=64 if toy else width, relu=rng.random() < 0.7,
                   batch=rng.choice([1, 4, 24, 64, 100, 256, 512]), steps=rng.choice([2, 3]),
                   optimizer=rng.choice(["adam", "adamw", "sgd", "momentum"]),
                   loss=rng.choice(["mse", "cross-entropy"]), world=world, strategy=strategy, backend=backend,
                   bucket_cap_mb=rng.choice([None, None, 25.0, 1.0, 5.0, 0.25, 100.0]),
                   gradient_as_bucket_view=rng.random() < 0.4)
        key = (world, strategy, backend)
        job["history"] = strategy != "single" and key not in seen_history
        seen_history.add(key)
        job["name"] = f"sweep-{i:03d}"
        jobs.append(job)
    return jobs


def sweep_command(job, port, out_dir):
    cmd = [sys.executable, os.path.join(HERE, "pytorch_reference.py"), "--json", "--layers", str(job["layers"]),
           "--width", str(job["width"]), "--batch", str(job["batch"]), "--steps", str(job["steps"]),
           "--optimizer", job["optimizer"], "--loss", job["loss"], "--world", str(job["world"]),
           "--strategy", job["strategy"], "--backend", job["backend"], "--port", str(port),
           "--relu" if job["relu"] else "--no-relu"]
    if job["bucket_cap_mb"] is not None:
        cmd += ["--bucket-cap-mb", str(job["bucket_cap_mb"])]
    if job["gradient_as_bucket_view"]:
        cmd.append("--gradient-as-bucket-view")
    if job["history"]:
        cmd += ["--history", os.path.join(out_dir, job["name"] + ".history.json")]
    return cmd


def run_job(kind, job, out_dir, port, deadline, timeout):
    """Runs one job in its own process; returns its summary (status, seconds, error tail)."""
    if elapsed() > deadline:
        return {"name": job["name"], "status": "skipped: out of time"}
    out = os.path.join(out_dir, job["name"] + ".json")
    job = dict(job, port=port)
    if kind == "sweep":
        cmd = sweep_command(job, port, out_dir)
    else:
        cmd = [sys.executable, os.path.abspath(__file__), "--worker", kind, json.dumps(job), out]
    begin = time.monotonic()
    env = dict(os.environ, PYTHONUNBUFFERED="1", MASTER_PORT=str(port))
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=max(5, min(timeout, deadline + 60 - elapsed())),
                           env=env)
        rc, stdout, stderr = p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired as e:
        rc, stdout, stderr = 124, str(e.stdout or ""), "timed out"
    summary = {"name": job["name"], "status": "ok" if rc == 0 else f"failed (exit {rc})",
               "seconds": round(time.monotonic() - begin, 2)}
    if rc != 0:
        summary["error"] = (stderr or "")[-3000:]
    if kind == "sweep":
        ranks = []
        decoder = json.JSONDecoder()
        text = stdout.strip()
        index = 0
        while index < len(text):  # ranks' lines can be glued together ("}{") on a shared pipe
            try:
                value, end = decoder.raw_decode(text, index)
                ranks.append(value)
                index = end
                while index < len(text) and text[index] in " \r\n":
                    index += 1
            except json.JSONDecodeError:
                break
        write_json(out, {"job": job, "ranks": sorted(ranks, key=lambda r: r.get("rank", 0)), "exit": rc,
                         "stderr_tail": (stderr or "")[-2000:]})
    return summary


def run_part(kind, jobs, out_root, deadline, workers, port_base, timeout):
    out_dir = os.path.join(out_root, kind if kind != "steptime" else "time")
    os.makedirs(out_dir, exist_ok=True)
    print(f"[{elapsed():6.1f}s] {kind}: {len(jobs)} jobs, {workers} at a time", flush=True)
    results = []
    with futures.ThreadPoolExecutor(max_workers=workers) as pool:
        pending = [pool.submit(run_job, kind, job, out_dir, port_base + 10 * i, deadline, timeout)
                   for i, job in enumerate(jobs)]
        for f in futures.as_completed(pending):
            r = f.result()
            results.append(r)
            print(f"[{elapsed():6.1f}s] {kind} {r['name']}: {r['status']}"
                  + (f" ({r.get('seconds')} s)" if 'seconds' in r else ""), flush=True)
            if "error" in r:
                print("    " + r["error"][-600:].replace("\n", "\n    "), flush=True)
    write_json(os.path.join(out_dir, "summary.json"), sorted(results, key=lambda r: r["name"]))
    return results


def run_calibrate(out_root, deadline, toy):
    out_dir = os.path.join(out_root, "time")
    os.makedirs(out_dir, exist_ok=True)
    if elapsed() > deadline:
        return
    root = os.path.abspath(os.path.join(HERE, "..", ".."))
    cmd = [sys.executable, "-m", "shardscope.calibrate", "--out", os.path.join(out_dir, "profile.json")]
    if toy:
        cmd.append("--quick")
    env = dict(os.environ, PYTHONPATH=os.path.join(root, "python"), PYTHONUNBUFFERED="1")
    print(f"[{elapsed():6.1f}s] calibrate: {' '.join(cmd)}", flush=True)
    try:
        p = subprocess.run(cmd, env=env, timeout=max(5, deadline + 60 - elapsed()), capture_output=True, text=True)
        print(p.stderr[-3000:], flush=True)
    except subprocess.TimeoutExpired:
        print("calibrate: timed out", flush=True)


def steptime_jobs(toy):
    gpt2 = dict(GPT2_SMALL, n_layer=2, n_embd=64, n_head=4, vocab_size=512) if toy else GPT2_SMALL
    scale = (lambda n: max(8, n // 64)) if toy else (lambda n: n)
    base = [dict(kind="mlp", layers=8, width=scale(4096), relu=True, batch=scale(1024), optimizer="adam"),
            dict(kind="mlp", layers=4, width=scale(8192), relu=False, batch=scale(256), optimizer="sgd"),
            dict(kind="mlp", layers=24, width=scale(2048), relu=True, batch=scale(2048), optimizer="adam"),
            dict(kind="mlp", layers=12, width=scale(3072), relu=True, batch=scale(512), optimizer="adam"),
            dict(kind="hf", family="gpt2", config=gpt2, attention="sdpa", seq=32 if toy else 512, batch=2 if toy else 8,
                 optimizer="adam"),
            dict(kind="hf", family="gpt2", config=gpt2, attention="eager", seq=32 if toy else 512,
                 batch=2 if toy else 8, optimizer="adam")]
    jobs = []
    for job in base:
        for precision in ("fp32", "autocast-bf16"):
            j = dict(job, precision=precision, warmup=3, timed=3 if toy else 12)
            j["name"] = ("steptime-" + (f"mlp{j['layers']}x{j['width']}-b{j['batch']}" if j["kind"] == "mlp" else
                                        f"gpt2-{j['attention']}") + f"-{j['optimizer']}-{precision}")
            jobs.append(j)
    return jobs


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        WORKERS[sys.argv[2]](json.loads(sys.argv[3]), sys.argv[4])
        return
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--parts", default="hf,fsdp2,snapshot,sweep,time")
    ap.add_argument("--deadline", type=float, default=420, help="seconds after which no job begins")
    ap.add_argument("--jobs", type=int, default=6, help="jobs at a time in the parallel parts")
    ap.add_argument("--sweep", type=int, default=60, help="how many random sweep jobs")
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--sweep-from", type=int, default=0, help="run the sweep's jobs from this index on")
    ap.add_argument("--only", default="", help="run only the jobs whose name contains this text (fsdp2, hf)")
    args = ap.parse_args()
    import torch
    cuda = torch.cuda.is_available()
    toy = not cuda
    parts = args.parts.split(",")
    os.makedirs(args.out, exist_ok=True)
    info = {"torch": torch.__version__, "cuda": cuda, "gpu": torch.cuda.get_device_name(0) if cuda else None,
            "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "args": vars(args)}
    write_json(os.path.join(args.out, "info.json"), info)
    # The memory parts together (counters are per process, so jobs sharing the GPU do not disturb each other's),
    # the timing part after them, alone on the GPU.
    parallel_deadline = args.deadline * 0.55
    threads = []
    if "hf" in parts and (cuda or _has("transformers")):
        threads.append(("hf", hf_jobs(toy), args.jobs, 30000, 240))
    if "snapshot" in parts and cuda:
        threads.append(("snapshot", [dict(name="gpt2-2l-snapshot", seq=256, batch=4, config=dict(
            n_positions=256, n_embd=256, n_layer=2, n_head=4, vocab_size=8192, resid_pdrop=0.0, embd_pdrop=0.0,
            attn_pdrop=0.0))], 1, 30900, 120))
    if "fsdp2" in parts:
        threads.append(("fsdp2", [j for j in fsdp2_jobs(toy, cuda) if args.only in j["name"]], 3, 31000, 180))
    if "sweep" in parts and cuda:
        threads.append(("sweep", sweep_jobs(args.sweep, args.seed, toy)[args.sweep_from:], args.jobs, 32000, 180))
    with futures.ThreadPoolExecutor(max_workers=max(1, len(threads))) as pool:
        for f in [pool.submit(run_part, kind, jobs, args.out, parallel_deadline, workers, port, timeout)
                  for kind, jobs, workers, port, timeout in threads]:
            f.result()
    if "time" in parts:
        run_calibrate(args.out, args.deadline * 0.8, toy)
        if cuda:
            run_part("steptime", [dict(name="steptime", jobs=steptime_jobs(toy))], args.out, args.deadline, 1, 33000,
                     max(10, args.deadline + 30 - elapsed()))
    info["finished_after_s"] = round(elapsed(), 1)
    write_json(os.path.join(args.out, "info.json"), info)
    print(f"[{elapsed():6.1f}s] done", flush=True)


def _has(module):
    try:
        __import__(module)
        return True
    except ImportError:
        return False


if __name__ == "__main__":
    main()
