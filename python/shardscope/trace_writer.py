"""Writes a ShardScope trace (.sstrace, format version 2) from Python, exactly as FORMAT.md (under engine/trace/) describes
it and trace_file_writer.cpp / trace_event_codec.cpp write it: the 16-byte preamble, the Header record (its JSON
with the keys sorted and no spaces), EventBlock records whose events are delta-coded against the previous event of
their rank, and an End record when the writer finishes. Standard library only.

Crash safety is the C++ writer's: only whole, checksummed records reach the file (one os.write per flush), and the
writer flushes at the header, at every Phase, Error and RunEnd event, when a block holds 4,096 events or 256 KiB,
and from a timer thread at least every 100 ms while events wait. A process killed with SIGKILL leaves a file the
C++ reader reads up to its last complete record (lacking at most the last 100 ms and the End record).

    w = TraceWriter("run.sstrace", header_dict)      # writes preamble + header at once
    w.event(ALLOC, rank=0, t_ns=1000, category=PARAMETERS, bytes=4096, allocated_after=4096, reserved_after=4096)
    w.close()                                          # last block, End record

header_dict holds every key of the header table; make_header() fills the fixed ones.
"""
import json
import os
import threading
import zlib

MAGIC = b"SSTRACE\x00"
FORMAT_VERSION = 2
TOOL_VERSION = "ShardScope 0.1.0"

# Record types.
RECORD_HEADER, RECORD_EVENT, RECORD_END, RECORD_EVENT_BLOCK = 1, 2, 3, 4

# TraceEventKind (engine/trace/events/trace_event.h).
OP_BEGIN, OP_END, ALLOC, FREE, PHASE, DEVICE_MEMORY, ERROR, RUN_END = range(8)
KIND_NAMES = ("op_begin", "op_end", "alloc", "free", "phase", "device_memory", "error", "run_end")

# Category (engine/core/category.h): the index is the file's code, the name the JSON key of `memory --json`.
CATEGORIES = ("parameters", "gradients", "ddp_buckets", "optimizer_state", "activations", "temporaries",
              "communication_buffers", "gathered_parameters")
(PARAMETERS, GRADIENTS, DDP_BUCKETS, OPTIMIZER_STATE, ACTIVATIONS, TEMPORARIES, COMMUNICATION_BUFFERS,
 GATHERED_PARAMETERS) = range(8)

# Stream.
STREAMS = ("compute", "communication", "copy")
COMPUTE, COMMUNICATION, COPY = range(3)

MAX_BLOCK_EVENTS = 4096          # the C++ writer's block size (a reader refuses more than 65,536)
MAX_BLOCK_PAYLOAD = 256 * 1024   # flush when this much waits
MAX_INTERNED_TEXTS = 65536       # the first 65,536 new texts of a file get an index
MAX_TRACE_BYTES = 1 << 56
MAX_TRACE_TIME_NS = 1 << 60

_HEAD_RANK, _HEAD_OP, _HEAD_PRESENCE = 1 << 5, 1 << 6, 1 << 7
_STEP, _CATEGORY, _BYTES, _ALLOCATED, _RESERVED, _TENSOR, _TEXT = (1 << i for i in range(7))
_MASK64 = (1 << 64) - 1


def put_varint(out, value):
    """Unsigned LEB128 of a value in [0, 2^64)."""
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)


def zigzag(n):
    """Signed 64-bit integer -> unsigned: 0 -> 0, -1 -> 1, 1 -> 2, -2 -> 3."""
    return ((n << 1) ^ (n >> 63)) & _MASK64


def _delta(value, reference):
    """zigzag(value - reference), the difference taken modulo 2^64 as the C++ codec does."""
    d = (value - reference) & _MASK64
    if d >= 1 << 63:
        d -= 1 << 64
    return zigzag(d)


def encode_record(record_type, payload):
    """type, varint length, payload, CRC-32 (zlib's) of everything before it, little-endian."""
    out = bytearray([record_type])
    put_varint(out, len(payload))
    out += payload
    out += (zlib.crc32(out) & 0xFFFFFFFF).to_bytes(4, "little")
    return bytes(out)


def encode_preamble(version=FORMAT_VERSION):
    return MAGIC + version.to_bytes(4, "little") + (0).to_bytes(4, "little")


