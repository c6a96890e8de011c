// The run-wide records of a trace, built one way for every source (the simulator, the executors): the header that
// makes a trace self-describing, and the Error / RunEnd events. Depends on trace/, scenario/, plan/ and core/.
#pragma once
#include <string>
#include <vector>

#include "core/units.h"
#include "plan/plan.h"
#include "scenario/scenario.h"
#include "trace/events/trace_event.h"

namespace shardscope {

// "ShardScope <version>", as every trace header names the tool.
std::string trace_tool_version();

// `source`: "simulator", "executor cpu", ...; `accounting_rules`: accounting_rules_label() of the mode the run's
// memory figures follow. The plan is copied into the header when `plan_in_header` (readers resolve op indices by it).
TraceHeader make_run_header(const ResolvedScenario& scenario, const Plan& plan, std::string source,
                            std::string accounting_rules, bool plan_in_header, std::vector<TraceDevice> devices);

// Why a run stopped; rank -1 is the run as a whole.
TraceEvent make_error_event(int rank, TimeNs t_ns, std::string message);

// The last event of every run: text "ok", or `error` when the run stopped.
TraceEvent make_run_end_event(TimeNs t_ns, const std::string& error);

}  // namespace shardscope
