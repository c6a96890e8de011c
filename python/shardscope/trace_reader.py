"""Reads a .sstrace file in Python (format versions 1 and 2, FORMAT.md under engine/trace/): the header, every event up
to the first missing or damaged record, and whether the End record was reached. For tests and scripts; the C++
reader (trace_file_reader.cpp) is the reference. Standard library only.

    trace = read_trace("run.sstrace")
    trace.header["source"], trace.complete, trace.events[0].kind
    phase_bytes(trace, rank=0)   # [(phase, step, {category: bytes}, allocated, reserved)], replaying Alloc / Free
"""
import json
import zlib

from .trace_writer import (ALLOC, CATEGORIES, FREE, MAGIC, PHASE, RECORD_END, RECORD_EVENT, RECORD_EVENT_BLOCK,
                           RECORD_HEADER, TEMPORARIES)


class TraceFormatError(Exception):
    pass


class Event:
    __slots__ = ("kind", "rank", "t_ns", "step", "op", "stream", "category", "bytes", "allocated_after",
                 "reserved_after", "tensor", "text")

    def __init__(self, **fields):
        for name in self.__slots__:
            setattr(self, name, fields.get(name))

    def __repr__(self):
        return "Event(" + ", ".join(f"{n}={getattr(self, n)!r}" for n in self.__slots__) + ")"


class Trace:
    def __init__(self):
        self.version = 0
        self.header = None
        self.events = []
        self.complete = False
        self.problem = ""
        self.valid_bytes = 0
        self.file_bytes = 0


def _varint(data, pos):
    value = shift = 0
    for i in range(10):
        if pos >= len(data):
            raise IndexError
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
        shift += 7
    raise TraceFormatError("varint longer than 10 bytes")


def _unzigzag(u):
    return (u >> 1) ^ -(u & 1)


def _signed64(u):
    u &= (1 << 64) - 1
    return u - (1 << 64) if u >= 1 << 63 else u


class _Decoder:
    def __init__(self):
        self.previous_rank = 0
        self.ranks = {}
        self.texts = []

    def block(self, data):
        count, pos = _varint(data, 0)
        events = []
        for _ in range(count):
            head = data[pos]
            pos += 1
            kind, stream = head & 7, (head >> 3) & 3
            if head & 0x20:
                u, pos = _varint(data, pos)
                rank = _unzigzag(u)
            else:
                rank = self.previous_rank
            r = self.ranks.setdefault(rank, {"t": 0, "step": 0, "op": 0, "tensor": 0, "allocated": 0, "reserved": 0})
            u, pos = _varint(data, pos)
            t = _signed64(r["t"] + _unzigzag(u))
            op = -1
            if head & 0x40:
                u, pos = _varint(data, pos)
                op = _signed64(r["op"] + _unzigzag(u))
            presence = 0
            if head & 0x80:
                presence, pos = _varint(data, pos)
            step = r["step"]
            if presence & 1:
                u, pos = _varint(data, pos)
                step = _signed64(step + _unzigzag(u))
            category = TEMPORARIES
            if presence & 2:
                category = data[pos]
                pos += 1
            nbytes = allocated = reserved = 0
            tensor = -1
            text = ""
            if presence & 4:
                u, pos = _varint(data, pos)
                nbytes = _unzigzag(u)
            if presence & 8:
                u, pos = _varint(data, pos)
                allocated = _signed64(r["allocated"] + _unzigzag(u))
            if presence & 16:
                u, pos = _varint(data, pos)
                reserved = _signed64(r["reserved"] + _unzigzag(u))
            if presence & 32:
                u, pos = _varint(data, pos)
                tensor = _signed64(r["tensor"] + _unzigzag(u))
            if presence & 64:
                u, pos = _varint(data, pos)
                if u == 0:
                    n, pos = _varint(data, pos)
                    text = bytes(data[pos:pos + n]).decode("utf-8", "replace")
                    pos += n
                    if len(self.texts) < 65536:
                        self.texts.append(text)
                else:
                    text = self.texts[u - 1]
            self.previous_rank = rank
            r["t"], r["step"] = t, step
            if head & 0x40:
                r["op"] = op
            if presence & 8:
                r["allocated"] = allocated
            if presence & 16:
                r["reserved"] = reserved
            if presence & 32:
                r["tensor"] = tensor
            events.append(Event(kind=kind, rank=rank, t_ns=t, step=step, op=op, stream=stream, category=category,
                                bytes=nbytes, allocated_after=allocated, reserved_after=reserved, tensor=tensor,
                                text=text))
        if pos != len(data):
            raise TraceFormatError("bytes left over in an event block")
        return events


