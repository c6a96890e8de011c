#!/usr/bin/env python3
"""Follow live (issue 19), end to end under Xvfb: the window following a run as it is recorded (--follow FILE) or
served (--connect HOST:PORT) and pictured once the run has finished draws the same frame as the finished file
replayed (--trace FILE), and a viewer without the token is refused.

Usage: check_follow_live.py SHARDSCOPE_CLI SHARDSCOPE COMPARE_SCREENSHOTS WORKDIR
Exit 0 pass, 1 fail, 77 skipped (no Xvfb).

Why the frames can be compared: --screenshot with --follow / --connect waits for the run's End record and puts the
playhead at the end of the run, exactly where --trace FILE --screenshot puts it, and the followed store holds the
same events as the replayed one. --follow FILE and --trace FILE must match pixel for pixel. --connect names its
source HOST:PORT where --trace names the file, in the menu bar and on the left column's first line: those two
lines of text are the only pixels allowed to differ (rectangles below, measured at the 1600x900 default window and
font scale 1; everything else, charts, timeline, caption, device cards, transport, must match exactly).
"""
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from xvfb_display import start_xvfb  # noqa: E402

CLI, GUI, COMPARE, WORKDIR = sys.argv[1:5]
# A run long enough (a few hundred ms on the CPU backend) that the window sees it grow.
RUN = ["run", "--model", "mlp:4x256", "--strategy", "ddp", "--world", "2", "--batch", "64", "--steps", "20", "--backend", "cpu"]
TOKEN = "follow-live-test-token-0123456789"
# The source's name: the menu bar's text after the menus, and the left column's first line ("Trace: ...").
SOURCE_NAME_RECTS = ["--ignore", "130,0,1600,22", "--ignore", "10,30,390,56"]

failures = []


def check(condition, message):
    if not condition:
        failures.append(message)
        print("FAIL: " + message)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def window(args, env, timeout=180, cwd=None):
    return subprocess.run([GUI] + args, env=env, capture_output=True, text=True, timeout=timeout, cwd=cwd)


def compare(a, b, extra=()):
    result = subprocess.run([COMPARE, a, b] + list(extra), capture_output=True, text=True)
    print("compare %s %s: %s" % (os.path.basename(a), os.path.basename(b), result.stdout.strip()))
    return result.returncode == 0


def read_serving_line(process):
    line = process.stderr.readline()
    match = re.match(r"serving on (\S+):(\d+) token ([0-9A-Za-z_-]+)$", line.strip())
    if not match:
        raise SystemExit("FAIL: no 'serving on HOST:PORT token TOKEN' line, got %r" % line)
    return match.group(1), int(match.group(2)), match.group(3)


