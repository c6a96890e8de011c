// `shardscope-cli simulate`: the pipeline (pipeline/run_pipeline.h) simulates the scenario; these print text or JSON.
#pragma once
#include <iosfwd>
#include <string>

#include "pipeline/run_pipeline.h"
#include "sim/cost_model.h"

namespace shardscope::cli {

// What pipeline::simulate_scenario (pipeline/run_pipeline.h) returns.
using SimulateRun = pipeline::SimulatedRun;

void print_simulate_text(const SimulateRun& run, std::ostream& out);
std::string simulate_json(const SimulateRun& run);


}  // namespace shardscope::cli
