// Names of trace event kinds, as written in trace files and exports.
#include "trace/trace_event.h"

namespace shardscope {

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
