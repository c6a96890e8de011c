// Text form of the simulation summary: the step's time, communication (total and exposed), bubble, collective
// bandwidths and a per-rank table (ranks with identical figures folded into one row).
#include <ostream>

#include <fmt/format.h>

#include "cli/simulate_command.h"
#include "scenario/rank_coordinates.h"

namespace shardscope::cli {

namespace {

std::string link_text(const LinkPreset& link) {
  return fmt::format("{} ({} GB/s, α {} µs)", link.name, link.gbps, link.latency_us);
}

std::string percent(TimeNs part, TimeNs whole) {
  return whole > 0 ? fmt::format("{:.1f}%", 100.0 * static_cast<double>(part) / static_cast<double>(whole)) : "-";
}

bool same_figures(const RankTiming& a, const RankTiming& b) {
  return a.compute_busy_ns == b.compute_busy_ns && a.utilisation == b.utilisation && a.comm_ns == b.comm_ns &&
         a.exposed_comm_ns == b.exposed_comm_ns && a.wait_ns == b.wait_ns && a.peak_bytes == b.peak_bytes && a.out_of_memory == b.out_of_memory;
}

// Under tensor parallelism, each row ends with its ranks' coordinates: "  tp1·pp0·dp2", "  tp0·pp0·dp0 … tp1·pp0·dp0".
std::string coordinates_column(const Scenario& s, int first, int last) {
  const auto a = rank_coordinates(s, first), b = rank_coordinates(s, last);
  if (!a || !b) return "";
  return "  " + coordinates_label(*a) + (first == last ? "" : " … " + coordinates_label(*b));
}

}  // namespace

void print_simulate_text(const SimulateRun& run, std::ostream& out) {
  const auto& s = run.scenario.settings;
  const SimulationResult& r = run.result;
  const CostModel costs = CostModel::from_scenario(run.scenario);
  const auto& rates = costs.rates();
  out << "ShardScope simulate — " << s.name << "\n";
  out << fmt::format("model      {}, batch {} per rank, {}, {} step{}\n", run.scenario.model.display_name, s.training.batch,
                     dtype_name(s.training.dtype), s.training.steps, s.training.steps == 1 ? "" : "s");
  out << fmt::format("cluster    {} × {}, strategy {}; {} GPUs per node\n", s.cluster.world, run.scenario.device.name,
                     strategy_name(s.strategy.kind), costs.links().gpus_per_node);
  out << fmt::format("links      intra-node {}, inter-node {}\n", link_text(costs.links().intra_node), link_text(costs.links().inter_node));
  const CostSource& source = r.cost_source;
  // With a profile the roofline times only the ops it has no curve for: say so, or the line reads as what was used.
  out << fmt::format("compute    {} TFLOP/s × {} efficiency, HBM {} GB/s × {}, {} per kernel{}\n", rates.peak_tflops,
                     rates.compute_efficiency, rates.hbm_gbps, rates.memory_efficiency, format_duration(rates.kernel_overhead_ns),
                     source.profile.empty() ? "" : " (the roofline: only for ops the profile has no curve for)");
  if (source.profile.empty()) {
    out << "model      roofline compute; alpha-beta ring collectives (NCCL ring; busbw as nccl-tests)\n";
  } else {
    out << fmt::format("model      device profile {} ({}, measured through {}): {} compute ops from its curves{}; "
                       "collectives {}\n",
                       source.profile, run.scenario.profile->machine_name, run.scenario.profile->source, source.profiled_ops,
                       source.roofline_ops == 0 ? std::string()
                                                : fmt::format(", {} by the roofline (no curve, e.g. '{}')", source.roofline_ops,
                                                              source.roofline_examples.front()),
                       source.collectives_from_profile ? "from its curves" : "by the links' alpha-beta model");
    // The profile times the ops, the preset sizes the memory: a preset of another GPU (an H100 with an H200's
    // profile, a CPU's profile) mixes two machines, which the user should know.
    const std::string& machine = run.scenario.profile->machine_name;
    const std::string family = run.scenario.device.name.substr(0, run.scenario.device.name.find('-'));
    if (machine.find(family) == std::string::npos)
      out << fmt::format("note       times are those of the profile's machine ({}); memory capacity is the {} preset's\n",
                         machine, run.scenario.device.name);
  }
  for (const auto& note : run.plan.notes) out << "note       " << note << "\n";
  if (!r.error.empty()) out << "STOPPED    " << r.error << "\n";
  if (r.run_time_ns >= kMaxTimeNs)
    out << "SATURATED  simulated time reached its maximum, " << format_duration(kMaxTimeNs)
        << " (10^18 ns): an op's cost exceeds it (a very slow link or efficiency for the model's size); "
           "times below are clamped there\n";

  out << fmt::format("\nstep {} (the last simulated step; set-up is step 0)\n", r.step);
  out << fmt::format("  step time      {}  (makespan over all ranks, {} – {})\n", format_duration(r.step_time_ns),
                     format_duration(r.step_begin_ns), format_duration(r.step_end_ns));
  out << fmt::format("  communication  {} on the critical {}, of which exposed {} ({} of the step)\n",
                     format_duration(r.total_comm_ns), rank_label(s, r.critical_rank), format_duration(r.exposed_comm_ns),
                     percent(r.exposed_comm_ns, r.step_time_ns));
  out << fmt::format("  bubble         {:.1f}% (mean idle compute over each rank's step, optimizer and overheads included)\n",
                     100.0 * r.bubble_fraction);
  // The schedule's own bubble, to set against the published (p−1)/(m+p−1): without the optimizer and set-up.
  out << fmt::format("  sched. bubble  {:.1f}% (mean idle compute from the first forward to the last backward, any rank; "
                     "uniform stages: (p−1)/(m+p−1))\n",
                     100.0 * r.schedule_bubble_fraction);
  out << fmt::format("  whole run      {}, {} trace events\n", format_duration(r.run_time_ns), r.event_count);
  if (!r.collectives.empty()) {
    out << "  collectives    kind            count        bytes          time    busbw\n";
    for (const auto& c : r.collectives)
      out << fmt::format("                 {:<14} {:>6} {:>12} {:>13} {:>8.1f} GB/s\n", c.kind, c.count, format_bytes(c.size_bytes),
                         format_duration(c.time_ns), c.busbw_gbps);
  }

  out << fmt::format("\n  {:<16} {:>7} {:>13} {:>13} {:>13} {:>13} {:>12}\n", "rank", "util", "compute", "comm", "exposed",
                     "waiting", "peak");
  const auto& ranks = r.ranks;
  for (std::size_t i = 0; i < ranks.size();) {
    std::size_t last = i;
    while (last + 1 < ranks.size() && same_figures(ranks[i], ranks[last + 1])) ++last;
    const RankTiming& t = ranks[i];
    out << fmt::format("  {:<16} {:>6.1f}% {:>13} {:>13} {:>13} {:>13} {:>12}{}\n",
                       last == i ? std::to_string(i) : fmt::format("{}–{}", i, last), 100.0 * t.utilisation,
                       format_duration(t.compute_busy_ns), format_duration(t.comm_ns), format_duration(t.exposed_comm_ns),
                       format_duration(t.wait_ns), format_bytes(t.peak_bytes),
                       coordinates_column(s, static_cast<int>(i), static_cast<int>(last)));
    i = last + 1;
  }
  for (const auto& t : ranks)
    if (!t.out_of_memory.empty()) {
      out << fmt::format("  OUT OF MEMORY  {} first at {}\n", rank_label(s, t.rank), t.out_of_memory);
      break;  // the first rank names it; the JSON has every rank
    }
  out << "  (util = compute busy / the rank's step, from its own start of the step to the step's end; waiting = time "
         "collectives waited for slower peers; peak = allocated, "
      << accounting_name(s.accounting.mode) << " accounting)\n";
}

}  // namespace shardscope::cli
