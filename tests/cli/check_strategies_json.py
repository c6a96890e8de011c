#!/usr/bin/env python3
"""`shardscope-cli strategies --json`: the keys scripts rely on, one row per strategy, options that are flags' keys."""
import json
import subprocess
import sys

cli = sys.argv[1]
rows = json.loads(subprocess.run([cli, "strategies", "--json"], check=True, capture_output=True, text=True).stdout)
names = [row["name"] for row in rows]
expected = ["single", "dp", "balanced-dp", "ddp", "zero1", "zero2", "zero3", "mp", "pp-gpipe", "pp-1f1b"]
assert names == expected, names
for row in rows:
    for key in ("name", "description", "counterpart", "batch", "options"):
        assert key in row, (row["name"], key)
    for option in row["options"]:
        assert option.startswith("strategy."), option
by_name = {row["name"]: row for row in rows}
assert by_name["ddp"]["options"] == ["strategy.bucket_cap_mb", "strategy.gradient_as_bucket_view", "strategy.process_group"], by_name["ddp"]
assert by_name["dp"]["batch"] == "per device"
print("ok:", len(rows), "strategies")
