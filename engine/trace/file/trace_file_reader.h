// Reads .sstrace files (format: trace/file/trace_format.h): all at once, or following a file that is still being
// written. Depends on nothing outside engine/.
// Usage:
//   TraceReadResult r = read_trace_file("run.sstrace");   // throws TraceFileError if it is not a readable trace
//   if (r.truncated) warn(r.problem);                     // events up to the last complete record are in r.events
//   TraceStore store; replay_trace(r, store);
// What throws and what does not: a file that cannot be opened, is not a trace (magic), has a format version
// this build does not read, or whose header record is incomplete, corrupt or not understood throws
// TraceFileError. Damage after the header does not throw: the events before it are returned, truncated is set,
// and problem says where and what.
// A trace file is untrusted input (anyone may hand one over); nothing in it can crash a reader or make it allocate
// without bound:
// - The header is refused (TraceFileError) past the limits of trace_format::decode_header_json: more than
//   kMaxTraceRanks devices or programs, a program whose rank is not its index, a program with more ops or tensors
//   than the header record has bytes, more ops and tensors over all programs (copies included) than
//   kPlanRowsPerHeaderByte per header byte, more than kMaxTracePlanOps ops or tensors, a plan that would need more
//   than half the machine's memory (all three checked over the counts, before the copies are made), an integer
//   field that is a float or out of its type's range, a byte count past ±kMaxTraceBytes.
// - An event whose time lies past ±kMaxTraceTimeNs or whose byte counts lie past ±kMaxTraceBytes is damage: the
//   read stops there (truncated, with the byte offset), as at any malformed record.
// - Events are kept as the file holds them, whatever op, tensor or rank they name: TraceStore checks those against
//   the header and counts an event naming what the header lacks as ignored (trace_store.h).
// - Running out of memory (a file too large for this machine) throws TraceFileError ("not enough memory ..."),
//   from read_trace_file and from replay_trace, never a bare std::bad_alloc.
#pragma once
#include <cstdint>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "trace/events/trace_sink.h"

namespace shardscope {

class TraceFileError : public std::runtime_error {
 public:
  TraceFileError(const std::string& path, const std::string& problem, bool damaged = false)
      : std::runtime_error("trace file '" + path + "': " + problem), path_(path), problem_(problem), damaged_(damaged) {}
  const std::string& path() const { return path_; }
  const std::string& problem() const { return problem_; }
  // A trace of a version this build reads whose preamble or header record is cut short or corrupt (a damaged
  // trace), rather than a file that cannot be opened, is not a trace, or comes from a newer format version.
  bool damaged() const { return damaged_; }

