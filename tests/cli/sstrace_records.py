"""An independent reading of the .sstrace framing (engine/trace/file/FORMAT.md), for the CLI tests: walks the records,
checks each CRC with zlib's CRC-32, and counts them by type (events: one per Event record of a version 1 file, the
count each EventBlock record of a version 2 file states); decode_blocks reads a version 2 file's events. Written from the document, not from the C++ reader, so
a test that compares the two catches either drifting."""
import struct
import zlib

MAGIC = b"SSTRACE\0"
PREAMBLE = 16


def varint(data, pos):
    value, shift = 0, 0
    while True:
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
        shift += 7


def records(data):
    """[(type, offset, end, payload)] of the complete, checksummed records; stops at the first that is not."""
    assert data[:8] == MAGIC, "not a trace"
    out, pos = [], PREAMBLE
    while pos < len(data):
        try:
            length, body = varint(data, pos + 1)
        except IndexError:
            break
        end = body + length + 4
        if end > len(data):
            break
        (crc,) = struct.unpack("<I", data[body + length:end])
        if zlib.crc32(data[pos:body + length]) != crc:
            break
        out.append((data[pos], pos, end, data[body:body + length]))
        pos = end
    return out


def version(data):
    return struct.unpack("<I", data[8:12])[0]


def block_count(payload):
    """The number of events an EventBlock record (type 4, format version 2) holds: its payload's leading varint."""
    return varint(payload, 0)[0]


def unzigzag(u):
    return (u >> 1) ^ -(u & 1)


def decode_blocks(payloads):
    """The events of a version 2 file's EventBlock payloads, in order, as dicts with TraceEvent's field names
    (FORMAT.md, "Event block"): the per-rank references carry from block to block."""
    ranks, texts, previous_rank, events = {}, [], 0, []
    for payload in payloads:
        count, pos = varint(payload, 0)
        for _ in range(count):
            head = payload[pos]
            pos += 1
            e = {"kind": head & 7, "stream": (head >> 3) & 3}
            if head & 0x20:
                u, pos = varint(payload, pos)
                previous_rank = unzigzag(u)
            e["rank"] = previous_rank
            r = ranks.setdefault(previous_rank, {"t": 0, "step": 0, "op": 0, "tensor": 0, "allocated": 0, "reserved": 0})
            u, pos = varint(payload, pos)
            r["t"] += unzigzag(u)
            e["t_ns"] = r["t"]
            e["op"] = -1
            if head & 0x40:
                u, pos = varint(payload, pos)
                r["op"] += unzigzag(u)
                e["op"] = r["op"]
            presence = 0
            if head & 0x80:
                presence, pos = varint(payload, pos)
            if presence & 1:
                u, pos = varint(payload, pos)
                r["step"] += unzigzag(u)
            e["step"] = r["step"]
            e["category"] = 5
            if presence & 2:
                e["category"] = payload[pos]
                pos += 1
            e["bytes"] = 0
            if presence & 4:
                u, pos = varint(payload, pos)
                e["bytes"] = unzigzag(u)
            for bit, key, field in ((8, "allocated", "allocated_after"), (16, "reserved", "reserved_after")):
                e[field] = 0
                if presence & bit:
                    u, pos = varint(payload, pos)
                    r[key] += unzigzag(u)
                    e[field] = r[key]
            e["tensor"] = -1
            if presence & 32:
                u, pos = varint(payload, pos)
                r["tensor"] += unzigzag(u)
                e["tensor"] = r["tensor"]
            e["text"] = b""
            if presence & 64:
                u, pos = varint(payload, pos)
                if u == 0:
                    n, pos = varint(payload, pos)
                    e["text"] = payload[pos:pos + n]
                    pos += n
                    if len(texts) < 65536:
                        texts.append(e["text"])
                else:
                    e["text"] = texts[u - 1]
            events.append(e)
        assert pos == len(payload), "bytes left over in an event block"
    return events


def summary(data):
    """(events, header_end, last_complete_end, has_end_record)."""
    recs = records(data)
    events = sum(1 if r[0] == 2 else block_count(r[3]) for r in recs if r[0] in (2, 4))
    return events, recs[0][2], (recs[-1][2] if recs else PREAMBLE), any(r[0] == 3 for r in recs)
