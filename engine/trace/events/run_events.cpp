// make_run_header, make_error_event, make_run_end_event.
#include "trace/events/run_events.h"

#include <memory>
#include <utility>

#include "core/version.h"

namespace shardscope {

std::string trace_tool_version() { return "ShardScope " + std::string(shardscope_version); }

TraceHeader make_run_header(const ResolvedScenario& scenario, const Plan& plan, std::string source,
                            std::string accounting_rules, bool plan_in_header, std::vector<TraceDevice> devices) {
  TraceHeader header;
  header.tool_version = trace_tool_version();
  header.source = std::move(source);
  header.scenario_json = scenario_to_json(scenario.settings);
  header.accounting_rules = std::move(accounting_rules);
  if (plan_in_header) header.plan = std::make_shared<const Plan>(plan);
  header.devices = std::move(devices);
  return header;
}

TraceEvent make_error_event(int rank, TimeNs t_ns, std::string message) {
  TraceEvent event;
  event.kind = TraceEventKind::Error;
  event.rank = rank;
  event.t_ns = t_ns;
  event.text = std::move(message);
  return event;
}

TraceEvent make_run_end_event(TimeNs t_ns, const std::string& error) {
  TraceEvent event;
  event.kind = TraceEventKind::RunEnd;
  event.rank = -1;
  event.t_ns = t_ns;
  event.text = error.empty() ? "ok" : error;
  return event;
}

}  // namespace shardscope
