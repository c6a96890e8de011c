// Text form of the memory report, in the spirit of the prints PyTorch users write
// (memory_allocated / max_memory_allocated / memory_reserved after each phase), binary units stated.
#include <iomanip>
#include <ostream>

#include <fmt/format.h>

#include "cli/memory_command.h"
#include "scenario/rank_coordinates.h"
#include "scenario/scenario_fields.h"
#include "strategy/registry.h"

namespace shardscope::cli {

namespace {


// "ddp (bucket_cap_mb 25, gradient_as_bucket_view off)": the strategy and the options it uses (strategy/registry.h).
std::string strategy_line(const Scenario& s) {
  const StrategyInfo& info = strategy_info(s.strategy.kind);
  std::string options;
  for (const auto key : info.options) {
    const ScenarioField& field = *find_scenario_field(key);
    const FieldValue value = field.get(s);
    if (std::holds_alternative<std::monostate>(value)) continue;
    const std::string text = std::holds_alternative<bool>(value) ? (std::get<bool>(value) ? "on" : "off") : field_value_text(value);
    options += (options.empty() ? "" : ", ") + std::string(field.name()) + " " + text;
  }
  return std::string(info.name) + (options.empty() ? "" : " (" + options + ")");
}

std::string with_commas(Bytes value) {
  std::string digits = std::to_string(value < 0 ? -value : value);
  std::string out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return (value < 0 ? "-" : "") + out;
}

// "batch up to 1,234 per rank (rank 0 runs out at 1,235)".
std::string fit_line(const BatchFit& fit, const Scenario& s) {
  if (!fit.not_searched.empty()) return fit.not_searched;
  if (!fit.batch)
    return fmt::format("no batch: even {} runs out of memory on {}", fit.multiple_of, rank_label(s, std::max(0, fit.limiting_rank)));
  std::string text = fmt::format("batch up to {}", with_commas(*fit.batch));
  if (fit.multiple_of > 1) text += fmt::format(" (multiples of the {} micro-batches)", fit.multiple_of);
  if (fit.limiting_rank >= 0)
    return text + fmt::format("; {} runs out at {}", rank_label(s, fit.limiting_rank), with_commas(*fit.batch + fit.multiple_of));
  return text + fmt::format(" (the search stops at {})", with_commas(fit.searched_up_to));
}

bool same_figures(const RankMemory& a, const RankMemory& b) {
  if (a.phases.size() != b.phases.size() || a.peak_allocated != b.peak_allocated || a.peak_reserved != b.peak_reserved ||
      a.oom.has_value() != b.oom.has_value())
    return false;
  for (std::size_t i = 0; i < a.phases.size(); ++i)
    if (a.phases[i].allocated != b.phases[i].allocated || a.phases[i].max_allocated != b.phases[i].max_allocated ||
        a.phases[i].reserved != b.phases[i].reserved)
      return false;
  return true;
}

void print_rank(const MemoryRun& run, const RankMemory& rank, std::ostream& out) {
  const bool pytorch = run.report.mode != AccountingMode::Exact;
  out << fmt::format("  {:<14} {:>4}  {:>14}  {:>14}", "phase", "step", "allocated", "max allocated");
  if (pytorch) out << fmt::format("  {:>14}", "reserved");
  out << "\n";
  for (const auto& phase : rank.phases) {
    out << fmt::format("  {:<14} {:>4}  {:>14}  {:>14}", phase.name, phase.step, format_bytes(phase.allocated),
                       format_bytes(phase.max_allocated));
    if (pytorch) out << fmt::format("  {:>14}", format_bytes(phase.reserved));
    out << "\n";
  }
  const Program& program = run.plan.programs[static_cast<std::size_t>(rank.rank)];
  const std::string where = rank.peak_op >= 0 ? program.ops[static_cast<std::size_t>(rank.peak_op)].label.str() : "-";
  out << fmt::format("  peak {} ({} B) at \"{}\", step {}; by category:\n", format_bytes(rank.peak_allocated),
                     with_commas(rank.peak_allocated), where,
                     rank.peak_op >= 0 ? program.ops[static_cast<std::size_t>(rank.peak_op)].step : 0);
  for (Category category : kAllCategories) {
    const Bytes bytes = rank.peak_by_category[category];
    if (bytes == 0) continue;
    out << fmt::format("    {:<22} {:>12}  {:>5.1f}%\n", category_label(category), format_bytes(bytes),
                       100.0 * static_cast<double>(bytes) / static_cast<double>(rank.peak_allocated));
  }
  if (!rank.peak_tensors.empty()) {
    out << "  largest tensors live at the peak:\n";
    for (std::size_t i = 0; i < std::min<std::size_t>(5, rank.peak_tensors.size()); ++i) {
      const LiveTensor& tensor = rank.peak_tensors[i];
      out << fmt::format("    {:<34} {:<22} {:>12}  (allocated in step {})\n", tensor.name, category_label(tensor.category),
                         format_bytes(tensor.bytes), program.ops[static_cast<std::size_t>(tensor.allocated_at)].step);
    }
  }
  if (pytorch) out << fmt::format("  peak reserved {}\n", format_bytes(rank.peak_reserved));
  if (rank.oom) {
    out << fmt::format("  OUT OF MEMORY at \"{}\" (step {}): {} requested with {} allocated, {} reserved of {} capacity\n"
                       "  (PyTorch would stop here; the figures after it assume the allocation had succeeded)\n",
                       program.ops[static_cast<std::size_t>(rank.oom->op)].label.str(),
                       program.ops[static_cast<std::size_t>(rank.oom->op)].step, format_bytes(rank.oom->requested),
                       format_bytes(rank.oom->allocated_before), format_bytes(rank.oom->reserved_before),
                       format_bytes(run.report.capacity));
  } else if (rank.peak_reserved > run.report.capacity || rank.peak_allocated > run.report.capacity) {
    out << "  exceeds capacity\n";
  }
}

}  // namespace

void print_memory_text(const MemoryRun& run, std::ostream& out) {
  const auto& s = run.scenario.settings;
  const auto& model = run.scenario.model;
  out << "ShardScope memory — " << s.name << "\n";
  out << fmt::format("model      {} — {} parameters ({} in fp32)\n", model.display_name, with_commas(model.parameter_count()),
                     format_bytes(model.parameter_count() * 4));
  out << fmt::format("training   batch {} {}, {} loss, {}{}, {} step{}{}\n", s.training.batch,
                     batch_unit(strategy_info(s.strategy.kind).layout),
                     loss_name(s.training.loss), optimizer_name(s.training.optimizer),
                     run.scenario.weight_decay != 0 ? fmt::format(" (weight decay {})", run.scenario.weight_decay) : "",
                     s.training.steps, s.training.steps == 1 ? "" : "s", s.training.no_grad ? ", inference (no_grad)" : "");
  out << fmt::format("cluster    {} × {} ({} each)\n", s.cluster.world, run.scenario.device.name, format_bytes(run.report.capacity));
  out << "strategy   " << strategy_line(s) << "\n";
  out << "fits       " << fit_line(run.fit, s) << "\n";
  out << fmt::format("accounting {} ({}); behaviour follows {}{}\n", accounting_name(s.accounting.mode), run.report.rules,
                     run.plan.behaviour, s.accounting.mode == AccountingMode::PyTorch2 ? ", GPU " + run.scenario.gpu_arch : "");
  out << "units      KiB/MiB/GiB = 2^10/2^20/2^30 bytes; max allocated is since the start (no reset_peak_memory_stats)\n";
  for (const auto& note : run.plan.notes) out << "note       " << note << "\n";

  const auto& ranks = run.report.ranks;
  for (std::size_t r = 0; r < ranks.size();) {
    std::size_t last = r;
    while (last + 1 < ranks.size() && same_figures(ranks[r], ranks[last + 1])) ++last;
    const int first_rank = static_cast<int>(r), last_rank = static_cast<int>(last);
    out << "\n" << rank_range_label(s, first_rank, last_rank) << (last == r ? "" : " (identical figures)") << "\n";
    print_rank(run, ranks[r], out);
    r = last + 1;
  }
}

}  // namespace shardscope::cli
