// Checks of strategy.tp / strategy.sequence_parallel against the model, and the per-layer activation figure.
// Megatron-LM's rules: ColumnParallelLinear / RowParallelLinear divide their split dimension by the tensor-parallel
// size (core/tensor_parallel/layers.py, divide() asserts divisibility), attention divides heads and query groups
// (core/transformer/attention.py), VocabParallelEmbedding divides the vocabulary (padded to a multiple of
// make_vocab_size_divisible_by × tp when the model is built: resolve_scenario), and --sequence-parallel splits the
// sequence dimension (seq_length % tp == 0; an MLP's batch rows, each sample one token: batch % tp == 0 per
// micro-batch).
#include "scenario/tensor_parallel.h"

#include <string>

#include "model/tensor_parallel_costs.h"
#include "scenario/parallel_layout.h"

namespace shardscope {

namespace {

std::string str(std::int64_t value) { return std::to_string(value); }

void require_divides(const char* field, const std::string& what, std::int64_t value, int tp) {
  if (value % tp != 0)
    throw ScenarioError(field, "tp (" + str(tp) + ") must divide the model's " + what + " (" + str(value) + ")");
}

bool is_mlp(const Model& model) {
  for (const auto& layer : model.layers)
    if (layer.kind != LayerKind::Linear && layer.kind != LayerKind::ReLU) return false;
  return !model.layers.empty();
}

}  // namespace

int strategy_world(const Scenario& settings) { return settings.cluster.world / std::max(1, settings.strategy.tp); }

void check_tensor_parallel(const Scenario& s, const Model& model) {
  const int tp = s.strategy.tp;
  if (tp == 1) {
    if (s.strategy.sequence_parallel)
      throw ScenarioError("strategy.sequence_parallel", "needs tp > 1 (it splits along the sequence the regions tensor "
                                                        "parallelism keeps whole on each of the tp ranks); got tp 1");
    return;
  }
  const std::string spec = s.model.spec;
  if (model.transformer) {
    if (model.implementation != TransformerImplementation::Megatron)
      throw ScenarioError("model.implementation", "tensor parallelism splits Megatron-LM's layer; use --implementation "
                                                  "megatron (transformers' modules have no tensor-parallel form here)");
    const TransformerConfig& c = *model.transformer;
    require_divides("strategy.tp", "attention heads", c.heads, tp);
    require_divides("strategy.tp", "key / value heads", c.kv_heads, tp);
    require_divides("strategy.tp", "hidden size", c.hidden, tp);
    require_divides("strategy.tp", "MLP width", c.intermediate, tp);
    if (s.strategy.sequence_parallel && model.seq % tp != 0)
      throw ScenarioError("strategy.sequence_parallel", "tp (" + str(tp) + ") must divide the sequence length (" +
                                                            str(model.seq) + ") to split it");
    return;
  }
  if (!is_mlp(model))
    throw ScenarioError("strategy.tp", "tensor parallelism splits MLP pairs (mlp:LAYERSxWIDTH) and GPT-2 / Llama blocks; '" +
                                           spec + "' has neither");
  if (s.strategy.sequence_parallel) {
    // Each sample is one token: the rows outside the Linear pairs split over the tp ranks (each micro-batch's, in a
    // pipeline), Megatron's sequence split for its MLP block.
    const std::int64_t micro_batches = is_pipeline(s.strategy.kind) ? std::max(1, s.strategy.micro_batches) : 1;
    const std::int64_t rows = s.training.batch / micro_batches;
    if (rows % tp != 0)
      throw ScenarioError("strategy.sequence_parallel",
                          "tp (" + str(tp) + ") must divide the rows it splits: the batch (" + str(s.training.batch) + ")" +
                              (micro_batches > 1 ? " per micro-batch (" + str(rows) + ")" : std::string()) +
                              "; an MLP's samples are its sequence");
    if (is_autocast(s.training.precision))
      throw ScenarioError("strategy.sequence_parallel", "an MLP's sequence parallelism is lowered for fp32 and --dtype's "
                                                        "mixed precision; use --precision none with it");
  }
  int linears = 0;
  for (const auto& layer : model.layers) {
    if (layer.kind != LayerKind::Linear) continue;
    ++linears;
    // A column-parallel layer splits its outputs, the row-parallel one after it its inputs.
    require_divides("strategy.tp", layer.name + "'s " + (linears % 2 == 1 ? "output" : "input") + " features",
                    linears % 2 == 1 ? layer.out_numel : layer.in_numel, tp);
  }
  if (linears % 2 != 0)
    throw ScenarioError("strategy.tp", "'" + spec + "' has " + str(linears) + " Linear layers; tensor parallelism splits "
                                           "them in pairs (column-parallel, then row-parallel), so it needs an even number");
}

std::optional<std::int64_t> activation_bytes_per_layer(const ResolvedScenario& scenario) {
  const Model& model = scenario.model;
  if (!model.transformer || model.implementation != TransformerImplementation::Megatron) return std::nullopt;
  const auto& s = scenario.settings;
  const std::int64_t micro_batch = s.training.batch / (is_pipeline(s.strategy.kind) ? s.strategy.micro_batches : 1);
  const TensorParallelBlockBytes bytes =
      tensor_parallel_block_bytes(*model.transformer, model.seq, model.activation_element_bytes, model.attention,
                                  s.strategy.tp, s.strategy.sequence_parallel);
  return bytes.kept(model.checkpoint) * micro_batch;
}

}  // namespace shardscope
