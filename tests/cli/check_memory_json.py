#!/usr/bin/env python3
"""The JSON keys of `shardscope-cli memory --json` that users' scripts rely on, and their internal consistency."""
import json
import subprocess
import sys

cli, scenarios = sys.argv[1], sys.argv[2]


def memory(*args):
    return json.loads(subprocess.run([cli, "memory", "--json", *args], check=True, capture_output=True, text=True).stdout)


report = memory("--world", "2", "--steps", "2")
categories = {"parameters", "gradients", "ddp_buckets", "optimizer_state", "activations", "temporaries", "communication_buffers", "gathered_parameters"}
expected_phases = [("model_created", 0), ("wrapped", 0), ("forward", 1), ("before_step", 1), ("after_step", 1),
                   ("forward", 2), ("before_step", 2), ("after_step", 2)]
assert len(report["ranks"]) == 2, report["ranks"]
for i, rank in enumerate(report["ranks"]):
    assert rank["rank"] == i
    assert [(p["name"], p["step"]) for p in rank["phases"]] == expected_phases, rank["phases"]
    for p in rank["phases"]:
        assert p["allocated_bytes"] <= p["max_allocated_bytes"] <= rank["peak_bytes"]
        assert p["allocated_bytes"] <= p["reserved_bytes"]
        assert sum(p["by_category"].values()) == p["allocated_bytes"]
    assert set(rank["peak_by_category"]) == categories
    assert sum(rank["peak_by_category"].values()) == rank["peak_bytes"]
    assert rank["phases"][-1]["max_allocated_bytes"] == rank["peak_bytes"]
assert report["model"]["parameter_count"] == 20 * (2000 * 2000 + 2000)

# Settings from a file survive when the matching flag is absent, and flags override the file.
def grads_before_step(r):
    return r["ranks"][0]["phases"][3]["by_category"]["gradients"]


view = memory(f"{scenarios}/ddp-bucket-view.json")
assert view["scenario"]["strategy"]["gradient_as_bucket_view"] is True
assert grads_before_step(view) == 0, grads_before_step(view)
plain = memory(f"{scenarios}/ddp.json")
assert grads_before_step(plain) >= 20 * (2000 * 2000 + 2000) * 4
assert memory(f"{scenarios}/ddp.json", "--gradient-as-bucket-view")["scenario"]["strategy"]["gradient_as_bucket_view"] is True
assert memory(f"{scenarios}/ddp.json", "--batch", "7")["scenario"]["training"]["batch"] == 7

# Transformer presets: the model's name, published parameter count and sequence length travel in the report.
gpt2 = memory("--model", "gpt2", "--strategy", "single", "--batch", "1", "--seq", "128")
assert gpt2["model"]["name"].startswith("gpt2"), gpt2["model"]
assert gpt2["model"]["parameter_count"] == 124_439_808, gpt2["model"]  # openai-community/gpt2 num_parameters()
assert gpt2["model"]["seq"] == 128 and gpt2["model"]["transformer_blocks"] == 12, gpt2["model"]
assert report["model"]["seq"] is None and report["model"]["transformer_blocks"] == 0, report["model"]
# What sets the peak: the largest live tensors, largest first, within the peak. One step: the peak is in it, while
# DDP's first-iteration bucket (2.x: one bucket in the first iteration) holds every gradient, 20 x (2000 x 2000 +
# 2000) fp32 elements, counted at least at their 512 B rounding.
for rank in memory("--world", "2")["ranks"]:
    tensors = rank["peak_tensors"]
    assert 0 < len(tensors) <= 10, tensors
    for t in tensors:
        assert set(t) >= {"name", "category", "bytes", "allocated_at_op"}, t
    assert [t["bytes"] for t in tensors] == sorted((t["bytes"] for t in tensors), reverse=True)
    assert sum(t["bytes"] for t in tensors) <= rank["peak_bytes"]
    bucket_bytes = -(-20 * (2000 * 2000 + 2000) * 4 // 512) * 512
    assert tensors[0]["category"] == "ddp_buckets" and tensors[0]["bytes"] >= bucket_bytes, tensors[0]
    assert rank["oom"] is None

# What would fit: the built-in scenario's batch of 20 fits, so the largest that fits is at least 20; on the 1 GiB
# card below, where batch 20 runs out of memory, it is less than 20.
fit = report["max_batch_that_fits"]
assert set(fit) >= {"batch", "multiple_of", "limited_by_rank", "searched_up_to"}, fit
assert fit["batch"] >= 20 and fit["multiple_of"] == 1, fit
small_fit = memory("--capacity-gib", "1", "--accounting", "exact")["max_batch_that_fits"]
assert small_fit["batch"] is None or small_fit["batch"] < 20, small_fit

# Out of memory on a 1 GiB card: the first allocation that does not fit, named with what was allocated before it.
small = memory("--capacity-gib", "1", "--accounting", "exact")  # exact: out of memory once allocated + request > capacity
oom = small["ranks"][0]["oom"]
assert set(oom) >= {"rank", "op", "tensor", "requested_bytes", "allocated_bytes", "capacity_bytes"}, oom
assert oom["rank"] == 0 and oom["capacity_bytes"] == 1 << 30
assert oom["allocated_bytes"] + oom["requested_bytes"] > oom["capacity_bytes"], oom
print("1 passed, 0 failed")
