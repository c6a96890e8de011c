#!/usr/bin/env python3
"""`shardscope-cli trace info | export | check` on a complete simulated trace, a damaged one and files that are not
traces.

Counts are not taken from the CLI's own reader: tests/cli/sstrace_records.py walks the file's records from the
format document (zlib's CRC-32) and counts the Event records. A byte flipped inside an event's payload fails that
record's CRC, so the readable part ends at the record before it. Exit codes: info and export 0 on a cut file (with a
warning on stderr), check 1; 2 for a file that is not a trace, for export without an output, for a missing file.
Usage: check_trace_command.py CLI
"""
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sstrace_records  # noqa: E402

cli = sys.argv[1]


def run(*args, expect=0):
    done = subprocess.run([cli, *args], capture_output=True, text=True)
    assert done.returncode == expect, (args, done.returncode, done.stdout, done.stderr)
    return done


with tempfile.TemporaryDirectory() as folder:
    path = os.path.join(folder, "ddp.sstrace")
    run("simulate", "--world", "2", "--strategy", "ddp", "--steps", "2", "--out", path)
    data = open(path, "rb").read()
    events, header_end, last_end, has_end = sstrace_records.summary(data)
    assert has_end and last_end == len(data) and events > 0, (events, last_end, len(data))

    # info: the numbers the records hold, the recording metadata the CLI stamped.
    info = json.loads(run("trace", "info", path, "--json").stdout)
    assert set(info) == {"header", "ranks", "events", "duration_ns", "complete", "cut_at_byte", "reason", "step_times_ns",
                     "load_batch_ns", "median_step_ns", "median_step_by_kind_ns"}, info.keys()
    assert info["events"] == events, (info["events"], events)
    assert info["ranks"] == 2 and info["complete"] is True and info["cut_at_byte"] is None and info["reason"] is None, info
    assert info["duration_ns"] > 0, info
    header = info["header"]
    assert header["source"] == "simulator" and len(header["devices"]) == 2, header["source"]
    assert header["host"], header["host"]
    assert header["recorded_at"].endswith("Z") and len(header["recorded_at"]) == 20, header["recorded_at"]
    assert header["command_line"].endswith("simulate --world 2 --strategy ddp --steps 2 --out " + path), header["command_line"]
    assert header["driver_version"] is None and header["cuda_runtime_version"] is None and header["nccl_version"] is None

    text = run("trace", "info", path).stdout
    for expected in (f"events:       {events}", "ranks:        2", "source:       simulator", "complete:     yes",
                     "host:         " + header["host"], "recorded at:  " + header["recorded_at"]):
        assert expected in text, (expected, text)

    check = run("trace", "check", path)
    assert check.stdout.startswith(f"ok: {events} events, 2 ranks"), check.stdout

    # export: both files, or one; at least one is required.
    chrome, csv = os.path.join(folder, "run.json"), os.path.join(folder, "run.csv")
    run("trace", "export", path, "--chrome", chrome, "--csv", csv)
    spans = [e for e in json.load(open(chrome))["traceEvents"] if e.get("ph") == "X"]
    assert spans, "no spans in the Chrome trace"
    assert open(csv).readline().startswith("t_ns,rank,allocated_bytes"), open(csv).readline()
    os.remove(csv)
    run("trace", "export", path, "--csv", csv)
    assert os.path.getsize(csv) > 0
    done = run("trace", "export", path, expect=2)
    assert "--chrome" in done.stderr and "--csv" in done.stderr, done.stderr

    # A byte flipped inside the third event block (a version 2 file: EventBlock records, type 4): the events of the
    # first two blocks are readable.
    recs = [r for r in sstrace_records.records(data) if r[0] == 4]
    assert len(recs) >= 3, len(recs)
    third_start, third_end = recs[2][1], recs[2][2]
    readable = sstrace_records.block_count(recs[0][3]) + sstrace_records.block_count(recs[1][3])
    damaged = bytearray(data)
    damaged[third_start + 3] ^= 0x40
    bad = os.path.join(folder, "damaged.sstrace")
    open(bad, "wb").write(damaged)
    done = run("trace", "info", bad, "--json")
    info = json.loads(done.stdout)
    assert info["complete"] is False and info["events"] == readable and info["cut_at_byte"] == third_start, info
    assert f"record at byte {third_start} is damaged (checksum mismatch)" in info["reason"], info["reason"]
    assert f"cut short at byte {third_start} of {len(data)}" in done.stderr and f"showing the {readable} events" in done.stderr, done.stderr
    done = run("trace", "check", bad, expect=1)
    assert "checksum mismatch" in done.stdout, done.stdout
    done = run("trace", "export", bad, "--csv", csv)  # exports what is readable, and says where it stops
    assert f"cut short at byte {third_start}" in done.stderr, done.stderr
    done = run("compare", bad, path)  # compare reads up to the cut and says so
    assert f"cut short at byte {third_start}" in done.stderr, done.stderr

    # Bytes after the End record.
    trailing = os.path.join(folder, "trailing.sstrace")
    open(trailing, "wb").write(data + b"junk")
    done = run("trace", "check", trailing, expect=1)
    assert "4 bytes follow the End record" in done.stdout, done.stdout

    # A damaged header is a damaged trace for check (1), unreadable for info (2).
    broken_header = bytearray(data)
    broken_header[20] ^= 0x01
    open(bad, "wb").write(broken_header)
    done = run("trace", "check", bad, expect=1)
    assert "header record is corrupt" in done.stdout, done.stdout
    run("trace", "info", bad, expect=2)

    # Not traces at all.
    garbage = os.path.join(folder, "garbage.sstrace")
    open(garbage, "wb").write(bytes((i * 2654435761 >> 13) & 0xFF for i in range(4096)))
    for command in (["info", garbage], ["info", garbage, "--json"], ["check", garbage], ["export", garbage, "--csv", csv]):
        done = run("trace", *command, expect=2)
        assert "not a ShardScope trace" in done.stderr, (command, done.stderr)
    done = run("trace", "info", os.path.join(folder, "missing.sstrace"), expect=2)
    assert "cannot be opened" in done.stderr, done.stderr
    run("trace", expect=2)  # a trace command is required
print("trace info / export / check: ok")
