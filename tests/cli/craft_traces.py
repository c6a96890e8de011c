#!/usr/bin/env python3
"""Writes hand-crafted .sstrace files that a writer never produces, for the "no input crashes us" tests.

Usage: craft_traces.py CLI OUTDIR. A small simulated run (`CLI simulate --out OUTDIR/base.sstrace`) gives a real
header; from it:
  op-past-plan.sstrace   events naming op 1,000,000 and tensor 1,000,000 of rank 0 (its program has a few dozen ops),
                         one of them an op begun and never ended, so it is under way wherever the playhead is
  rank-2e9.sstrace       events of rank 2,000,000,000 (the plan has 2)
  header-1e12-ops.sstrace  a header whose rank 0 claims 10^12 ops
  escapes.sstrace        header texts with ANSI escape sequences (command line, source, device names), a 1 MB host
  too-big.sstrace        a header that may hold 8,000,000 default ops (it has 8 MB), too many for 512 MiB of memory
  same-as.sstrace        a 1.1 MB header whose rank 0 has 1,959 default ops and ranks 1 to 40,000 are "same_as" rank 0:
                         78 M ops in all, more than kMaxTracePlanOps (16 M) allows
  open-begins.sstrace    131,072 op-begins on rank 0 that never end, then 131,072 ops that begin and end (no plan)
  late-begins.sstrace    131,072 ops on rank 0 that begin and end, each earlier than the one before (no plan)
Format: engine/trace/file/trace_format.h (records: u8 type, varint length, payload, u32 CRC-32 of the three). The files
are written in format version 1 (one Event record per event), which readers still read: the real run's events
(version 2 blocks, decoded by sstrace_records.decode_blocks) are re-encoded after the crafted ones.
"""
import json
import os
import struct
import subprocess
import sys
import zlib

import sstrace_records

HEADER, EVENT, END = 1, 2, 3
OP_BEGIN, OP_END, ALLOC = 0, 1, 2
STEP, OP, BYTES, ALLOCATED, RESERVED, TENSOR = 1, 2, 4, 8, 16, 32


def varint(v):
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def zigzag(v):
    return varint((v << 1) ^ (v >> 63) if v < 0 else v << 1)


def record(kind, payload):
    framed = bytes([kind]) + varint(len(payload)) + payload
    return framed + struct.pack("<I", zlib.crc32(framed))


def event(kind, rank, op=None, tensor=None, nbytes=None, allocated=None, category=3):
    """An event at t = 0 (so the real run's first event, timed from 0, keeps its time after it)."""
    presence, fields = 0, b""
    for bit, value in ((STEP, 1), (OP, op), (BYTES, nbytes), (ALLOCATED, allocated), (RESERVED, allocated), (TENSOR, tensor)):
        if value is not None:
            presence |= bit
            fields += zigzag(value)
    return record(EVENT, bytes([kind, category << 4, presence]) + zigzag(rank) + zigzag(0) + fields)


def v1_op(kind, op, dt, stream=0):
    """A version 1 OpBegin / OpEnd record of rank 0, dt ns after the previous event."""
    return record(EVENT, bytes([kind, stream, OP]) + zigzag(0) + zigzag(dt) + zigzag(op))


def v1_event(e, previous_t):
    """A version 1 Event record of a decoded event (a dict with TraceEvent's field names)."""
    presence, fields = 0, b""
    for bit, key, default in ((STEP, "step", 0), (OP, "op", -1), (BYTES, "bytes", 0), (ALLOCATED, "allocated_after", 0),
                              (RESERVED, "reserved_after", 0), (TENSOR, "tensor", -1)):
        if e[key] != default:
            presence |= bit
            fields += zigzag(e[key])
    if e["text"]:
        presence |= 64
        fields += varint(len(e["text"])) + e["text"]
    head = bytes([e["kind"], e["stream"] | (e["category"] << 4), presence])
    return record(EVENT, head + zigzag(e["rank"]) + zigzag(e["t_ns"] - previous_t) + fields)


def records(data):
    pos = 16
    while pos < len(data):
        kind, length, shift, q = data[pos], 0, 0, pos + 1
        while True:
            b = data[q]
            q += 1
            length |= (b & 0x7F) << shift
            shift += 7
            if not b & 0x80:
                break
        yield kind, data[q:q + length], data[pos:q + length + 4]
        pos = q + length + 4


