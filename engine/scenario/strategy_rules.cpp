// The strategy table's descriptive half: a row per strategy, in the order users see them (name, what it is, its
// counterpart, the options it takes, how it lays ranks out, what it refuses). The scenario resolves and checks settings
// by it; the lowering half (strategy/registry.cpp) adds what each one lowers to, above the scenario.
#include "scenario/strategy_rules.h"

#include <algorithm>
#include <cstdint>
#include <stdexcept>

#include "scenario/fsdp_settings.h"
#include "scenario/scenario_fields.h"

// Each row names only the members it sets, the others keep their defaults on purpose; GCC 12 still warns about the
// rest of a designated list.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace shardscope {

namespace {

constexpr std::string_view kDataParallelWorld = "DataParallel is single-process; at most 64 devices";
// Megatron-LM builds its tensor-parallel groups with torch.distributed.new_group over one process per rank
// (megatron/core/parallel_state.py initialize_model_parallel); DataParallel is one process that replicates device
// 0's module onto the others for every forward (torch/nn/parallel/data_parallel.py: replicate, parallel_apply), so
// there is no process per device to hold a shard or join a group.
constexpr std::string_view kDataParallelTensorParallel =
    "torch.nn.DataParallel is one process driving every device from device 0's replica, and Megatron-LM's "
    "tensor-parallel process groups need a process per rank: use ddp";
constexpr std::string_view kZeroInference =
    "inference has no optimizer or gradients, so ZeRO-1/2 have nothing to shard; use ddp, single or zero3";

// balanced-dp's device-0 batch: set, within the global batch, and at least 2 devices to balance.
void check_balanced_data_parallel(const Scenario& settings, const Model&) {
  const auto& gpu0_batch = settings.strategy.gpu0_batch;
  // In 64 bits: batch (≤ 2^24) × world (≤ 65536) does not fit an int.
  const int world = settings.cluster.world;
  const std::int64_t global = static_cast<std::int64_t>(settings.training.batch) * world;
  if (!gpu0_batch) throw ScenarioError("strategy.gpu0_batch", "balanced-dp needs the device-0 batch (--gpu0-batch)");
  if (*gpu0_batch < 0 || *gpu0_batch > global)
    throw ScenarioError("strategy.gpu0_batch", "must be between 0 and the global batch " + std::to_string(global));
  if (world < 2) throw ScenarioError("cluster.world", "balanced-dp needs at least 2 devices");
}

const std::vector<StrategyRules>& table() {
  static const std::vector<StrategyRules> rows = {
      {.kind = StrategyKind::Single, .name = "single",
       .description = "One device: the plain training loop the other strategies are measured against",
       .counterpart = "model.to('cuda'); loss.backward(); optimizer.step()",
       .layout = RankLayout::OneDevice, .options = {"strategy.tp", "strategy.sequence_parallel"}},
      {.kind = StrategyKind::DataParallel, .name = "dp",
       .description = "One process drives every device: each forward scatters the batch, replicates the model and "
                      "gathers the outputs on device 0, which holds more than the others",
       .counterpart = "torch.nn.DataParallel", .layout = RankLayout::DrivenByDevice0,
       .no_tensor_parallel = kDataParallelTensorParallel, .max_world = 64, .max_world_reason = kDataParallelWorld},
      {.kind = StrategyKind::BalancedDataParallel, .name = "balanced-dp",
       .description = "DataParallel with a smaller batch on device 0, which also gathers the outputs",
       .counterpart = "BalancedDataParallel (Transformer-XL utils/data_parallel.py)",
       .layout = RankLayout::DrivenByDevice0, .options = {"strategy.gpu0_batch"},
       .no_tensor_parallel = kDataParallelTensorParallel, .max_world = 64, .max_world_reason = kDataParallelWorld,
       .check = check_balanced_data_parallel},
      {.kind = StrategyKind::Ddp, .name = "ddp",
       .description = "A process per device, a whole replica each; gradients all-reduced in buckets while backward runs",
       .counterpart = "torch.nn.parallel.DistributedDataParallel", .layout = RankLayout::Replicas,
       .options = {"strategy.bucket_cap_mb", "strategy.gradient_as_bucket_view", "strategy.process_group", "strategy.tp", "strategy.sequence_parallel"}},
      {.kind = StrategyKind::Zero1, .name = "zero1",
       .description = "DDP with the optimizer state sharded: each rank updates its share, then broadcasts it",
       .counterpart = "torch.distributed.optim.ZeroRedundancyOptimizer (ZeRO stage 1)", .layout = RankLayout::Replicas,
       .options = {"strategy.bucket_cap_mb", "strategy.gradient_as_bucket_view", "strategy.process_group", "strategy.tp", "strategy.sequence_parallel"},
       .no_inference = kZeroInference},
      {.kind = StrategyKind::Zero2, .name = "zero2",
       .description = "Optimizer state and gradients sharded: gradients reduced through a bucket, each rank keeps "
                      "its partition's, then the parameters are all-gathered",
       .counterpart = "DeepSpeed ZeRO stage 2 (stage_1_and_2.py)", .layout = RankLayout::Replicas,
       .options = {"strategy.reduce_bucket_mb", "strategy.allgather_bucket_mb", "strategy.zero2_reduce", "strategy.tp", "strategy.sequence_parallel"},
       .no_inference = kZeroInference},
      {.kind = StrategyKind::Zero3, .name = "zero3",
       .description = "Parameters sharded too: each unit all-gathered before its forward and backward, freed after use",
       .counterpart = "DeepSpeed ZeRO stage 3 (stage3.py); FSDP1 FULL_SHARD shards flat parameters the same way",
       .layout = RankLayout::Replicas,
       .options = {"strategy.prefetch", "strategy.reduce_bucket_mb", "strategy.allgather_bucket_mb",
                   "strategy.zero3_init", "strategy.tp", "strategy.sequence_parallel"}},
      {.kind = StrategyKind::Fsdp, .name = "fsdp",
       .description = "Each wrapped module's parameters sharded row-wise (1/N of every parameter per rank), "
                      "all-gathered before its forward and backward, gradients reduce-scattered",
       .counterpart = "torch.distributed.fsdp.fully_shard (FSDP2)", .layout = RankLayout::Replicas,
       .options = {"strategy.fsdp_units", "strategy.reshard_after_forward", "strategy.fsdp_param_dtype",
                   "strategy.fsdp_reduce_dtype", "strategy.prefetch", "strategy.process_group", "strategy.tp",
                   "strategy.sequence_parallel"},
       .check = check_fsdp},
      {.kind = StrategyKind::ModelParallel, .name = "mp",
       .description = "Naive model parallelism: consecutive layers per device, the whole batch at once, so one "
                      "device works while the others wait",
       .counterpart = "layers placed on devices with .to(device) by hand", .layout = RankLayout::Stages,
       .options = {"strategy.stages", "strategy.tp", "strategy.sequence_parallel"}},
      {.kind = StrategyKind::PipelineGPipe, .name = "pp-gpipe",
       .description = "Pipeline: every micro-batch forward, then every backward; stage 0 holds all their activations",
       .counterpart = "GPipe (torch.distributed.pipelining ScheduleGPipe)", .layout = RankLayout::StagesAndReplicas,
       .options = {"strategy.stages", "strategy.micro_batches", "strategy.dp", "strategy.dp_zero_stage",
                   "strategy.tp", "strategy.sequence_parallel"}},
      {.kind = StrategyKind::Pipeline1F1B, .name = "pp-1f1b",
       .description = "Pipeline: a few forwards, then one forward one backward; at most `stages` micro-batches in flight",
       .counterpart = "Megatron-LM 1F1B (torch.distributed.pipelining Schedule1F1B)",
       .layout = RankLayout::StagesAndReplicas,
       .options = {"strategy.stages", "strategy.micro_batches", "strategy.dp", "strategy.dp_zero_stage",
                   "strategy.tp", "strategy.sequence_parallel"}},
  };
  return rows;
}

// "a", "a and b", "a, b and c".
std::string spoken_list(const std::vector<std::string>& names) {
  std::string text;
  for (std::size_t i = 0; i < names.size(); ++i)
    text += (i == 0 ? "" : i + 1 == names.size() ? " and " : ", ") + names[i];
  return text;
}

}  // namespace

