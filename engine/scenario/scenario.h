// A scenario: model + training config + cluster + strategy + accounting, as read from JSON and CLI flags.
// Usage:
//   Scenario s = load_scenario_file("assets/scenarios/ddp.json");  // throws ScenarioError("training.batch: ...")
//   s.training.batch = 32;                                           // CLI flags override fields
//   ResolvedScenario r = resolve_scenario(s);                        // validates, builds the Model
#pragma once
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "cluster/device_preset.h"
#include "cluster/link_preset.h"
#include "core/dtype.h"
#include "model/model.h"

namespace shardscope {

enum class StrategyKind {
  Single, DataParallel, BalancedDataParallel, Ddp, Zero1, Zero2, Zero3, Fsdp,
  ModelParallel, PipelineGPipe, Pipeline1F1B
};
enum class LossKind { Mse, CrossEntropy };
enum class OptimizerKind { Sgd, Momentum, Adam, AdamW };
enum class AccountingMode { Exact, PyTorch18, PyTorch2 };
// zero2: how a reduce bucket is reduced (DeepSpeed's zero_optimization.reduce_scatter, true by default).
enum class Zero2Reduce { ReduceScatter, AllReduce };
// zero3: how the model comes to be sharded: created as shards (deepspeed.zero.Init, FSDP from the meta device), or
// built whole on the device and then sharded.
enum class Zero3Init { Partitioned, Materialize };
// fsdp: which modules fully_shard is called on (each call is one unit), besides the root: every layer with
// parameters, every transformer block, or the root alone.
enum class FsdpUnits { Layer, Block, Model };
// torch.distributed.init_process_group(backend=): the process group DDP and ZeroRedundancyOptimizer communicate
// through. The math is the same; what the caching allocator sees is not (FrameworkBehaviour::
// gloo_deferred_flat_free_min_bytes): ProcessGroupGloo records its side stream on the tensors it broadcasts.
enum class ProcessGroupBackend { Nccl, Gloo };

// torch.autocast around the forward: off (--dtype decides), or bf16 / fp16 (fp16 with GradScaler). Apart from
// --dtype's mixed precision (the ZeRO paper's: 16-bit parameters and fp32 master weights).
enum class Precision { None, AutocastBf16, AutocastFp16 };

struct ModelSettings {
  std::string spec = "mlp:20x2000";
  std::optional<bool> inplace_relu;  // unset: the model's own default
  TransformerImplementation implementation = TransformerImplementation::Megatron;  // GPT-2 / Llama
  std::optional<AttentionKind> attention;  // unset: the implementation's own (hf: sdpa, megatron: eager)
  int make_vocab_size_divisible_by = 128;  // with tp > 1: the vocabulary padded to a multiple of this × tp
};

struct TrainingSettings {
  int batch = 20;  // per rank (for dp / balanced-dp: per device, so the global batch is batch × world)
  LossKind loss = LossKind::Mse;
  OptimizerKind optimizer = OptimizerKind::Adam;
  std::optional<double> weight_decay;  // unset: 0, or 0.01 for AdamW (PyTorch defaults)
  Dtype dtype = Dtype::Fp32;  // fp32, or fp16 / bf16: mixed precision with fp32 master weights and optimizer state
  Precision precision = Precision::None;  // torch.autocast (fp32 parameters; see Precision)
  int seq = 0;                 // transformer sequence length; 0: the model's default (its max positions)
  CheckpointMode checkpoint = CheckpointMode::None;
  int steps = 1;
  bool no_grad = false;  // inference: model.eval() under torch.no_grad()
};

struct ClusterSettings {
  int world = 0;  // 0: the default, 2 devices (1 for strategy 'single')
  std::string device = "H100-80";
  std::optional<double> capacity_gib;  // overrides the preset's capacity (required sense for "custom")
  // A measured device profile (cluster/device_profile.h): a path, or the name of one under assets/devices. Empty:
  // the simulator uses the roofline and link constants (simulation section).
  std::string device_profile;
};

struct StrategySettings {
  StrategyKind kind = StrategyKind::Ddp;
  // DDP bucket_cap_mb (MiB, as PyTorch: bucket_cap_mb * 1024 * 1024 bytes). Unset: the argument left out, which
  // PyTorch 2.x treats apart from an explicit 25 (the rebuilt buckets' first limit is 1 MiB only then).
  std::optional<double> bucket_cap_mb;
  ProcessGroupBackend process_group = ProcessGroupBackend::Nccl;  // ddp, zero1, fsdp
  bool gradient_as_bucket_view = false;
  std::optional<int> gpu0_batch;  // balanced-dp only
  int stages = 0;         // pipeline / model-parallel stages; 0: derived (mp: world; pp: world / dp)
  int micro_batches = 1;  // pipeline micro-batches per step (the per-rank batch is split into them)
  int dp = 0;             // data-parallel replicas of a pipeline; 0: derived (world / stages)
  // pp-gpipe / pp-1f1b with dp > 1: 0 = gradients all-reduced in each stage's DP group; 1 = ZeRO-1 in that group
  // (Megatron-LM distributed optimizer: gradients reduce-scattered, optimizer state sharded, parameters all-gathered).
  int dp_zero_stage = 0;
  // Tensor parallelism (Megatron-LM tensor_model_parallel_size): each of the strategy's ranks becomes tp ranks that
  // split every MLP pair and transformer block column- then row-wise; world = tp × the strategy's ranks, tp fastest.
  int tp = 1;
  // Megatron-LM --sequence-parallel: the regions tensor parallelism replicates (LayerNorm, dropout) are split along
  // the sequence, with all-gather / reduce-scatter around each tensor-parallel region instead of all-reduces.
  bool sequence_parallel = false;
  // zero3: how many units ahead are all-gathered before they are needed (FSDP backward/forward prefetch;
  // 0 = none, 1 = FSDP's BACKWARD_PRE default, holding the current and the next unit).
  // fsdp: units all-gathered ahead in backward (1 = FSDP2's implicit prefetch; more: set_modules_to_backward_prefetch).
  int prefetch = 1;
  // zero2: DeepSpeed reduce_bucket_size as MiB of model-dtype gradients (unset: DeepSpeed's 5e8 elements).
  // zero3: the least size of a reduce-scatter buffer (unset: one unit's gradients, as FSDP).
  std::optional<double> reduce_bucket_mb;
  // zero3: consecutive layers are grouped into one gathered unit until they hold this many MiB of parameters
  // (FSDP size_based_auto_wrap_policy; unset: one unit per layer with parameters).
  // zero2: the chunk of the post-step parameter all-gather (DeepSpeed allgather_bucket_size; unset: 5e8 elements).
  std::optional<double> allgather_bucket_mb;
  // zero2: reduce-scatter (each rank receives only the reduced slices it owns) or all-reduce of each bucket.
  Zero2Reduce zero2_reduce = Zero2Reduce::ReduceScatter;
  // zero3: partitioned (only the rank's shards are ever allocated) or materialize (whole model first, then sharded).
  Zero3Init zero3_init = Zero3Init::Partitioned;
  // fsdp: the units (unset: block for a model with transformer blocks, else layer).
  std::optional<FsdpUnits> fsdp_units;
  // fsdp: fully_shard's reshard_after_forward as text: "" (None: True except for the root), "true", "false", or a
  // number of ranks k dividing the world (the unsharded parameters kept as 1/k after forward). Parsed and checked by
  // scenario/fsdp_settings.h.
  std::string reshard_after_forward;
  // fsdp: MixedPrecisionPolicy(param_dtype=, reduce_dtype=); unset = None (the parameters' fp32; the gradients').
  std::optional<Dtype> fsdp_param_dtype;
  std::optional<Dtype> fsdp_reduce_dtype;
};

struct AccountingSettings {
  AccountingMode mode = AccountingMode::PyTorch2;
  std::string gpu_arch;  // empty: from the device preset
  // PyTorch 2.x: which threads hold a cached cuBLAS workspace (cublas_workspace_policy_names()).
  std::string cublas_workspaces = "per-thread";
  // PyTorch 1.x: the uint8 tensor torch.autograd.profiler.record_function keeps while Optimizer.step runs
  // (sizeof(at::RecordFunction): 288 B in 1.13 on x86-64); 0 for 2.x, which keeps a ScriptObject. Host memory: it
  // counts on the CPU device only.
  int record_function_bytes = 0;
};

// Cost-model parameters of the simulator (sim/). Unset fields take the device's defaults (link_preset.h).
struct SimulationSettings {
  std::string intra_node_link;            // link preset within a node; empty: the device's default
  std::string inter_node_link;            // link preset between nodes; empty: the device's default
  int gpus_per_node = 0;                  // 0: the device's default
  std::optional<double> link_gbps;        // overrides both links' bandwidth, GB/s (10^9 B/s) per direction
  std::optional<double> link_latency_us;  // overrides both links' per-hop latency (alpha), µs
  std::optional<double> inter_node_gbps;        // overrides the inter-node bandwidth only (wins over link_gbps)
  std::optional<double> inter_node_latency_us;  // overrides the inter-node latency only (wins over link_latency_us)
  double compute_efficiency = 0.6;  // achieved fraction of the dtype's peak FLOP/s
  double memory_efficiency = 0.8;   // achieved fraction of the HBM bandwidth
  double kernel_overhead_us = 5;    // fixed launch cost added to every compute op that does work
};

struct Scenario {
  std::string name = "custom";
  std::string description;  // what the scenario shows and why, for people (the window shows it under the name)
  ModelSettings model;
  TrainingSettings training;
  ClusterSettings cluster;
  StrategySettings strategy;
  AccountingSettings accounting;
  SimulationSettings simulation;
};

// An error in a scenario: names the field ("training.batch") and the problem.
class ScenarioError : public std::runtime_error {
 public:
  ScenarioError(std::string field, const std::string& problem)
      : std::runtime_error(field + ": " + problem), field_(std::move(field)) {}
  const std::string& field() const { return field_; }

