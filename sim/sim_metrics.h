// From simulated op times to the SimulationResult figures (definitions in simulation_result.h).
#pragma once
#include "memory/accounting.h"
#include "sim/event_loop.h"
#include "sim/simulation_result.h"

namespace shardscope {

SimulationResult measure_simulation(const Plan& plan, const SimGraph& graph, const OpTimes& times, const MemoryReport& memory);

}  // namespace shardscope
