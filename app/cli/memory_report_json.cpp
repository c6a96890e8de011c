// JSON form of the memory report. Keys named in the issue are the public interface:
// ranks[i].rank, ranks[i].phases[j].{name, step, allocated_bytes, max_allocated_bytes, reserved_bytes},
// ranks[i].peak_bytes, ranks[i].peak_by_category; model.{name, spec, parameter_count, transformer_blocks, seq,
// activation_bytes_per_layer (Korthikanti et al. 2022 Table 2's per-layer figure on one rank: scenario/tensor_parallel.h;
// null without Megatron-style transformer blocks)};
// ranks[i].peak_tensors[k].{name, category, bytes, allocated_at_op} (largest first, at most 10);
// ranks[i].oom.{rank, op, tensor, requested_bytes, allocated_bytes, capacity_bytes} or null
// (seq is null for models without a sequence dimension).
#include <nlohmann/json.hpp>

#include "cli/category_json.h"
#include "cli/memory_command.h"
#include "scenario/tensor_parallel.h"

namespace shardscope::cli {

std::string memory_json(const MemoryRun& run) {
  using nlohmann::json;
  json root;
  root["scenario"] = json::parse(scenario_to_json(run.scenario.settings));
  const Model& model = run.scenario.model;
  root["model"] = {{"name", model.display_name},
                   {"spec", model.spec},
                   {"parameter_count", model.parameter_count()},
                   {"transformer_blocks", model.transformer_block_count()},
                   {"seq", model.seq > 0 ? json(model.seq) : json(nullptr)}};
  const auto per_layer = activation_bytes_per_layer(run.scenario);
  root["model"]["activation_bytes_per_layer"] = per_layer ? json(*per_layer) : json(nullptr);
  root["accounting"] = accounting_name(run.report.mode);
  root["rules"] = run.report.rules;
  root["behaviour"] = run.plan.behaviour;
  root["gpu_arch"] = run.scenario.gpu_arch;
  root["capacity_bytes"] = run.report.capacity;
  root["notes"] = run.plan.notes;
  root["ranks"] = json::array();
  for (const auto& rank : run.report.ranks) {
    json r;
    r["rank"] = rank.rank;
    r["phases"] = json::array();
    for (const auto& phase : rank.phases)
      r["phases"].push_back({{"name", phase.name},
                             {"step", phase.step},
                             {"allocated_bytes", phase.allocated},
                             {"max_allocated_bytes", phase.max_allocated},
                             {"reserved_bytes", phase.reserved},
                             {"by_category", categories_json(phase.by_category)}});
    r["peak_bytes"] = rank.peak_allocated;
    r["peak_reserved_bytes"] = rank.peak_reserved;
    r["peak_by_category"] = categories_json(rank.peak_by_category);
    const Program& program = run.plan.programs[static_cast<std::size_t>(rank.rank)];
    r["peak_at"] = rank.peak_op >= 0 ? program.ops[static_cast<std::size_t>(rank.peak_op)].label.str() : "";
    r["peak_tensors"] = json::array();
    for (const LiveTensor& tensor : rank.peak_tensors)
      r["peak_tensors"].push_back({{"name", tensor.name},
                                   {"category", std::string(category_key(tensor.category))},
                                   {"bytes", tensor.bytes},
                                   {"allocated_at_op", program.ops[static_cast<std::size_t>(tensor.allocated_at)].label.str()},
                                   {"allocated_at_step", program.ops[static_cast<std::size_t>(tensor.allocated_at)].step}});
    if (rank.oom) {
      r["oom"] = {{"rank", rank.rank},
                  {"tensor", rank.oom->tensor},
                  {"capacity_bytes", run.report.capacity},
                  {"op", program.ops[static_cast<std::size_t>(rank.oom->op)].label.str()},
                  {"step", program.ops[static_cast<std::size_t>(rank.oom->op)].step},
                  {"requested_bytes", rank.oom->requested},
                  {"allocated_bytes", rank.oom->allocated_before},
                  {"reserved_bytes", rank.oom->reserved_before}};
    } else {
      r["oom"] = nullptr;
    }
    root["ranks"].push_back(std::move(r));
  }
  root["max_batch_that_fits"] = {{"batch", run.fit.batch ? json(*run.fit.batch) : json(nullptr)},
                                 {"multiple_of", run.fit.multiple_of},
                                 {"limited_by_rank", run.fit.limiting_rank >= 0 ? json(run.fit.limiting_rank) : json(nullptr)},
                                 {"searched_up_to", run.fit.searched_up_to},
                                 {"searched", run.fit.not_searched.empty()},
                                 {"not_searched_because", run.fit.not_searched.empty() ? json(nullptr) : json(run.fit.not_searched)}};
  return root.dump(2);
}

}  // namespace shardscope::cli
