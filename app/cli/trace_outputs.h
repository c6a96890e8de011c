// The trace files a run can leave behind: --out (the .sstrace file, written while the run goes, so a crash
// keeps what was recorded), --chrome (Chrome trace JSON for Perfetto) and --csv (memory series), written at the end.
// Shared by every command that produces a trace (simulate now; run with the executors).
#pragma once
#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

#include "trace/trace_sink.h"
#include "trace/trace_store.h"

namespace shardscope::cli {

struct TraceOutputPaths {
  std::string trace;   // --out
  std::string chrome;  // --chrome
  std::string csv;     // --csv
};

class TraceOutputs {
 public:
  // Opens the --out file at once, so a bad path fails before any work; throws ScenarioError naming the flag.
  explicit TraceOutputs(TraceOutputPaths paths);
  ~TraceOutputs();
  TraceSink& sink() { return *sink_; }
  // Writes the exports; lists what was written on `log`. Throws ScenarioError naming the flag if a file cannot be written.
  void finish(std::ostream& log);

 private:
  TraceOutputPaths paths_;
  std::vector<std::unique_ptr<TraceSink>> owned_;
  std::unique_ptr<TraceStore> store_;
  std::unique_ptr<TraceSink> sink_;
};

}  // namespace shardscope::cli
