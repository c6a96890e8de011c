#!/usr/bin/env python3
"""`shardscope-cli run --backend cpu` under ZeRO-2 and ZeRO-3 on 2 ranks × batch 8 trains the model that one rank
trains on the whole batch of 16: the README's commands print the same model checksum, replicas agree, and every
rank's measured peak equals the predicted one."""
import json
import re
import subprocess
import sys

cli = sys.argv[1]
MODEL = ["--model", "mlp:3x16:relu", "--backend", "cpu", "--steps", "3"]
# ZeRO on 2 ranks sums each gradient over its 8 samples and then across the ranks; single sums all 16 at once, in
# an order OpenBLAS picks per CPU. The relative error of an fp32 sum of n = 16 terms is about n·2^-24 (≈ 9.5e-7),
# so the two models agree to that, not bit for bit, and by how much depends on the machine. (The printed %.9g
# checksum adds at most 5e-9 relative.)
RELATIVE_TOLERANCE = 16 * 2**-24


def close(a, b):
    return abs(a - b) <= RELATIVE_TOLERANCE * max(1.0, abs(b))


def run(*args):
    return subprocess.run([cli, "run", *MODEL, *args], check=True, capture_output=True, text=True).stdout


def printed_checksum(text):
    match = re.search(r"Model parameters \(all ranks together, each element once\): checksum (\S+) .*replicas agree", text)
    assert match, text
    return float(match.group(1))


single = ["--strategy", "single", "--world", "1", "--batch", "16"]
zero3 = ["--strategy", "zero3", "--world", "2", "--batch", "8"]
printed_zero3, printed_single = printed_checksum(run(*zero3)), printed_checksum(run(*single))
assert close(printed_zero3, printed_single), (printed_zero3, printed_single)

expected = json.loads(run(*single, "--json"))["model_parameters"]["param_checksum"]
for strategy in (zero3, ["--strategy", "zero2", "--world", "2", "--batch", "8", "--reduce-bucket-mb", "1",
                         "--allgather-bucket-mb", "0.001"]):
    report = json.loads(run(*strategy, "--json"))
    assert report["ok"], report["error"]
    model = report["model_parameters"]
    assert model["replicas_agree"] and model["gap"] is None, (strategy, model)
    assert close(model["param_checksum"], expected), (strategy, model, expected)
    for rank in report["ranks"]:
        assert rank["measured_peak_bytes"] == rank["predicted_peak_bytes"], (strategy, rank)
print("ok")
