#!/usr/bin/env python3
"""`simulate` prices the tensor-parallel collectives on the critical path with the ring alpha-beta model: mlp:4x8
split over tp 2 has three all-reduces of b·8 fp32 per step on each rank (after fc1 and fc3 forward, after fc2
backward), all exposed. A ring all-reduce over n ranks takes 2(n−1) steps of (S/n)/B + α. The tensor-parallel pair
sits in one node (intra-node link) unless --gpus-per-node 1 puts each rank in its own (inter-node link). Ranks are
named by their coordinates (tp·pp·dp) in the text reports. Under --sequence-parallel: all-gathers, reduce-scatters
and the bias gradients' all-reduces instead."""
import json
import subprocess
import sys

cli = sys.argv[1]
b, width, n = 3, 8, 2
payload = b * width * 4


def ring_all_reduce_ns(gbps, latency_us):
    return 2 * (n - 1) * ((payload / n) / gbps + latency_us * 1000)  # 1 GB/s = 1 byte/ns


def simulate(*args, json_out=True, batch=b):
    command = [cli, "simulate", "--model", "mlp:4x8", "--strategy", "single", "--tp", "2", "--world", "2",
               "--batch", str(batch), "--link-gbps", "1", "--link-latency-us", "1", *args] + (["--json"] if json_out else [])
    out = subprocess.run(command, check=True, capture_output=True, text=True).stdout
    return json.loads(out) if json_out else out


intra = simulate()
for rank in intra["ranks"]:
    assert rank["comm_ns"] == 3 * ring_all_reduce_ns(1, 1), rank
    assert rank["exposed_comm_ns"] == rank["comm_ns"], rank  # Megatron waits for each: nothing overlaps
inter = simulate("--gpus-per-node", "1", "--inter-node-gbps", "0.5", "--inter-node-latency-us", "3")
for rank in inter["ranks"]:
    assert rank["comm_ns"] == 3 * ring_all_reduce_ns(0.5, 3), rank
same_node = simulate("--gpus-per-node", "2", "--inter-node-gbps", "0.5", "--inter-node-latency-us", "3")
assert same_node["ranks"][0]["comm_ns"] == 3 * ring_all_reduce_ns(1, 1), same_node["ranks"][0]

# Sequence parallelism (b = 4, 2 rows a rank outside the pairs): per step 6 all-gathers, each rank contributing its
# 2·8 fp32 (64 B; a ring all-gather of n chunks takes n−1 steps of one chunk), 3 reduce-scatters of the whole 4·8
# fp32 (128 B: n−1 steps of 128/n) and 2 all-reduces of a bias gradient, 8 fp32 (32 B: 2(n−1) steps of 32/n),
# all on the critical path (test_tensor_parallel_plan.cpp counts them from Megatron's mappings).
def ring_ns(steps, chunk, gbps, latency_us):
    return steps * (chunk / gbps + latency_us * 1000)


sp = simulate("--sequence-parallel", batch=4)
for rank in sp["ranks"]:
    expected = 6 * ring_ns(n - 1, 64, 1, 1) + 3 * ring_ns(n - 1, 128 / n, 1, 1) + 2 * ring_ns(2 * (n - 1), 32 / n, 1, 1)
    assert rank["comm_ns"] == expected, (rank, expected)
    assert rank["exposed_comm_ns"] == rank["comm_ns"], rank

text = subprocess.run([cli, "simulate", "--model", "mlp:4x8", "--strategy", "ddp", "--tp", "2", "--world", "4"],
                      check=True, capture_output=True, text=True).stdout
assert "critical rank 0 (tp0·pp0·dp0)" in text, text
assert "tp0·pp0·dp0 … tp1·pp0·dp1" in text, text
memory = subprocess.run([cli, "memory", "--model", "mlp:4x8", "--strategy", "ddp", "--tp", "2", "--world", "4"],
                        check=True, capture_output=True, text=True).stdout
assert "ranks 0–3 (tp0·pp0·dp0 … tp1·pp0·dp1) (identical figures)" in memory, memory
print("tp all-reduces priced:", intra["ranks"][0]["comm_ns"], "ns intra-node,", inter["ranks"][0]["comm_ns"], "ns inter-node")
