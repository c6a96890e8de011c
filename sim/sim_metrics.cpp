// measure_simulation: step window, per-rank windows, busy / communication / exposure / waiting, the bubble (over
// the step and over the forward/backward schedule), collective bandwidths.
#include "sim/sim_metrics.h"

#include <algorithm>
#include <limits>
#include <map>
#include <span>
#include <utility>

namespace shardscope {

namespace {

using Interval = std::pair<TimeNs, TimeNs>;

bool is_communication(const Op& op) {
  return op.kind == OpKind::Collective || op.kind == OpKind::Send || op.kind == OpKind::Recv;
}

// Merges intervals (sorted by begin) in place into their union.
void merge_union(std::vector<Interval>& intervals) {
  std::size_t out = 0;
  for (const Interval& interval : intervals) {
    if (out > 0 && interval.first <= intervals[out - 1].second) {
      intervals[out - 1].second = std::max(intervals[out - 1].second, interval.second);
    } else {
      intervals[out++] = interval;
    }
  }
  intervals.resize(out);
}

// Length of `covered` (disjoint, sorted) not overlapped by `cover` (disjoint, sorted).
TimeNs uncovered_length(const std::vector<Interval>& covered, const std::vector<Interval>& cover) {
  TimeNs uncovered = 0;
  std::size_t j = 0;
  for (const auto& [begin, end] : covered) {
    TimeNs overlap = 0;
    while (j < cover.size() && cover[j].second <= begin) ++j;
    for (std::size_t k = j; k < cover.size() && cover[k].first < end; ++k)
      overlap += std::min(end, cover[k].second) - std::max(begin, cover[k].first);
    uncovered += (end - begin) - overlap;
  }
  return uncovered;
}

void measure_collectives(const Plan& plan, const SimGraph& graph, int step, SimulationResult& result) {
  struct Sum {
    int count = 0;
    Bytes size = 0;
    TimeNs time = 0;
    double bus_bytes = 0;
  };
  // Summed per kind (messages in the last slot), then listed by name: a name and a map lookup per instance cost more
  // than the sums over a 1,024-rank plan's tens of thousands of them.
  Sum sums[kCollectiveKindCount + 1];
  for (const SimInstance& instance : graph.instances) {
    if (instance.member_count == 0) continue;
    const Op& first = graph.op(plan, graph.members[static_cast<std::size_t>(instance.member_begin)]);
    if (first.step != step) continue;
    if (!instance.message && instance.shape.kind == CollectiveKind::Barrier) continue;  // an order, not traffic
    Sum& sum = sums[instance.message ? kCollectiveKindCount : static_cast<int>(instance.shape.kind)];
    ++sum.count;
    sum.size += instance.shape.size_bytes;
    sum.time = saturating_add(sum.time, instance.duration_ns);
    // nccl-tests' sendrecv: busbw = algbw.
    const double factor = instance.message ? 1.0 : bus_bandwidth_factor(instance.shape.kind, instance.shape.ranks);
    sum.bus_bytes += static_cast<double>(instance.shape.size_bytes) * factor;
  }
  std::map<std::string, Sum> by_kind;
  for (int k = 0; k <= kCollectiveKindCount; ++k)
    if (sums[k].count > 0)
      by_kind[k == kCollectiveKindCount ? "send/recv" : collective_kind_name(static_cast<CollectiveKind>(k))] = sums[k];
  for (const auto& [kind, sum] : by_kind)
    result.collectives.push_back({kind, sum.count, sum.size, sum.time, sum.time > 0 ? sum.bus_bytes / static_cast<double>(sum.time) : 0});
}

// The pipeline schedule's extent in step S: from the earliest begin of a step-S forward to the latest end of a
// step-S forward or backward, over all ranks (compute stream; forward-only plans end at their last forward).
// One region for every rank, not one per rank: a stage's own first forward starts r forwards late and its last
// backward ends r backwards early, and that fill and drain idle is exactly the bubble being measured.
// Grown op by op in measure_simulation's pass over the ops (another pass over a 1,024-rank plan's ~200 MB of ops
// cost more than what it computes).
class ScheduleRegion {
 public:
  // A compute-stream compute op of step S that ran.
  void add(const Op& op, TimeNs op_begin, TimeNs op_end) {
    const bool forward = op.compute_kind == ComputeKind::Forward;
    if (!forward && op.compute_kind != ComputeKind::Backward) return;
    if (forward) begin_ = std::min(begin_, op_begin);
    end_ = std::max(end_, op_end);
  }
  Interval region() const {
    if (begin_ > end_) return {0, 0};  // no forward ran in step S
    return {begin_, end_};
  }

