// Step times of a trace file (run/step_timing.h) for `trace info` and `compare`: the header's plan names no kernel
// per op (the trace format has no such column), which step timing needs (which op loads the batch, which are
// GEMMs), so this build's lowering of the header's scenario supplies them when it lowers to the same ops. A
// plan-less trace's spans say what they are in their texts (run/planless_step_timing.h).
#pragma once
#include <optional>
#include <vector>

#include "plan/plan.h"
#include "run/step_timing.h"
#include "trace/events/trace_event.h"
#include "trace/store/trace_store.h"

namespace shardscope::cli {

// The header's plan with each op's kernel from this build's lowering of the header's scenario; none when the header
// has no plan or scenario, the scenario does not lower here, or its ops differ (count, kind, label or step on any
// rank: a trace of another version).
std::optional<Plan> plan_with_kernels(const TraceHeader& header);

// Every training step of the trace: with a plan in the header, step_timings over the intervals an OpIntervalSink
// collected from its events (empty when plan_with_kernels has none); without one (a run recorded from PyTorch or
// imported), planless_step_timings over the spans the store holds.
std::vector<StepTiming> trace_step_timings(const TraceStore& store, const OpIntervalSink& intervals);

}  // namespace shardscope::cli