 private:
  std::string field_;
};

// Everything lowering needs, checked and derived.

struct DeviceProfile;  // cluster/device_profile.h: only the simulator and the reports read it

struct ResolvedScenario {
  Scenario settings;  // world, stages and dp filled in
  Model model;
  DevicePreset device;  // capacity already overridden
  std::string gpu_arch;
  double weight_decay = 0;
  ClusterLinks links;  // presets looked up, simulation.link_* / inter_node_* overrides applied
  std::shared_ptr<const DeviceProfile> profile;  // cluster.device_profile read; null without one
};

ResolvedScenario resolve_scenario(const Scenario& scenario);

// Parsing and naming of the enums ("ddp", "pytorch-2", ...). parse_* return nullopt on unknown text.
std::string strategy_name(StrategyKind kind);
std::optional<StrategyKind> parse_strategy(const std::string& text);
std::string loss_name(LossKind kind);
std::optional<LossKind> parse_loss(const std::string& text);
std::string optimizer_name(OptimizerKind kind);
std::optional<OptimizerKind> parse_optimizer(const std::string& text);
std::string accounting_name(AccountingMode mode);
std::string checkpoint_name(CheckpointMode mode);
std::optional<CheckpointMode> parse_checkpoint(const std::string& text);
std::optional<AccountingMode> parse_accounting(const std::string& text);
std::string zero2_reduce_name(Zero2Reduce mode);
std::optional<Zero2Reduce> parse_zero2_reduce(const std::string& text);
std::string zero3_init_name(Zero3Init mode);
std::optional<Zero3Init> parse_zero3_init(const std::string& text);
std::string fsdp_units_name(FsdpUnits units);
std::optional<FsdpUnits> parse_fsdp_units(const std::string& text);
std::string process_group_name(ProcessGroupBackend backend);
std::optional<ProcessGroupBackend> parse_process_group(const std::string& text);
std::string implementation_name(TransformerImplementation implementation);
std::optional<TransformerImplementation> parse_implementation(const std::string& text);
std::string attention_name(AttentionKind attention);
std::optional<AttentionKind> parse_attention(const std::string& text);
std::string precision_name(Precision precision);
std::optional<Precision> parse_precision(const std::string& text);
bool is_autocast(Precision precision);
std::string all_strategy_names();
// The names each enum accepts, in declaration order (the field table's choices).
std::vector<std::string> strategy_names();
std::vector<std::string> loss_names();
std::vector<std::string> optimizer_names();
std::vector<std::string> checkpoint_names();
std::vector<std::string> accounting_names();
std::vector<std::string> zero2_reduce_names();
std::vector<std::string> zero3_init_names();
std::vector<std::string> fsdp_units_names();
std::vector<std::string> process_group_names();
std::vector<std::string> implementation_names();
std::vector<std::string> attention_names();
std::vector<std::string> precision_names();
// The GPU architectures whose cuBLAS workspace sizes are modelled: sm70, sm80, sm89, sm90.
std::vector<std::string> gpu_arch_names();
std::vector<std::string> cublas_workspace_policy_names();  // "per-thread", "autograd-only"

// JSON (scenario_json.cpp). Unknown keys are errors, so that a typo never silently falls back to a default.
Scenario load_scenario_file(const std::string& path);
Scenario parse_scenario_json(const std::string& text, const std::string& source_name);
std::string scenario_to_json(const Scenario& scenario);

// The built-in scenario the run command starts with: 2 × H100, DDP, 20 × Linear(2000, 2000), batch 20, Adam.
Scenario builtin_default_scenario();
// A name that says what the settings are ("pp-1f1b · 3 × H100-80 · mlp:6x512:relu · adam · batch 64"), for a
// scenario whose settings were changed after its name was given (flags, the GUI form): the old name would mislead.
std::string describe_scenario(const Scenario& scenario);

}  // namespace shardscope
