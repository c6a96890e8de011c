#!/usr/bin/env python3
"""The JSON keys of `shardscope-cli simulate --json` that users' scripts rely on, their internal consistency,
and a step time recomputed by hand from the alpha-beta formula."""
import json
import subprocess
import sys

cli = sys.argv[1]


def run(command, *args):
    out = subprocess.run([cli, command, "--json", *args], check=True, capture_output=True, text=True).stdout
    return json.loads(out)


report = run("simulate", "--world", "16", "--steps", "2", "--gpus-per-node", "8")
for key in ("step_time_ns", "total_comm_ns", "exposed_comm_ns", "bubble_fraction", "schedule_bubble_fraction", "ranks"):
    assert key in report, key
assert report["step"] == 2
assert report["step_time_ns"] == report["step_end_ns"] - report["step_begin_ns"] > 0
assert 0 <= report["exposed_comm_ns"] <= report["total_comm_ns"]
assert 0 <= report["bubble_fraction"] < 1
assert 0 <= report["schedule_bubble_fraction"] < 1
assert len(report["ranks"]) == 16
# The group spans two nodes, so the inter-node link (ib-ndr) sets the pace.
assert report["cost_model"]["inter_node_link"]["name"] == "ib-ndr"
memory = run("memory", "--world", "16", "--steps", "2")
idle = 0.0
for i, rank in enumerate(report["ranks"]):
    assert rank["rank"] == i
    assert rank["peak_bytes"] == memory["ranks"][i]["peak_bytes"]  # the same accounting as `memory`
    # utilisation is over the rank's own window: from its start of the step (inside the step window) to the end
    assert report["step_begin_ns"] <= rank["begin_ns"] <= report["step_end_ns"]
    assert abs(rank["utilisation"] * (report["step_end_ns"] - rank["begin_ns"]) - rank["compute_busy_ns"]) < 1
    assert rank["exposed_comm_ns"] <= rank["comm_ns"]
    assert rank["end_ns"] <= report["step_end_ns"]
    idle += 1 - rank["utilisation"]
assert abs(idle / 16 - report["bubble_fraction"]) < 1e-9
critical = report["ranks"][report["critical_rank"]]
assert critical["end_ns"] == report["step_end_ns"]
assert (critical["comm_ns"], critical["exposed_comm_ns"]) == (report["total_comm_ns"], report["exposed_comm_ns"])

# A pipeline has a bubble inside its forward/backward schedule: p − 1 of the m + p − 1 slots idle per stage, so
# well above zero (the exact figure is tested in tests/sim), and the key sits beside bubble_fraction.
pipe = run("simulate", "--strategy", "pp-gpipe", "--world", "4", "--batch", "64", "--micro-batches", "8", "--steps", "2")
assert 0 < pipe["schedule_bubble_fraction"] < 1, pipe["schedule_bubble_fraction"]
assert 0 < pipe["bubble_fraction"] < 1

# --link-gbps / --link-latency-us override the presets. One DDP step on 2 ranks all-reduces one bucket of all
# 20 × (2000·2000 + 2000) fp32 parameters: S = 320,160,000 B; at 10 GB/s and α = 0 the ring takes
# 2·(1/2)·S/10 = 32,016,000 ns, all of it exposed (PyTorch 2.x's single first bucket waits for the whole backward).
one = run("simulate", "--world", "2", "--link-gbps", "10", "--link-latency-us", "0")
assert one["total_comm_ns"] == 32_016_000, one["total_comm_ns"]
assert one["exposed_comm_ns"] == 32_016_000
assert one["scenario"]["simulation"]["link_gbps"] == 10
ar = [c for c in one["collectives"] if c["kind"] == "all-reduce"][0]
assert abs(ar["busbw_gbps"] - 10) < 1e-6, ar  # nccl-tests: a perfect ring's busbw is the link bandwidth

# Out of memory: the default model's parameters alone are 20 × (2000² + 2000) × 4 B = 320.16 MB, more than a
# 0.1 GiB device, so every rank runs out; with the preset's 80 GiB none does.
small = run("simulate", "--capacity-gib", "0.1")
assert all(rank["out_of_memory"] for rank in small["ranks"]), small["ranks"]
assert all(rank["out_of_memory"] is None for rank in run("simulate")["ranks"])
text = subprocess.run([cli, "simulate", "--capacity-gib", "0.1"], check=True, capture_output=True, text=True).stdout
assert "OUT OF MEMORY" in text, text

# The out of memory located: on a 1 GiB device with exact bytes, the first allocation that does not fit, when the
# simulated run reaches it (allocated before it + requested > capacity, inside the run).
located = run("simulate", "--capacity-gib", "1", "--accounting", "exact")
for rank in located["ranks"]:
    oom = rank["oom"]
    assert set(oom) >= {"rank", "op", "tensor", "requested_bytes", "allocated_bytes", "capacity_bytes", "time_ns"}, oom
    assert oom["rank"] == rank["rank"] and oom["capacity_bytes"] == 1 << 30
    assert oom["allocated_bytes"] + oom["requested_bytes"] > oom["capacity_bytes"] >= oom["allocated_bytes"], oom
    assert 0 <= oom["time_ns"] <= located["run_time_ns"], oom
assert all(rank["oom"] is None for rank in run("simulate")["ranks"])
print("1 passed, 0 failed")
