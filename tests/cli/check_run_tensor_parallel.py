#!/usr/bin/env python3
"""`shardscope-cli run --backend cpu --tp 2` trains as single (issue 39): an MLP's Linear pairs split column- then
row-parallel, alone, under ddp (2 replicas of 8 samples) and under pp-1f1b (2 stages), end with the parameters
single ends with on the same 16 samples; every rank of a tensor-parallel group reports single's loss; replicas agree
bit for bit; every rank's measured peak equals the predicted one. With --sequence-parallel (single, ddp) each rank's
loss is its rows' share and a group's shares sum to its replica's loss. Per-phase bytes: tests/exec/test_executed_tensor_parallel."""
import json
import subprocess
import sys

cli = sys.argv[1]
common = ["run", "--model", "mlp:4x16:relu", "--backend", "cpu", "--steps", "3", "--json"]


def run(*args):
    out = subprocess.run([cli, *common, *args], check=True, capture_output=True, text=True).stdout
    report = json.loads(out)
    assert report["ok"], report["error"]
    for rank in report["ranks"]:
        assert rank["measured_peak_bytes"] == rank["predicted_peak_bytes"], (args, rank["rank"])
    return report


# Each of the 1,088 parameters may differ from single's by the reordered sums of the row-parallel all-reduce, a few
# ulps (test_executed_tensor_parallel.cpp derives it; 1e-5 · max(1, |p|) bounds each): the checksum Σp by 1,088 of
# them, Σp² by 2 · Σ|p| · 1e-5 with |p| ≤ 1.
def close(a, b, bound):
    return abs(a - b) <= bound


single = run("--strategy", "single", "--batch", "16")
expected = single["model_parameters"]
for name, args in [("single × tp 2", ["--strategy", "single", "--tp", "2", "--world", "2", "--batch", "16"]),
                   ("ddp 2 × tp 2", ["--strategy", "ddp", "--tp", "2", "--world", "4", "--batch", "8"]),
                   ("pp-1f1b 2 stages × tp 2", ["--strategy", "pp-1f1b", "--stages", "2", "--micro-batches", "2",
                                                "--tp", "2", "--world", "4", "--batch", "16"]),
                   # Sequence parallelism: each rank's loss is its 8 (ddp: 4) rows' share of its replica's batch mean.
                   ("single × tp 2 + sp", ["--strategy", "single", "--tp", "2", "--sequence-parallel", "--world", "2",
                                           "--batch", "16"]),
                   ("ddp 2 × tp 2 + sp", ["--strategy", "ddp", "--tp", "2", "--sequence-parallel", "--world", "4",
                                          "--batch", "8"])]:
    report = run(*args)
    model = report["model_parameters"]
    assert model["replicas_agree"] and model["gap"] is None, (name, model)
    assert model["elements"] == expected["elements"] == 4 * (16 * 16 + 16), (name, model["elements"])
    n = expected["elements"]
    assert close(model["param_checksum"], expected["param_checksum"], n * 1e-5), (name, model, expected)
    assert close(model["param_sum_of_squares"], expected["param_sum_of_squares"], 2 * n * 1e-5), (name, model, expected)
    losses = [rank["loss"] for rank in report["ranks"] if rank["loss"] is not None]
    assert losses, name
    if name.endswith("+ sp"):  # the shares of a tensor-parallel group sum to its replica's mean
        shares = [losses[i] + losses[i + 1] for i in range(0, len(losses), 2)]
        assert len(losses) == (4 if name.startswith("ddp") else 2), (name, losses)
        mean = sum(shares) / len(shares)
    elif name.startswith("ddp"):  # each replica's loss is the mean over its 8 samples: their mean is single's
        assert len(losses) == 4 and losses[0] == losses[1] and losses[2] == losses[3], (name, losses)
        mean = (losses[0] + losses[2]) / 2
    else:
        assert len(set(losses)) == 1, (name, losses)  # the tensor-parallel ranks end on the same all-reduced output
        mean = losses[0]
    assert close(mean, single["ranks"][0]["loss"], 1e-5 * max(1.0, abs(single["ranks"][0]["loss"]))), (name, losses)
    print(f"{name} trains as single: checksum {model['param_checksum']} vs {expected['param_checksum']}")
