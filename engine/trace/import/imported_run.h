// A foreign file (a torch.profiler trace, a CUDA memory snapshot) converted into what a ShardScope trace holds: a
// header and the events in emission order, plus notes on what the conversion had to approximate or leave out (for
// stderr and the window's status line). It goes through the same writer and store as a recorded run.
#pragma once
#include <string>
#include <vector>

#include "trace/events/trace_event.h"
#include "trace/events/trace_sink.h"

namespace shardscope {

struct ImportedRun {
  TraceHeader header;
  std::vector<TraceEvent> events;
  std::vector<std::string> notes;
};

// begin(header), every event, end().
inline void replay_imported(const ImportedRun& run, TraceSink& sink) {
  sink.begin(run.header);
  for (const TraceEvent& e : run.events) sink.emit(e);
  sink.end();
}

}  // namespace shardscope
