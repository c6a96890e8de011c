#!/usr/bin/env python3
"""`shardscope-cli simulate --out/--chrome/--csv` as a user's script meets them: the trace file starts with its
magic, the Chrome trace loads as JSON with ranks as processes and streams as threads, and the CSV's columns are
the documented ones, its per-rank maximum equal to the peak `--json` reports (two independent paths: the
TraceStore built from events vs the accounting report). A path that cannot be written exits 2."""
import csv
import json
import os
import subprocess
import sys
import tempfile

cli, scenario = sys.argv[1], sys.argv[2]
with tempfile.TemporaryDirectory() as tmp:
    trace, chrome, table = (os.path.join(tmp, name) for name in ("run.sstrace", "run.json", "run.csv"))
    result = subprocess.run([cli, "simulate", scenario, "--json", "--out", trace, "--chrome", chrome, "--csv", table],
                            check=True, capture_output=True, text=True)
    report = json.loads(result.stdout)
    world = len(report["ranks"])

    with open(trace, "rb") as f:
        assert f.read(8) == b"SSTRACE\0", "trace magic"

    with open(chrome) as f:
        events = json.load(f)["traceEvents"]
    processes = {e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "process_name"}
    assert len(processes) == world and all(p.startswith("rank ") for p in processes), processes
    threads = {e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "thread_name"}
    assert {"compute", "communication"} <= threads, threads
    spans = [e for e in events if e["ph"] == "X"]
    assert {e["pid"] for e in spans} == set(range(world))
    assert any(e["cat"] == "forward" for e in spans) and any(e["cat"] == "backward" for e in spans)
    # The last op ends when the run ends (µs in the export, ns in the report).
    last_end_us = max(e["ts"] + e["dur"] for e in spans)
    assert abs(last_end_us * 1000 - report["run_time_ns"]) <= 1, (last_end_us, report["run_time_ns"])
    assert any(e["ph"] == "C" for e in events), "memory counter tracks"

    with open(table) as f:
        rows = list(csv.DictReader(f))
    assert list(rows[0].keys()) == ["t_ns", "rank", "allocated_bytes", "reserved_bytes", "parameters", "gradients",
                                    "ddp_buckets", "optimizer_state", "activations", "temporaries",
                                    "communication_buffers", "gathered_parameters"], rows[0].keys()
    for rank in report["ranks"]:
        peak = max(int(r["allocated_bytes"]) for r in rows if int(r["rank"]) == rank["rank"])
        assert peak == rank["peak_bytes"], (rank["rank"], peak, rank["peak_bytes"])
    for r in rows:
        categories = sum(int(r[k]) for k in list(r.keys())[4:])
        assert categories == int(r["allocated_bytes"]), r

bad = subprocess.run([cli, "simulate", scenario, "--out", "/nonexistent/dir/run.sstrace"], capture_output=True, text=True)
assert bad.returncode == 2 and "--out" in bad.stderr, (bad.returncode, bad.stderr)
print("ok:", world, "ranks,", len(spans), "spans,", len(rows), "memory rows")
