// Step times and where a step's time went, from a run's op intervals: the same rules for an executed run and a
// simulated one, so the two can be held side by side (issue 40: run --json's step_times_ns, run
// --simulate-beside). Plain data and functions over the plan and the trace events; knows no executor or simulator.
//
// Definitions (per training step s ≥ 1; set-up, step 0, has none):
// - the step's window runs from the earliest begin of a step-s op on any rank that is not a batch load
//   (Kernel::LoadBatch: the executor makes the batch on the host) to the latest end of a step-s op on any rank; a
//   collective or message begins there when its transfer does (below), not when a rank posted it: a pipeline stage
//   that posts the receive of step s's first activation as soon as its step s-1 ends is waiting, not stepping;
// - load_batch_ns: the longest time any rank spent loading its step-s batch;
// - step_ns: the window's length less the longest time a rank spent loading inside it (a rank that loads while
//   another already computes holds the step up by about that much), so batch making is left out and reported apart;
// - the breakdown is the critical rank's (the rank whose last step-s op ends last, lowest on ties): its compute-
//   stream compute ops summed by kind (GEMM: Linear layers and transformer blocks, whose time is mostly their
//   matmuls; optimizer: the optimizer step; elementwise: every other kernel), communication: the union of its
//   collectives and messages not covered by its compute (exposed), each from the moment its last member arrived
//   (before that the rank waits: an executed member's op begins when it arrives, a simulated one's when the transfer
//   starts, so both count waiting the same way), idle: what is left of step_ns, waiting included.
#pragma once
#include <array>
#include <mutex>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "plan/plan.h"
#include "trace/events/trace_sink.h"

namespace shardscope {

enum class TimeKind { Gemm, Elementwise, Optimizer, Communication, Idle };
inline constexpr int kTimeKindCount = 5;
std::string time_kind_name(TimeKind kind);  // "gemm", "elementwise", "optimizer", "communication", "idle"

// The kind a compute op's time counts under (never Communication or Idle).
TimeKind compute_time_kind(const Op& op);

struct OpInterval {
  int rank = 0;
  OpIndex op = -1;
  TimeNs begin_ns = 0, end_ns = 0;
};

struct StepTiming {
  int step = 0;
  TimeNs step_ns = 0;
  TimeNs load_batch_ns = 0;
  int critical_rank = 0;
  std::array<TimeNs, kTimeKindCount> by_kind{};  // indexed by TimeKind; they add up to step_ns
};

// One entry per step s ≥ 1 that has ops, in step order. Intervals of ops that never ended are left out.
std::vector<StepTiming> step_timings(const Plan& plan, const std::vector<OpInterval>& intervals);

// What an interval counts as in its step, for intervals no plan describes (a recorded run's spans:
// planless_step_timing.h). Other: inside the window, but neither compute on the compute stream nor communication.
enum class CountedAs { Compute, Communication, BatchLoad, Other };
using TransferKey = std::tuple<int, int, int, int>;  // one collective or message: its members share the key
struct CountedInterval {
  OpInterval interval;
  int step = 0;
  CountedAs counts_as = CountedAs::Other;
  TimeKind compute_kind = TimeKind::Elementwise;  // Compute: which kind its time counts under
  TransferKey transfer{};                         // Communication
};
// The same rules over intervals that say what they count as; ranks: how many ranks the run has (intervals naming
// others are left out).
std::vector<StepTiming> step_timings(std::size_t ranks, const std::vector<CountedInterval>& intervals);

// The steps that stand for the run: steps 2 and later (step 1 does one-off work: the optimizer's lazy state, DDP's
// first buckets), all of them when there is only one, the first when none is later than step 1. Throws
// std::invalid_argument for an empty list.
std::vector<const StepTiming*> steady_steps(const std::vector<StepTiming>& steps);

// The step that stands for the run: the median by step_ns of steady_steps, the lower median for an even count.
// Throws std::invalid_argument for an empty list.
const StepTiming& median_step(const std::vector<StepTiming>& steps);

// Keeps each op's [OpBegin, OpEnd) interval; forwards nothing (pair it with a TeeTraceSink). With a header that
// carries the plan (a run's or a simulation's), events naming a rank or op the plan lacks are ignored; ends before
// their begins always are. A trace file is untrusted input: a plan-less one (recorded from PyTorch, imported) may
// name any op of any rank, so open ops are kept by (rank, op), never in a table an index sizes.
class OpIntervalSink : public TraceSink {
 public:
  void begin(const TraceHeader& header) override;
  void emit(const TraceEvent& event) override;
  // The intervals of ops that ended, in the order their ends arrived.
  std::vector<OpInterval> intervals() const;

 private:
  mutable std::mutex mutex_;
  std::vector<std::size_t> ops_per_rank_;  // from the header's plan; empty: no bound known (the caller's own events)
  std::unordered_map<std::uint64_t, TimeNs> open_;  // (rank, op) -> the begin of an op that has not ended yet
  std::vector<OpInterval> done_;
};

}  // namespace shardscope