 private:
  std::string path_;
  std::string problem_;
  bool damaged_ = false;
};

struct TraceReadResult {
  TraceHeader header;
  std::vector<TraceEvent> events;  // in file (emission) order; empty from load_trace_file, which hands them on
  std::uint64_t event_count = 0;   // events read (events.size() where they are kept)
  std::uint32_t format_version = 0;  // the preamble's: 1 (one Event record per event) or 2 (event blocks)
  // True when the file lacks the End record a finished writer leaves: the writer was killed or crashed (maybe
  // mid-record), is still writing, or a record is damaged. events then hold every complete record before that.
  bool truncated = false;
  std::string problem;             // why truncated, with the byte offset; empty when not truncated
  std::uint64_t valid_bytes = 0;   // file bytes up to the end of the last complete record read
  std::uint64_t file_bytes = 0;
  std::string path;                // where it was read from (named in errors)
  std::string header_json;         // the header record as the file holds it (keys this build ignores included)
};

// For a truncated read, what readers print on stderr: "trace file 'x.sstrace' is cut short at byte N of M:
// <problem>; showing the K events before it" (N = valid_bytes, M = file_bytes, K = event_count). "" when not truncated.
std::string describe_cut(const TraceReadResult& trace);

TraceReadResult read_trace_file(const std::string& path);
// Reads a trace file straight into `sink` (begin(header), every event as it is decoded, end()), reading the file a
// piece at a time: neither the file nor its events are held in memory (a 9 M-event trace costs only what the sink
// keeps). The result holds what read_trace_file's does but events (event_count says how many were handed on). Throws
// what read_trace_file throws, before begin() is called; TraceFileError if the sink runs out of memory.
TraceReadResult load_trace_file(const std::string& path, TraceSink& sink);
// The same for a file's bytes already in memory (tests, fuzzing); `path` names them in errors.
TraceReadResult read_trace_bytes(std::string_view bytes, const std::string& path);

// Whether the file starts with the trace magic (a scenario file, or one that cannot be opened, does not).
bool looks_like_trace_file(const std::string& path);

// Feeds a read trace to a sink: begin(header), every event, end(). Throws TraceFileError (naming trace.path) if the
// sink runs out of memory.
void replay_trace(const TraceReadResult& trace, TraceSink& sink);

// Follows a trace arriving as bytes (a network stream, trace/stream/trace_stream_follower.h; TraceFileFollower feeds it a
// file's new bytes): feed() takes the next bytes of the encoding, in order, and hands the complete records among what
// it has so far to `sink`: begin(header) once the header is there, emit() per event, end() when the End record
// arrives; a partial record waits for the next feed. `path` names the source in
// errors. received() counts every byte fed: a stream that breaks resumes from there, and nothing is lost or read twice.
struct TraceParseState;  // trace_file_reader.cpp: what the records so far left (preamble, header, coding state)

class TraceBytesFollower {
 public:
  explicit TraceBytesFollower(std::string name);
  ~TraceBytesFollower();
  TraceBytesFollower(TraceBytesFollower&&) noexcept;
  TraceBytesFollower& operator=(TraceBytesFollower&&) noexcept;
  std::size_t feed(std::string_view bytes, TraceSink& sink);  // returns the number of events emitted

  bool has_header() const;
  bool finished() const { return finished_; }
  bool corrupt() const { return !problem_.empty(); }
  const std::string& problem() const { return problem_; }
  std::uint64_t received() const { return offset_ + pending_.size(); }
  std::uint64_t valid_bytes() const { return offset_; }  // up to the end of the last complete record

 private:
  std::string name_;
  std::string pending_;
  std::uint64_t offset_ = 0;
  std::unique_ptr<TraceParseState> state_;  // created at the first feed
  bool finished_ = false;
  std::string problem_;
};

// Follows a trace file while its writer appends to it (a live GUI polls it once a frame).
// poll() reads the complete records appended since the last call and hands them to `sink`: begin(header) once the
// header is there, emit() per event, end() when the End record arrives. A partial record at the end of the file
// is left for the next poll. Throws TraceFileError for the header problems read_trace_file throws for (a file
// that does not exist yet or is still shorter than its header is not an error: poll returns 0).
// Not thread-safe: one thread polls.
class TraceFileFollower {
 public:
  explicit TraceFileFollower(std::string path) : path_(path), bytes_(std::move(path)) {}
  // Returns the number of events emitted. Reads at most `max_bytes` of the file (the rest waits for the next call), so
  // a window following a run that writes faster than a frame can take keeps its frame time.
  std::size_t poll(TraceSink& sink, std::size_t max_bytes = std::numeric_limits<std::size_t>::max());
  std::uint64_t received() const { return bytes_.received(); }  // file bytes read so far

  bool has_header() const { return bytes_.has_header(); }
  bool finished() const { return bytes_.finished(); }  // End record read
  bool corrupt() const { return bytes_.corrupt(); }    // a damaged record stopped reading for good
  const std::string& problem() const { return bytes_.problem(); }
  std::uint64_t valid_bytes() const { return bytes_.valid_bytes(); }

 private:
  std::string path_;
  TraceBytesFollower bytes_;  // received() is the file offset to read on from
};


}  // namespace shardscope
