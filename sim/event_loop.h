// The discrete-event core: walks a SimGraph in simulated time. An op becomes ready when its stream predecessor
// and its deps have ended (arrival); a compute / alloc / free / phase op then begins at once, a collective when
// every member of its group has arrived, a Send / Recv when its partner has (rendezvous). One binary heap of
// begin / end events; per op O(log in-flight) work and no allocation once the arrays are sized.
#pragma once
#include "sim/sim_layer.h"
#include <cstdint>
#include <vector>

#include "sim/event_emitter.h"
#include "sim/sim_graph.h"

namespace shardscope {

// Per global op; -1 for ops that never became ready / began / ended (a stuck plan).
struct OpTimes {
  std::vector<TimeNs> arrival_ns;
  std::vector<TimeNs> begin_ns;
  std::vector<TimeNs> end_ns;
  std::size_t ended = 0;  // how many ops ended
};

OpTimes run_event_loop(const Plan& plan, const SimGraph& graph, EventEmitter& emitter);

}  // namespace shardscope
