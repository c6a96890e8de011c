// RankTrace: per-rank time stamps and event emission.
#include "exec/rank_trace.h"

#include <algorithm>

namespace shardscope::exec {

TimeNs ns_since(RunClock::time_point start) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(RunClock::now() - start).count();
}

TimeNs RankTrace::stamp(TraceEvent& event, std::optional<TimeNs> at) {
  const TimeNs now = ns_since(start_);
  event.rank = rank_;
  event.t_ns = at ? std::clamp(*at, last_, std::max(last_, now)) : std::max(now, last_);
  last_ = event.t_ns;
  sink_.emit(event);
  return event.t_ns;
}

void RankTrace::emit(TraceEvent event) {
  std::lock_guard lock(mutex_);
  stamp(event, std::nullopt);
}

namespace {
TraceEvent plan_op_event(TraceEventKind kind, OpIndex index, const Op& op) {
  TraceEvent event;
  event.kind = kind;
  event.step = op.step;
  event.op = index;
  event.stream = op.stream;
  if (kind == TraceEventKind::Phase) event.text = op.phase;
  return event;
}
}  // namespace

TimeNs RankTrace::op_event(TraceEventKind kind, OpIndex index, const Op& op) {
  TraceEvent event = plan_op_event(kind, index, op);
  std::lock_guard lock(mutex_);
  return stamp(event, std::nullopt);
}

void RankTrace::op_end(OpIndex index, const Op& op, TimeNs begin, std::optional<TimeNs> device_time) {
  TraceEvent event = plan_op_event(TraceEventKind::OpEnd, index, op);
  std::lock_guard lock(mutex_);
  stamp(event, device_time ? std::optional<TimeNs>(begin + *device_time) : std::nullopt);
}

}  // namespace shardscope::exec
