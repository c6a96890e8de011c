// JSON form of an executed run. Keys named in the issue are the public interface: ranks[i].{loss, param_checksum,
// measured_peak_bytes, predicted_peak_bytes}; also ok, error, run_time_ns, per-category peaks and phases.
#include <nlohmann/json.hpp>

#include "cli/category_json.h"
#include "cli/run_command.h"
#include "exec/data/model_parameters.h"

namespace shardscope::cli {

std::string run_json(const RunRun& run) {
  using nlohmann::json;
  const exec::ExecutionResult& r = run.result;
  json root;
  root["scenario"] = json::parse(scenario_to_json(run.scenario.settings));
  root["backend"] = run.backend;
  root["ok"] = r.ok;
  root["error"] = r.ok ? json(nullptr) : json(r.error);
  root["failed_rank"] = r.failed_rank;
  root["run_time_ns"] = r.run_time_ns;
  // Every training step, batch loading left out and reported apart (run/step_timing.h).
  json step_times = json::array(), load_times = json::array();
  for (const StepTiming& t : run.steps) {
    step_times.push_back(t.step_ns);
    load_times.push_back(t.load_batch_ns);
  }
  root["step_times_ns"] = step_times;
  root["load_batch_ns"] = load_times;
  root["median_step_ns"] = run.steps.empty() ? json(nullptr) : json(median_step(run.steps).step_ns);
  if (run.beside) {
    const StepBeside& b = *run.beside;
    json kinds = json::object();
    const auto entry = [](TimeNs sim, TimeNs exec) {
      const auto error = relative_error(sim, exec);
      return json{{"simulated_ns", sim}, {"executed_ns", exec}, {"error", error ? json(*error) : json(nullptr)}};
    };
    for (int k = 0; k < kTimeKindCount; ++k)
      kinds[time_kind_name(static_cast<TimeKind>(k))] =
          entry(b.simulated.by_kind[static_cast<std::size_t>(k)], b.executed.by_kind[static_cast<std::size_t>(k)]);
    root["simulate_beside"] = {{"device_profile", b.cost.profile.empty() ? json(nullptr) : json(b.cost.profile)},
                               {"roofline_ops", b.cost.roofline_ops},
                               {"executed_step", b.executed.step},
                               {"simulated_step", b.simulated.step},
                               {"step", entry(b.simulated.step_ns, b.executed.step_ns)},
                               {"executed_fastest_ns", b.fastest_ns},
                               {"executed_slowest_ns", b.slowest_ns},
                               {"by_kind", kinds}};
  }
  root["predicted_accounting"] = accounting_name(run.predicted_mode);
  root["devices"] = r.device_names;
  json ranks = json::array();
  for (const auto& rank : r.ranks) {
    const RankMemory& predicted = run.predicted.ranks.at(static_cast<std::size_t>(rank.rank));
    json phases = json::array();
    for (const auto& phase : rank.phases)
      phases.push_back({{"name", phase.name}, {"step", phase.step}, {"allocated_bytes", phase.allocated},
                        {"by_category", categories_json(phase.by_category)}});
    json device_memory = json::array();  // CUDA: cudaMemGetInfo beside the allocator at each phase
    for (const auto& d : rank.device_memory)
      device_memory.push_back({{"phase", d.phase}, {"step", d.step}, {"device_used_bytes", d.device_used},
                               {"device_total_bytes", d.device_total}, {"allocator_reserved_bytes", d.allocator_reserved},
                               {"outside_allocator_bytes", d.outside_allocator()}});
    ranks.push_back({{"rank", rank.rank},
                     {"loss", rank.loss ? json(*rank.loss) : json(nullptr)},
                     {"step_losses", rank.step_losses},
                     {"loss_scale", rank.loss_scale ? json(*rank.loss_scale) : json(nullptr)},
                     {"skipped_steps", rank.skipped_steps},
                     {"param_checksum", rank.param_checksum},
                     {"param_sum_of_squares", rank.param_sum_of_squares},
                     {"measured_peak_bytes", rank.measured_peak_bytes},
                     {"predicted_peak_bytes", predicted.peak_allocated},
                     {"measured_peak_by_category", categories_json(rank.measured_peak_by_category)},
                     {"phases", phases},
                     {"device_memory", device_memory}});
  }
  root["ranks"] = ranks;
  // The model as all ranks hold it together (replicas once, shards and stages joined): comparable across strategies.
  const exec::ModelParameters model = exec::assemble_model_parameters(r.ranks);
  root["model_parameters"] = {{"param_checksum", model.checksum},
                              {"param_sum_of_squares", model.sum_of_squares},
                              {"elements", model.elements},
                              {"replicas_agree", model.disagreement.empty()},
                              {"disagreement", model.disagreement.empty() ? json(nullptr) : json(model.disagreement)},
                              {"gap", model.gap.empty() ? json(nullptr) : json(model.gap)}};
  return root.dump(2);
}

}  // namespace shardscope::cli
