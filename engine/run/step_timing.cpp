// step_timings: windows, batch loading and the critical rank's breakdown per step (step_timing.h).
#include "run/step_timing.h"

#include <algorithm>
#include <limits>
#include <map>
#include <stdexcept>
#include <tuple>

namespace shardscope {

std::string time_kind_name(TimeKind kind) {
  switch (kind) {
    case TimeKind::Gemm: return "gemm";
    case TimeKind::Elementwise: return "elementwise";
    case TimeKind::Optimizer: return "optimizer";
    case TimeKind::Communication: return "communication";
    case TimeKind::Idle: return "idle";
  }
  return "?";
}

TimeKind compute_time_kind(const Op& op) {
  // An op that says what kernel it is (the eager pass, plan/compute_work.h): its GEMMs and attention cores are
  // matmul work, everything else (casts, ReLU, reductions, losses) elementwise.
  switch (op.work.get().kind) {
    case WorkKind::Unknown: break;
    case WorkKind::Gemm:
    case WorkKind::Attention:
    case WorkKind::AttentionBackward: return TimeKind::Gemm;
    default: return TimeKind::Elementwise;
  }
  switch (op.kernel) {
    case Kernel::LinearForward:
    case Kernel::LinearBackward:
    case Kernel::GptBlockForward:
    case Kernel::GptBlockBackward:
    case Kernel::GptBlockAttentionForward:
    case Kernel::GptBlockMlpForward:
    case Kernel::GptBlockMlpBackward:
    case Kernel::GptBlockAttentionBackward:
    case Kernel::GptAttentionRecompute: return TimeKind::Gemm;
    case Kernel::OptimizerStep: return TimeKind::Optimizer;
    case Kernel::None:
      // A layer the executors have no kernel for (a convolution): its forward / backward is matmul-like work.
      if (op.compute_kind == ComputeKind::Optimizer) return TimeKind::Optimizer;
      return (op.compute_kind == ComputeKind::Forward || op.compute_kind == ComputeKind::Backward) && op.flops > 0
                 ? TimeKind::Gemm
                 : TimeKind::Elementwise;
    default: return TimeKind::Elementwise;
  }
}

namespace {

using Span = std::pair<TimeNs, TimeNs>;

bool is_communication(const Op& op) {
  return op.kind == OpKind::Collective || op.kind == OpKind::Send || op.kind == OpKind::Recv;
}

// The part of [begin, end) inside [lo, hi).
TimeNs clipped(TimeNs begin, TimeNs end, TimeNs lo, TimeNs hi) {
  return std::max<TimeNs>(0, std::min(end, hi) - std::max(begin, lo));
}

void merge(std::vector<Span>& spans) {
  std::sort(spans.begin(), spans.end());
  std::size_t out = 0;
  for (const Span& s : spans) {
    if (out > 0 && s.first <= spans[out - 1].second) spans[out - 1].second = std::max(spans[out - 1].second, s.second);
    else spans[out++] = s;
  }
  spans.resize(out);
}

// Length of `covered` (merged) not overlapped by `cover` (merged).
TimeNs uncovered(const std::vector<Span>& covered, const std::vector<Span>& cover) {
  TimeNs total = 0;
  for (const auto& [b, e] : covered) {
    TimeNs overlap = 0;
    for (const auto& [cb, ce] : cover) overlap += clipped(cb, ce, b, e);
    total += (e - b) - overlap;
  }
  return total;
}

}  // namespace

std::vector<StepTiming> step_timings(std::size_t ranks, const std::vector<CountedInterval>& intervals) {
  struct Window {
    TimeNs begin = std::numeric_limits<TimeNs>::max(), end = std::numeric_limits<TimeNs>::min();
    std::vector<TimeNs> rank_end, rank_load;
    std::vector<const CountedInterval*> members;  // the step's intervals
  };
  std::map<int, Window> windows;
  // A transfer starts when the last member of its collective or message has arrived (the simulator's OpBegin
  // says so itself; an executed member's op begins when it arrives and waits inside): earlier is waiting, idle.
  std::map<TransferKey, TimeNs> transfer_begin;  // transfer -> last arrival
  for (const CountedInterval& i : intervals) {
    if (i.counts_as != CountedAs::Communication) continue;
    auto [it, inserted] = transfer_begin.try_emplace(i.transfer, i.interval.begin_ns);
    if (!inserted) it->second = std::max(it->second, i.interval.begin_ns);
  }
  const auto transfer_start = [&](const CountedInterval& i) { return std::min(i.interval.end_ns, transfer_begin.at(i.transfer)); };
  for (const CountedInterval& counted : intervals) {
    const OpInterval& i = counted.interval;
    if (counted.step < 1 || i.rank < 0 || static_cast<std::size_t>(i.rank) >= ranks) continue;
    Window& w = windows[counted.step];
    if (w.rank_end.empty()) {
      w.rank_end.assign(ranks, std::numeric_limits<TimeNs>::min());
      w.rank_load.assign(ranks, 0);
    }
    const auto r = static_cast<std::size_t>(i.rank);
    w.members.push_back(&counted);
    if (counted.counts_as == CountedAs::BatchLoad) {
      w.rank_load[r] += i.end_ns - i.begin_ns;
    } else {
      // A rank that posts a receive (or joins a collective) before its peer is ready waits; the step has not begun
      // for it until the transfer does, which is where the simulator's op begins too.
      w.begin = std::min(w.begin, counted.counts_as == CountedAs::Communication ? transfer_start(counted) : i.begin_ns);
    }
    w.end = std::max(w.end, i.end_ns);
    w.rank_end[r] = std::max(w.rank_end[r], i.end_ns);
  }
  std::vector<StepTiming> steps;
  for (auto& [step, w] : windows) {
    if (w.begin == std::numeric_limits<TimeNs>::max()) continue;  // nothing but batch loading
    StepTiming t;
    t.step = step;
    for (std::size_t r = 0; r < ranks; ++r)
      if (w.rank_end[r] > w.rank_end[static_cast<std::size_t>(t.critical_rank)]) t.critical_rank = static_cast<int>(r);
    // Loading inside the window, per rank; the longest is left out of the step.
    std::vector<TimeNs> load_inside(ranks, 0);
    std::vector<Span> compute, comm;
    for (const CountedInterval* member : w.members) {
      const OpInterval& i = member->interval;
      const auto r = static_cast<std::size_t>(i.rank);
      if (member->counts_as == CountedAs::BatchLoad) {
        load_inside[r] += clipped(i.begin_ns, i.end_ns, w.begin, w.end);
        continue;
      }
      if (i.rank != t.critical_rank) continue;
      if (member->counts_as == CountedAs::Compute) {
        t.by_kind[static_cast<std::size_t>(member->compute_kind)] += i.end_ns - i.begin_ns;
        compute.emplace_back(i.begin_ns, i.end_ns);
      } else if (member->counts_as == CountedAs::Communication) {
        const TimeNs begin = transfer_start(*member);
        if (i.end_ns > begin) comm.emplace_back(begin, i.end_ns);
      }
    }
    for (std::size_t r = 0; r < ranks; ++r) t.load_batch_ns = std::max(t.load_batch_ns, w.rank_load[r]);
    const TimeNs load = *std::max_element(load_inside.begin(), load_inside.end());
    t.step_ns = std::max<TimeNs>(0, w.end - w.begin - load);
    merge(compute);
    merge(comm);
    t.by_kind[static_cast<std::size_t>(TimeKind::Communication)] = uncovered(comm, compute);
    TimeNs accounted = 0;
    for (int k = 0; k < static_cast<int>(TimeKind::Idle); ++k) accounted += t.by_kind[static_cast<std::size_t>(k)];
    t.by_kind[static_cast<std::size_t>(TimeKind::Idle)] = std::max<TimeNs>(0, t.step_ns - accounted);
    steps.push_back(t);
  }
  return steps;
}

std::vector<StepTiming> step_timings(const Plan& plan, const std::vector<OpInterval>& intervals) {
  const std::size_t ranks = plan.programs.size();
  std::vector<CountedInterval> counted;
  counted.reserve(intervals.size());
  for (const OpInterval& i : intervals) {
    if (i.rank < 0 || static_cast<std::size_t>(i.rank) >= ranks) continue;
    const auto& ops = plan.programs[static_cast<std::size_t>(i.rank)].ops;
    if (i.op < 0 || static_cast<std::size_t>(i.op) >= ops.size()) continue;
    const Op& op = ops[static_cast<std::size_t>(i.op)];
    CountedInterval c{i, op.step};
    if (op.kernel == Kernel::LoadBatch) {
      c.counts_as = CountedAs::BatchLoad;
    } else if (is_communication(op)) {
      c.counts_as = CountedAs::Communication;
      if (op.kind == OpKind::Collective) {
        c.transfer = {0, op.group, 0, op.sequence};
      } else {
        const int sender = op.kind == OpKind::Send ? i.rank : op.peer, receiver = op.kind == OpKind::Send ? op.peer : i.rank;
        c.transfer = {1, sender, receiver, op.sequence};
      }
    } else if (op.kind == OpKind::Compute && op.stream == Stream::Compute) {
      c.counts_as = CountedAs::Compute;
      c.compute_kind = compute_time_kind(op);
    }
    counted.push_back(c);
  }
  return step_timings(ranks, counted);
}

std::vector<const StepTiming*> steady_steps(const std::vector<StepTiming>& steps) {
  if (steps.empty()) throw std::invalid_argument("steady_steps: no steps");
  std::vector<const StepTiming*> steady;
  for (const StepTiming& s : steps)
    if (s.step >= 2 || steps.size() == 1) steady.push_back(&s);
  if (steady.empty()) steady.push_back(&steps.front());
  return steady;
}

const StepTiming& median_step(const std::vector<StepTiming>& steps) {
  if (steps.empty()) throw std::invalid_argument("median_step: no steps");
  std::vector<const StepTiming*> candidates = steady_steps(steps);
  std::sort(candidates.begin(), candidates.end(), [](const StepTiming* a, const StepTiming* b) {
    return a->step_ns != b->step_ns ? a->step_ns < b->step_ns : a->step < b->step;
  });
  return *candidates[(candidates.size() - 1) / 2];
}

void OpIntervalSink::begin(const TraceHeader& header) {
  std::lock_guard lock(mutex_);
  ops_per_rank_.clear();
  open_.clear();
  if (header.plan)
    for (const Program& p : header.plan->programs) ops_per_rank_.push_back(p.ops.size());
}

void OpIntervalSink::emit(const TraceEvent& event) {
  if (event.kind != TraceEventKind::OpBegin && event.kind != TraceEventKind::OpEnd) return;
  if (event.rank < 0 || event.op < 0) return;
  std::lock_guard lock(mutex_);
  const auto r = static_cast<std::size_t>(event.rank);
  if (!ops_per_rank_.empty() && (r >= ops_per_rank_.size() || static_cast<std::size_t>(event.op) >= ops_per_rank_[r])) return;
  const std::uint64_t key = (std::uint64_t{static_cast<std::uint32_t>(event.rank)} << 32) | static_cast<std::uint32_t>(event.op);
  if (event.kind == TraceEventKind::OpBegin) {
    open_[key] = event.t_ns;
  } else if (const auto it = open_.find(key); it != open_.end() && event.t_ns >= it->second) {
    done_.push_back({event.rank, event.op, it->second, event.t_ns});
    open_.erase(it);
  }
}

std::vector<OpInterval> OpIntervalSink::intervals() const {
  std::lock_guard lock(mutex_);
  return done_;
}

}  // namespace shardscope
