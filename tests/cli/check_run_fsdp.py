#!/usr/bin/env python3
"""`shardscope-cli run --backend cpu --strategy fsdp` (FSDP2's fully_shard) with its all-gathers and reduce-scatters
between rank threads: N ranks × batch b train the model that one rank trains on the whole batch N·b (checksums agree
within fp32 summation error, every parameter element held exactly once over the ranks), and every rank's measured
memory equals the plan's prediction at every phase, in total and per category. Width 16 on 3 ranks is not divisible:
shards of 6, 6 and 4 rows, padded to 6 on every rank."""
import json
import re
import subprocess
import sys

cli = sys.argv[1]
MODEL = ["--model", "mlp:3x16:relu", "--backend", "cpu", "--steps", "3"]
# fsdp on N ranks sums each gradient over b samples, averages the N sums in the reduce-scatter; single sums N·b at
# once, in an order OpenBLAS picks. The relative error of an fp32 sum of n = 16 terms is about n·2^-24, so the two agree
# to that (as check_run_zero.py says), not bit for bit.
RELATIVE_TOLERANCE = 16 * 2**-24


def close(a, b):
    return abs(a - b) <= RELATIVE_TOLERANCE * max(1.0, abs(b))


def cli_json(command, *args):
    done = subprocess.run([cli, command, *args, "--json"], capture_output=True, text=True)
    assert done.returncode == 0, (command, args, done.stderr)
    return json.loads(done.stdout)


def single(global_batch):
    return cli_json("run", *MODEL, "--strategy", "single", "--world", "1", "--batch", str(global_batch))


cases = [
    (["--world", "2", "--batch", "8"], 16),
    (["--world", "3", "--batch", "4"], 12),
    (["--world", "2", "--batch", "8", "--reshard-after-forward", "false"], 16),
    (["--world", "2", "--batch", "8", "--fsdp-units", "model", "--reshard-after-forward", "true"], 16),
    (["--world", "4", "--batch", "4", "--reshard-after-forward", "2", "--prefetch", "2"], 16),
    (["--world", "2", "--batch", "8", "--process-group", "gloo"], 16),
    (["--world", "1", "--batch", "16"], 16),
    # MixedPrecisionPolicy: bf16 all-gathers, activations and gradients (fp32 or fp16 reduce-scatter), inference.
    # Their checksums are not compared with single's fp32 training: bf16's 8-bit mantissa moves every step by
    # about 2^-8 of itself, far beyond the fp32 summation tolerance above; memory and replica agreement still hold.
    (["--world", "2", "--batch", "8", "--fsdp-param-dtype", "bf16"], None),
    (["--world", "3", "--batch", "4", "--fsdp-param-dtype", "bf16", "--fsdp-reduce-dtype", "fp32"], None),
    (["--world", "4", "--batch", "4", "--fsdp-param-dtype", "bf16", "--fsdp-reduce-dtype", "fp16",
      "--reshard-after-forward", "2"], None),
    (["--world", "2", "--batch", "8", "--no-grad"], None),
]
expected = {}
for settings, global_batch in cases:
    if global_batch and global_batch not in expected:
        expected[global_batch] = single(global_batch)["model_parameters"]["param_checksum"]
    args = ["--strategy", "fsdp", *settings]
    report = cli_json("run", *MODEL, *args)
    assert report["ok"], (settings, report["error"])
    model = report["model_parameters"]
    assert model["replicas_agree"] and model["gap"] is None, (settings, model)
    assert model["elements"] == 3 * (16 * 16 + 16), (settings, model)  # each element once, padding not counted
    if global_batch:
        assert close(model["param_checksum"], expected[global_batch]), (settings, model, expected[global_batch])
    # Measured against predicted, rank by rank and phase by phase (the run's own accounting mode).
    predicted = cli_json("memory", *MODEL[:2], "--steps", "3", *args, "--accounting", report["predicted_accounting"])
    for rank, plan in zip(report["ranks"], predicted["ranks"]):
        assert rank["measured_peak_bytes"] == rank["predicted_peak_bytes"] == plan["peak_bytes"], (settings, rank["rank"])
        measured = [(p["name"], p["step"], p["allocated_bytes"], p["by_category"]) for p in rank["phases"]]
        planned = [(p["name"], p["step"], p["allocated_bytes"], p["by_category"]) for p in plan["phases"]]
        assert measured == planned, (settings, rank["rank"], measured, planned)

# The text report says the same in its words.
text = subprocess.run([cli, "run", *MODEL, "--strategy", "fsdp", "--world", "2", "--batch", "8"], check=True,
                      capture_output=True, text=True).stdout
assert re.search(r"Model parameters \(all ranks together, each element once\): checksum \S+ .*replicas agree", text), text
print("ok")
