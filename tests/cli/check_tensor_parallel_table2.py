#!/usr/bin/env python3
"""`memory --json`'s model.activation_bytes_per_layer against Korthikanti et al. 2022 ("Reducing Activation
Recomputation in Large Transformer Models"), Table 2, for GPT-3 175B's shape (their Table 3: a = 96, h = 12288,
s = 2048, L = 96, t = 8, b = 1) at 16-bit: every row derived here from the paper's formula, compared exactly.
Also: the flags read back in the report's scenario, and every rank's program exists (world = tp)."""
import json
import os
import subprocess
import sys
import tempfile
from fractions import Fraction

cli = sys.argv[1]
a, h, s, L, t, b = 96, 12288, 2048, 96, 8, 1
sbh = s * b * h

# Table 2, row by row (sbh times a bracket; exact rationals, then whole bytes).
rows = {
    # (tp, sequence parallel, checkpoint): bytes
    (1, False, "none"): sbh * (34 + Fraction(5 * a * s, h)),                       # no parallelism
    (t, False, "none"): sbh * (10 + Fraction(24, t) + Fraction(5 * a * s, h * t)),  # tensor parallel (baseline)
    (t, True, "none"): Fraction(sbh, t) * (34 + Fraction(5 * a * s, h)),           # tensor + sequence parallel
    (t, False, "selective"): sbh * (10 + Fraction(24, t)),                         # tensor parallel + selective
    (t, True, "selective"): sbh * Fraction(34, t),                                 # tensor + sequence + selective
    (t, False, "full"): 2 * sbh,                                                   # full activation recompute
}

with tempfile.TemporaryDirectory() as folder:
    config = os.path.join(folder, "gpt3-175b.json")
    with open(config, "w") as f:
        # GPT-2's 50257 tokens padded as Megatron-LM pads them for t = 8 (a multiple of 128 × 8).
        json.dump({"model_type": "gpt2", "n_embd": h, "n_head": a, "n_layer": L, "vocab_size": 51200,
                   "n_positions": s, "n_inner": None}, f)
    for (tp, sp, checkpoint), expected in rows.items():
        assert expected.denominator == 1, expected
        args = [cli, "memory", "--json", "--model", "hf:" + config, "--strategy", "single", "--tp", str(tp),
                "--world", str(tp), "--batch", str(b), "--seq", str(s), "--dtype", "bf16", "--checkpoint", checkpoint,
                "--accounting", "exact"] + (["--sequence-parallel"] if sp else [])
        report = json.loads(subprocess.run(args, check=True, capture_output=True, text=True).stdout)
        got = report["model"]["activation_bytes_per_layer"]
        assert got == int(expected), f"tp {tp}, sp {sp}, {checkpoint}: {got} != {int(expected)}"
        strategy = report["scenario"]["strategy"]
        assert strategy.get("tp", 1) == tp and strategy.get("sequence_parallel", False) == sp, strategy
        assert [r["rank"] for r in report["ranks"]] == list(range(tp)), [r["rank"] for r in report["ranks"]]
        print(f"tp {tp} sp {int(sp)} {checkpoint:9}: {got:>13,} B = {Fraction(got, sbh)} sbh")

# A model without transformer blocks has no such figure.
report = json.loads(subprocess.run([cli, "memory", "--json", "--model", "mlp:2x8", "--strategy", "single"],
                                   check=True, capture_output=True, text=True).stdout)
assert report["model"]["activation_bytes_per_layer"] is None, report["model"]
