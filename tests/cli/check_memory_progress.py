#!/usr/bin/env python3
"""memory on a plan large enough to make the batch search slow says so on stderr and shows each batch tried, while
stdout keeps its JSON. 4,096 ranks of mlp:1x8 (DDP): the estimate is 4,096 × (64 + 11·1 + 8·2) ≈ 0.37 M ops, over
the 250 k from which progress is shown; one Linear(8, 8) fits any batch, so the search doubles from 1 to its limit
2^20 and tries exactly the 21 powers of two."""
import json
import re
import subprocess
import sys

cli = sys.argv[1]
done = subprocess.run([cli, "memory", "--world", "4096", "--model", "mlp:1x8", "--json"], capture_output=True, text=True)
assert done.returncode == 0, done.stderr
report = json.loads(done.stdout)
assert report["max_batch_that_fits"]["batch"] == 2**20, report["max_batch_that_fits"]
assert "finding the largest batch that fits" in done.stderr, done.stderr
tried = [int(b) for b in re.findall(r"^  batch (\d+): fits$", done.stderr, re.M)]
assert tried == [2**k for k in range(21)], tried

# A small plan stays quiet.
small = subprocess.run([cli, "memory", "--json"], capture_output=True, text=True)
assert small.returncode == 0 and small.stderr == "", small.stderr
print("ok: 21 batches reported on stderr for a 0.37 M-op plan; none for the built-in scenario")
