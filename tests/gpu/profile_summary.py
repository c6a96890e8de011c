"""Where a PyTorch step's GPU time goes, from a torch.profiler Chrome trace (issue 40: the autocast steps the
simulator under-predicts by 7-33 %): the kernels' time by name, the GPU's idle time between them, and which CPU op
launched the kernel each idle gap waited for (so a lease tells kernels mispriced from a host that cannot keep up).
Plain Python on the trace's events; pytorch_truth.py's steptime worker calls it on the GPU (each step inside
torch.profiler.record_function("shardscope_step")), and tests/python/test_profile_summary.py holds it against a
trace made by hand.

Kineto's Chrome export, as PyTorch 1.13 to 2.11 write it: GPU work is "cat" "kernel", "gpu_memcpy" or
"gpu_memset" with "ts" / "dur" in µs and args.correlation; its launch is a "cuda_runtime" (or "cuda_driver") event
with the same correlation; CPU ops are "cpu_op" spans on the launching thread.
"""
import bisect

GPU_CATEGORIES = ("kernel", "gpu_memcpy", "gpu_memset")
LAUNCH_CATEGORIES = ("cuda_runtime", "cuda_driver")


def _spans(events, categories):
    return [e for e in events if e.get("ph") == "X" and e.get("cat") in categories and "dur" in e]


def _launching_op(launch, cpu_ops_by_thread):
    """The innermost cpu_op on the launch's thread whose span holds the launch's start, or None."""
    ops = cpu_ops_by_thread.get((launch.get("pid"), launch.get("tid")), [])
    starts = [o["ts"] for o in ops]
    best = None
    for o in ops[:bisect.bisect_right(starts, launch["ts"])]:
        if o["ts"] <= launch["ts"] <= o["ts"] + o["dur"] and (best is None or o["dur"] <= best["dur"]):
            best = o
    return best["name"] if best else None


def _step_windows(events, annotation):
    """The (start, end) µs of each step the caller marked with torch.profiler.record_function(annotation), on the
    host's clock, which Kineto's GPU timestamps share."""
    marks = [e for e in events if e.get("ph") == "X" and e.get("name") == annotation and e.get("cat") == "user_annotation"]
    return sorted((e["ts"], e["ts"] + e["dur"]) for e in marks)


def summarise(events, annotation="shardscope_step", top=30):
    """Per step marked `annotation` (a window from the host's start of the step to the end of the last GPU
    operation launched inside it): the GPU's busy seconds (the union of its operations), how many operations, the
    window's seconds, the idle seconds inside it, the kernels' seconds by name (the `top` largest), and the idle
    seconds by the CPU op that launched the operation each gap ended at (the first gap: from the step's start on
    the host; the `top` largest). Averages over the steps; steps 0 where the trace marks none."""
    windows = _step_windows(events, annotation)
    cpu_ops_by_thread = {}
    for o in sorted(_spans(events, ("cpu_op",)), key=lambda e: e["ts"]):
        cpu_ops_by_thread.setdefault((o.get("pid"), o.get("tid")), []).append(o)
    launches = {e.get("args", {}).get("correlation"): e for e in _spans(events, LAUNCH_CATEGORIES)}
    gpu = sorted(_spans(events, GPU_CATEGORIES), key=lambda e: e["ts"])
    launch_of = lambda e: launches.get(e.get("args", {}).get("correlation"))  # noqa: E731
    launched_at = lambda e: launch_of(e)["ts"] if launch_of(e) else float("-inf")  # noqa: E731
    busy = idle = span = 0.0
    operations = 0
    by_kernel, idle_before = {}, {}
    for begin, end in windows:
        mine = [e for e in gpu if begin <= launched_at(e) <= end]
        if not mine:
            continue
        covered_to = begin
        for e in mine:
            start, stop = e["ts"], e["ts"] + e["dur"]
            if start > covered_to:
                idle += start - covered_to
                op = _launching_op(launch_of(e), cpu_ops_by_thread) or "(no cpu op)"
                idle_before[op] = idle_before.get(op, 0.0) + start - covered_to
            busy += max(0.0, stop - max(start, covered_to))
            covered_to = max(covered_to, stop)
            entry = by_kernel.setdefault(e["name"], [0, 0.0])
            entry[0] += 1
            entry[1] += e["dur"]
        span += covered_to - begin
        operations += len(mine)
    steps = len(windows)
    per_step = lambda us: us * 1e-6 / steps if steps else 0.0  # noqa: E731
    return {
        "steps": steps,
        "gpu_operations_per_step": operations / steps if steps else 0.0,
        "busy_s_per_step": per_step(busy),
        "span_s_per_step": per_step(span),
        "idle_s_per_step": per_step(idle),
        "by_kernel": [{"name": name, "count_per_step": count / steps, "s_per_step": per_step(us)}
                      for name, (count, us) in sorted(by_kernel.items(), key=lambda kv: -kv[1][1])[:top]],
        "idle_before": [{"cpu_op": name, "s_per_step": per_step(us)}
                        for name, us in sorted(idle_before.items(), key=lambda kv: -kv[1])[:top]],
    }