 private:
  TimeNs begin_ = std::numeric_limits<TimeNs>::max(), end_ = std::numeric_limits<TimeNs>::min();
};

// Whether any compute op of step S belongs to a pipeline micro-batch (Op::micro_batch).
bool has_micro_batches(const Plan& plan, int step) {
  for (const Program& program : plan.programs)
    for (const Op& op : program.ops)
      if (op.step == step && op.kind == OpKind::Compute && op.micro_batch >= 0) return true;
  return false;
}

// The schedule's own work, which schedule_bubble_fraction counts as busy (simulation_result.h): in a pipeline the
// compute of a micro-batch (its forwards, backwards, loss and gradient accumulation); without micro-batches every
// compute op but the optimizer step. A stage's optimizer step or gradient reduction that runs while another stage
// still drains is not the schedule's work, so it does not fill the bubble.
bool schedule_work(const Op& op, bool micro_batched) {
  return micro_batched ? op.micro_batch >= 0 : op.compute_kind != ComputeKind::Optimizer;
}

// Length of [window.first, window.second) covered by `busy` (disjoint, sorted).
TimeNs covered_length(std::span<const Interval> busy, Interval window) {
  TimeNs covered = 0;
  for (const auto& [begin, end] : busy) {
    if (end <= window.first) continue;
    if (begin >= window.second) break;
    covered += std::min(end, window.second) - std::max(begin, window.first);
  }
  return covered;
}

}  // namespace

// One pass over the ops: every figure but the schedule bubble is the rank's own; that one needs the schedule region
// of all ranks, so each rank's schedule work is kept (a few hundred intervals a rank) and measured after the pass.
SimulationResult measure_simulation(const Plan& plan, const SimGraph& graph, const OpTimes& times, const MemoryReport& memory) {
  SimulationResult result;
  result.step = graph.last_step;
  const bool micro_batched = has_micro_batches(plan, result.step);

  TimeNs window_begin = std::numeric_limits<TimeNs>::max(), window_end = 0;
  std::vector<Interval> comm, compute;
  std::vector<Interval> schedule;  // every rank's schedule work, rank after rank
  std::vector<std::size_t> schedule_begin = {0};  // rank r's: [schedule_begin[r], schedule_begin[r + 1])
  ScheduleRegion schedule_region;
  std::vector<TimeNs> rank_begins;  // -1: the rank ran no step-S op
  for (std::size_t r = 0; r < plan.programs.size(); ++r) {
    const auto& ops = plan.programs[r].ops;
    const std::size_t base = static_cast<std::size_t>(graph.rank_offset[r]);
    RankTiming timing;
    timing.rank = static_cast<int>(r);
    comm.clear();
    compute.clear();
    // The rank's own start of step S (see simulation_result.h): the end of its earlier steps' ops, pulled back
    // to any step-S op that began before that; a rank with no earlier op starts when its first step-S op could.
    TimeNs earlier_end = -1, first_begin = std::numeric_limits<TimeNs>::max(), first_arrival = std::numeric_limits<TimeNs>::max();
    for (std::size_t i = 0; i < ops.size(); ++i) {
      const Op& op = ops[i];
      const TimeNs begin = times.begin_ns(graph, base + i);
      const TimeNs end = begin < 0 ? -1 : saturating_add(begin, graph.duration_of(base + i));  // end_ns, from this begin
      result.run_time_ns = std::max(result.run_time_ns, end);
      if (end < 0) continue;  // never ran (a stuck plan)
      const bool computes = op.kind == OpKind::Compute && op.stream == Stream::Compute;
      if (computes && op.step == result.step) schedule_region.add(op, begin, end);
      if (computes && end > begin) {
        compute.emplace_back(begin, end);
        if (op.step == result.step && schedule_work(op, micro_batched)) schedule.emplace_back(begin, end);
      }
      if (op.step < result.step) earlier_end = std::max(earlier_end, end);
      if (op.step != result.step) continue;
      window_begin = std::min(window_begin, begin);
      first_begin = std::min(first_begin, begin);
      first_arrival = std::min(first_arrival, times.arrival_ns[base + i]);
      timing.end_ns = std::max(timing.end_ns, end);
      if (computes) timing.compute_busy_ns += end - begin;
      if (is_communication(op)) {
        timing.wait_ns = saturating_add(timing.wait_ns, begin - times.arrival_ns[base + i]);
        if (end > begin) comm.emplace_back(begin, end);
      }
    }
    const bool ran_step = first_begin != std::numeric_limits<TimeNs>::max();
    rank_begins.push_back(!ran_step ? -1 : earlier_end >= 0 ? std::min(earlier_end, first_begin) : first_arrival);
    window_end = std::max(window_end, timing.end_ns);
    std::sort(comm.begin(), comm.end());
    merge_union(comm);
    for (const auto& [begin, end] : comm) timing.comm_ns += end - begin;
    timing.exposed_comm_ns = uncovered_length(comm, compute);  // compute: one in-order stream, already sorted
    schedule_begin.push_back(schedule.size());
    if (r < memory.ranks.size()) {
      timing.peak_bytes = memory.ranks[r].peak_allocated;
      timing.peak_reserved_bytes = memory.ranks[r].peak_reserved;
      if (const auto& oom = memory.ranks[r].oom) {
        const std::string& label = plan.programs[r].ops[static_cast<std::size_t>(oom->op)].label;
        timing.out_of_memory = label + " (" + format_bytes(oom->requested) + " requested, " + format_bytes(oom->allocated_before) +
                               " allocated, capacity " + format_bytes(memory.capacity) + ")";
        timing.oom = SimulatedOutOfMemory{label, oom->tensor, oom->requested, oom->allocated_before, memory.capacity,
                                          times.begin_ns(graph, base + static_cast<std::size_t>(oom->op))};
      }
    }
    result.ranks.push_back(timing);
  }
  const Interval region = schedule_region.region();
  const TimeNs region_ns = region.second - region.first;
  double schedule_idle_sum = 0;
  if (region_ns > 0)
    for (std::size_t r = 0; r + 1 < schedule_begin.size(); ++r) {
      const std::span<const Interval> rank_schedule(schedule.data() + schedule_begin[r], schedule.data() + schedule_begin[r + 1]);
      schedule_idle_sum += static_cast<double>(region_ns - covered_length(rank_schedule, region)) / static_cast<double>(region_ns);
    }
  if (window_begin > window_end) window_begin = window_end;  // no op ran in step S
  result.step_begin_ns = window_begin;
  result.step_end_ns = window_end;
  result.step_time_ns = window_end - window_begin;

  // Each rank's window ends where step S ends on every rank: a stage that is done early is idle until the
  // last one drains (the pipeline bubble's second half), as in the single global window this replaced.
  double idle_sum = 0;
  for (RankTiming& timing : result.ranks) {
    const TimeNs begin = rank_begins[static_cast<std::size_t>(timing.rank)];
    timing.begin_ns = begin < 0 ? window_begin : std::min(begin, window_end);  // a rank without step-S ops: the step
    const TimeNs window = window_end - timing.begin_ns;
    timing.utilisation = window > 0 ? static_cast<double>(timing.compute_busy_ns) / static_cast<double>(window) : 0;
    idle_sum += 1 - timing.utilisation;
    if (timing.end_ns > result.ranks[static_cast<std::size_t>(result.critical_rank)].end_ns) result.critical_rank = timing.rank;
  }
  result.bubble_fraction = result.ranks.empty() || result.step_time_ns == 0 ? 0 : idle_sum / static_cast<double>(result.ranks.size());
  result.schedule_bubble_fraction = result.ranks.empty() ? 0 : schedule_idle_sum / static_cast<double>(result.ranks.size());
  if (!result.ranks.empty()) {
    const RankTiming& critical = result.ranks[static_cast<std::size_t>(result.critical_rank)];
    result.total_comm_ns = critical.comm_ns;
    result.exposed_comm_ns = critical.exposed_comm_ns;
  }
  measure_collectives(plan, graph, result.step, result);
  return result;
}

}  // namespace shardscope
