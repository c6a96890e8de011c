// Emits one rank's trace events with measured times: the clock is read under the rank's lock, so events of the
// rank's host and stream threads reach the sink in time order (TraceSink's per-rank contract).
#pragma once
#include "exec/exec_layer.h"
#include <chrono>
#include <mutex>
#include <optional>

#include "trace/events/trace_sink.h"

namespace shardscope::exec {

using RunClock = std::chrono::steady_clock;

class RankTrace {
 public:
  RankTrace(int rank, TraceSink& sink, RunClock::time_point run_start) : rank_(rank), sink_(sink), start_(run_start) {}
  // Stamps event.rank and event.t_ns (ns since the run started) and hands it to the sink. Thread-safe.
  void emit(TraceEvent event);
  // OpBegin / OpEnd / Phase of a plan op, stamped now; returns the stamp.
  TimeNs op_event(TraceEventKind kind, OpIndex index, const Op& op);
  // OpEnd of an op that began at `begin`: at begin + the device's time for its work where the backend measured one
  // (RankBackend::run_kernel_timed), kept between the rank's last event and now so the rank's events stay in time
  // order; else now.
  void op_end(OpIndex index, const Op& op, TimeNs begin, std::optional<TimeNs> device_time);

 private:
  int rank_;
  TraceSink& sink_;
  TimeNs stamp(TraceEvent& event, std::optional<TimeNs> at);  // under mutex_

  RunClock::time_point start_;
  TimeNs last_ = 0;  // the latest stamp handed to the sink
  std::mutex mutex_;
};

TimeNs ns_since(RunClock::time_point start);

}  // namespace shardscope::exec
