#!/usr/bin/env python3
"""Turns the allocator histories gpu_checks.py brings back (pytorch-allocations.json: PyTorch's own
torch.cuda.memory._record_memory_history, one per reference job) into the small text fixtures
tests/engine/test_allocator_replay.cpp replays through ShardScope's allocator model:

    a ID SIZE                 an allocation of SIZE requested bytes, named ID
    r ID                      its free requested: memory_allocated() drops now
    f ID                      its free completed: the block is back in the pool (later than r when the block was
                              used on another stream or by a collective, whose events must complete first)
    m PHASE STEP ALLOCATED RESERVED   torch.cuda.memory_allocated() / memory_reserved() at that point

usage: compact_allocator_history.py pytorch-allocations.json OUTDIR
"""
import json
import os
import sys


def main():
    histories = json.load(open(sys.argv[1]))
    out_dir = sys.argv[2]
    os.makedirs(out_dir, exist_ok=True)
    for job, h in histories.items():
        if "error" in h:
            print(f"{job}: skipped ({h['error'][:80]})")
            continue
        if h.get("base_allocated"):
            print(f"{job}: skipped (memory allocated before the recording: {h['base_allocated']} B)")
            continue
        marks = {m["index"]: [] for m in h["marks"]}
        for m, p in zip(h["marks"], h["phases"]):
            marks[m["index"]].append(f"m {p['phase']} {p['step']} {p['allocated']} {p['reserved']}")
        ids, next_id, lines, streams = {}, 0, [f"# PyTorch {h['torch']} on {h['gpu']}: {job} (tests/gpu/pytorch_reference.py)"], set()
        for i, e in enumerate(h["events"]):
            lines += marks.get(i, [])
            if e["action"] == "alloc":
                ids[e["addr"]] = next_id
                next_id += 1
                lines.append(f"a {ids[e['addr']]} {e['size']}")
                streams.add(e["stream"])
            elif e["action"] == "free_requested":
                lines.append(f"r {ids[e['addr']]}")
            elif e["action"] == "free_completed":
                lines.append(f"f {ids.pop(e['addr'])}")
        lines += marks.get(len(h["events"]), [])
        if len(streams) > 1:
            print(f"{job}: skipped (allocations on {len(streams)} streams)")
            continue
        with open(os.path.join(out_dir, f"{job}.txt"), "w") as f:
            f.write("\n".join(lines) + "\n")
        print(f"{job}: {len(lines)} lines")


if __name__ == "__main__":
    main()
