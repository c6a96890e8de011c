// From simulated op times to the SimulationResult figures (definitions in simulation_result.h).
#pragma once
#include "sim/sim_layer.h"
#include "memory/accounting.h"
#include "run/simulation_result.h"
#include "sim/event_loop.h"

namespace shardscope {

SimulationResult measure_simulation(const Plan& plan, const SimGraph& graph, const OpTimes& times, const MemoryReport& memory);

}  // namespace shardscope
