// The discrete-event core: walks a SimGraph in simulated time. An op becomes ready when its stream predecessor
// and its deps have ended (arrival); a compute / alloc / free / phase op then begins at once, a collective when
// every member of its group has arrived, a Send / Recv when its partner has (rendezvous). One binary heap of
// op ends (an op begins the moment it can, which is always the time being handled); per op O(log in-flight) work
// and no allocation once the arrays are sized.
#pragma once
#include "sim/sim_layer.h"
#include <cstdint>
#include <vector>

#include "sim/event_emitter.h"
#include "sim/sim_graph.h"

namespace shardscope {

// Per global op; -1 for ops that never became ready / began / ended (a stuck plan). Only arrivals are stored per op
// (a 1,024-rank plan has 1.4 M ops): an op begins when it arrives (a compute op with a host delay that much later), unless it belongs to a collective or message, whose
// members all begin together when the last of them arrives; and every op that begins ends its duration later (alloc,
// free and phase ops: at once), since the loop runs until no op is left running.
struct OpTimes {
  std::vector<TimeNs> arrival_ns;
  std::vector<TimeNs> instance_begin_ns;  // per SimInstance
  std::size_t ended = 0;  // how many ops ended

  TimeNs begin_ns(const SimGraph& graph, std::size_t id) const {
    const std::int32_t instance = graph.instance_of[id];
    if (instance >= 0) return instance_begin_ns[static_cast<std::size_t>(instance)];
    return arrival_ns[id] < 0 ? -1 : saturating_add(arrival_ns[id], graph.delay_of(id));  // a host delay: later
  }
  TimeNs end_ns(const SimGraph& graph, std::size_t id) const {
    const TimeNs begin = begin_ns(graph, id);
    return begin < 0 ? -1 : saturating_add(begin, graph.duration_of(id));  // saturating, as the loop adds
  }
};

// Counts graph.pending down in place (ops that ran end at 0): a copy of it cost 4 B an op for nothing. The graph's
// other arrays are only read.
OpTimes run_event_loop(const Plan& plan, SimGraph& graph, EventEmitter& emitter);

}  // namespace shardscope
