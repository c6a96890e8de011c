// Writes a run's trace to a .sstrace file as it happens (format: trace/file/FORMAT.md, trace/file/trace_format.h). Depends on
// nothing outside engine/.
// Usage:
//   TraceFileWriter file("run.sstrace");        // throws std::runtime_error naming the path if it cannot open
//   TeeTraceSink tee({&file, &store});
//   simulate(..., tee);                         // begin(header), emit(...)..., end()
// Events go into EventBlock records (format version 2): a block closes at a flush (or when full), so what reaches
// the file is always whole records.
// Crash safety: records are appended whole. Between flushes they wait in memory; a flush writes only complete
// records with one write, so a reader (or a writer killed with SIGKILL) sees the file end at a record boundary,
// except for a write cut short by the OS, which the reader reports as truncated. A flush happens on begin(), on
// every Phase event (a phase boundary), on Error and RunEnd events, when the buffer exceeds buffer_bytes, on
// flush() and on end(); and a timer thread flushes what waits at least every max_delay, even while no event
// arrives (a producer that pauses does not leave records in memory). A killed writer's file therefore lacks at
// most the last max_delay of events and replays to its last complete record. end() writes the End record that
// marks a finished trace, and closes the file.
// Thread contract: begin/emit/end/flush may be called from any thread; calls are serialised.
// Errors: a failed write throws std::runtime_error naming the path (a write the timer thread failed is thrown by
// the next emit / flush / end); emit() before begin() or after end() throws std::logic_error.
#pragma once
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <string>
#include <thread>

#include "trace/file/trace_event_codec.h"
#include "trace/events/trace_sink.h"

namespace shardscope {

struct TraceFileWriterOptions {
  std::size_t buffer_bytes = 256 * 1024;            // 0: write every record as it comes
  std::chrono::milliseconds max_delay{100};         // longest a record waits in memory (timer thread); 0: no timer
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
  void throw_timer_error_locked();
  void run_timer();
  void stop_timer();

  std::string path_;
  TraceFileWriterOptions options_;
  mutable std::mutex mutex_;
  std::FILE* file_ = nullptr;
  std::string buffer_;                      // whole records waiting for the next flush
  trace_format::EventBlockEncoder blocks_;  // the events since the last record; a flush closes the block
  bool begun_ = false;
  bool ended_ = false;
  std::uint64_t events_ = 0;
  std::uint64_t bytes_ = 0;
  std::chrono::steady_clock::time_point last_flush_;
  std::string timer_error_;        // a write the timer thread failed, thrown by the next call
  std::condition_variable timer_wake_;
  bool timer_stopping_ = false;
  std::thread timer_;              // last: started once every other member is ready
};

}  // namespace shardscope
