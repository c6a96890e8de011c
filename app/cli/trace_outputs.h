// The trace files a run can leave behind: --out (the .sstrace file, written while the run goes, so a crash
// keeps what was recorded), --chrome (Chrome trace JSON for Perfetto) and --csv (memory series), written at the end.
// Shared by every command that produces a trace (simulate now; run with the executors).
#pragma once
#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

#include "trace/events/trace_sink.h"
#include "trace/store/trace_store.h"

namespace shardscope::cli {

struct TraceOutputPaths {
  std::string trace;   // --out
  std::string chrome;  // --chrome
  std::string csv;     // --csv
};

class TraceOutputs {
 public:
  // Opens the --out file at once, so a bad path fails before any work; throws ScenarioError naming the flag.
  // The --out file's header records this host, the time now and `command_line` (trace/file/recording_stamp.h).
  // `stream`: another sink to feed (run --serve's server), behind the same recording stamp.
  explicit TraceOutputs(TraceOutputPaths paths, std::string command_line = "", TraceSink* stream = nullptr);
  ~TraceOutputs();
  TraceSink& sink() { return *stamped_; }
  // Writes the exports; lists what was written on `log`. Throws ScenarioError naming the flag if a file cannot be written.
  void finish(std::ostream& log);

 private:
  TraceOutputPaths paths_;
  std::vector<std::unique_ptr<TraceSink>> owned_;
  std::unique_ptr<TraceStore> store_;
  std::unique_ptr<TraceSink> sink_;
  std::unique_ptr<TraceSink> stamped_;  // sink_ behind the recording stamp
};

// A store's Chrome trace / memory CSV written to `path`, listed on `log`; throws ScenarioError naming `flag` if the
// file cannot be written. Shared with `trace export`.
void write_chrome_file(const TraceStore& store, const std::string& flag, const std::string& path, std::ostream& log);
void write_memory_csv_file(const TraceStore& store, const std::string& flag, const std::string& path, std::ostream& log);

}  // namespace shardscope::cli
