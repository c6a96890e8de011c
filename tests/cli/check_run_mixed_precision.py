#!/usr/bin/env python3
"""`shardscope-cli run --backend cpu --dtype bf16|fp16`: mixed precision executes, measured peaks equal the predicted
ones on every rank, and fp16's dynamic loss scaling shows in the JSON (`loss_scale`, `skipped_steps`) and the text.
The expectations follow GradScaler's rule (torch/amp/grad_scaler.py), not this program's output:
- from 2^16 with growth every 2000 clean steps, 3 clean steps leave the scale at 2^16 and skip nothing;
- from 2^40 the loss gradient itself overflows fp16 (2·|out − y|/numel · 2^40 > 65504 unless |out − y| < 1e-5 for
  numel = 8 · 16), so every step is skipped and the scale halves each time: 2^40 / 2^3 after 3 steps;
- bf16 has no loss scale (null)."""
import json
import subprocess
import sys

cli = sys.argv[1]
BASE = ["run", "--model", "mlp:3x16:relu", "--backend", "cpu", "--steps", "3", "--strategy", "ddp", "--world", "2",
        "--batch", "8"]


def run(*args, check=True):
    return subprocess.run([cli, *BASE, *args], check=check, capture_output=True, text=True)


def ranks(*args):
    report = json.loads(run(*args, "--json").stdout)
    assert report["ok"], report.get("error")
    for rank in report["ranks"]:
        assert rank["measured_peak_bytes"] == rank["predicted_peak_bytes"], rank
    return report["ranks"]


for rank in ranks("--dtype", "fp16"):
    assert rank["loss_scale"] == 2.0**16 and rank["skipped_steps"] == 0, rank
for rank in ranks("--dtype", "fp16", "--initial-loss-scale", str(2**40)):
    assert rank["loss_scale"] == 2.0**37 and rank["skipped_steps"] == 3, rank
for rank in ranks("--dtype", "bf16"):
    assert rank["loss_scale"] is None and rank["skipped_steps"] == 0, rank

text = run("--dtype", "fp16", "--initial-loss-scale", str(2**40)).stdout
assert "fp16 mixed precision (fp32 master weights)" in text, text
assert "fp16 loss scale 1.37439e+11 after the last step; 3 step(s) skipped" in text, text

refused = run("--initial-loss-scale", "8", check=False)
assert refused.returncode == 2 and "loss scaling is fp16's" in refused.stderr, refused.stderr
print("ok")
