// What a simulation reports besides its trace events. Plain data below sim/ (the simulator fills it; the CLI, the
// GUI's session and panels read it without linking the simulator); depends on core/ only.
// Every figure is about one step, the last one the plan holds (step S = the largest Op::step), so that set-up
// (step 0) and the first step's one-off work (DDP's single first bucket, Adam's lazy state) do not blur it when
// the plan has several steps.
//
// Definitions (all times in simulated ns):
// - step window: from the earliest begin of any op of step S on any rank to the latest end of any op of step S
//   on any rank. step_time_ns = its length (the makespan of step S over all ranks).
// - a rank's window (begin_ns to step_end_ns): from the rank's own start of step S to the end of the step window.
//   The rank's start is the end of its last op of an earlier step (its set-up, or step S−1), or the begin of a
//   step-S op that began before that; a plan without earlier ops starts when its first step-S op became ready.
//   Per rank because with several steps the ranks do not enter step S together (a pipeline's first stage is
//   still in step S−1's backward when the last stage may already start step S's bookkeeping), so one global
//   start would count a rank's own step-(S−1) work as step-S idle. It ends at the global end: a rank that is done
//   early is idle until step S ends everywhere (the pipeline's drain).
// - a rank's comm_ns: the length of the union of its step-S collective / send / recv intervals [begin, end),
//   where begin is when the transfer starts (the last member's arrival), so waiting is not counted.
// - a rank's exposed_comm_ns: the part of that union during which the rank's compute stream runs no compute op,
//   i.e. communication not hidden behind compute.
// - a rank's wait_ns: over its step-S collectives / messages, the sum of (begin − arrival), arrival being when the
//   op's stream and deps let it start: time spent waiting for slower peers.
// - a rank's compute_busy_ns: the sum of its step-S compute ops' durations on the compute stream;
//   utilisation = compute_busy_ns / (step_end_ns − begin_ns), i.e. over the rank's window.
// - critical rank: the rank whose last step-S op ends last (lowest rank on ties). total_comm_ns and
//   exposed_comm_ns are that rank's figures: the communication on the path that sets the step time.
// - bubble_fraction: the mean over ranks of 1 − utilisation (idle compute over each rank's window). It counts
//   all idle of the step: the optimizer step, the loss, kernel launch gaps, waiting for slower stages. For a
//   pipeline with uniform stages, free communication and nothing but forwards and backwards this is GPipe's
//   (p−1)/(m+p−1).
// - schedule_bubble_fraction: the idle compute inside the step's forward/backward schedule. The schedule region
//   runs from the earliest begin of a step-S Forward compute op on any rank to the latest end of a step-S Forward
//   or Backward compute op on any rank (ComputeKind; forward-only plans end at their last forward). A rank's idle
//   is the region's length minus the union of its busy intervals inside it, counting only the schedule's own
//   work: in a pipeline the step-S compute ops of a micro-batch (Op::micro_batch: forwards, backwards, the loss
//   and the per-micro-batch gradient accumulation); in a plan without micro-batches every step-S compute op but
//   the optimizer step. A stage's optimizer step, or its gradient reduction, running while another stage still
//   drains is not counted: it would fill the bubble it does not belong to. The figure is the mean over ranks of
//   idle / region. The region is common to all ranks, not each rank's own first forward to last backward: stage
//   r's own span misses the r forwards of fill before it and the r backwards of drain after it, the very idle the
//   bubble is. With uniform stages and zero-cost messages it equals (p−1)/(m+p−1) exactly for GPipe and 1F1B
//   (both take (m+p−1)(f+b), each stage computing m(f+b) of it), whatever the optimizer costs; set-up and the
//   previous step lie outside the region, so it is the figure to set against the published bubble.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/units.h"

namespace shardscope {

// Where a rank first ran out of memory, located in simulated time.
struct SimulatedOutOfMemory {
  std::string op;       // the allocating op's label
  std::string tensor;   // what it allocates
  Bytes requested_bytes = 0;
  Bytes allocated_bytes = 0;  // allocated before it
  Bytes capacity_bytes = 0;
  TimeNs time_ns = 0;   // when the allocation happens in the simulated run
};

struct RankTiming {
  int rank = 0;
  TimeNs compute_busy_ns = 0;
  double utilisation = 0;
  TimeNs comm_ns = 0;
  TimeNs exposed_comm_ns = 0;
  TimeNs wait_ns = 0;
  TimeNs begin_ns = 0;        // the start of the rank's window: its own start of step S
  TimeNs end_ns = 0;          // the end of the rank's last step-S op
  Bytes peak_bytes = 0;       // from the memory accounting (whole run, as memory reports it)
  Bytes peak_reserved_bytes = 0;
  // The first allocation the device could not hold (from the accounting), as "label (N B requested)"; empty if none.
  // The simulation carries on past it so the whole picture shows; an executed run would stop there.
  std::string out_of_memory;
  std::optional<SimulatedOutOfMemory> oom;  // the same, field by field
};

// Step-S collectives of one kind (or point-to-point messages), each counted once, not once per member.
struct CollectiveTiming {
  std::string kind;  // collective_kind_name(), or "send/recv"
  int count = 0;
  Bytes size_bytes = 0;    // sum of nccl-tests sizes S
  TimeNs time_ns = 0;      // sum of transfer times
  double busbw_gbps = 0;   // Σ(S × busbw factor) / Σ time: nccl-tests' bus bandwidth, aggregated
};

// How the simulation timed its ops: from a measured device profile (cluster.device_profile), or by the roofline
// (no profile, or an op the profile has no curve for).
struct CostSource {
  std::string profile;            // the profile's path; empty: none, every op by the roofline
  std::int64_t profiled_ops = 0;  // compute ops timed from the profile (over the whole plan, every rank)
  std::int64_t roofline_ops = 0;  // compute ops doing work that the profile could not time
  std::vector<std::string> roofline_examples;  // the first few of those, by label
  bool collectives_from_profile = false;  // else the link presets' alpha-beta model
};

struct SimulationResult {
  int step = 0;  // S
  TimeNs step_begin_ns = 0;
  TimeNs step_end_ns = 0;
  TimeNs step_time_ns = 0;
  TimeNs run_time_ns = 0;  // the end of the last op of the whole plan
  int critical_rank = 0;
  TimeNs total_comm_ns = 0;
  TimeNs exposed_comm_ns = 0;
  double bubble_fraction = 0;
  double schedule_bubble_fraction = 0;
  std::vector<RankTiming> ranks;
  std::vector<CollectiveTiming> collectives;
  std::size_t event_count = 0;  // trace events emitted, RunEnd included
  std::string error;            // empty, or why the run stopped (e.g. ops that could never start)
  CostSource cost_source;
};

}  // namespace shardscope
