// Traces of any length for the GUI benchmarks: a plan may hold at most a few million ops, so a simulated run gives
// at most a few million events; GrowingTrace keeps its last step's events and replays them, a step later each time
// round, as a run that goes on would add them (the plan's op indices are the same in every step).
#pragma once
#include <algorithm>
#include <cstdint>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include "sim/simulator.h"
#include "strategy/lower.h"
#include "trace/events/trace_sink.h"

namespace shardscope::bench {

// Passes a run's trace on to `out` without its end (the run goes on), keeping the last step's events.
class GrowingTrace : public TraceSink {
 public:
  GrowingTrace(TraceSink& out, int last_step) : out_(out), last_step_(last_step) {}
  void begin(const TraceHeader& header) override { out_.begin(header); }
  void emit(const TraceEvent& e) override {
    out_.emit(e);
    ++emitted_;
    t_max_ = std::max(t_max_, e.t_ns);
    if (e.step == last_step_) last_step_events_.push_back(e);
    if (e.kind == TraceEventKind::OpBegin) open_[{e.rank, e.op}] = e;
    else if (e.kind == TraceEventKind::OpEnd) open_.erase({e.rank, e.op});
  }
  void end() override {}

  std::uint64_t emitted() const { return emitted_; }

  // Emits `count` more events: the last step's again, a step later each time round.
  void append(std::uint64_t count) {
    if (!replay_ready_) drop_unpaired_ops();
    replay_ready_ = true;
    if (last_step_events_.empty()) return;
    TimeNs first = t_max_;
    for (const TraceEvent& e : last_step_events_) first = std::min(first, e.t_ns);
    const TimeNs step_ns = std::max<TimeNs>(1, last_step_end_ - first);
    for (std::uint64_t i = 0; i < count; ++i, ++replayed_) {
      const std::uint64_t round = replayed_ / last_step_events_.size() + 1;
      TraceEvent e = last_step_events_[replayed_ % last_step_events_.size()];
      e.t_ns += static_cast<TimeNs>(round) * step_ns;
      e.step += static_cast<int>(round);
      out_.emit(e);
      ++emitted_;
    }
  }

  // Simulates `scenario`, then replays its last step until `events` have been emitted in all.
  void simulate_and_grow(const Scenario& scenario, std::uint64_t events) {
    const ResolvedScenario resolved = resolve_scenario(scenario);
    simulate(resolved, lower_plan(resolved), *this);
    // An op the run left running (its end would come after the trace's) ends with it, so the steps added after it do
    // not lie under an op that never ends.
    for (auto [key, begin] : std::map(open_)) {
      begin.kind = TraceEventKind::OpEnd;
      begin.t_ns = t_max_;
      emit(begin);
    }
    last_step_end_ = t_max_;
    if (emitted_ < events) append(events - emitted_);
  }

 private:
  // An op begun in the last step and ended after it (or ended in it and begun before) would be replayed half: an op
  // that lasts from one replayed step into the next. Such ops are left out of the replay.
  void drop_unpaired_ops() {
    std::map<std::pair<int, OpIndex>, int> open;
    std::set<std::pair<int, OpIndex>> unpaired;
    for (const TraceEvent& e : last_step_events_) {
      const std::pair key{e.rank, e.op};
      if (e.kind == TraceEventKind::OpBegin) ++open[key];
      else if (e.kind == TraceEventKind::OpEnd && --open[key] < 0) unpaired.insert(key);
    }
    for (const auto& [key, count] : open)
      if (count != 0) unpaired.insert(key);
    std::erase_if(last_step_events_, [&](const TraceEvent& e) {
      return (e.kind == TraceEventKind::OpBegin || e.kind == TraceEventKind::OpEnd) && unpaired.count({e.rank, e.op}) > 0;
    });
  }

  TraceSink& out_;
  int last_step_;
  std::uint64_t emitted_ = 0, replayed_ = 0;
  TimeNs t_max_ = 0, last_step_end_ = 0;
  std::vector<TraceEvent> last_step_events_;
  std::map<std::pair<int, OpIndex>, TraceEvent> open_;  // begun and not yet ended
  bool replay_ready_ = false;
};

// DDP over 8 ranks, 4,000 × Linear(64), two steps (about 1.5 M events): thousands of ops per pixel zoomed out.
inline Scenario dense_ddp_scenario() {
  Scenario s;
  s.model.spec = "mlp:4000x64";
  s.cluster.world = 8;
  s.training.steps = 2;
  return s;
}

}  // namespace shardscope::bench
