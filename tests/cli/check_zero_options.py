#!/usr/bin/env python3
"""`--zero2-reduce` and `--zero3-init` from the command line: they parse and read back in the report's scenario;
`memory --json` is the same for both ZeRO-2 reductions (both reduce in place on the bucket), and ZeRO-3 created
partitioned never holds the whole model, while materialize holds all of it at model creation."""
import json
import subprocess
import sys

cli = sys.argv[1]


def memory(*args):
    return json.loads(subprocess.run([cli, "memory", "--json", *args], check=True, capture_output=True, text=True).stdout)


ZERO2 = ["--strategy", "zero2", "--model", "mlp:8x512", "--world", "4", "--reduce-bucket-mb", "1.5"]
scatter = memory(*ZERO2)  # the default
all_reduce = memory(*ZERO2, "--zero2-reduce", "all-reduce")
assert scatter["scenario"]["strategy"].get("zero2_reduce", "reduce-scatter") == "reduce-scatter", scatter["scenario"]
assert all_reduce["scenario"]["strategy"]["zero2_reduce"] == "all-reduce", all_reduce["scenario"]
assert scatter["ranks"] == all_reduce["ranks"], "the two reductions differ in memory"

# ZeRO paper Figure 1: Ψ = 7.5e9, N = 64, fp16 Adam. Materialize builds the fp16 model whole (2Ψ = 15 GB) first;
# partitioned holds 16Ψ/N = 1.875 GB of model states and, at its peak (the optimizer step), the step's fp32 gradient
# copy and Adam's sqrt temporary (4Ψ/N each), far below 2Ψ.
PSI, N = 7.5e9, 64
FIGURE1 = ["--strategy", "zero3", "--model", "params:7.5e9", "--world", "64", "--dtype", "fp16", "--batch", "1",
           "--accounting", "exact"]
partitioned = memory(*FIGURE1)
materialize = memory(*FIGURE1, "--zero3-init", "materialize")
assert materialize["scenario"]["strategy"]["zero3_init"] == "materialize", materialize["scenario"]
for rank in materialize["ranks"]:
    assert rank["peak_bytes"] >= 2 * PSI, rank["peak_bytes"]
    assert rank["phases"][0]["name"] == "model_created" and rank["phases"][0]["allocated_bytes"] >= 2 * PSI
for rank in partitioned["ranks"]:
    assert rank["peak_bytes"] < 24 * PSI / N * 1.001, rank["peak_bytes"]
    assert rank["phases"][0]["name"] == "model_created"
    assert rank["phases"][0]["allocated_bytes"] < 2 * PSI / N * 1.001, rank["phases"][0]
    model_states = sum(rank["peak_by_category"][c] for c in ("parameters", "gradients", "optimizer_state"))
    assert abs(model_states - 16 * PSI / N) < 128 * 64 * 16, model_states
print("ok")
