#!/usr/bin/env python3
"""Our pytorch-2 prediction of each Hugging Face job measured on an H200 (PyTorch 2.11, transformers 5.17;
tests/data/h200-torch-2.11/hf/, made by tests/gpu/pytorch_truth.py worker_hf) against what PyTorch measured: the peak
of max_memory_allocated and of memory_reserved over its three steps, each within 1 % (CTest label golden).

Usage: check_hf_against_h200.py CLI DATA_DIR

Each job is run as its JSON's spec says: --implementation hf, its attention (eager; sdpa; SDPA forced to flash is
--attention flash, forced to the memory-efficient kernel is sdpa in fp32, which picks that kernel), its precision
(--precision autocast-bf16 / autocast-fp16), GPT-2 small or the small Llama from its config, seq 512, batch 8, Adam,
single device, H200-141 (sm90). Every figure is printed, per job and per phase.

Where 1 % is not reached. Two jobs' reserved memory (the small Llama in fp32 with SDPA, with and without grouped
query attention) drift from step 2 on: ShardScope's request sequence is PyTorch's (their histories' alloc and free
sizes agree request for request through both recorded steps, but for cub's sub-100 KB scratch in the embedding
backward, which changes nothing) and the caching allocator's rules are PyTorch's (replaying the recorded history with
the segments at the addresses cudaMalloc gave reproduces every one of its block and segment decisions), but where two
cached blocks of the same size are free, best fit takes the one at the lower device address, and ShardScope's model
cannot know which addresses cudaMalloc hands out (its virtual segments grow upwards; the H200's came scattered). One
such tie in step 2 sends a 16 MiB request to an existing block where PyTorch opened a new segment, and in step 3 the
two allocators' caches differ by a 512 MB logits segment. For those jobs the check holds peak allocated to 1 % and
every counter of step 1 (allocated, max_allocated, reserved) to the byte, and prints how far reserved drifts.
"""
import bisect
import gzip
import json
import os
import subprocess
import sys

ADDRESS_TIES = {"llama-sdpa-fp32", "llama-sdpa-fp32-gqa"}  # see the docstring
SMALL = 1 << 20  # CUDACachingAllocator.cpp kSmallSize: requests up to 1 MiB use the small pool


