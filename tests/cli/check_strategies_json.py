#!/usr/bin/env python3
"""`shardscope-cli strategies --json`: the keys scripts rely on, one row per strategy, options that are flags' keys."""
import json
import subprocess
import sys

cli = sys.argv[1]
rows = json.loads(subprocess.run([cli, "strategies", "--json"], check=True, capture_output=True, text=True).stdout)
names = [row["name"] for row in rows]
expected = ["single", "dp", "balanced-dp", "ddp", "zero1", "zero2", "zero3", "fsdp", "mp", "pp-gpipe", "pp-1f1b"]
assert names == expected, names
for row in rows:
    for key in ("name", "description", "counterpart", "batch", "options"):
        assert key in row, (row["name"], key)
    for option in row["options"]:
        assert option.startswith("strategy."), option
by_name = {row["name"]: row for row in rows}
assert by_name["ddp"]["options"] == ["strategy.bucket_cap_mb", "strategy.gradient_as_bucket_view", "strategy.process_group",
                                     "strategy.tp", "strategy.sequence_parallel"], by_name["ddp"]
# Issue 39: tensor parallelism composes with every strategy but DataParallel's single process (fsdp: 2-D, mp: stages).
for name in names:
    assert ("strategy.tp" in by_name[name]["options"]) == (name not in ("dp", "balanced-dp")), by_name[name]
assert by_name["dp"]["batch"] == "per device"
# Issue 38: fsdp under its PyTorch name, with its options; `memory --help` names each option's FSDP2 argument.
assert by_name["fsdp"]["counterpart"] == "torch.distributed.fsdp.fully_shard (FSDP2)", by_name["fsdp"]
assert by_name["fsdp"]["options"] == ["strategy.fsdp_units", "strategy.reshard_after_forward", "strategy.fsdp_param_dtype",
                                      "strategy.fsdp_reduce_dtype", "strategy.prefetch", "strategy.process_group",
                                      "strategy.tp", "strategy.sequence_parallel"]
text = subprocess.run([cli, "strategies"], check=True, capture_output=True, text=True).stdout
assert "fsdp" in text and "torch.distributed.fsdp.fully_shard (FSDP2)" in text, text
help_text = " ".join(subprocess.run([cli, "memory", "--help"], check=True, capture_output=True, text=True).stdout.split())
for flag, argument in (("--fsdp-units", "fully_shard(module)"),
                       ("--reshard-after-forward", "fully_shard(reshard_after_forward=True | False | k)"),
                       ("--fsdp-param-dtype", "MixedPrecisionPolicy(param_dtype=)"),
                       ("--fsdp-reduce-dtype", "MixedPrecisionPolicy(reduce_dtype=)"),
                       ("--prefetch", "set_modules_to_backward_prefetch"),
                       ("--process-group", "init_process_group(backend=")):
    at = help_text.find(flag)
    assert at >= 0, flag
    assert argument in help_text[at:at + 1200], (flag, argument, help_text[at:at + 1200])
print("ok:", len(rows), "strategies")
