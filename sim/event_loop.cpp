// run_event_loop: a min-heap of (time, global op, begin/end). Events are handled in time order, so when an op's
// last predecessor ends at t, t is the op's arrival (the latest of its predecessors' ends).
#include "sim/event_loop.h"

#include <algorithm>
#include <queue>

namespace shardscope {

namespace {

struct QueuedEvent {
  TimeNs t_ns;
  GlobalOp op;
  bool is_end;
};

// Orders the heap by time, then global op id (rank-major), begin before end: a total order, so the run is
// deterministic; the emitter re-sorts each timestamp by (rank, op) anyway.
struct Later {
  bool operator()(const QueuedEvent& a, const QueuedEvent& b) const {
    if (a.t_ns != b.t_ns) return a.t_ns > b.t_ns;
    if (a.op != b.op) return a.op > b.op;
    return a.is_end > b.is_end;
  }
};

class EventLoop {
 public:
  EventLoop(const Plan& plan, const SimGraph& graph, EventEmitter& emitter)
      : plan_(plan), g_(graph), emitter_(emitter), pending_(graph.pending),
        arrived_(graph.instances.size(), 0), last_arrival_ns_(graph.instances.size(), 0) {
    const std::size_t n = graph.op_count();
    times_.arrival_ns.assign(n, -1);
    times_.begin_ns.assign(n, -1);
    times_.end_ns.assign(n, -1);
    std::vector<QueuedEvent> storage;
    storage.reserve(plan.programs.size() * kStreamCount * 2 + 16);
    heap_ = std::priority_queue<QueuedEvent, std::vector<QueuedEvent>, Later>(Later{}, std::move(storage));
  }

  OpTimes run() {
    for (std::size_t id = 0; id < g_.op_count(); ++id)
      if (pending_[id] == 0) ready(static_cast<GlobalOp>(id), 0);
    while (!heap_.empty()) {
      const QueuedEvent event = heap_.top();
      heap_.pop();
      if (event.is_end) {
        end(event.op, event.t_ns);
      } else {
        begin(event.op, event.t_ns);
      }
    }
    return std::move(times_);
  }

 private:
  int rank_of(GlobalOp id) const { return g_.rank_of[static_cast<std::size_t>(id)]; }
  OpIndex index_of(GlobalOp id) const { return id - g_.rank_offset[static_cast<std::size_t>(rank_of(id))]; }

  void ready(GlobalOp id, TimeNs t_ns) {
    times_.arrival_ns[static_cast<std::size_t>(id)] = t_ns;
    const std::int32_t instance = g_.instance_of[static_cast<std::size_t>(id)];
    if (instance < 0) {
      heap_.push({t_ns, id, false});
      return;
    }
    const auto k = static_cast<std::size_t>(instance);
    last_arrival_ns_[k] = std::max(last_arrival_ns_[k], t_ns);
    const SimInstance& info = g_.instances[k];
    if (++arrived_[k] < info.expected) return;
    for (std::int32_t m = 0; m < info.member_count; ++m)  // everyone starts with the last to arrive
      heap_.push({last_arrival_ns_[k], g_.members[static_cast<std::size_t>(info.member_begin + m)], false});
  }

  void begin(GlobalOp id, TimeNs t_ns) {
    times_.begin_ns[static_cast<std::size_t>(id)] = t_ns;
    const Op& op = g_.op(plan_, id);
    if (op.kind == OpKind::Alloc || op.kind == OpKind::Free || op.kind == OpKind::Phase) {
      emitter_.record(t_ns, rank_of(id), index_of(id), RecordKind::Marker);
      end_silently(id, t_ns);
      return;
    }
    emitter_.record(t_ns, rank_of(id), index_of(id), RecordKind::Begin);
    const std::int32_t instance = g_.instance_of[static_cast<std::size_t>(id)];
    const TimeNs duration = instance < 0 ? g_.duration_ns[static_cast<std::size_t>(id)]
                                         : g_.instances[static_cast<std::size_t>(instance)].duration_ns;
    heap_.push({saturating_add(t_ns, duration), id, true});  // times stop at kMaxTimeNs
  }

  void end(GlobalOp id, TimeNs t_ns) {
    emitter_.record(t_ns, rank_of(id), index_of(id), RecordKind::End);
    end_silently(id, t_ns);
  }

  void end_silently(GlobalOp id, TimeNs t_ns) {
    times_.end_ns[static_cast<std::size_t>(id)] = t_ns;
    ++times_.ended;
    release(g_.next_on_stream[static_cast<std::size_t>(id)], t_ns);
    const auto first = g_.dependents_begin[static_cast<std::size_t>(id)];
    const auto last = g_.dependents_begin[static_cast<std::size_t>(id) + 1];
    for (auto d = first; d < last; ++d) release(g_.dependents[static_cast<std::size_t>(d)], t_ns);
  }

  void release(GlobalOp successor, TimeNs t_ns) {
    if (successor >= 0 && --pending_[static_cast<std::size_t>(successor)] == 0) ready(successor, t_ns);
  }

  const Plan& plan_;
  const SimGraph& g_;
  EventEmitter& emitter_;
  std::vector<std::int32_t> pending_;
  std::vector<std::int32_t> arrived_;
  std::vector<TimeNs> last_arrival_ns_;
  std::priority_queue<QueuedEvent, std::vector<QueuedEvent>, Later> heap_;
  OpTimes times_;
};

}  // namespace

OpTimes run_event_loop(const Plan& plan, const SimGraph& graph, EventEmitter& emitter) {
  return EventLoop(plan, graph, emitter).run();
}

}  // namespace shardscope
