#!/usr/bin/env python3
"""`shardscope-cli memory --json` for an MLP under --tp 2 --sequence-parallel (issue 39), figures by hand.

mlp:4x8 (fc0 column-, fc1 row-, fc2 column-, fc3 row-parallel; Linear(8, 8) with bias, no ReLU), batch b = 4, tp 2,
SGD, exact bytes, fp32 (4 B). Outside the Linear pairs a rank holds b/2 = 2 rows.
- Parameters per rank: fc0 and fc2 8·8/2 weights + 8/2 bias, fc1 and fc3 8·8/2 weights + the whole bias of 8:
  4·(2·36 + 2·40) = 608 B.
- Activations after forward: x and y, 2 rows of 8 (64 B each); the outputs saved for backward or the loss: fc0's
  and fc2's (all 4 rows of 8/2 features, 64 B), fc1's and fc3's (2 rows of 8 after the reduce-scatter and the bias,
  64 B): 6 · 64 = 384 B. Without sequence parallelism x, y, fc1's and fc3's outputs hold all 4 rows (128 B):
  2·128 + 64 + 128 + 64 + 128 = 640 B.
- The forward's peak is at fc3's reduce-scatter: besides parameters, the PyTorch 2.x workspaces the main thread
  keeps (cuBLAS 32 MiB, cuBLASLt 1 MiB: fc0's biased addmm) and the 5 activations so far (x, y, fc0-fc2 outputs,
  320 B), the partial sum of all 4 rows (128 B) and this rank's reduce-scattered 2 rows (64 B): the buffers the
  collectives fill are counted.
- max_batch_that_fits searches multiples of tp only (tp must divide the rows it splits).
"""
import json
import subprocess
import sys

cli = sys.argv[1]


def memory(*extra):
    out = subprocess.run([cli, "memory", "--model", "mlp:4x8", "--strategy", "single", "--tp", "2", "--world", "2",
                          "--batch", "4", "--optimizer", "sgd", "--accounting", "exact", "--json", *extra],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def phase(rank, name):
    return next(p for p in rank["phases"] if p["name"] == name and p["step"] == 1)


workspaces = 32 * 1024 * 1024 + 1024 * 1024
for sp, activations in [(True, 384), (False, 640)]:
    report = memory(*(["--sequence-parallel"] if sp else []))
    assert len(report["ranks"]) == 2, report["ranks"]
    for rank in report["ranks"]:
        forward = phase(rank, "forward")
        assert forward["by_category"]["parameters"] == 608, (sp, forward)
        assert forward["by_category"]["activations"] == activations, (sp, rank["rank"], forward["by_category"])
        if sp:
            assert forward["max_allocated_bytes"] == 608 + workspaces + 320 + 128 + 64, (rank["rank"], forward)
    # The batch search tries only batches tp divides (an odd one is refused, not out of memory): this MLP fits up to
    # the search's limit on an 80 GB device.
    fit = report["max_batch_that_fits"]
    assert fit["multiple_of"] == (2 if sp else 1) and fit["batch"] is not None and fit["batch"] % 2 == 0, fit
    print(f"tp 2{' + sp' if sp else ''}: activations after forward {activations} B on each rank")
