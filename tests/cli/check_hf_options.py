#!/usr/bin/env python3
"""--implementation, --attention and --precision as scenario fields (CTest label cli): the JSON keys read back, the
help text says which mixed precision is which, a value that is not one of theirs is refused by name, and the megatron
implementation's fused attention drops exactly Korthikanti et al.'s attention core for a logsumexp.

Usage: check_hf_options.py CLI
"""
import json
import os
import subprocess
import sys
import tempfile


def run(cli, *args, ok=True):
    out = subprocess.run([cli, *args], capture_output=True, text=True)
    if ok and out.returncode != 0:
        sys.exit(f"FAIL: {' '.join(args)}: {out.stderr.strip()}")
    return out


def main():
    cli = sys.argv[1]
    failures = []
    help_text = run(cli, "memory", "--help").stdout
    for flag, says in (("--precision", "--dtype (the ZeRO"), ("--dtype", "torch.autocast, which is --precision"),
                       ("--implementation", "hf"), ("--attention", "logsumexp")):
        line = help_text[help_text.find("  " + flag):]
        line = line[:line.find("\n  --", 3)]
        if says not in " ".join(line.split()):
            failures.append(f"--help for {flag} does not say '{says}'")
    # the keys in a scenario file, read back as written
    scenario = {"name": "hf options", "model": {"spec": "gpt2-tiny", "implementation": "hf", "attention": "eager"},
                "training": {"batch": 2, "seq": 16, "precision": "autocast-bf16", "loss": "cross-entropy"},
                "strategy": {"name": "single"}, "cluster": {"world": 1}}
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "s.json")
        with open(path, "w") as f:
            json.dump(scenario, f)
        report = json.loads(run(cli, "memory", path, "--json").stdout)
    written = report["scenario"]
    for section, key, value in (("model", "implementation", "hf"), ("model", "attention", "eager"),
                                ("training", "precision", "autocast-bf16")):
        if written.get(section, {}).get(key) != value:
            failures.append(f"{section}.{key} reads back as {written.get(section, {}).get(key)!r}, not {value!r}")
    bad = run(cli, "memory", "--attention", "fast", ok=False)
    if bad.returncode != 2 or "--attention: unknown value 'fast'; one of eager, sdpa, flash" not in bad.stderr:
        failures.append(f"--attention fast: exit {bad.returncode}, {bad.stderr.strip()}")
    # megatron with a fused kernel: per block and sample the core's 2·a·s²·e + a·s bytes give way to a·s·4
    # (model/transformer_costs.h), so the forward phase (exact accounting) drops L·b·(a·s²·(2e + 1) − 4·a·s)
    layers, heads, seq, batch = 2, 4, 64, 2  # gpt2-tiny: 2 blocks, 4 heads, 64 positions
    phases = {}
    for attention in ("eager", "sdpa"):
        out = json.loads(run(cli, "memory", "--model", "gpt2-tiny", "--strategy", "single", "--batch", str(batch),
                             "--accounting", "exact", "--attention", attention, "--json").stdout)
        phases[attention] = next(p["allocated_bytes"] for p in out["ranks"][0]["phases"] if p["name"] == "forward")
    expected = layers * batch * (heads * seq * seq * (2 * 4 + 1) - 4 * heads * seq)
    if phases["eager"] - phases["sdpa"] != expected:
        failures.append(f"megatron eager − sdpa forward: {phases['eager'] - phases['sdpa']} B, formula {expected} B")
    print(f"megatron gpt2-tiny forward, exact: eager {phases['eager']} B, sdpa {phases['sdpa']} B, difference "
          f"{phases['eager'] - phases['sdpa']} B (formula {expected} B)")
    if failures:
        print("FAIL:\n  " + "\n  ".join(failures))
        return 1
    print("OK: keys read back, help says which precision is which, bad values refused, megatron's fused attention counted")
    return 0


if __name__ == "__main__":
    sys.exit(main())
