#!/usr/bin/env python3
"""`shardscope-cli compare A B [--json]` against hand-worked figures.

The recipe's model, 20 × Linear(2000, 2000), Adam, 2 ranks, PyTorch 2.x rules: each weight's state tensor
(16,000,000 B) sits alone in an unsplit 16 MiB segment and counts 16,777,216 B; each bias's (8,000 B) counts 8,192 B.
DDP keeps Adam's two states of every parameter on each rank: 2 × 20 × (16,777,216 + 8,192) B. ZeroRedundancyOptimizer
on 2 ranks gives each rank 10 weights and 10 biases (greedy by size), so the optimizer-state difference at the peak is
half of Adam's two states: 20 × (16,777,216 + 8,192) = 335,708,160 B, on both ranks. Everything else the two
strategies hold alike (parameters) differs by 0.
A trace of a scenario compared with the scenario itself differs by nothing (two roads to the same accounting), and a
rank only one side has is reported as missing there.
"""
import json
import os
import subprocess
import sys
import tempfile

cli = sys.argv[1]
categories = {"parameters", "gradients", "ddp_buckets", "optimizer_state", "activations", "temporaries",
              "communication_buffers", "gathered_parameters"}


def run(*args, expect=0):
    done = subprocess.run([cli, *args], capture_output=True, text=True)
    assert done.returncode == expect, (args, done.returncode, done.stderr)
    return done


def scenario(folder, name, strategy, world):
    path = os.path.join(folder, name + ".json")
    with open(path, "w") as f:
        json.dump({"name": name, "model": {"spec": "mlp:20x2000"}, "training": {"optimizer": "adam", "steps": 2},
                   "cluster": {"world": world, "device": "H100-80"}, "strategy": {"name": strategy},
                   "accounting": {"mode": "pytorch-2"}}, f)
    return path


with tempfile.TemporaryDirectory() as folder:
    ddp, zero1 = scenario(folder, "ddp", "ddp", 2), scenario(folder, "zero1", "zero1", 2)
    report = json.loads(run("compare", ddp, zero1, "--json").stdout)
    assert report["a"]["name"] == "ddp" and report["b"]["name"] == "zero1", report["a"]
    assert len(report["ranks"]) == 2
    half_of_adam = 20 * (16_777_216 + 8_192)
    for i, rank in enumerate(report["ranks"]):
        assert rank["rank"] == i
        assert set(rank["a"]) == categories and set(rank["b"]) == categories and set(rank["difference"]) == categories
        assert rank["a"]["optimizer_state"] == 2 * half_of_adam, rank["a"]
        assert rank["difference"]["optimizer_state"] == half_of_adam, rank["difference"]
        assert rank["difference"]["parameters"] == 0, rank["difference"]
        for c in categories:
            assert rank["difference"][c] == rank["a"][c] - rank["b"][c]
        # each side's categories add up to its peak
        assert sum(rank["a"].values()) == rank["peak_bytes"]["a"], rank
        assert sum(rank["b"].values()) == rank["peak_bytes"]["b"], rank
        assert rank["peak_bytes"]["difference"] == rank["peak_bytes"]["a"] - rank["peak_bytes"]["b"]

    # Issue 38: fsdp against zero3 and ddp on the same model (8 × Linear(4096), 4 ranks, fp32 Adam; Ψ parameters).
    # ZeRO-3 keeps DeepSpeed's fp32 partition besides Adam's state, 4Ψ/N more optimizer state and nothing else more:
    # both hold the same padded shards and gradients, and the same transient bytes at their backward peak, split
    # differently (zero3 copies its prefetched unit out at once: gathered; fsdp keeps it as an all-gather output).
    # DDP holds no shard and has buckets.
    psi = 8 * (4096 * 4096 + 4096)
    fsdp_file = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "assets", "scenarios", "fsdp.json")
    with open(fsdp_file) as f:
        base = json.load(f)
    def variant(name, strategy):
        path = os.path.join(folder, name + ".json")
        with open(path, "w") as f:
            json.dump(dict(base, name=name, strategy=strategy), f)
        return path
    zero3 = variant("zero3-8x4096", {"name": "zero3", "prefetch": 1})
    ddp4 = variant("ddp-8x4096", {"name": "ddp"})
    versus = json.loads(run("compare", fsdp_file, zero3, "--json").stdout)
    for rank in versus["ranks"]:
        d = rank["difference"]
        assert d["optimizer_state"] == -4 * psi // 4, d
        assert d["parameters"] == d["gradients"] == d["activations"] == d["temporaries"] == 0, d
        assert d["communication_buffers"] == -d["gathered_parameters"] != 0, d
        assert rank["peak_bytes"]["difference"] == -4 * psi // 4, rank
    versus = json.loads(run("compare", fsdp_file, ddp4, "--json").stdout)
    for rank in versus["ranks"]:
        assert rank["a"]["ddp_buckets"] == 0 and rank["b"]["ddp_buckets"] >= 4 * psi, rank
        assert rank["b"]["parameters"] == 4 * psi and rank["a"]["parameters"] == psi, rank
    assert "gathered parameters" in run("compare", fsdp_file, zero3).stdout

    # A simulated trace of a scenario against the scenario: no difference anywhere.
    trace = os.path.join(folder, "ddp.sstrace")
    run("simulate", ddp, "--out", trace)
    same = json.loads(run("compare", trace, ddp, "--json").stdout)
    assert same["a"]["kind"] == "trace" and same["b"]["kind"] == "scenario"
    for rank in same["ranks"]:
        assert all(v == 0 for v in rank["difference"].values()), rank

    # Ranks only one side has are reported missing, not dropped.
    wider = scenario(folder, "ddp4", "ddp", 4)
    uneven = json.loads(run("compare", ddp, wider, "--json").stdout)
    assert [r["rank"] for r in uneven["ranks"]] == [0, 1, 2, 3]
    for rank in uneven["ranks"][2:]:
        assert rank["a"] is None and rank["difference"] is None and rank["missing_in"] == "a", rank
    assert "missing in a" in run("compare", ddp, wider).stdout

    # Bad input: a clear message and exit 2.
    assert "cannot be opened" in run("compare", ddp, os.path.join(folder, "nope.json"), expect=2).stderr
    broken = os.path.join(folder, "broken.sstrace")
    with open(broken, "wb") as f:
        f.write(b"SSTRACE\0garbage")
    assert "trace file" in run("compare", broken, ddp, expect=2).stderr
print("compare: ok")
