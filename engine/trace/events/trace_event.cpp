// Names of trace event kinds, as written in trace files and exports; the scenario name a trace header carries.
#include "trace/events/trace_event.h"

#include <new>

#include <nlohmann/json.hpp>

namespace shardscope {

std::string trace_scenario_name(const TraceHeader& header) {
  try {
    const auto scenario = nlohmann::json::parse(header.scenario_json, nullptr, /*allow_exceptions=*/false);
    if (scenario.is_object() && scenario.contains("name") && scenario["name"].is_string()) return scenario["name"].get<std::string>();
  } catch (const std::bad_alloc&) {
    // A header that only just fitted in memory (a crafted or damaged trace): parsing it again, even to fail, copies
    // its text. Not naming the scenario is better than failing a command that has the trace loaded.
  }
  return "";
}

std::string trace_event_kind_name(TraceEventKind kind) {
  switch (kind) {
    case TraceEventKind::OpBegin: return "op_begin";
    case TraceEventKind::OpEnd: return "op_end";
    case TraceEventKind::Alloc: return "alloc";
    case TraceEventKind::Free: return "free";
    case TraceEventKind::Phase: return "phase";
    case TraceEventKind::DeviceMemory: return "device_memory";
    case TraceEventKind::Error: return "error";
    case TraceEventKind::RunEnd: return "run_end";
  }
  return "?";
}

}  // namespace shardscope
