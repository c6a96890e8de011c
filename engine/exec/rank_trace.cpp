// RankTrace: per-rank time stamps and event emission.
#include "exec/rank_trace.h"

namespace shardscope::exec {

TimeNs ns_since(RunClock::time_point start) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(RunClock::now() - start).count();
}

void RankTrace::emit(TraceEvent event) {
  std::lock_guard lock(mutex_);
  event.rank = rank_;
  event.t_ns = ns_since(start_);
  sink_.emit(event);
}

void RankTrace::op_event(TraceEventKind kind, OpIndex index, const Op& op) {
  TraceEvent event;
  event.kind = kind;
  event.step = op.step;
  event.op = index;
  event.stream = op.stream;
  if (kind == TraceEventKind::Phase) event.text = op.phase;
  emit(event);
}

}  // namespace shardscope::exec
