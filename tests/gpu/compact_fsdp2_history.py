#!/usr/bin/env python3
"""Turns rank 0's allocator history of an FSDP2 job (tests/data/h200-torch-2.11/fsdp2/*.rank0.history.json.gz: PyTorch
2.11's own torch.cuda.memory._record_memory_history, written by tests/gpu/pytorch_truth.py's fsdp2 part) into the
text fixture tests/engine/test_allocator_replay.cpp replays, with the stream of each allocation:

    a ID SIZE STREAM          an allocation of SIZE requested bytes on STREAM (0, 1, 2 ... in order of first use)
    r ID / f ID               its free requested / completed (as compact_allocator_history.py)
    m PHASE STEP ALLOCATED RESERVED   memory_allocated() / memory_reserved() where the job marked the history

FSDP2 allocates on four streams, and PyTorch's caching allocator never hands a block freed on one stream to another.

usage: compact_fsdp2_history.py JOB.rank0.json JOB.rank0.history.json.gz OUT.txt
"""
import gzip
import json
import sys


def main():
    job = json.load(open(sys.argv[1]))
    events = json.load(gzip.open(sys.argv[2]))
    figures = {(p["phase"], p["step"]): p for p in job["phases"]}
    marks = {}
    for m in job["marks"]:
        p = figures[(m["phase"], m["step"])]
        marks.setdefault(m["index"], []).append(f"m {m['phase']} {m['step']} {p['allocated']} {p['reserved']}")
    ids, streams, next_id = {}, {}, 0
    lines = [f"# PyTorch {job['torch']}, FSDP2: {job['spec']['name']} rank 0 (tests/gpu/pytorch_truth.py fsdp2)"]
    for i, e in enumerate(events):
        lines += marks.get(i, [])
        if e["action"] == "alloc":
            ids[e["addr"]] = next_id
            next_id += 1
            lines.append(f"a {ids[e['addr']]} {e['size']} {streams.setdefault(e['stream'], len(streams))}")
        elif e["action"] == "free_requested":
            lines.append(f"r {ids[e['addr']]}")
        elif e["action"] == "free_completed":
            lines.append(f"f {ids.pop(e['addr'])}")
    lines += marks.get(len(events), [])
    with open(sys.argv[3], "w") as f:
        f.write("\n".join(lines) + "\n")
    print(f"{sys.argv[3]}: {len(lines)} lines, {len(streams)} streams")


if __name__ == "__main__":
    main()
