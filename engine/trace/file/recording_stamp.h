// The recording metadata of a trace header (host, start time, command line), stamped by whoever records a run
// (the CLI's --out), so a trace handed to someone else says where, when and how it was made. Depends on trace/ only.
// Usage:
//   StampingTraceSink stamped(file_writer, make_recording_stamp(shell_quoted_command_line(argc, argv)));
//   simulate(..., stamped);   // begin() fills the header's empty host / recorded_at / command_line, then forwards
#pragma once
#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "trace/events/trace_sink.h"

namespace shardscope {

struct RecordingStamp {
  std::string host;          // gethostname(); "" when it fails
  std::string recorded_at;   // UTC ISO-8601 to the second, "2026-11-25T20:10:59Z"
  std::string command_line;
};

// This machine's host name, the time now and `command_line`.
RecordingStamp make_recording_stamp(std::string command_line);

// "2026-11-25T20:10:59Z".
std::string utc_iso8601(std::chrono::system_clock::time_point t);

// The words joined by spaces, each quoted as a POSIX shell reads it back: left as is when it holds only
// [A-Za-z0-9_@%+=:,./-] (and is not empty), else in single quotes with each ' written '\''.
std::string shell_quoted_command_line(const std::vector<std::string>& words);

// Forwards everything to `next`; begin() first fills the header's host, recorded_at and command_line where empty.
class StampingTraceSink : public TraceSink {
 public:
  StampingTraceSink(TraceSink& next, RecordingStamp stamp) : next_(next), stamp_(std::move(stamp)) {}
  void begin(const TraceHeader& header) override;
  void emit(const TraceEvent& event) override { next_.emit(event); }
  void end() override { next_.end(); }
  bool keeps_events() const override { return next_.keeps_events(); }

 private:
  TraceSink& next_;
  RecordingStamp stamp_;
};

}  // namespace shardscope
