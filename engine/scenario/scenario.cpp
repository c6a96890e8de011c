// Scenario validation and resolution (model built, preset looked up), and the enum names.
#include "scenario/scenario.h"

#include "cluster/device_profile.h"
#include "scenario/implementation_rules.h"
#include "scenario/parallel_layout.h"
#include "scenario/scenario_fields.h"
#include "scenario/strategy_rules.h"
#include "scenario/tensor_parallel.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <utility>

namespace shardscope {

namespace {
template <typename Enum, std::size_t N>
std::optional<Enum> lookup(const std::array<std::pair<Enum, const char*>, N>& table, const std::string& text) {
  for (const auto& [value, name] : table)
    if (text == name) return value;
  return std::nullopt;
}
template <typename Enum, std::size_t N>
std::string name_of(const std::array<std::pair<Enum, const char*>, N>& table, Enum value) {
  for (const auto& [v, name] : table)
    if (v == value) return name;
  return "?";
}

const std::array<std::pair<CheckpointMode, const char*>, 3> kCheckpoint = {{{CheckpointMode::None, "none"},
                                                                           {CheckpointMode::Selective, "selective"},
                                                                           {CheckpointMode::Full, "full"}}};
const std::array<std::pair<LossKind, const char*>, 2> kLosses = {{{LossKind::Mse, "mse"}, {LossKind::CrossEntropy, "cross-entropy"}}};
const std::array<std::pair<OptimizerKind, const char*>, 4> kOptimizers = {{{OptimizerKind::Sgd, "sgd"},
                                                                           {OptimizerKind::Momentum, "momentum"},
                                                                           {OptimizerKind::Adam, "adam"},
                                                                           {OptimizerKind::AdamW, "adamw"}}};
const std::array<std::pair<AccountingMode, const char*>, 3> kAccounting = {{{AccountingMode::Exact, "exact"},
                                                                           {AccountingMode::PyTorch18, "pytorch-1.8"},
                                                                           {AccountingMode::PyTorch2, "pytorch-2"}}};
const std::array<std::pair<Zero2Reduce, const char*>, 2> kZero2Reduce = {{{Zero2Reduce::ReduceScatter, "reduce-scatter"},
                                                                         {Zero2Reduce::AllReduce, "all-reduce"}}};
const std::array<std::pair<Zero3Init, const char*>, 2> kZero3Init = {{{Zero3Init::Partitioned, "partitioned"},
                                                                     {Zero3Init::Materialize, "materialize"}}};
const std::array<std::pair<FsdpUnits, const char*>, 3> kFsdpUnits = {
    {{FsdpUnits::Layer, "layer"}, {FsdpUnits::Block, "block"}, {FsdpUnits::Model, "model"}}};
const std::array<std::pair<ProcessGroupBackend, const char*>, 2> kProcessGroup = {{{ProcessGroupBackend::Nccl, "nccl"},
                                                                                   {ProcessGroupBackend::Gloo, "gloo"}}};
const std::array<std::pair<TransformerImplementation, const char*>, 2> kImplementations = {
    {{TransformerImplementation::Megatron, "megatron"}, {TransformerImplementation::Hf, "hf"}}};
const std::array<std::pair<AttentionKind, const char*>, 3> kAttention = {
    {{AttentionKind::Eager, "eager"}, {AttentionKind::Sdpa, "sdpa"}, {AttentionKind::Flash, "flash"}}};
const std::array<std::pair<Precision, const char*>, 3> kPrecision = {
    {{Precision::None, "none"}, {Precision::AutocastBf16, "autocast-bf16"}, {Precision::AutocastFp16, "autocast-fp16"}}};
}  // namespace

std::string implementation_name(TransformerImplementation implementation) { return name_of(kImplementations, implementation); }
std::optional<TransformerImplementation> parse_implementation(const std::string& text) { return lookup(kImplementations, text); }
std::string attention_name(AttentionKind attention) { return name_of(kAttention, attention); }
std::optional<AttentionKind> parse_attention(const std::string& text) { return lookup(kAttention, text); }
std::string precision_name(Precision precision) { return name_of(kPrecision, precision); }
std::optional<Precision> parse_precision(const std::string& text) { return lookup(kPrecision, text); }
bool is_autocast(Precision precision) { return precision != Precision::None; }

std::string loss_name(LossKind kind) { return name_of(kLosses, kind); }
std::optional<LossKind> parse_loss(const std::string& text) { return lookup(kLosses, text); }
std::string optimizer_name(OptimizerKind kind) { return name_of(kOptimizers, kind); }
std::optional<OptimizerKind> parse_optimizer(const std::string& text) { return lookup(kOptimizers, text); }
std::string accounting_name(AccountingMode mode) { return name_of(kAccounting, mode); }
std::optional<AccountingMode> parse_accounting(const std::string& text) { return lookup(kAccounting, text); }
std::string checkpoint_name(CheckpointMode mode) { return name_of(kCheckpoint, mode); }
std::optional<CheckpointMode> parse_checkpoint(const std::string& text) { return lookup(kCheckpoint, text); }
std::string zero2_reduce_name(Zero2Reduce mode) { return name_of(kZero2Reduce, mode); }
std::optional<Zero2Reduce> parse_zero2_reduce(const std::string& text) { return lookup(kZero2Reduce, text); }
std::string zero3_init_name(Zero3Init mode) { return name_of(kZero3Init, mode); }
std::optional<Zero3Init> parse_zero3_init(const std::string& text) { return lookup(kZero3Init, text); }
std::string fsdp_units_name(FsdpUnits units) { return name_of(kFsdpUnits, units); }
std::optional<FsdpUnits> parse_fsdp_units(const std::string& text) { return lookup(kFsdpUnits, text); }
std::string process_group_name(ProcessGroupBackend backend) { return name_of(kProcessGroup, backend); }
std::optional<ProcessGroupBackend> parse_process_group(const std::string& text) { return lookup(kProcessGroup, text); }

namespace {
template <typename Enum, std::size_t N>
std::vector<std::string> names_of(const std::array<std::pair<Enum, const char*>, N>& table) {
  std::vector<std::string> names;
  for (const auto& entry : table) names.emplace_back(entry.second);
  return names;
}
}  // namespace

std::vector<std::string> loss_names() { return names_of(kLosses); }
std::vector<std::string> optimizer_names() { return names_of(kOptimizers); }
std::vector<std::string> checkpoint_names() { return names_of(kCheckpoint); }
std::vector<std::string> accounting_names() { return names_of(kAccounting); }
std::vector<std::string> zero2_reduce_names() { return names_of(kZero2Reduce); }
std::vector<std::string> zero3_init_names() { return names_of(kZero3Init); }
std::vector<std::string> fsdp_units_names() { return names_of(kFsdpUnits); }
std::vector<std::string> process_group_names() { return names_of(kProcessGroup); }
std::vector<std::string> implementation_names() { return names_of(kImplementations); }
std::vector<std::string> attention_names() { return names_of(kAttention); }
std::vector<std::string> precision_names() { return names_of(kPrecision); }
std::vector<std::string> gpu_arch_names() { return {"sm70", "sm80", "sm89", "sm90"}; }
std::vector<std::string> cublas_workspace_policy_names() { return {"per-thread", "autograd-only"}; }


Scenario builtin_default_scenario() {
  Scenario scenario;
  scenario.name = "DDP · 2 × H100 · 20 × Linear(2000) · Adam";
  return scenario;  // the defaults of the settings structs are this scenario
}

std::string describe_scenario(const Scenario& s) {
  const std::string world = s.cluster.world > 0 ? std::to_string(s.cluster.world) + " × " : "";  // 0: derived later
  std::string text = strategy_name(s.strategy.kind) + " · " + world + s.cluster.device +
                     " · " + s.model.spec + " · " + optimizer_name(s.training.optimizer) + " · batch " +
                     std::to_string(s.training.batch);
  if (s.training.dtype != Dtype::Fp32) text += " · " + dtype_name(s.training.dtype);
  if (s.training.precision != Precision::None) text += " · " + precision_name(s.training.precision);
  if (s.model.implementation != TransformerImplementation::Megatron) text += " · " + implementation_name(s.model.implementation);
  if (s.model.attention) text += " · " + attention_name(*s.model.attention) + " attention";
  return text;
}

namespace {

// Training settings that only some models accept; a language model's loss is decided by the model.
void check_model_training(ResolvedScenario& resolved) {
  auto& training = resolved.settings.training;
  Model& model = resolved.model;
  const std::string& spec = resolved.settings.model.spec;
  if (training.seq > 0 && model.seq == 0)
    throw ScenarioError("training.seq", "applies only to transformer models; '" + spec + "' has no sequence dimension");
  if (training.checkpoint != CheckpointMode::None && model.transformer_block_count() == 0)
    throw ScenarioError("training.checkpoint", "'" + spec + "' has no transformer blocks to recompute; activation "
                        "checkpointing applies to transformer models (hf:PATH, gpt2, llama-2-7b, ...)");
  if (training.checkpoint == CheckpointMode::Full && model.implementation == TransformerImplementation::Hf)
    model.notes.push_back("gradient checkpointing as model.gradient_checkpointing_enable() sets it up: each block under "
                          "reentrant torch.utils.checkpoint keeps only its arguments (its input until its backward; "
                          "keyword arguments such as Llama's mask, cos and sin until the loss is freed), use_cache off "
                          "(no KV cache copies); in backward each block runs again and then its own backward");
  if (model.language_model && training.loss == LossKind::Mse) {
    // GPT2LMHeadModel / LlamaForCausalLM compute cross-entropy over the vocabulary when given labels.
    training.loss = LossKind::CrossEntropy;
    model.notes.push_back("a causal language model trains with cross-entropy over the vocabulary at every position; "
                          "training.loss 'mse' was replaced by 'cross-entropy'");
  }
}

// Byte counts are int64 (Bytes): a scenario whose tensors could overflow one while they are summed is refused here,
// where its size is first known, instead of wrapping to a negative size deep in lowering. Estimated in double: the
// input, the target and every layer's input, output and saved tensors for the samples one device holds (dp: the
// global batch on device 0), and 32 bytes per parameter (parameters, gradients, two Adam states, bucket copies).
constexpr double kMaxScenarioBytes = 72057594037927936.0;  // 2^56 B = 64 PiB; 128 such sums still fit an int64

std::string bytes_estimate(double bytes) {
  char text[48];
  std::snprintf(text, sizeof text, "%.3g", bytes);
  return text;
}

void check_byte_counts(const ResolvedScenario& resolved) {
  const Model& model = resolved.model;
  const auto& s = resolved.settings;
  const double parameter_bytes = 32.0 * static_cast<double>(model.parameter_count());
  const std::string limit = "more than ShardScope counts (2^56 B = 64 PiB; byte counts are 64-bit)";
  if (parameter_bytes > kMaxScenarioBytes)
    throw ScenarioError("model.spec", "the model's " + std::to_string(model.parameter_count()) + " parameters would need about " +
                                          bytes_estimate(parameter_bytes) + " B with gradients and optimizer state, " + limit);
  const bool whole_batch_on_device0 = strategy_rules(s.strategy.kind).layout == RankLayout::DrivenByDevice0;
  const double samples = static_cast<double>(s.training.batch) * (whole_batch_on_device0 ? s.cluster.world : 1);
  double per_sample = static_cast<double>(model.input_numel) * static_cast<double>(model.input_element_bytes) +
                      static_cast<double>(model.output_numel) * 8.0;
  for (const auto& layer : model.layers)
    per_sample += static_cast<double>(layer.in_numel + layer.out_numel) * static_cast<double>(model.activation_element_bytes) +
                  static_cast<double>(layer.extra_saved_bytes_per_sample) + static_cast<double>(layer.attention_saved_bytes_per_sample);
  if (per_sample * samples > kMaxScenarioBytes)
    throw ScenarioError("training.batch", "a batch of " + std::to_string(s.training.batch) + (whole_batch_on_device0 ? " per device" : "") +
                                              " would need about " + bytes_estimate(per_sample * samples) +
                                              " B of activations on one device, " + limit + "; use a smaller batch or sequence");
}

}  // namespace


namespace {
// The simulation section: link presets, overrides and efficiencies, checked.
ClusterLinks resolve_links(const SimulationSettings& sim, const DevicePreset& device) {
  ClusterLinks links = default_cluster_links(device);
  auto preset = [](const std::string& name, const std::string& field) {
    auto found = find_link_preset(name);
    if (!found) throw ScenarioError(field, "unknown link preset '" + name + "'; one of " + link_preset_names());
    return *found;
  };
  if (!sim.intra_node_link.empty()) links.intra_node = preset(sim.intra_node_link, "simulation.intra_node_link");
  if (!sim.inter_node_link.empty()) links.inter_node = preset(sim.inter_node_link, "simulation.inter_node_link");
  if (sim.gpus_per_node > 0) links.gpus_per_node = sim.gpus_per_node;
  if (sim.link_gbps) links.intra_node.gbps = links.inter_node.gbps = *sim.link_gbps;
  if (sim.link_latency_us) links.intra_node.latency_us = links.inter_node.latency_us = *sim.link_latency_us;
  if (sim.inter_node_gbps) links.inter_node.gbps = *sim.inter_node_gbps;
  if (sim.inter_node_latency_us) links.inter_node.latency_us = *sim.inter_node_latency_us;
  return links;
}
}  // namespace

ResolvedScenario resolve_scenario(const Scenario& scenario) {
  check_field_ranges(scenario);  // every field's own range (scenario_fields.cpp); what follows checks combinations
  ResolvedScenario resolved;
  resolved.settings = scenario;
  ModelOptions options;
  if (scenario.model.inplace_relu) {
    options.inplace_relu_set = true;
    options.inplace_relu = *scenario.model.inplace_relu;
  }
  options.seq = scenario.training.seq;
  // fsdp's MixedPrecisionPolicy(param_dtype=bf16 / fp16) runs the forward in that dtype, as training.dtype does.
  const bool fsdp_16_bit = scenario.strategy.kind == StrategyKind::Fsdp && scenario.strategy.fsdp_param_dtype &&
                           is_mixed_precision(*scenario.strategy.fsdp_param_dtype);
  options.activation_element_bytes = is_mixed_precision(scenario.training.dtype) || fsdp_16_bit ? 2 : 4;
  options.checkpoint = scenario.training.checkpoint;
  options.implementation = scenario.model.implementation;
  options.attention = scenario.model.attention;
  // Megatron-LM pads the vocabulary to make_vocab_size_divisible_by × tp (megatron/training/tokenizer's
  // _vocab_size_with_padding) for its vocabulary-parallel layers. At tp 1 the config's vocab_size is kept, as
  // transformers builds the model, so that every single-device figure stays the one an HF model gives.
  if (scenario.strategy.tp > 1 && scenario.model.implementation == TransformerImplementation::Megatron)
    options.vocab_multiple = std::int64_t{scenario.model.make_vocab_size_divisible_by} * scenario.strategy.tp;
  const auto build_model = [&] {
    try {
      resolved.model = parse_model_spec(scenario.model.spec, options);
      // An MLP's activations follow its parameters' dtype only under FSDP2's cast: the root casts the input and
      // every Linear then computes in param_dtype (training.dtype's mixed precision keeps them fp32 here).
      if (fsdp_16_bit) resolved.model.activation_element_bytes = 2;
    } catch (const SequenceLengthError& error) {
      throw ScenarioError("training.seq", error.what());
    } catch (const ModelSpecError& error) {
      throw ScenarioError("model.spec", error.what());
    }
  };
  build_model();
  resolve_parallel_layout(resolved.settings, resolved.model);
  const auto& training = resolved.settings.training;
  const auto& cluster = resolved.settings.cluster;
  // Lowering costs about a microsecond per op and every parameter tensor brings several ops to its rank; past
  // this many parameter tensors over all ranks, transformer blocks get one flat tensor each (a note says so).
  constexpr std::int64_t kMaxPlanParameterTensors = 1 << 16;
  // Pipeline stages each hold 1/stages of the tensors.
  const bool group = resolved.model.transformer_block_count() > 0 &&
                     resolved.model.parameter_tensor_count() * cluster.world / resolved.settings.strategy.stages >
                         kMaxPlanParameterTensors;
  bool tied = false;
  for (const auto& layer : resolved.model.layers) tied |= layer.tied_layer >= 0;
  const bool untie = tied && is_pipeline(resolved.settings.strategy.kind) && resolved.settings.strategy.stages > 1;
  if (group || untie) {
    options.group_block_params = group;
    options.untie_embeddings = untie;
    build_model();
  }
  check_model_training(resolved);
  check_model_implementation(resolved);
  check_byte_counts(resolved);
  const auto& strategy = resolved.settings.strategy;

  const StrategyRules& rules = strategy_rules(strategy.kind);
  if (cluster.world < 1 || cluster.world > 65536)
    throw ScenarioError("cluster.world", "must be between 1 and 65536 (got " + std::to_string(cluster.world) + ")");
  const int tp = strategy.tp;
  if (rules.layout == RankLayout::OneDevice && strategy_world(resolved.settings) != 1)
    throw ScenarioError("cluster.world", "strategy '" + std::string(rules.name) + "' runs on one device" +
                                             (tp > 1 ? " per tensor-parallel rank; set world to tp (" + std::to_string(tp) + ")"
                                                     : std::string("; set world to 1")) +
                                             " (got " + std::to_string(cluster.world) + ")");
  check_tensor_parallel(resolved.settings, resolved.model);
  if (cluster.world > rules.max_world)
    throw ScenarioError("cluster.world", std::string(rules.max_world_reason) + " (got " + std::to_string(cluster.world) + ")");
  if (rules.check) rules.check(resolved.settings, resolved.model);
  if (training.no_grad && !rules.no_inference.empty())
    throw ScenarioError("training.no_grad", std::string(rules.no_inference));

  auto preset = find_device_preset(cluster.device);
  if (!preset) throw ScenarioError("cluster.device", "unknown device '" + cluster.device + "'; one of " + device_preset_names());
  if (cluster.capacity_gib) {
    preset->capacity = static_cast<Bytes>(*cluster.capacity_gib * static_cast<double>(kGiB));
  }
  resolved.device = *preset;
  resolved.gpu_arch = scenario.accounting.gpu_arch.empty() ? preset->gpu_arch : scenario.accounting.gpu_arch;
  if (!preset->cuda) {
    // PyTorch's CPU allocator hands out exactly the bytes asked for (c10/core/CPUAllocator.cpp): no caching
    // allocator to replay, no cuBLAS.
    if (scenario.accounting.mode != AccountingMode::Exact)
      throw ScenarioError("accounting.mode", "device CPU: PyTorch's CPU allocator has no caching allocator to replay; use exact");
    if (!scenario.accounting.gpu_arch.empty())
      throw ScenarioError("accounting.gpu_arch", "device CPU has no GPU architecture; leave gpu_arch unset");
  }
  const auto archs = gpu_arch_names();
  if (preset->cuda && std::find(archs.begin(), archs.end(), resolved.gpu_arch) == archs.end())
    throw ScenarioError("accounting.gpu_arch", "unknown architecture '" + resolved.gpu_arch + "'; one of sm70, sm80, sm89, sm90");

  resolved.links = resolve_links(resolved.settings.simulation, resolved.device);
  if (!cluster.device_profile.empty()) {
    try {
      resolved.profile = cached_device_profile(cluster.device_profile);
    } catch (const DeviceProfileError& error) {
      throw ScenarioError("cluster.device_profile", error.what());
    }
  }

  resolved.weight_decay = training.weight_decay.value_or(training.optimizer == OptimizerKind::AdamW ? 0.01 : 0.0);
  return resolved;
}

}  // namespace shardscope
