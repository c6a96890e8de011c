#!/usr/bin/env python3
"""The window on a trace cut short (the run killed by check_trace_killed_run.py): `shardscope --trace F
--screenshot OUT` still renders and exits 0, and says on stderr where the file is cut. Skips (77) as the other
screenshot tests do where Xvfb is missing.
Usage: check_trace_cut_window.py SHARDSCOPE SCREENSHOT_TEST_SH TRACE OUT.png
"""
import subprocess
import sys

app, script, trace, out = sys.argv[1:5]
# screenshot_test.sh starts Xvfb and runs the window; `true` stands for its pixel checker (the pixels are not the
# point here, the exit code and stderr are).
done = subprocess.run(["sh", script, app, "true", out, "--trace", trace, "--"], capture_output=True, text=True)
if done.returncode == 77:
    print(done.stdout.strip())
    sys.exit(77)
assert done.returncode == 0, (done.returncode, done.stdout, done.stderr)
assert f"shardscope: trace file '{trace}' is cut short at byte" in done.stderr, done.stderr
assert "showing the" in done.stderr and "events before it" in done.stderr, done.stderr
print("window on a cut trace: ok")
