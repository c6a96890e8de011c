#!/usr/bin/env python3
"""A recording whose writer is killed with SIGKILL replays to its last complete record (issue 19).

`shardscope-cli run ... --backend cpu --out F` is started on a run long enough to take seconds, F is polled until it
holds the header and at least one event record (tests/cli/sstrace_records.py, read from the format document), and
the process is killed with SIGKILL. Then, without the End record: `trace info --json` says complete false, the cut
lies between the end of the header and the file's size, the events are the Event records the file holds whole
(counted independently), and stderr names the cut; `trace check` exits 1. The killed file is left at OUT for the
window's test (gui_trace_killed_run).
Usage: check_trace_killed_run.py CLI OUT
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sstrace_records  # noqa: E402

cli, keep = sys.argv[1], sys.argv[2]
# 2 ranks, DDP, a 4 × Linear(1024) MLP, 1000 steps (the most a scenario allows): tens of seconds of CPU work, so it is still running when killed.
command = [cli, "run", "--model", "mlp:4x1024", "--strategy", "ddp", "--world", "2", "--batch", "64", "--steps", "1000",
           "--backend", "cpu"]


def run(*args, expect=0):
    done = subprocess.run([cli, *args], capture_output=True, text=True)
    assert done.returncode == expect, (args, done.returncode, done.stdout, done.stderr)
    return done


with tempfile.TemporaryDirectory() as folder:
    path = os.path.join(folder, "killed.sstrace")
    process = subprocess.Popen(command + ["--out", path], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    grown = False
    while time.monotonic() < deadline and process.poll() is None:
        if os.path.exists(path):
            data = open(path, "rb").read()
            if len(data) > sstrace_records.PREAMBLE and data[:8] == sstrace_records.MAGIC:
                recs = sstrace_records.records(data)
                if any(r[0] in (2, 4) for r in recs):  # an Event (version 1) or EventBlock record
                    grown = True
                    break
        time.sleep(0.05)
    assert grown, f"the file never grew past its header (exit {process.poll()}, {process.stderr.read()[-500:] if process.poll() is not None else ''})"
    assert process.poll() is None, "the run finished before it could be killed; make it longer"
    time.sleep(0.3)  # let it write for a while, mid-run
    process.send_signal(signal.SIGKILL)
    process.wait()
    assert process.returncode == -signal.SIGKILL, process.returncode

    data = open(path, "rb").read()
    events, header_end, last_end, has_end = sstrace_records.summary(data)
    assert not has_end and events > 0, (events, has_end)

    done = run("trace", "info", path, "--json")
    info = json.loads(done.stdout)
    assert info["complete"] is False, info
    assert header_end <= info["cut_at_byte"] <= len(data), (header_end, info["cut_at_byte"], len(data))
    assert info["cut_at_byte"] == last_end, (info["cut_at_byte"], last_end)
    assert info["events"] == events > 0, (info["events"], events)
    assert info["reason"], info
    assert f"is cut short at byte {last_end} of {len(data)}" in done.stderr, done.stderr
    assert f"showing the {events} events before it" in done.stderr, done.stderr
    header = info["header"]
    assert header["source"] == "executor cpu", header["source"]
    assert "--backend cpu" in header["command_line"] and "--out " + path in header["command_line"], header["command_line"]
    assert header["driver_version"] is None and header["cuda_runtime_version"] is None and header["nccl_version"] is None

    done = run("trace", "check", path, expect=1)
    assert "cut short" in done.stdout, done.stdout
    shutil.copyfile(path, keep)
print(f"killed run: {events} events readable, cut at byte {last_end} of {len(data)}")
