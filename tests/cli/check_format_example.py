#!/usr/bin/env python3
"""engine/trace/file/FORMAT.md's worked example, as `shardscope-cli trace` reads it.

The hex dump between the example markers is turned back into a file; `trace info --json` must report the numbers
the document states in its sentence "The example holds N events on R ranks, D ns from the first event to the
last", `trace check` must call it sound, and `trace export --csv` must give the one memory row the example's one
Alloc makes (t 1000, rank 0, allocated and reserved 4096, all of it parameters). The document's own description of
the file cut at 500 bytes is checked too, and the version 1 example (a file recorded before event blocks) must read
with the same numbers. (test_trace_format_doc checks the same bytes against the writer.)
Usage: check_format_example.py CLI FORMAT.md
"""
import json
import os
import re
import subprocess
import sys
import tempfile

cli, doc_path = sys.argv[1], sys.argv[2]
doc = open(doc_path, encoding="utf-8").read()


def dump_bytes(begin, end):
    block = doc.split(begin)[1].split(end)[0]
    out = bytearray()
    for line in block.splitlines():
        if ":" not in line or line.startswith("```"):
            continue
        offset, rest = line.split(":", 1)
        assert int(offset, 16) == len(out), line
        out += bytes(int(word, 16) for word in rest.split("|")[0].split())
    return out


data = dump_bytes("<!-- example-hex-begin -->", "<!-- example-hex-end -->")
v1_data = dump_bytes("<!-- example-v1-hex-begin -->", "<!-- example-v1-hex-end -->")
assert data[8] == 2 and v1_data[8] == 1, (data[8], v1_data[8])

stated = re.search(r"The example holds (\d+) events on (\d+) ranks, (\d+) ns from the first event to the last", doc)
assert stated, "FORMAT.md no longer states the example's numbers"
events, ranks, duration = map(int, stated.groups())
size = re.search(r"Its (\d+) bytes", doc)
assert size and int(size.group(1)) == len(data), (size and size.group(1), len(data))


def run(*args, expect=0):
    done = subprocess.run([cli, *args], capture_output=True, text=True)
    assert done.returncode == expect, (args, done.returncode, done.stdout, done.stderr)
    return done


with tempfile.TemporaryDirectory() as folder:
    path = os.path.join(folder, "example.sstrace")
    open(path, "wb").write(data)
    info = json.loads(run("trace", "info", path, "--json").stdout)
    assert set(info) == {"header", "ranks", "events", "duration_ns", "complete", "cut_at_byte", "reason", "step_times_ns",
                     "load_batch_ns", "median_step_ns", "median_step_by_kind_ns"}, info.keys()
    assert (info["events"], info["ranks"], info["duration_ns"]) == (events, ranks, duration), info
    assert info["complete"] is True and info["cut_at_byte"] is None and info["reason"] is None, info
    assert info["header"]["host"] == "lab-pc" and info["header"]["recorded_at"] == "2026-11-25T20:00:00Z", info["header"]
    assert info["header"]["nccl_version"] is None and info["header"]["source"] == "example", info["header"]

    check = run("trace", "check", path)
    assert check.stdout.startswith("ok: 3 events, 2 ranks"), check.stdout
    assert "format version 2" in check.stdout, check.stdout

    v1_path = os.path.join(folder, "example-v1.sstrace")
    open(v1_path, "wb").write(v1_data)
    v1_info = json.loads(run("trace", "info", v1_path, "--json").stdout)
    assert (v1_info["events"], v1_info["ranks"], v1_info["duration_ns"], v1_info["complete"]) == (events, ranks, duration, True), v1_info
    assert v1_info["header"]["host"] == "lab-pc" and v1_info["header"]["format_version"] == 1, v1_info["header"]
    assert "format version 1" in run("trace", "check", v1_path).stdout
    assert "format:       version 1" in run("trace", "info", v1_path).stdout

    csv = os.path.join(folder, "memory.csv")
    run("trace", "export", path, "--csv", csv)
    rows = open(csv).read().splitlines()
    assert rows[0].split(",")[:4] == ["t_ns", "rank", "allocated_bytes", "reserved_bytes"], rows[0]
    assert len(rows) == 2, rows  # the header row and the Alloc's
    assert rows[1].split(",") == ["1000", "0", "4096", "4096", "4096", "0", "0", "0", "0", "0", "0", "0"], rows[1]

    # "Keep only its first 500 bytes ... 2 events, complete false, cut_at_byte 492".
    cut = os.path.join(folder, "cut.sstrace")
    open(cut, "wb").write(data[:500])
    done = run("trace", "info", cut, "--json")
    info = json.loads(done.stdout)
    assert (info["events"], info["complete"], info["cut_at_byte"]) == (2, False, 492), info
    assert "ends inside a record at byte 492 (8 bytes of it ignored)" in info["reason"], info["reason"]
    assert "is cut short at byte 492 of 500" in done.stderr, done.stderr
    run("trace", "check", cut, expect=1)
print("FORMAT.md example: ok")
