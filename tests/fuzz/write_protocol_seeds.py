#!/usr/bin/env python3
"""Seeds for fuzz_lesson_expression and fuzz_stream_protocol, from the repository's own files:
- OUT/lesson_expression: every claim ("check") and narration placeholder ("{expr|format}") of the shipped lessons;
- OUT/stream: the handshake as trace_stream_protocol.h defines it (u32 big-endian length, "SSTS", version 1, kind),
  from both ends: as the viewer (first byte 0) a CHALLENGE, an ACCEPT (its MAC is made valid by the target) and then
  each trace of TRACES (the smallest four), or a REFUSED; as the server (first byte 1) a SUBSCRIBE.
Usage: write_protocol_seeds.py LESSONS_DIR TRACES_DIR OUT"""
import glob
import json
import os
import re
import struct
import sys

lessons, traces, out = sys.argv[1:4]


def frame(kind, payload):
    body = b"SSTS" + bytes([1, kind]) + payload
    return struct.pack(">I", len(body)) + body


def write(folder, name, data):
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, name), "wb") as f:
        f.write(data)


expressions = os.path.join(out, "lesson_expression")
count = 0
for path in sorted(glob.glob(os.path.join(lessons, "*.json"))):
    with open(path) as f:
        lesson = json.load(f)
    texts = [claim["check"] for claim in lesson.get("claims", [])]
    for step in lesson.get("steps", []):
        texts += [m.group(1).split("|")[0] for m in re.finditer(r"\{([^{}]*)\}", step.get("narration", ""))]
    for text in texts:
        write(expressions, f"{count:04d}", text.encode())
        count += 1

stream = os.path.join(out, "stream")
challenge = frame(1, bytes(range(32)))
accept = frame(3, bytes(16) + bytes(32))
write(stream, "refused", b"\0" + challenge + frame(4, b"wrong token (the token run --serve printed)"))
write(stream, "subscribe", b"\1" + frame(2, bytes(32) + struct.pack(">Q", 0) + bytes(32)))
write(stream, "accept-no-trace", b"\0" + challenge + accept)
found = sorted(glob.glob(os.path.join(traces, "*.sstrace")), key=os.path.getsize)[:4]
for path in found:
    with open(path, "rb") as f:
        write(stream, "accept-" + os.path.basename(path), b"\0" + challenge + accept + f.read())
print(f"{count} expressions, {3 + len(found)} stream seeds")
