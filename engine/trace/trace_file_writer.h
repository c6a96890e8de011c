// Writes a run's trace to a .sstrace file as it happens (format: trace/trace_format.h). Depends on nothing
// outside engine/.
// Usage:
//   TraceFileWriter file("run.sstrace");        // throws std::runtime_error naming the path if it cannot open
//   TeeTraceSink tee({&file, &store});
//   simulate(..., tee);                         // begin(header), emit(...)..., end()
// Crash safety: records are appended whole. Between flushes they wait in memory; a flush writes only complete
// records, so a reader (or a crash) sees the file end at a record boundary, except for a write cut short by
// the OS, which the reader reports as truncated. A flush happens on begin(), when the buffer exceeds
// buffer_bytes, when max_delay has passed since the last flush (checked on emit), on Error and RunEnd events,
// on flush() and on end(); a producer that pauses for long (a live run waiting on something) should call
// flush() so a following reader is not left behind. end() writes the End record that marks a finished trace, and closes the file.
// Thread contract: begin/emit/end/flush may be called from any thread; calls are serialised.
// Errors: a failed write throws std::runtime_error naming the path; emit() before begin() or after end()
// throws std::logic_error.
#pragma once
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <string>

#include "trace/trace_sink.h"

namespace shardscope {

struct TraceFileWriterOptions {
  std::size_t buffer_bytes = 256 * 1024;            // 0: write every record as it comes
  std::chrono::milliseconds max_delay{100};         // longest a record waits in memory while events arrive
};

class TraceFileWriter : public TraceSink {
 public:
  explicit TraceFileWriter(const std::string& path, TraceFileWriterOptions options = {});
  ~TraceFileWriter() override;  // writes what is buffered (no End record unless end() was called) and closes
  TraceFileWriter(const TraceFileWriter&) = delete;
  TraceFileWriter& operator=(const TraceFileWriter&) = delete;

  void begin(const TraceHeader& header) override;
  void emit(const TraceEvent& event) override;
  void end() override;
  void flush();

  const std::string& path() const { return path_; }
  std::uint64_t events_written() const;
  std::uint64_t bytes_written() const;  // bytes handed to the OS so far (complete records only)

 private:
  void flush_locked();
  void write_locked(const std::string& bytes);

  std::string path_;
  TraceFileWriterOptions options_;
  mutable std::mutex mutex_;
  std::FILE* file_ = nullptr;
  std::string buffer_;
  std::string payload_;  // scratch for one event's payload
  bool begun_ = false;
  bool ended_ = false;
  TimeNs previous_t_ns_ = 0;
  std::uint64_t events_ = 0;
  std::uint64_t bytes_ = 0;
  std::chrono::steady_clock::time_point last_flush_;
};

}  // namespace shardscope
