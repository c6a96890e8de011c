// run_event_loop: a min-heap of op ends (time, global op). Ends are handled in time order, so when an op's last
// predecessor ends at t, t is the op's arrival (the latest of its predecessors' ends), and it begins at t.
#include "sim/event_loop.h"

#include <algorithm>
#include <queue>

namespace shardscope {

namespace {

// An op's end (or, as ~op, the delayed begin of a compute op with host time before it). Only ends are queued: an op begins at the time it becomes ready (or its last peer arrives), which is
// always the time being handled, so it begins at once instead of through the heap (half the heap traffic, and none
// for alloc / free / phase ops, which end as they begin). Ops of one time may be handled in any order: each op's times
// are the latest of its predecessors' ends, and the emitter sorts each timestamp's records.
struct QueuedEnd {
  TimeNs t_ns;
  GlobalOp op;
};

// Orders the heap by time, then global op id (rank-major): a total order, so the run is deterministic.
struct Later {
  bool operator()(const QueuedEnd& a, const QueuedEnd& b) const {
    if (a.t_ns != b.t_ns) return a.t_ns > b.t_ns;
    return a.op > b.op;
  }
};

class EventLoop {
 public:
  EventLoop(const Plan& plan, SimGraph& graph, EventEmitter& emitter)
      : g_(graph), emitter_(emitter), pending_(graph.pending),
        arrived_(graph.instances.size(), 0), last_arrival_ns_(graph.instances.size(), 0) {
    const std::size_t n = graph.op_count();
    times_.arrival_ns.assign(n, -1);
    times_.instance_begin_ns.assign(graph.instances.size(), -1);
    std::vector<QueuedEnd> storage;
    storage.reserve(plan.programs.size() * kStreamCount + 16);
    heap_ = std::priority_queue<QueuedEnd, std::vector<QueuedEnd>, Later>(Later{}, std::move(storage));
  }

  OpTimes run() {
    for (std::size_t id = 0; id < g_.op_count(); ++id)
      if (pending_[id] == 0) ready(static_cast<GlobalOp>(id), 0);
    begin_startable(0);
    while (!heap_.empty()) {
      const QueuedEnd event = heap_.top();
      heap_.pop();
      if (event.op < 0) {  // a compute op whose host delay (SimGraph::host_delay_ns) is over: it begins now
        begin(~event.op, event.t_ns);
        begin_startable(event.t_ns);
        continue;
      }
      emitter_.record(event.t_ns, event.op, RecordKind::End);
      end_silently(event.op, event.t_ns);
      begin_startable(event.t_ns);
    }
    return std::move(times_);
  }

 private:
  // Called at time t_ns, the time being handled (arrivals come in time order).
  void ready(GlobalOp id, TimeNs t_ns) {
    times_.arrival_ns[static_cast<std::size_t>(id)] = t_ns;
    const std::int32_t instance = g_.instance_of[static_cast<std::size_t>(id)];
    if (instance < 0) {
      if (const TimeNs delay = g_.delay_of(static_cast<std::size_t>(id)); delay > 0)
        heap_.push({saturating_add(t_ns, delay), ~id});  // begins after the executor's host time (queued as ~id)
      else
        startable_.push_back(id);
      return;
    }
    const auto k = static_cast<std::size_t>(instance);
    last_arrival_ns_[k] = std::max(last_arrival_ns_[k], t_ns);
    const SimInstance& info = g_.instances[k];
    if (++arrived_[k] < info.expected) return;
    times_.instance_begin_ns[k] = last_arrival_ns_[k];
    for (std::int32_t m = 0; m < info.member_count; ++m)  // everyone starts with the last to arrive: now
      startable_.push_back(g_.members[static_cast<std::size_t>(info.member_begin + m)]);
  }

  // Begins every op that became startable at t_ns, and those their instant ends make startable in turn (a worklist,
  // not recursion: a stream may hold long runs of allocs and frees).
  void begin_startable(TimeNs t_ns) {
    while (!startable_.empty()) {
      const GlobalOp id = startable_.back();
      startable_.pop_back();
      begin(id, t_ns);
    }
  }

  void begin(GlobalOp id, TimeNs t_ns) {
    if (g_.instant[static_cast<std::size_t>(id)]) {
      emitter_.record(t_ns, id, RecordKind::Marker);
      end_silently(id, t_ns);
      return;
    }
    emitter_.record(t_ns, id, RecordKind::Begin);
    heap_.push({saturating_add(t_ns, g_.duration_of(static_cast<std::size_t>(id))), id});  // times stop at kMaxTimeNs
  }

  void end_silently(GlobalOp id, TimeNs t_ns) {
    ++times_.ended;
    release(g_.next_on_stream[static_cast<std::size_t>(id)], t_ns);
    const auto first = g_.dependents_begin[static_cast<std::size_t>(id)];
    const auto last = g_.dependents_begin[static_cast<std::size_t>(id) + 1];
    for (auto d = first; d < last; ++d) release(g_.dependents[static_cast<std::size_t>(d)], t_ns);
  }

  void release(GlobalOp successor, TimeNs t_ns) {
    if (successor >= 0 && --pending_[static_cast<std::size_t>(successor)] == 0) ready(successor, t_ns);
  }

  const SimGraph& g_;
  EventEmitter& emitter_;
  std::vector<std::int32_t>& pending_;  // the graph's, counted down
  std::vector<std::int32_t> arrived_;
  std::vector<TimeNs> last_arrival_ns_;
  std::vector<GlobalOp> startable_;  // ready at the time being handled, not begun yet
  std::priority_queue<QueuedEnd, std::vector<QueuedEnd>, Later> heap_;
  OpTimes times_;
};

}  // namespace

OpTimes run_event_loop(const Plan& plan, SimGraph& graph, EventEmitter& emitter) {
  return EventLoop(plan, graph, emitter).run();
}

}  // namespace shardscope
