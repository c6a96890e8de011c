// The one-line, plain-language "what is happening now" under the timeline, e.g.
// "rank 1: all-reduce bucket 3 (32.00 MiB) while computing fc7 backward". Pure logic over a TraceData.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "gui/logic/playback.h"
#include "trace/store/trace_store.h"

namespace shardscope::gui {

// What `rank` does at `t_ns`: its communication op and compute op in flight, or that it is idle.
std::string describe_rank_at(const TraceData& data, int rank, TimeNs t_ns);

// A phase marker as people say it: markers sit where a phase ends ("forward" → "after forward",
// "before_step" → "after backward", "after_step" → "after step", "model_created" → "model created").
std::string phase_display_name(const std::string& phase);

// The same, in a word for crowded charts: "created", "wrapped", "fwd", "bwd", "step".
std::string phase_short_name(const std::string& phase);

// The phase under way between two markers, named by the next one (markers sit where a phase ends): before
// "forward" of step 2 it is "step 2, forward", before "before_step" the backward, before "after_step" the optimizer
// step; past the last marker, what that marker says ("step 2, after step").
std::string phase_under_way(const PhaseMark* upcoming, const PhaseMark* last);
// The same from one rank's own phase markers at `t_ns` (pipeline stages are in different phases at once); nullopt
// when the rank has none.
std::optional<std::string> phase_under_way_at(const RankTimeline& rank, TimeNs t_ns);

// The rank's first out-of-memory error (simulated: where PyTorch would raise; executed: where the run stopped), or
// nullptr.
const TraceRunError* first_out_of_memory(const TraceData& data, int rank);

// When the run stopped: the earliest out of memory of any rank (PyTorch raises there, and torchrun's agent then
// stops every worker, so nothing after it happened); nullopt when no rank ran out.
std::optional<TimeNs> run_stopped_at(const TraceData& data);
// How far a rank's memory samples really happened when the run stopped at `stopped`: those before it and those at
// that instant up to the first that does not fit `capacity` (the failed allocation: allocated or reserved past it).
// Returns one past the last sample that happened (all of them when the run did not stop).
std::size_t samples_before_stop(const RankTimeline& rank, std::optional<TimeNs> stopped, Bytes capacity);
// The rank's peak over those samples (its whole-run peak when the run did not stop).
TraceMemoryPeak peak_before_stop(const RankTimeline& rank, std::optional<TimeNs> stopped, Bytes capacity);

// The largest tensors `rank` holds at `t_ns` (after every change at t), largest first, at most `count`; names from
// the plan in the trace header ("tensor 12" without one). For "what is that?" on a memory chart.
struct LiveTensorAt {
  std::string name;
  Category category = Category::Temporaries;
  Bytes bytes = 0;
};
std::vector<LiveTensorAt> live_tensors_at(const TraceData& data, int rank, TimeNs t_ns, std::size_t count);

// The rank worth describing at `t_ns`: the lowest rank communicating while computing, else the lowest
// communicating, else the lowest computing, else 0.
int most_telling_rank(const TraceData& data, TimeNs t_ns);

}  // namespace shardscope::gui
