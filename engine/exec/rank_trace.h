// Emits one rank's trace events with measured times: the clock is read under the rank's lock, so events of the
// rank's host and stream threads reach the sink in time order (TraceSink's per-rank contract).
#pragma once
#include "exec/exec_layer.h"
#include <chrono>
#include <mutex>

#include "trace/trace_sink.h"

namespace shardscope::exec {

using RunClock = std::chrono::steady_clock;

class RankTrace {
 public:
  RankTrace(int rank, TraceSink& sink, RunClock::time_point run_start) : rank_(rank), sink_(sink), start_(run_start) {}
  // Stamps event.rank and event.t_ns (ns since the run started) and hands it to the sink. Thread-safe.
  void emit(TraceEvent event);
  void op_event(TraceEventKind kind, OpIndex index, const Op& op);  // OpBegin / OpEnd / Phase of a plan op

 private:
  int rank_;
  TraceSink& sink_;
  RunClock::time_point start_;
  std::mutex mutex_;
};

TimeNs ns_since(RunClock::time_point start);

}  // namespace shardscope::exec
