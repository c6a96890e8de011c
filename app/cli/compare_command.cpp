// The compare command: each side's peaks from a scenario (the memory command's accounting) or a trace file (the
// peaks a TraceStore keeps while it replays the file), printed side by side with a − b; then each side's median step
// by kind (a scenario's simulated, a trace's from its events).
#include "cli/compare_command.h"

#include <fmt/format.h>

#include <algorithm>
#include <iostream>
#include <nlohmann/json.hpp>
#include <ostream>

#include "cli/category_json.h"
#include "cli/memory_command.h"
#include "cli/trace_steps.h"
#include "core/untrusted_text.h"
#include "core/units.h"
#include "pipeline/run_pipeline.h"
#include "trace/file/trace_file_reader.h"
#include "trace/import/open_run.h"
#include "trace/store/trace_store.h"

namespace shardscope::cli {

namespace {

RunPeaks trace_peaks(const std::string& path) {
  TraceStore store;
  OpIntervalSink intervals;
  TeeTraceSink both({&store, &intervals});
  // A recorded run's rank files are compared as one run; a profiler trace or memory snapshot is converted first.
  const OpenedRun opened = load_run(path, both);
  const TraceReadResult& trace = opened.read;
  if (trace.truncated) std::cerr << "warning: " << describe_cut(trace) << "\n";  // compared up to the cut
  for (const std::string& note : opened.notes) std::cerr << "note: " << note << "\n";
  RunPeaks run{path, "trace", trace_scenario_name(trace.header), {}, trace_step_timings(store, intervals)};
  store.read([&](const TraceData& data) {
    for (const RankTimeline& rank : data.ranks) run.ranks.push_back({rank.peak.allocated, rank.peak.by_category});
  });
  return run;
}

RunPeaks scenario_peaks(const std::string& path) {
  const Scenario scenario = load_scenario_file(path);
  const MemoryRun memory = run_memory(scenario, BatchSearch::Skip);  // compare prints peaks only
  RunPeaks run{path, "scenario", memory.scenario.settings.name, {}, {}};
  for (const RankMemory& rank : memory.report.ranks) run.ranks.push_back({rank.peak_allocated, rank.peak_by_category});
  OpIntervalSink intervals;
  const pipeline::SimulatedRun simulated = pipeline::simulate_scenario(scenario, intervals);
  run.steps = step_timings(simulated.plan, intervals.intervals());
  return run;
}

// The step that stands for a run (median_step), or none.
const StepTiming* step_of(const RunPeaks& run) { return run.steps.empty() ? nullptr : &median_step(run.steps); }

nlohmann::json step_json(const StepTiming* step) {
  if (step == nullptr) return nullptr;
  nlohmann::json kinds = nlohmann::json::object();
  for (int k = 0; k < kTimeKindCount; ++k)
    kinds[time_kind_name(static_cast<TimeKind>(k))] = step->by_kind[static_cast<std::size_t>(k)];
  return {{"step", step->step}, {"step_ns", step->step_ns}, {"load_batch_ns", step->load_batch_ns}, {"by_kind_ns", kinds}};
}

std::string signed_duration(TimeNs t) { return t == 0 ? "0" : (t > 0 ? "+" : "−") + format_duration(t > 0 ? t : -t); }

const RankPeak* rank_of(const RunPeaks& run, std::size_t r) { return r < run.ranks.size() ? &run.ranks[r] : nullptr; }

std::size_t rank_count(const Comparison& c) { return std::max(c.a.ranks.size(), c.b.ranks.size()); }

nlohmann::json peak_categories_json(const RankPeak* peak) { return peak ? categories_json(peak->by_category) : nullptr; }

nlohmann::json run_json(const RunPeaks& run) {
  Bytes peak = 0;
  for (const RankPeak& r : run.ranks) peak = std::max(peak, r.peak);
  return {{"source", run.source}, {"kind", run.kind}, {"name", run.name}, {"ranks", run.ranks.size()}, {"peak_bytes", peak}};
}

std::string signed_bytes(Bytes b) { return b == 0 ? "0" : (b > 0 ? "+" : "−") + format_bytes(b > 0 ? b : -b); }

}  // namespace

RunPeaks load_run_peaks(const std::string& path) { return looks_like_run(path) ? trace_peaks(path) : scenario_peaks(path); }

std::string compare_json(const Comparison& c) {
  using nlohmann::json;
  json root;
  root["a"] = run_json(c.a);
  root["b"] = run_json(c.b);
  root["ranks"] = json::array();
  for (std::size_t r = 0; r < rank_count(c); ++r) {
    const RankPeak* a = rank_of(c.a, r);
    const RankPeak* b = rank_of(c.b, r);
    json rank{{"rank", r}, {"a", peak_categories_json(a)}, {"b", peak_categories_json(b)}};
    json peak{{"a", a ? json(a->peak) : json(nullptr)}, {"b", b ? json(b->peak) : json(nullptr)}};
    if (a && b) {
      CategoryBytes difference;
      for (Category cat : kAllCategories) difference[cat] = a->by_category[cat] - b->by_category[cat];
      rank["difference"] = categories_json(difference);
      peak["difference"] = a->peak - b->peak;
    } else {
      rank["difference"] = nullptr;
      rank["missing_in"] = a ? "b" : "a";
      peak["difference"] = nullptr;
    }
    rank["peak_bytes"] = peak;
    root["ranks"].push_back(rank);
  }
  const StepTiming* a = step_of(c.a);
  const StepTiming* b = step_of(c.b);
  root["step_time"] = {{"a", step_json(a)}, {"b", step_json(b)}};
  if (a && b) {
    json difference = json::object();
    for (int k = 0; k < kTimeKindCount; ++k)
      difference[time_kind_name(static_cast<TimeKind>(k))] =
          a->by_kind[static_cast<std::size_t>(k)] - b->by_kind[static_cast<std::size_t>(k)];
    root["step_time"]["difference"] = {{"step_ns", a->step_ns - b->step_ns}, {"by_kind_ns", difference}};
  } else {
    root["step_time"]["difference"] = nullptr;
  }
  return root.dump(2);
}

void print_compare_text(const Comparison& c, std::ostream& out) {
  // Names come from the files (a trace header, a scenario): untrusted text.
  out << fmt::format("a: {} ({}: {})\nb: {} ({}: {})\n", printable(c.a.name), c.a.kind, c.a.source, printable(c.b.name), c.b.kind, c.b.source);
  out << "Peak allocated per rank, by category at each run's peak; difference = a − b\n";
  for (std::size_t r = 0; r < rank_count(c); ++r) {
    const RankPeak* a = rank_of(c.a, r);
    const RankPeak* b = rank_of(c.b, r);
    out << fmt::format("\nrank {}{}\n", r, !a ? "  (missing in a)" : !b ? "  (missing in b)" : "");
    out << fmt::format("  {:<24} {:>12} {:>12} {:>13}\n", "category", "a", "b", "a − b");
    auto row = [&](const std::string& label, Bytes x, Bytes y) {
      out << fmt::format("  {:<24} {:>12} {:>12} {:>13}\n", label, a ? format_bytes(x) : "—", b ? format_bytes(y) : "—",
                         a && b ? signed_bytes(x - y) : "—");
    };
    for (Category cat : kAllCategories) {
      const Bytes x = a ? a->by_category[cat] : 0, y = b ? b->by_category[cat] : 0;
      if (x != 0 || y != 0) row(std::string(category_label(cat)), x, y);
    }
    row("peak", a ? a->peak : 0, b ? b->peak : 0);
  }
  const StepTiming* a = step_of(c.a);
  const StepTiming* b = step_of(c.b);
  out << "\nStep time: the median step (steps 2 and later; batch loading apart), by kind on the rank that finishes "
         "last; difference = a − b\n";
  out << fmt::format("  {:<24} {:>12} {:>12} {:>13}\n", "kind", "a", "b", "a − b");
  const auto row = [&](const std::string& label, TimeNs x, TimeNs y) {
    out << fmt::format("  {:<24} {:>12} {:>12} {:>13}\n", label, a ? format_duration(x) : "—", b ? format_duration(y) : "—",
                       a && b ? signed_duration(x - y) : "—");
  };
  for (int k = 0; k < kTimeKindCount; ++k)
    row(time_kind_name(static_cast<TimeKind>(k)), a ? a->by_kind[static_cast<std::size_t>(k)] : 0,
        b ? b->by_kind[static_cast<std::size_t>(k)] : 0);
  row("step", a ? a->step_ns : 0, b ? b->step_ns : 0);
}

}  // namespace shardscope::cli