std::span<const StrategyRules> strategy_rules_table() { return table(); }

const StrategyRules& strategy_rules(StrategyKind kind) {
  for (const auto& row : table())
    if (row.kind == kind) return row;
  throw std::logic_error("strategy " + std::to_string(static_cast<int>(kind)) + " has no row in scenario/strategy_rules.cpp");
}

const StrategyRules* find_strategy_rules(std::string_view name) {
  for (const auto& row : table())
    if (row.name == name) return &row;
  return nullptr;
}

bool strategy_accepts(StrategyKind kind, std::string_view field_key) {
  const auto& options = strategy_rules(kind).options;
  return std::find(options.begin(), options.end(), field_key) != options.end();
}

std::vector<std::string> strategies_accepting(std::string_view field_key) {
  std::vector<std::string> names;
  for (const auto& row : table())
    if (strategy_accepts(row.kind, field_key)) names.emplace_back(row.name);
  return names;
}

std::string_view batch_unit(RankLayout layout) {
  switch (layout) {
    case RankLayout::OneDevice:
    case RankLayout::Replicas: return "per rank";
    case RankLayout::DrivenByDevice0: return "per device";
    case RankLayout::Stages: return "per pipeline";
    case RankLayout::StagesAndReplicas: return "per replica";
  }
  return "per rank";
}

void check_strategy_options(const Scenario& settings) {
  for (const auto& field : scenario_fields()) {
    // A field every scenario file shows (DDP's bucket_cap_mb, gradient_as_bucket_view) is never misplaced there.
    if (field.section() != "strategy" || field.key == "strategy.name" || field.always_written) continue;
    if (strategy_accepts(settings.strategy.kind, field.key) || !field_is_set(settings, field)) continue;
    if (field.inert_value && field.get(settings) == FieldValue{*field.inert_value}) continue;
    const auto users = strategies_accepting(field.key);
    const std::string_view why = strategy_rules(settings.strategy.kind).no_tensor_parallel;
    const bool tensor_parallel = field.key == "strategy.tp" || field.key == "strategy.sequence_parallel";
    throw ScenarioError(std::string(field.key), "only applies to " + spoken_list(users) +
                                                    (tensor_parallel && !why.empty() ? "; " + std::string(why) : ""));
  }
}

// The names the scenario layer reads (scenario.h), from the table.
std::string strategy_name(StrategyKind kind) { return std::string(strategy_rules(kind).name); }

std::optional<StrategyKind> parse_strategy(const std::string& text) {
  const StrategyRules* row = find_strategy_rules(text);
  return row ? std::optional(row->kind) : std::nullopt;
}

std::vector<std::string> strategy_names() {
  std::vector<std::string> names;
  for (const auto& row : table()) names.emplace_back(row.name);
  return names;
}

std::string all_strategy_names() {
  std::string names;
  for (const auto& row : table()) names += (names.empty() ? "" : ", ") + std::string(row.name);
  return names;
}

}  // namespace shardscope
