"""An independent reading of the .sstrace framing (engine/trace/FORMAT.md), for the CLI tests: walks the records,
checks each CRC with zlib's CRC-32, and counts them by type. Written from the document, not from the C++ reader, so
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


def summary(data):
    """(events, header_end, last_complete_end, has_end_record)."""
    recs = records(data)
    events = sum(1 for r in recs if r[0] == 2)
    return events, recs[0][2], (recs[-1][2] if recs else PREAMBLE), any(r[0] == 3 for r in recs)