def main():
    os.makedirs(WORKDIR, exist_ok=True)
    work = tempfile.mkdtemp(dir=WORKDIR)
    xvfb, display = start_xvfb()
    env = dict(os.environ, DISPLAY=display)
    env.pop("SHARDSCOPE_TOKEN", None)
    try:
        # 1. --follow: the window starts first and waits for the file; the recorder starts after it.
        trace = os.path.join(work, "followed.sstrace")
        followed_png, replayed_png = os.path.join(work, "followed.png"), os.path.join(work, "replayed.png")
        viewer = subprocess.Popen([GUI, "--follow", trace, "--screenshot", followed_png, "--screenshot-timeout", "120"],
                                  env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(1.0)  # the window is up and waiting for a file that is not there yet
        recorder = subprocess.run([CLI] + RUN + ["--out", trace], capture_output=True, text=True, timeout=300)
        check(recorder.returncode == 0, "run --out exited %d: %s" % (recorder.returncode, recorder.stderr))
        out, err = viewer.communicate(timeout=180)
        check(viewer.returncode == 0, "--follow --screenshot exited %d: %s" % (viewer.returncode, err))
        replay = window(["--trace", trace, "--screenshot", replayed_png], env)
        check(replay.returncode == 0, "--trace --screenshot exited %d: %s" % (replay.returncode, replay.stderr))
        check(compare(followed_png, replayed_png), "--follow at the end and --trace differ")

        # A file cut short (a recorder killed mid-run) never finishes: --screenshot-timeout saves it unfinished, exit 2.
        cut = os.path.join(work, "cut.sstrace")
        with open(trace, "rb") as f:
            data = f.read()
        with open(cut, "wb") as f:
            f.write(data[: len(data) * 9 // 10])
        unfinished = window(["--follow", cut, "--screenshot", os.path.join(work, "cut.png"), "--screenshot-timeout", "1"], env)
        check(unfinished.returncode == 2, "--follow of a file cut short exited %d, not 2" % unfinished.returncode)
        check("did not finish within 1 s" in unfinished.stderr, "no 'did not finish' message: %r" % unfinished.stderr)
        check(os.path.exists(os.path.join(work, "cut.png")), "no picture of the unfinished run")

        # 2. --serve / --connect: the viewer starts first and waits for the server; the recorder lingers until
        # stopped with SIGINT once the viewer has its picture.
        port = free_port()
        served = os.path.join(work, "served.sstrace")
        connected_png, served_png = os.path.join(work, "connected.png"), os.path.join(work, "served.png")
        viewer = subprocess.Popen([GUI, "--connect", "127.0.0.1:%d" % port, "--token", TOKEN, "--screenshot", connected_png],
                                  env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(1.0)
        recorder = subprocess.Popen([CLI] + RUN + ["--out", served, "--serve", str(port), "--token", TOKEN, "--serve-linger", "120"],
                                    env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        host, bound_port, token = read_serving_line(recorder)
        check((host, bound_port, token) == ("127.0.0.1", port, TOKEN), "serving line names %s:%d %s" % (host, bound_port, token))
        out, err = viewer.communicate(timeout=180)
        check(viewer.returncode == 0, "--connect --screenshot exited %d: %s" % (viewer.returncode, err))
        recorder.send_signal(signal.SIGINT)  # ends the linger early
        rec_out, rec_err = recorder.communicate(timeout=60)
        check(recorder.returncode == 0, "run --serve exited %d after SIGINT: %s" % (recorder.returncode, rec_err))
        check(re.search(r"served [1-9][0-9]* viewer connection", rec_err) is not None, "the recorder does not report its viewer: %s" % rec_err)
        # By its short name, from its folder: the name takes one line, as HOST:PORT does (a long path wraps, moving
        # everything below it).
        replay = window(["--trace", os.path.basename(served), "--screenshot", served_png], env, cwd=work)
        check(replay.returncode == 0, "--trace --screenshot exited %d: %s" % (replay.returncode, replay.stderr))
        check(compare(connected_png, served_png, SOURCE_NAME_RECTS), "--connect at the end and --trace differ")

        # 3. A viewer without the token, or with another one, is refused: exit 2 and the reason.
        recorder = subprocess.Popen([CLI] + RUN + ["--serve", "0", "--serve-linger", "120"], env=env,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        host, bound_port, token = read_serving_line(recorder)
        check(re.fullmatch(r"[0-9a-f]{32}", token) is not None, "the random token %r is not 128 bits in hex" % token)
        check(bound_port > 0, "port 0 was not replaced by the chosen port")
        for name, extra in (("no token", []), ("a wrong token", ["--token", "not-the-token-0123456789"])):
            refused = window(["--connect", "%s:%d" % (host, bound_port), "--screenshot", os.path.join(work, "refused.png")] + extra,
                             env, timeout=60)
            check(refused.returncode == 2, "a viewer with %s exited %d, not 2" % (name, refused.returncode))
            check("refused: wrong token" in refused.stderr, "a viewer with %s was not told 'refused: wrong token': %r" % (name, refused.stderr))
        recorder.send_signal(signal.SIGINT)
        recorder.communicate(timeout=60)
    finally:
        xvfb.kill()
        xvfb.wait()
    if failures:
        print("%d failure(s); pictures kept in %s" % (len(failures), work))
        return 1
    shutil.rmtree(work, ignore_errors=True)
    print("follow live: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