def write(path, preamble, header, events, body):
    with open(path, "wb") as f:
        f.write(preamble + record(HEADER, json.dumps(header).encode()) + b"".join(events) + body + record(END, b""))


def main():
    cli, out = sys.argv[1], sys.argv[2]
    os.makedirs(out, exist_ok=True)
    base = os.path.join(out, "base.sstrace")
    subprocess.run([cli, "simulate", "--model", "mlp:2x8", "--world", "2", "--steps", "1", "--out", base], check=True,
                   stdout=subprocess.DEVNULL)
    data = open(base, "rb").read()
    preamble = b"SSTRACE\0" + struct.pack("<II", 1, 0)  # version 1: one Event record per event
    parts = list(records(data))
    assert parts[0][0] == HEADER and parts[-1][0] == END
    header = json.loads(parts[0][1])
    header["format_version"] = 1
    real = sstrace_records.decode_blocks([payload for kind, payload, _ in parts[1:-1] if kind == 4])
    body, previous_t = b"", 0  # the crafted events come first, at t = 0
    for e in real:
        body += v1_event(e, previous_t)
        previous_t = e["t_ns"]

    past = 1_000_000
    write(os.path.join(out, "op-past-plan.sstrace"), preamble, header,
          [event(OP_BEGIN, 0, op=past), event(OP_BEGIN, 0, op=past + 1), event(OP_END, 0, op=past + 1),
           event(ALLOC, 0, op=past, tensor=past, nbytes=1 << 40, allocated=1 << 40)], body)
    write(os.path.join(out, "rank-2e9.sstrace"), preamble, header,
          [event(OP_BEGIN, 2_000_000_000, op=0), event(ALLOC, 2_000_000_000, op=0, tensor=0, nbytes=1 << 30, allocated=1 << 30)], body)

    # Header texts a terminal must not take as commands: ANSI escape sequences (clear the screen, set the title) and
    # a 1 MB host name.
    escapes = json.loads(parts[0][1])
    escapes["command_line"] = "shardscope-cli run \x1b[2J\x1b]0;pwned\x07"
    escapes["source"] = "simulator\x1b[31m"
    escapes["host"] = "h" * 1_000_000
    for device in escapes["devices"]:
        device["name"] = "H100\x1b[8m\u009b31m"
    write(os.path.join(out, "escapes.sstrace"), preamble, escapes, [], body)

    claims = json.loads(parts[0][1])
    claims["plan"]["programs"][0]["ops"]["count"] = 10 ** 12
    write(os.path.join(out, "header-1e12-ops.sstrace"), preamble, claims, [], b"")

    copied = json.loads(parts[0][1])
    copied["format_version"] = 1
    copies = 40_000  # ~30 bytes each: a 1.1 MB header
    copied["plan"]["programs"] = [{"rank": 0, "ops": {"count": 1959}, "tensors": {"count": 0}}] + [
        {"rank": r, "same_as": 0} for r in range(1, copies + 1)]
    write(os.path.join(out, "same-as.sstrace"), preamble, copied, [], b"")

    # Plan-less headers: any op index is admitted, so every begin and end counts.
    bare = json.loads(parts[0][1])
    bare["format_version"] = 1
    bare["plan"] = None
    n = 131072
    begins = [v1_op(OP_BEGIN, i, 0) for i in range(n)]
    for i in range(n):
        begins += [v1_op(OP_BEGIN, n + i, 1, stream=1), v1_op(OP_END, n + i, 1, stream=1)]
    write(os.path.join(out, "open-begins.sstrace"), preamble, bare, begins, b"")
    late = [v1_op(OP_BEGIN, 0, 10 * n)]  # then each op 10 ns before the previous one
    for i in range(n):
        late += [v1_op(OP_END, i, 5), v1_op(OP_BEGIN, i + 1, -15)] if i + 1 < n else [v1_op(OP_END, i, 5)]
    write(os.path.join(out, "late-begins.sstrace"), preamble, bare, late, b"")

    big = json.loads(parts[0][1])
    ops = 8_000_000
    big["scenario_json"] = " " * ops
    big["plan"]["programs"] = [{"rank": 0, "ops": {"count": ops}, "tensors": {"count": 0}}]
    write(os.path.join(out, "too-big.sstrace"), preamble, big, [], b"")


main()
