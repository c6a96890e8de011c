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

std::vector<StepTiming> step_timings(const Plan& plan, const std::vector<OpInterval>& intervals) {
  struct Window {
    TimeNs begin = std::numeric_limits<TimeNs>::max(), end = std::numeric_limits<TimeNs>::min();
    std::vector<TimeNs> rank_end, rank_load;
    std::vector<const OpInterval*> members;  // the step's intervals
  };
  const std::size_t ranks = plan.programs.size();
  std::map<int, Window> windows;
  const auto op_of = [&](const OpInterval& i) -> const Op* {
    if (i.rank < 0 || static_cast<std::size_t>(i.rank) >= ranks) return nullptr;
    const auto& ops = plan.programs[static_cast<std::size_t>(i.rank)].ops;
    return i.op >= 0 && static_cast<std::size_t>(i.op) < ops.size() ? &ops[static_cast<std::size_t>(i.op)] : nullptr;
  };
  // A transfer starts when the last member of its collective or message has arrived (the simulator's OpBegin
  // says so itself; an executed member's op begins when it arrives and waits inside): earlier is waiting, idle.
  std::map<std::tuple<int, int, int, int>, TimeNs> transfer_begin;  // (kind, a, b, sequence) -> last arrival
  const auto instance_key = [](int rank, const Op& op) {
    if (op.kind == OpKind::Collective) return std::tuple<int, int, int, int>{0, op.group, 0, op.sequence};
    const int sender = op.kind == OpKind::Send ? rank : op.peer, receiver = op.kind == OpKind::Send ? op.peer : rank;
    return std::tuple<int, int, int, int>{1, sender, receiver, op.sequence};
  };
  for (const OpInterval& i : intervals) {
    const Op* op = op_of(i);
    if (op == nullptr || !is_communication(*op)) continue;
    auto [it, inserted] = transfer_begin.try_emplace(instance_key(i.rank, *op), i.begin_ns);
    if (!inserted) it->second = std::max(it->second, i.begin_ns);
  }
  const auto transfer_start = [&](const OpInterval& i, const Op& op) {
    return std::min(i.end_ns, transfer_begin.at(instance_key(i.rank, op)));
  };
  for (const OpInterval& i : intervals) {
    const Op* op = op_of(i);
    if (op == nullptr || op->step < 1) continue;
    Window& w = windows[op->step];
    if (w.rank_end.empty()) {
      w.rank_end.assign(ranks, std::numeric_limits<TimeNs>::min());
      w.rank_load.assign(ranks, 0);
    }
    const auto r = static_cast<std::size_t>(i.rank);
    w.members.push_back(&i);
    if (op->kernel == Kernel::LoadBatch) {
      w.rank_load[r] += i.end_ns - i.begin_ns;
    } else {
      // A rank that posts a receive (or joins a collective) before its peer is ready waits; the step has not begun
      // for it until the transfer does, which is where the simulator's op begins too.
      w.begin = std::min(w.begin, is_communication(*op) ? transfer_start(i, *op) : i.begin_ns);
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
    for (const OpInterval* member : w.members) {
      const OpInterval& i = *member;
      const Op* op = op_of(i);
      const auto r = static_cast<std::size_t>(i.rank);
      if (op->kernel == Kernel::LoadBatch) {
        load_inside[r] += clipped(i.begin_ns, i.end_ns, w.begin, w.end);
        continue;
      }
      if (i.rank != t.critical_rank) continue;
      if (op->kind == OpKind::Compute && op->stream == Stream::Compute) {
        t.by_kind[static_cast<std::size_t>(compute_time_kind(*op))] += i.end_ns - i.begin_ns;
        compute.emplace_back(i.begin_ns, i.end_ns);
      } else if (is_communication(*op)) {
        const TimeNs begin = transfer_start(i, *op);
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
  if (header.plan)
    for (const Program& p : header.plan->programs) ops_per_rank_.push_back(p.ops.size());
}

void OpIntervalSink::emit(const TraceEvent& event) {
  if (event.kind != TraceEventKind::OpBegin && event.kind != TraceEventKind::OpEnd) return;
  if (event.rank < 0 || event.op < 0) return;
  std::lock_guard lock(mutex_);
  const auto r = static_cast<std::size_t>(event.rank);
  if (!ops_per_rank_.empty() && (r >= ops_per_rank_.size() || static_cast<std::size_t>(event.op) >= ops_per_rank_[r])) return;
  if (open_.size() <= r) open_.resize(r + 1);
  auto& ops = open_[r];
  const auto o = static_cast<std::size_t>(event.op);
  if (ops.size() <= o) ops.resize(o + 1, -1);
  if (event.kind == TraceEventKind::OpBegin) {
    ops[o] = event.t_ns;
  } else if (ops[o] >= 0 && event.t_ns >= ops[o]) {
    done_.push_back({event.rank, event.op, ops[o], event.t_ns});
    ops[o] = -1;
  }
}

std::vector<OpInterval> OpIntervalSink::intervals() const {
  std::lock_guard lock(mutex_);
  return done_;
}

}  // namespace shardscope
