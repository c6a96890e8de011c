#!/usr/bin/env python3
"""Untrusted text the CLI echoes in its errors goes through printable() (engine/core/untrusted_text.h): a model spec
and a safetensors tensor name holding ANSI escape sequences reach stderr escaped (no ESC byte), and a 100 kB spec (about what one argument may hold) is
cut, so the message stays a line.
Usage: check_untrusted_text.py CLI"""
import json
import os
import struct
import subprocess
import sys
import tempfile

cli = sys.argv[1]


def run(*args):
    return subprocess.run([cli, *args], capture_output=True, text=True)


done = run("memory", "--model", "\x1b[2Jevil\x1b]0;title\x07")
assert done.returncode == 2, (done.returncode, done.stderr)
assert "\x1b" not in done.stderr and "\x07" not in done.stderr, repr(done.stderr)
assert "unknown model '\\x1b[2Jevil\\x1b]0;title\\x07'" in done.stderr, done.stderr
print("ok: a model spec with escape sequences:", done.stderr.strip()[:120])

done = run("memory", "--model", "mlp:" + "9" * 100_000)
assert done.returncode == 2, (done.returncode, done.stderr[:300])
assert "… (99748 more bytes)" in done.stderr and len(done.stderr) < 2000, (len(done.stderr), done.stderr[:300])
print("ok: a 100 kB model spec is cut:", len(done.stderr), "bytes of stderr")

with tempfile.TemporaryDirectory() as tmp:
    # One F32 tensor whose name carries an escape sequence, its shape [2] (8 bytes) over 4 bytes of data: the
    # reader names it in its refusal.
    header = json.dumps({"fc1.weight\x1b[31m": {"dtype": "F32", "shape": [2], "data_offsets": [0, 4]}}).encode()
    header += b" " * (-len(header) % 8)
    path = os.path.join(tmp, "evil.safetensors")
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(header)) + header + b"\0\0\0\0")
    done = run("run", "--backend", "cpu", "--model", "mlp:2x8", "--strategy", "single", "--batch", "2", "--load-params", path)
    assert done.returncode == 2, (done.returncode, done.stderr)
    assert "\x1b" not in done.stderr, repr(done.stderr)
    assert "fc1.weight\\x1b[31m" in done.stderr, done.stderr
    print("ok: a tensor name with an escape sequence:", done.stderr.strip()[:160])
