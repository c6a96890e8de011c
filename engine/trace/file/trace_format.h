// The .sstrace encoding, shared by the file writer and reader; no I/O here. Not for use outside engine/trace.
//
// The full description, with a worked example, is engine/trace/file/FORMAT.md (a test keeps the two in step).
// Layout (all integers little-endian):
//   preamble   "SSTRACE\0" (8 bytes), u32 format version, u32 flags (0)
//   records    u8 type, varint payload length, payload, u32 CRC-32 of (type, length, payload)
// Records: one Header first (UTF-8 JSON: tool version, source, scenario, rules, devices, plan, recording metadata;
// keys a reader does not know are ignored), then the events in the order they were emitted (version 2: EventBlock
// records, trace_event_codec.h; version 1: one Event record each), then End when the writer finished cleanly.
// Unknown record types are skipped, so later versions may add records without breaking older readers. A version 1
// event payload is:
//   u8 kind, u8 stream | category << 4, u8 presence bits, zigzag varint rank, zigzag varint (t_ns - previous
//   event's t_ns), then the present fields among step, op, bytes, allocated_after, reserved_after, tensor
//   (zigzag varints) and text (varint length + bytes); absent fields take TraceEvent's defaults.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

#include "trace/events/trace_event.h"

namespace shardscope::trace_format {

inline constexpr char kMagic[8] = {'S', 'S', 'T', 'R', 'A', 'C', 'E', '\0'};
// Version 2 carries events in EventBlock records (trace_event_codec.h); version 1 files (one Event record per event)
// still read.
inline constexpr std::uint32_t kFormatVersion = 2;
inline constexpr std::uint32_t kBlockFormatVersion = 2;  // the first version with EventBlock records
inline constexpr std::size_t kPreambleBytes = 16;
// The largest records a reader accepts; a longer length is damage (or a hostile peer) and is refused as soon as it is
// read, before a byte of the record is buffered (a stream server announcing a 2^32 - 1-byte record once made a viewer
// buffer gigabytes). The header: 1 GiB, above the largest header ShardScope writes (the plans lowering builds, at most
// 10 M real ops for 8 M estimated (strategy/lower.h), at about 74 bytes per op and tensor of JSON: a 1F1B plan of
// 659,606 ops and 216,104 tensors took 48.6 MB); writers refuse a larger one. Any other record: 16 MiB, as writers close
// an event block at kBlockPayloadBytes (64 KiB, trace_event_codec.h) plus one event, whose text they cut to
// kMaxEventTextBytes.
inline constexpr std::uint64_t kMaxHeaderRecordBytes = std::uint64_t{1} << 30;
inline constexpr std::uint64_t kMaxRecordBytes = std::uint64_t{16} << 20;
inline constexpr std::size_t kMaxEventTextBytes = std::size_t{1} << 20;

// A header's plan may copy a program stored once to other ranks ("same_as"); all its programs together may hold at
// most this many ops and tensors per byte of the header (a bound on what a small file can make a reader allocate).
inline constexpr std::uint64_t kPlanRowsPerHeaderByte = 64;
// And at most this many ops, and as many tensors, in all (copies included): twice the plans lowering builds
// (strategy/lower.h's kMaxPlanOps, 8 M estimated ops, an estimate at least 0.8 times the real count), so every trace
// ShardScope writes reads, and no header makes a reader hold more than about 2.4 GB of plan (16 M ops of 120 B,
// 16 M tensors of 32 B). Checked over the counts before anything is allocated.
inline constexpr std::uint64_t kMaxTracePlanOps = 16'000'000;

enum class RecordType : std::uint8_t { Header = 1, Event = 2, End = 3, EventBlock = 4 };

std::uint32_t crc32(const unsigned char* data, std::size_t size, std::uint32_t crc = 0);

// The preamble of a file of `version` (tests write version 1 files to check they still read).
std::string encode_preamble(std::uint32_t version = kFormatVersion);

// Appends one framed record to `out`; throws std::length_error for a payload past kMaxHeaderRecordBytes (a header) or
// kMaxRecordBytes (any other record), which no reader would accept.
void append_record(std::string& out, RecordType type, std::string_view payload);

// Appends one framed record whose payload is `first` followed by `second`.
void append_record(std::string& out, RecordType type, std::string_view first, std::string_view second);

// Version 1: appends the payload of `event` to `out`; `previous_t_ns` is the time of the previous event in the file (0 first).
void append_event_payload(std::string& out, const TraceEvent& event, TimeNs previous_t_ns);
// Decodes an event payload; false if it is malformed (out-of-range kind, overlong varint, bytes left over, a time
// past ±kMaxTraceTimeNs or a byte count past ±kMaxTraceBytes).
bool decode_event_payload(const unsigned char* data, std::size_t size, TimeNs previous_t_ns, TraceEvent& event);

// Varints, zigzag and little-endian helpers shared with the event codec and the reader's framing.
void put_varint(std::string& out, std::uint64_t v);
inline std::uint64_t zigzag(std::int64_t v) { return (static_cast<std::uint64_t>(v) << 1) ^ static_cast<std::uint64_t>(v >> 63); }
inline std::int64_t unzigzag(std::uint64_t v) { return static_cast<std::int64_t>(v >> 1) ^ -static_cast<std::int64_t>(v & 1); }
bool read_varint(const unsigned char*& p, const unsigned char* end, std::uint64_t& value);
std::uint32_t read_u32(const unsigned char* p);

// Header JSON. encode writes every field of `header` (the plan without op deps); decode throws
// std::runtime_error saying what is wrong or missing, or what exceeds the limits for untrusted files: more than
// kMaxTraceRanks devices or programs, a program whose rank is not its index, a program with more ops or tensors
// than the header has bytes, more ops and tensors in all than kPlanRowsPerHeaderByte per header byte or than
// kMaxTracePlanOps (each, copies of programs stored once included; checked before any is allocated), a plan that
// would need more than half the machine's memory, an integer field that is not an integer of its type's range, a
// byte count past ±kMaxTraceBytes.
std::string encode_header_json(const TraceHeader& header);
TraceHeader decode_header_json(std::string_view json);

}  // namespace shardscope::trace_format