def replay(history, real_addresses):
    """The recorded requests through the caching allocator's rules (round_size, best fit by size then address,
    should_split, merging on free), with segments where cudaMalloc put them (real_addresses) or at ascending
    virtual addresses (ShardScope's model). Returns the index of the first request whose segment decision (open a
    new one or reuse a cached block) differs from the recording's, or None."""
    blocks, pools, by_real, next_address = {}, {True: [], False: []}, {}, 0
    for i, e in enumerate(history):
        if e["action"] == "alloc":
            size = max(512, (e["size"] + 511) // 512 * 512)
            small = size <= SMALL
            pool = pools[small]
            opened = i > 0 and history[i - 1]["action"] == "segment_alloc"
            k = bisect.bisect_left(pool, (size, -1))
            if (k >= len(pool)) != opened:
                return i
            if opened:
                seg = history[i - 1]["size"]
                base = history[i - 1]["addr"] if real_addresses else next_address
                next_address += seg
                blocks[base] = [seg, False, small, base]
                bisect.insort(pool, (seg, base))
                k = bisect.bisect_left(pool, (size, -1))
            if real_addresses:  # the block the real allocator took must be the one best fit gives
                if pool[k][1] != e["addr"]:
                    return i
            bsize, at = pool.pop(k)
            rest = bsize - size
            if (rest >= 512) if small else (rest > SMALL):
                blocks[at][0] = size
                blocks[at + size] = [rest, False, small, blocks[at][3]]
                bisect.insort(pool, (rest, at + size))
            blocks[at][1] = True
            by_real[e["addr"]] = at
        elif e["action"] == "free_completed":
            at = by_real.pop(e["addr"])
            block = blocks[at]
            block[1] = False
            pool = pools[block[2]]
            after = at + block[0]
            if after in blocks and not blocks[after][1] and blocks[after][3] == block[3]:
                pool.remove((blocks[after][0], after))
                block[0] += blocks.pop(after)[0]
            before = [a for a, b in blocks.items() if a < at and a + b[0] == at and not b[1] and b[3] == block[3]]
            if before:
                pool.remove((blocks[before[0]][0], before[0]))
                blocks[before[0]][0] += blocks.pop(at)[0]
                at = before[0]
            bisect.insort(pool, (blocks[at][0], at))
    return None


def attention_of(spec):
    if spec.get("sdpa_backend") == "FLASH_ATTENTION":
        return "flash"
    return "eager" if spec["attention"] == "eager" else "sdpa"


def predict(cli, job, spec, config_path):
    args = [cli, "memory", "--json", "--model", "hf:" + config_path, "--implementation", "hf", "--attention", attention_of(spec),
            "--seq", str(spec["seq"]), "--batch", str(spec["batch"]), "--steps", str(spec["steps"]), "--strategy", "single",
            "--device", "H200-141", "--optimizer", "adam", "--accounting", "pytorch-2"]
    if spec["precision"] != "fp32":
        args += ["--precision", spec["precision"]]
    if spec.get("gradient_checkpointing"):  # model.gradient_checkpointing_enable()
        args += ["--checkpoint", "full"]
    out = subprocess.run(args, capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"FAIL: {job}: {' '.join(args)}: {out.stderr.strip()}")
    return json.loads(out.stdout)["ranks"][0]


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    cli, data = sys.argv[1], sys.argv[2]
    jobs = sorted(name[:-5] for name in os.listdir(data) if name.endswith(".json"))
    scratch = os.environ.get("TMPDIR", "/tmp")
    failures = []
    print(f"{'job':<36} {'peak alloc (ours / H200)':>32} {'err':>8}   {'peak reserved (ours / H200)':>32} {'err':>8}")
    for job in jobs:
        measured = json.load(open(os.path.join(data, job + ".json")))
        spec = measured["spec"]
        config_path = os.path.join(scratch, f"shardscope-hf-{os.getpid()}-{job}.json")
        with open(config_path, "w") as f:
            json.dump(measured["config"], f)
        try:
            ours = predict(cli, job, spec, config_path)
        finally:
            os.remove(config_path)
        real_peak = max(p["max_allocated"] for p in measured["phases"])
        real_reserved = max(p["reserved"] for p in measured["phases"])
        peak_err = (ours["peak_bytes"] - real_peak) / real_peak
        reserved_err = (ours["peak_reserved_bytes"] - real_reserved) / real_reserved
        print(f"{job:<36} {ours['peak_bytes']:>15,} / {real_peak:>14,} {100 * peak_err:>+7.3f}%   "
              f"{ours['peak_reserved_bytes']:>15,} / {real_reserved:>14,} {100 * reserved_err:>+7.3f}%")
        phases = [p for p in ours["phases"] if p["name"] != "wrapped"]
        for o, r in zip(phases, measured["phases"]):
            print(f"    {o['name']:<13} {o['step']}  allocated {o['allocated_bytes']:>14,} / {r['allocated']:>14,}"
                  f"  max {o['max_allocated_bytes']:>14,} / {r['max_allocated']:>14,}"
                  f"  reserved {o['reserved_bytes']:>14,} / {r['reserved']:>14,}")
        if abs(peak_err) > 0.01:
            failures.append(f"{job}: peak allocated {100 * peak_err:+.3f}% from the H200's")
        if job in ADDRESS_TIES:
            for o, r in zip(phases, measured["phases"]):
                if o["step"] > 1:
                    continue
                got = (o["allocated_bytes"], o["max_allocated_bytes"], o["reserved_bytes"])
                want = (r["allocated"], r["max_allocated"], r["reserved"])
                if got != want:
                    failures.append(f"{job}: {o['name']} step {o['step']}: {got} vs the H200's {want}")
            # the reason, checked on the recording: PyTorch's rules at cudaMalloc's addresses make every decision it
            # made; at ascending virtual addresses the first differing decision comes where ShardScope's does
            history = json.load(gzip.open(os.path.join(data, job + ".history.json.gz")))
            at_real, at_virtual = replay(history, True), replay(history, False)
            print(f"    (reserved {100 * reserved_err:+.3f}%: the recording replayed with cudaMalloc's addresses "
                  f"differs nowhere ({at_real}); with ascending virtual ones first at request {at_virtual}, a "
                  f"{history[at_virtual]['size'] if at_virtual is not None else 0:,} B request; step 1 held to the byte)")
            if at_real is not None or at_virtual is None:
                failures.append(f"{job}: the address explanation does not hold (real {at_real}, virtual {at_virtual})")
        elif abs(reserved_err) > 0.01:
            failures.append(f"{job}: peak reserved {100 * reserved_err:+.3f}% from the H200's")
    if failures:
        print("FAIL:\n  " + "\n  ".join(failures))
        return 1
    print(f"OK: {len(jobs)} jobs, peak allocated within 1 % of the H200's; peak reserved within 1 % but for "
          f"{len(ADDRESS_TIES)} jobs held to step 1 (cudaMalloc's address ties, see the docstring)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