def _clean(value):
    """Header strings as valid UTF-8: argv words and host names may carry undecodable bytes (surrogateescape)."""
    if isinstance(value, str):
        return value.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    if isinstance(value, dict):
        return {_clean(k): _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    return value


def encode_header_json(header):
    """The header JSON as the C++ writer dumps it: keys sorted, no spaces, UTF-8."""
    return json.dumps(_clean(header), sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def make_header(*, source, scenario_json, accounting_rules, devices, host=None, recorded_at=None, command_line=None,
                driver_version=None, cuda_runtime_version=None, nccl_version=None, plan=None, extra=None):
    """Every key of FORMAT.md's header table. devices: [{"rank", "name", "capacity", "physical_device"}]. extra: more
    keys (readers ignore keys they do not know). scenario_json must be a string (the scenario as JSON text, or ""):
    the C++ reader calls a header whose scenario_json is anything else damaged, so a file written so could not be
    opened."""
    if not isinstance(scenario_json, str):
        raise TypeError(f"scenario_json must be a string (JSON text or \"\"), not {type(scenario_json).__name__}")
    header = {
        "format": "shardscope-trace",
        "format_version": FORMAT_VERSION,
        "tool_version": TOOL_VERSION,
        "source": source,
        "scenario_json": scenario_json,
        "accounting_rules": accounting_rules,
        "devices": [{"rank": int(d["rank"]), "name": str(d["name"]), "capacity": int(d.get("capacity", 0)),
                     "physical_device": int(d.get("physical_device", -1))} for d in devices],
        "plan": plan,
        "host": host,
        "recorded_at": recorded_at,
        "command_line": command_line,
        "driver_version": driver_version,
        "cuda_runtime_version": cuda_runtime_version,
        "nccl_version": nccl_version,
    }
    if extra:
        for key, value in extra.items():
            if key in header:
                raise ValueError(f"extra header key {key!r} would replace a key of the format")
            header[key] = value
    return header


class _RankState:
    __slots__ = ("t_ns", "step", "op", "tensor", "allocated", "reserved")

    def __init__(self):
        self.t_ns = self.step = self.op = self.tensor = self.allocated = self.reserved = 0


class EventBlockEncoder:
    """Version 2's event coding (trace_event_codec.cpp): each event against the previous event of its rank, texts
    interned across the whole file. close_block() returns the EventBlock record of the events added since the last
    call (b"" when there are none)."""

    def __init__(self):
        self._ranks = {}
        self._previous_rank = 0
        self._texts = {}
        self._payload = bytearray()
        self.events = 0

    def add(self, kind, rank, t_ns, step=0, op=-1, stream=COMPUTE, category=TEMPORARIES, bytes=0, allocated_after=0,
            reserved_after=0, tensor=-1, text=""):
        if not 0 <= kind < 8:
            raise ValueError(f"event kind {kind} is not 0..7")
        if not 0 <= stream < 3:
            raise ValueError(f"stream {stream} is not 0..2")
        if not 0 <= category < len(CATEGORIES):
            raise ValueError(f"category {category} is not 0..{len(CATEGORIES) - 1}")
        if abs(t_ns) > MAX_TRACE_TIME_NS:
            raise ValueError(f"time {t_ns} ns is past ±2^60")
        for name, value in (("bytes", bytes), ("allocated_after", allocated_after), ("reserved_after", reserved_after)):
            if abs(value) > MAX_TRACE_BYTES:
                raise ValueError(f"{name} {value} is past ±2^56")
        r = self._ranks.get(rank)
        if r is None:
            r = self._ranks[rank] = _RankState()
        head = kind | (stream << 3)
        presence = 0
        if rank != self._previous_rank:
            head |= _HEAD_RANK
        if op != -1:
            head |= _HEAD_OP
        if step != r.step:
            presence |= _STEP
        if category != TEMPORARIES:
            presence |= _CATEGORY
        if bytes != 0:
            presence |= _BYTES
        if allocated_after != 0:
            presence |= _ALLOCATED
        if reserved_after != 0:
            presence |= _RESERVED
        if tensor != -1:
            presence |= _TENSOR
        if text:
            presence |= _TEXT
        if presence:
            head |= _HEAD_PRESENCE
        out = self._payload
        out.append(head)
        if head & _HEAD_RANK:
            put_varint(out, zigzag(rank))
        put_varint(out, _delta(t_ns, r.t_ns))
        if head & _HEAD_OP:
            put_varint(out, _delta(op, r.op))
        if presence:
            put_varint(out, presence)
        if presence & _STEP:
            put_varint(out, _delta(step, r.step))
        if presence & _CATEGORY:
            out.append(category)
        if presence & _BYTES:
            put_varint(out, zigzag(bytes))
        if presence & _ALLOCATED:
            put_varint(out, _delta(allocated_after, r.allocated))
        if presence & _RESERVED:
            put_varint(out, _delta(reserved_after, r.reserved))
        if presence & _TENSOR:
            put_varint(out, _delta(tensor, r.tensor))
        if presence & _TEXT:
            index = self._texts.get(text)
            if index is not None:
                put_varint(out, index + 1)
            else:
                encoded = text.encode("utf-8", "replace")
                out.append(0)
                put_varint(out, len(encoded))
                out += encoded
                if len(self._texts) < MAX_INTERNED_TEXTS:
                    self._texts[text] = len(self._texts)
        # What the next event of this rank is coded against (EventCodingState::remember).
        self._previous_rank = rank
        r.t_ns = t_ns
        r.step = step
        if head & _HEAD_OP:
            r.op = op
        if presence & _ALLOCATED:
            r.allocated = allocated_after
        if presence & _RESERVED:
            r.reserved = reserved_after
        if presence & _TENSOR:
            r.tensor = tensor
        self.events += 1

    def pending_bytes(self):
        return len(self._payload)

    def close_block(self):
        if self.events == 0:
            return b""
        count = bytearray()
        put_varint(count, self.events)
        record = encode_record(RECORD_EVENT_BLOCK, bytes(count) + bytes(self._payload))
        self._payload = bytearray()
        self.events = 0
        return record


class TraceWriter:
    """A .sstrace file written as the run goes. Thread-safe: events may come from any thread (each event's time
    should be taken while the caller holds whatever orders its rank's events; see Recorder). flush_interval_s: the
    timer thread's period (0 or None: no timer)."""

    def __init__(self, path, header, flush_interval_s=0.1):
        self.path = path
        self._lock = threading.Lock()
        self._encoder = EventBlockEncoder()
        self._closed = False
        self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_BINARY", 0), 0o644)
        self.bytes_written = 0
        self._write(encode_preamble() + encode_record(RECORD_HEADER, encode_header_json(header)))
        self._stop = threading.Event()
        self._timer = None
        if flush_interval_s:
            self._timer = threading.Thread(target=self._flush_loop, args=(flush_interval_s,), name="shardscope-trace-flush",
                                           daemon=True)
            self._timer.start()

    def _write(self, data):
        view = memoryview(data)
        while view:
            n = os.write(self._fd, view)
            view = view[n:]
        self.bytes_written += len(data)

    def _flush_loop(self, period):
        while not self._stop.wait(period):
            self.flush()

    def event(self, kind, rank, t_ns, **fields):
        """Appends one event (fields: step, op, stream, category, bytes, allocated_after, reserved_after, tensor,
        text); flushes at Phase, Error and RunEnd and when a block is full."""
        with self._lock:
            if self._closed:
                return
            self._encoder.add(kind, rank, t_ns, **fields)
            if (kind in (PHASE, ERROR, RUN_END) or self._encoder.events >= MAX_BLOCK_EVENTS
                    or self._encoder.pending_bytes() >= MAX_BLOCK_PAYLOAD):
                self._write(self._encoder.close_block())

    def flush(self):
        with self._lock:
            if not self._closed and self._encoder.events:
                self._write(self._encoder.close_block())

    def close(self, end=True):
        """Writes what waits and, with end, the End record (a trace whose writer finished); closes the file."""
        self._stop.set()
        if self._timer is not None and self._timer is not threading.current_thread():
            self._timer.join()
        with self._lock:
            if self._closed:
                return
            data = self._encoder.close_block()
            if end:
                data += encode_record(RECORD_END, b"")
            if data:
                self._write(data)
            self._closed = True
            os.close(self._fd)

    def abandon(self):
        """Stops writing without touching the file again (a forked child's inherited writer)."""
        self._closed = True
        self._lock = threading.Lock()  # the parent's may have been held by a thread the child does not have
        self._stop = threading.Event()
        self._timer = None

    @property
    def closed(self):
        return self._closed