def read_trace(path):
    with open(path, "rb") as f:
        data = f.read()
    trace = Trace()
    trace.file_bytes = len(data)
    if data[:8] != MAGIC:
        raise TraceFormatError("not a ShardScope trace")
    if len(data) < 16:
        raise TraceFormatError("the file ends inside its preamble")
    trace.version = int.from_bytes(data[8:12], "little")
    if trace.version not in (1, 2):
        raise TraceFormatError(f"format version {trace.version}")
    pos = 16
    decoder = _Decoder()
    previous_t = 0
    while True:
        trace.valid_bytes = pos
        if pos == len(data):
            trace.problem = "no End record"
            break
        try:
            length, q = _varint(data, pos + 1)
        except IndexError:
            trace.problem = f"the file ends inside a record at byte {pos}"
            break
        if q + length + 4 > len(data):
            trace.problem = f"the file ends inside a record at byte {pos}"
            break
        if zlib.crc32(data[pos:q + length]) != int.from_bytes(data[q + length:q + length + 4], "little"):
            trace.problem = f"record at byte {pos}: checksum mismatch"
            break
        kind, payload = data[pos], data[q:q + length]
        if trace.header is None:
            if kind != RECORD_HEADER:
                raise TraceFormatError("the first record is not a header")
            trace.header = json.loads(payload.decode("utf-8"))
        elif kind == RECORD_EVENT_BLOCK and trace.version >= 2:
            try:
                trace.events.extend(decoder.block(payload))
            except (IndexError, TraceFormatError) as e:
                trace.problem = f"record at byte {pos}: malformed event block ({e})"
                break
        elif kind == RECORD_EVENT and trace.version == 1:
            trace.events.append(_v1_event(payload, previous_t))
            previous_t = trace.events[-1].t_ns
        elif kind == RECORD_END:
            trace.complete = True
            trace.valid_bytes = q + length + 4
            trace.problem = ""
            break
        elif kind == RECORD_HEADER:
            trace.problem = f"record at byte {pos}: a second header"
            break
        pos = q + length + 4
    if trace.header is None:
        raise TraceFormatError("there is no header record")
    return trace


def _v1_event(p, previous_t):
    kind, sc, presence = p[0], p[1], p[2]
    pos = 3
    u, pos = _varint(p, pos)
    rank = _unzigzag(u)
    u, pos = _varint(p, pos)
    fields = {"kind": kind, "rank": rank, "t_ns": previous_t + _unzigzag(u), "stream": sc & 15, "category": sc >> 4,
              "step": 0, "op": -1, "bytes": 0, "allocated_after": 0, "reserved_after": 0, "tensor": -1, "text": ""}
    for bit, name in ((1, "step"), (2, "op"), (4, "bytes"), (8, "allocated_after"), (16, "reserved_after"),
                      (32, "tensor")):
        if presence & bit:
            u, pos = _varint(p, pos)
            fields[name] = _unzigzag(u)
    if presence & 64:
        n, pos = _varint(p, pos)
        fields["text"] = bytes(p[pos:pos + n]).decode("utf-8", "replace")
    return Event(**fields)


def phase_bytes(trace, rank=0):
    """Replays the rank's Alloc / Free events: at each Phase event, (phase, step, {category key: bytes},
    allocated_after, reserved_after) where the last two are the Phase event's own fields (the recorder puts the
    rank's totals there; on CUDA PyTorch's memory_allocated / memory_reserved)."""
    by_category = [0] * len(CATEGORIES)
    out = []
    for e in trace.events:
        if e.rank != rank:
            continue
        if e.kind == ALLOC:
            by_category[e.category] += e.bytes
        elif e.kind == FREE:
            by_category[e.category] -= e.bytes
        elif e.kind == PHASE:
            out.append((e.text, e.step, dict(zip(CATEGORIES, by_category)), e.allocated_after, e.reserved_after))
    return out


def peak(trace, rank=0):
    """The rank's highest allocated_after over its Alloc / Free events and the categories at that moment (as
    TraceStore keeps its peak: the first event that reaches it)."""
    by_category = [0] * len(CATEGORIES)
    best, best_categories = 0, dict(zip(CATEGORIES, by_category))
    for e in trace.events:
        if e.rank != rank or e.kind not in (ALLOC, FREE):
            continue
        by_category[e.category] += e.bytes if e.kind == ALLOC else -e.bytes
        if e.allocated_after > best:
            best, best_categories = e.allocated_after, dict(zip(CATEGORIES, by_category))
    return best, best_categories
