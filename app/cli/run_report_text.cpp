// Text form of an executed run: per rank the loss, the parameter checksum, measured against predicted peak, and
// the memory at each phase by category (measured; the exact accounting predicts the same bytes).
#include <ostream>

#include <fmt/format.h>

#include "cli/run_command.h"
#include "cli/simulate_command.h"
#include "exec/data/model_parameters.h"

namespace shardscope::cli {

void print_run_text(const RunRun& run, std::ostream& out) {
  const auto& s = run.scenario.settings;
  const exec::ExecutionResult& r = run.result;
  out << fmt::format("Executed on {}: {} × {}, {}, batch {} per rank, {} step(s), {}{}\n", run.backend,
                     run.plan.programs.size(), run.scenario.model.display_name, strategy_name(s.strategy.kind),
                     s.training.batch, s.training.steps, optimizer_name(s.training.optimizer),
                     is_mixed_precision(s.training.dtype)
                         ? ", " + dtype_name(s.training.dtype) + " mixed precision (fp32 master weights)"
                         : std::string());
  out << fmt::format("Run time {} — {}\n", format_duration(r.run_time_ns), r.ok ? "ok" : "FAILED: " + r.error);
  print_step_times(run.steps, out);
  if (run.beside) print_step_beside(*run.beside, out);
  if (r.ok) {
    const exec::ModelParameters model = exec::assemble_model_parameters(r.ranks);
    out << fmt::format("Model parameters (all ranks together, each element once): checksum {:.9g} (Σx² {:.9g}) over {} "
                       "elements; {}{}\n",
                       model.checksum, model.sum_of_squares, model.elements,
                       model.disagreement.empty() ? "replicas agree" : "REPLICAS DISAGREE: " + model.disagreement,
                       model.gap.empty() ? "" : "; MISSING: " + model.gap);
  }
  if (run.backend == "cuda") {
    bool shared = false;
    for (std::size_t rank = 0; rank < r.device_names.size(); ++rank) {
      out << fmt::format("  rank {} on {}\n", rank, r.device_names[rank]);
      shared = shared || r.device_names[rank].find("shared by") != std::string::npos;
    }
    if (shared)
      out << "Ranks share GPUs (fewer GPUs than ranks): their collectives go through the local device-memory path, "
             "not NCCL.\n";
    out << "Memory: measured by the CUDA caching allocator (PyTorch 2.x blocks); predicted by the pytorch-2 "
           "accounting of the same plan.\n\n";
  } else {
    out << "Memory: measured by the tracking allocator; predicted by the exact accounting of the same plan.\n\n";
  }
  for (const auto& rank : r.ranks) {
    const RankMemory& predicted = run.predicted.ranks.at(static_cast<std::size_t>(rank.rank));
    out << fmt::format("rank {}: loss {}  checksum of the parameters it holds {:.9g} (Σx² {:.9g})\n", rank.rank,
                       rank.loss ? fmt::format("{:.9g}", *rank.loss) : std::string("-"), rank.param_checksum,
                       rank.param_sum_of_squares);
    if (rank.loss_scale)
      out << fmt::format("  fp16 loss scale {:g} after the last step; {} step(s) skipped for inf / NaN gradients\n",
                         *rank.loss_scale, rank.skipped_steps);
    out << fmt::format("  peak: measured {} ({} B), predicted {} ({} B){}\n", format_bytes(rank.measured_peak_bytes),
                       rank.measured_peak_bytes, format_bytes(predicted.peak_allocated), predicted.peak_allocated,
                       rank.measured_peak_bytes == predicted.peak_allocated ? "  equal" : "  DIFFER");
    for (const auto& device : rank.device_memory)
      out << fmt::format("  step {} {:<14} device use {} of {}: allocator segments {}, outside the allocator (context, "
                         "cuBLAS, NCCL) {}\n",
                         device.step, device.phase, format_bytes(device.device_used), format_bytes(device.device_total),
                         format_bytes(device.allocator_reserved), format_bytes(device.outside_allocator()));
    for (const auto& phase : rank.phases) {
      out << fmt::format("  step {} {:<14} {:>12}", phase.step, phase.name, format_bytes(phase.allocated));
      for (Category c : kAllCategories)
        if (phase.by_category[c] > 0) out << fmt::format("  {} {}", category_label(c), format_bytes(phase.by_category[c]));
      out << "\n";
    }
  }
}

}  // namespace shardscope::cli
