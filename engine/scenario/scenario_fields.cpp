// The field table: one row per scenario field. A new field is a member in scenario.h and a row here; the JSON
// reader and writer, the CLI flags and the GUI form pick it up from this table.
//
// Bounds. Every Number field has a min and a max and must be finite (set_field), so no input reaches the cost model
// or a byte count as inf, NaN or an overflowing product; every Integer field is at most its max (2^31 − 1 without
// one). The bounds are wide enough for any real setting and narrow enough that what is computed from them fits:
//   batch ≤ 2^24, seq ≤ 2^22 (the longest max_position_embeddings read), world, stages, dp, micro-batches ≤ 65536,
//   gpus_per_node ≤ 1024; capacity ≤ 65536 GiB (64 TiB: today's largest GPU holds under 200 GiB, and what-if
//   runs such as a model too big for any host still fit); bucket sizes ≤ 10^6 MiB; weight decay ≤ 100;
//   link bandwidth in [0.001, 10^9] GB/s (1 MB/s to "free", as tests that ignore messages use), latencies and
//   kernel overhead ≤ 10^6 µs (1 s);
//   compute / memory efficiency in [0.001, 1] (0.1 % of peak at least).
// Simulated times that still overflow (an absurd model on a slow link) saturate at kMaxTimeNs (core/units.h).
#include "scenario/scenario_fields.h"

#include <array>

#include "cluster/device_preset.h"
#include "cluster/device_profile.h"
#include "cluster/link_preset.h"
#include "scenario/field_access.h"

// Each row names only the members it sets, the others keep their defaults on purpose; GCC 12 still warns about the
// rest when a designated list is a function argument.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace shardscope {

namespace {

using field_access::with_member;
using field_access::with_zero_unset_member;
using field_access::with_empty_unset_member;
using K = FieldKind;
using S = Scenario;

std::vector<std::string> device_names() {
  std::vector<std::string> names;
  for (const auto& preset : device_presets()) names.push_back(preset.name);
  return names;
}
std::vector<std::string> link_names() {
  std::vector<std::string> names;
  for (const auto& preset : link_presets()) names.push_back(preset.name);
  return names;
}
std::vector<std::string> model_suggestions() {
  return {"mlp:20x2000", "mlp:8x512:relu", "vgg16", "gpt2-tiny", "gpt2", "gpt2-medium", "gpt2-large", "gpt2-xl",
          "llama-2-7b", "llama-2-13b", "params:7.5e9"};
}

const std::vector<ScenarioField>& table() {
  static const std::vector<ScenarioField> rows = {
      with_member<&S::name>({.key = "name", .label = "Name", .kind = K::Text,
                             .help = "The scenario's title in reports, traces and the window",
                             .always_written = true}),
      with_member<&S::description>({.key = "description", .label = "Description", .kind = K::Text,
                                    .help = "What the scenario shows and why, in a sentence or two for a student"}),

      with_member<&S::model, &ModelSettings::spec>({
          .key = "model.spec", .flag = "--model", .label = "Model", .kind = K::Text,
          .help = "mlp:LAYERSxWIDTH[:relu] (e.g. mlp:20x2000), vgg16, params:N[:BLOCKS] (e.g. params:7.5e9), "
                  "hf:PATH/config.json (GPT-2 or Llama), or gpt2-tiny | gpt2 | gpt2-medium | gpt2-large | gpt2-xl | llama-2-7b | llama-2-13b",
          .framework = "the nn.Module: N × nn.Linear, torchvision vgg16, transformers GPT2LMHeadModel / LlamaForCausalLM",
          .always_written = true, .choices = model_suggestions}),
      with_member<&S::model, &ModelSettings::inplace_relu>({
          .key = "model.inplace_relu", .flag = "--inplace-relu", .label = "In-place ReLU", .kind = K::Flag,
          .help = "ReLU(inplace=True): the activation overwrites its input instead of saving a second tensor",
          .framework = "nn.ReLU(inplace=True)", .unset_means = "mlp off, vgg16 on (as torchvision)",
          .negative_flag = "--no-inplace-relu"}),
      // megatron stays the default: it is the block both executors run, so memory, simulate and run describe one
      // program, and every figure made before hf existed keeps its meaning; hf is the one to predict an HF script.
      with_member<&S::model, &ModelSettings::implementation>({
          .key = "model.implementation", .flag = "--implementation", .label = "Implementation", .kind = K::Choice,
          .help = "GPT-2 / Llama blocks as Megatron-LM's layer (megatron: Korthikanti et al.'s count, the block `run` "
                  "executes; the default) or as transformers' modules run op by op (hf: every tensor GPT2Attention, "
                  "GPT2MLP, Conv1D, LlamaAttention, LlamaMLP, LlamaRMSNorm and the shifted-label loss keep, as an HF "
                  "script runs; memory and simulate only)",
          .framework = "Megatron-LM ParallelTransformerLayer / transformers GPT2LMHeadModel, LlamaForCausalLM",
          .choices = implementation_names}),
      with_member<&S::model, &ModelSettings::attention>({
          .key = "model.attention", .flag = "--attention", .label = "Attention", .kind = K::Choice,
          .help = "eager: the s×s scores and softmax output are kept for backward; sdpa: F.scaled_dot_product_attention "
                  "picks a fused kernel (memory-efficient in fp32, flash / cuDNN in 16-bit) that keeps a logsumexp "
                  "instead; flash: the flash kernel forced (16-bit inputs only)",
          .framework = "attn_implementation=\"eager\" | \"sdpa\"; sdpa_kernel(SDPBackend.FLASH_ATTENTION)",
          .unset_means = "hf: sdpa (what transformers picks); megatron: eager", .choices = attention_names}),
      with_member<&S::model, &ModelSettings::make_vocab_size_divisible_by>({
          .key = "model.make_vocab_size_divisible_by", .flag = "--make-vocab-size-divisible-by",
          .label = "Vocabulary multiple", .kind = K::Integer,
          .help = "With tp > 1 (megatron): the vocabulary is padded to a multiple of this × tp, as Megatron-LM pads "
                  "it so that its vocabulary-parallel embedding and LM head split evenly (GPT-2's 50257 becomes 50432 "
                  "at tp 2; 1: the least multiple of tp)",
          .framework = "Megatron-LM --make-vocab-size-divisible-by (_vocab_size_with_padding)", .min = 1, .max = 4096}),

      with_member<&S::training, &TrainingSettings::batch>({
          .key = "training.batch", .flag = "--batch", .label = "Batch", .kind = K::Integer,
          .help = "Samples per rank and step (dp / balanced-dp: per device; pipelines: per data-parallel replica)",
          .framework = "DataLoader(batch_size=)", .min = 1, .max = 1 << 24, .always_written = true}),
      with_member<&S::training, &TrainingSettings::loss>({
          .key = "training.loss", .flag = "--loss", .label = "Loss", .kind = K::Choice,
          .help = "Loss function (language models always train with cross-entropy)",
          .framework = "nn.MSELoss / nn.CrossEntropyLoss", .always_written = true, .choices = loss_names}),
      with_member<&S::training, &TrainingSettings::optimizer>({
          .key = "training.optimizer", .flag = "--optimizer", .label = "Optimizer", .kind = K::Choice,
          .help = "Optimizer; its state is created lazily at the first step (Adam: exp_avg, exp_avg_sq)",
          .framework = "torch.optim.SGD / SGD(momentum=0.9) / Adam / AdamW", .always_written = true,
          .choices = optimizer_names}),
      with_member<&S::training, &TrainingSettings::weight_decay>({
          .key = "training.weight_decay", .flag = "--weight-decay", .label = "Weight decay", .kind = K::Number,
          .help = "Weight decay of the optimizer", .framework = "weight_decay=",
          .unset_means = "0, AdamW 0.01 (PyTorch's defaults)", .min = 0, .max = 100}),
      with_member<&S::training, &TrainingSettings::dtype>({
          .key = "training.dtype", .flag = "--dtype", .label = "dtype", .kind = K::Choice,
          .help = "fp32, or fp16 / bf16 mixed precision as the ZeRO paper counts it: 16-bit parameters and "
                  "gradients, fp32 master weights and optimizer state (2 + 2 + 12 B per parameter with Adam); not "
                  "torch.autocast, which is --precision",
          .framework = "model.half() + fp32 master weights: DeepSpeed fp16 / bf16, Megatron-LM --bf16", .always_written = true,
          .choices = dtype_names}),
      with_member<&S::training, &TrainingSettings::precision>({
          .key = "training.precision", .flag = "--precision", .label = "Autocast", .kind = K::Choice,
          .help = "torch.autocast around the forward: fp32 parameters and optimizer state, 16-bit copies of the "
                  "weights made each forward (freed when the region exits unless saved), activations saved in 16-bit "
                  "where the op runs in 16-bit and in fp32 where autocast keeps fp32 (softmax, layer_norm, losses); "
                  "autocast-fp16 scales the loss with GradScaler. none: no autocast. Apart from --dtype (the ZeRO "
                  "paper's 16-bit parameters)",
          .framework = "torch.autocast(\"cuda\", dtype=torch.bfloat16 | torch.float16), torch.amp.GradScaler",
          .choices = precision_names}),
      with_zero_unset_member<&S::training, &TrainingSettings::seq>({
          .key = "training.seq", .flag = "--seq", .label = "Sequence length", .kind = K::Integer,
          .help = "Transformer sequence length", .framework = "n_positions / max_position_embeddings (the input length)",
          .unset_means = "the model's max positions", .min = 0, .max = 1 << 22}),
      with_member<&S::training, &TrainingSettings::checkpoint>({
          .key = "training.checkpoint", .flag = "--checkpoint", .label = "Checkpointing", .kind = K::Choice,
          .help = "Activation recomputation for transformers: none, selective (attention core recomputed), full "
                  "(only each block's input kept; megatron: its backward re-runs it up to the MLP's output projection, "
                  "where non-reentrant checkpointing stops; hf: transformers' gradient_checkpointing_enable(), reentrant "
                  "checkpointing that re-runs the whole block, then its backward, and turns use_cache off)",
          .framework = "Megatron-LM --recompute-granularity selective | full; "
                       "torch.utils.checkpoint(block, use_reentrant=False) per block; hf: "
                       "model.gradient_checkpointing_enable() (use_reentrant=True)",
          .always_written = true, .choices = checkpoint_names}),
      with_member<&S::training, &TrainingSettings::steps>({
          .key = "training.steps", .flag = "--steps", .label = "Steps", .kind = K::Integer,
          .help = "Training steps (optimizer state appears at the first, DDP rebuilds its buckets at the second)",
          .min = 1, .max = 1000, .always_written = true}),
      with_member<&S::training, &TrainingSettings::no_grad>({
          .key = "training.no_grad", .flag = "--no-grad", .label = "Inference (no_grad)", .kind = K::Flag,
          .help = "Inference: no saved activations, gradients or optimizer",
          .framework = "model.eval() under torch.no_grad()", .always_written = true}),

      with_zero_unset_member<&S::cluster, &ClusterSettings::world>({
          .key = "cluster.world", .flag = "--world", .label = "World", .kind = K::Integer,
          .help = "Ranks, one device each", .framework = "WORLD_SIZE",
          .unset_means = "2 (single: 1; pipelines: stages × dp)", .min = 1, .max = 65536}),
      with_member<&S::cluster, &ClusterSettings::device>({
          .key = "cluster.device", .flag = "--device", .label = "Device", .kind = K::Text,
          .help = "Device preset (capacity, FLOP/s, HBM bandwidth, links)", .always_written = true,
          .choices = device_names}),
      with_member<&S::cluster, &ClusterSettings::capacity_gib>({
          .key = "cluster.capacity_gib", .flag = "--capacity-gib", .label = "Capacity (GiB)", .kind = K::Number,
          .help = "Device memory in GiB", .framework = "torch.cuda.get_device_properties(d).total_memory",
          .unset_means = "the preset's capacity", .min = 0, .max = 65536, .min_exclusive = true}),
      with_empty_unset_member<&S::cluster, &ClusterSettings::device_profile>({
          .key = "cluster.device_profile", .flag = "--device-profile", .label = "Device profile", .kind = K::Text,
          .help = "A measured device profile (shardscope-cli calibrate, python -m shardscope.calibrate): the simulator "
                  "interpolates its kernel and collective times instead of the roofline; a path, or a profile shipped "
                  "under assets/devices (h200-torch-2.11: PyTorch 2.11 on an H200; h200-shardscope: our CUDA executor's "
                  "kernels on an H200)",
          .unset_means = "the roofline: the device preset's peaks × the simulation efficiencies",
          .choices = shipped_device_profiles}),

      with_member<&S::strategy, &StrategySettings::kind>({
          .key = "strategy.name", .flag = "--strategy", .label = "Strategy", .kind = K::Choice,
          .help = "How the ranks share the work (shardscope-cli strategies lists them)", .always_written = true,
          .choices = strategy_names}),
      with_member<&S::strategy, &StrategySettings::bucket_cap_mb>({
          .key = "strategy.bucket_cap_mb", .flag = "--bucket-cap-mb", .label = "Bucket cap (MiB)", .kind = K::Number,
          .help = "Gradients per DDP all-reduce bucket, MiB. Given, it is also the first bucket's limit when DDP "
                  "rebuilds its buckets at the second forward (PyTorch 2.x), as passing bucket_cap_mb does",
          .framework = "DistributedDataParallel(bucket_cap_mb=)",
          .unset_means = "left out, as PyTorch's default: 25 MiB, and 1 MiB for the first rebuilt bucket "
                         "(dist._DEFAULT_FIRST_BUCKET_BYTES)",
          .min = 0, .max = 1e6, .min_exclusive = true, .always_written = true}),
      with_member<&S::strategy, &StrategySettings::gradient_as_bucket_view>({
          .key = "strategy.gradient_as_bucket_view", .flag = "--gradient-as-bucket-view",
          .label = "gradient_as_bucket_view", .kind = K::Flag,
          .help = "Gradients are views into the DDP buckets: no separate .grad copies",
          .framework = "DistributedDataParallel(gradient_as_bucket_view=True)", .always_written = true,
          .negative_flag = "--no-gradient-as-bucket-view"}),
      with_member<&S::strategy, &StrategySettings::process_group>({
          .key = "strategy.process_group", .flag = "--process-group", .label = "Process group", .kind = K::Choice,
          .help = "Backend of the process group DDP / ZeRO-1 / FSDP communicate through (default nccl, a GPU per rank; "
                  "gloo is what ranks sharing a GPU use). Same training; under gloo a broadcast tensor's cached block "
                  "returns to the allocator late, so DDP's construction reserves more (pytorch-2 accounting), and "
                  "fsdp's all-gather and reduce-scatter allocate a device temporary of their output / input size",
          .framework = "torch.distributed.init_process_group(backend='nccl' | 'gloo')", .choices = process_group_names}),
      with_member<&S::strategy, &StrategySettings::gpu0_batch>({
          .key = "strategy.gpu0_batch", .flag = "--gpu0-batch", .label = "Device-0 batch", .kind = K::Integer,
          .help = "Samples on device 0, which also gathers the outputs; the rest is split over the other devices",
          .framework = "BalancedDataParallel(gpu0_bsz=)", .unset_means = "none (balanced-dp needs it)", .min = 0}),
      with_zero_unset_member<&S::strategy, &StrategySettings::stages>({
          .key = "strategy.stages", .flag = "--stages", .label = "Stages", .kind = K::Integer,
          .help = "Pipeline stages (consecutive layers per device)", .framework = "Megatron-LM pipeline_model_parallel_size",
          .unset_means = "world / dp (mp: world)", .min = 0, .max = 65536, .inert_value = 1}),
      with_member<&S::strategy, &StrategySettings::micro_batches>({
          .key = "strategy.micro_batches", .flag = "--micro-batches", .label = "Micro-batches", .kind = K::Integer,
          .help = "Micro-batches per step; the batch is split into them",
          .framework = "GPipe chunks / Megatron-LM num_microbatches", .min = 1, .max = 65536}),
      with_zero_unset_member<&S::strategy, &StrategySettings::dp>({
          .key = "strategy.dp", .flag = "--dp", .label = "DP replicas", .kind = K::Integer,
          .help = "Data-parallel replicas of the pipeline (world = stages × dp)",
          .framework = "Megatron-LM data_parallel_size", .unset_means = "world / stages", .min = 0, .max = 65536,
          .inert_value = 1}),
      with_member<&S::strategy, &StrategySettings::dp_zero_stage>({
          .key = "strategy.dp_zero_stage", .flag = "--dp-zero", .label = "ZeRO-1 in DP groups", .kind = K::Integer,
          .help = "With dp > 1: 0 = gradients all-reduced in each stage's DP group, 1 = ZeRO-1 there (gradients "
                  "reduce-scattered, optimizer state sharded)",
          .framework = "Megatron-LM --use-distributed-optimizer", .min = 0, .max = 1}),
      with_member<&S::strategy, &StrategySettings::tp>({
          .key = "strategy.tp", .flag = "--tp", .label = "Tensor parallel", .kind = K::Integer,
          .help = "Tensor-parallel ranks per replica / stage: MLP pairs and transformer blocks split column- then "
                  "row-wise (QKV and fc1 by columns, attention heads, the output and fc2 by rows; the embedding and "
                  "LM head by vocabulary), an all-reduce after each row-parallel layer in forward and before each "
                  "column-parallel one in backward; world = tp × the strategy's ranks, tp fastest",
          .framework = "Megatron-LM tensor_model_parallel_size (ColumnParallelLinear, RowParallelLinear, "
                       "VocabParallelEmbedding)",
          .min = 1, .max = 65536, .inert_value = 1}),
      with_member<&S::strategy, &StrategySettings::sequence_parallel>({
          .key = "strategy.sequence_parallel", .flag = "--sequence-parallel", .label = "Sequence parallel",
          .kind = K::Flag,
          .help = "With tp > 1: LayerNorm and dropout regions split along the sequence over the tensor-parallel "
                  "ranks (all-gather before and reduce-scatter after each tensor-parallel region instead of the "
                  "all-reduces), so every activation is 1/tp per rank (Korthikanti et al. 2022); an MLP's batch "
                  "rows split so outside its Linear pairs",
          .framework = "Megatron-LM --sequence-parallel", .negative_flag = "--no-sequence-parallel"}),
      with_member<&S::strategy, &StrategySettings::prefetch>({
          .key = "strategy.prefetch", .flag = "--prefetch", .label = "Prefetch (units)", .kind = K::Integer,
          .help = "Units all-gathered ahead of use: zero3 0 = none, 1 holds the current and the next unit; fsdp: in "
                  "backward, at least 1 (FSDP2's implicit prefetch of the previous unit)",
          .framework = "FSDP2: implicit backward prefetch of 1 unit, more with module.set_modules_to_backward_prefetch(); "
                       "FSDP1 backward_prefetch=BACKWARD_PRE; DeepSpeed stage3_prefetch_bucket_size",
          .min = 0,
          .max = 8}),
      with_member<&S::strategy, &StrategySettings::reduce_bucket_mb>({
          .key = "strategy.reduce_bucket_mb", .flag = "--reduce-bucket-mb", .label = "Reduce bucket (MiB)",
          .kind = K::Number,
          .help = "zero2: gradients per reduce bucket, MiB; zero3: the least reduce-scatter buffer",
          .framework = "DeepSpeed reduce_bucket_size",
          .unset_means = "zero2: DeepSpeed's 5e8 elements; zero3: one unit's gradients, as FSDP", .min = 0,
          .max = 1e6, .min_exclusive = true}),
      with_member<&S::strategy, &StrategySettings::allgather_bucket_mb>({
          .key = "strategy.allgather_bucket_mb", .flag = "--allgather-bucket-mb", .label = "All-gather bucket (MiB)",
          .kind = K::Number,
          .help = "zero3: MiB of parameters per gathered unit; zero2: the post-step all-gather chunk",
          .framework = "FSDP size_based_auto_wrap_policy / DeepSpeed allgather_bucket_size",
          .unset_means = "zero3: one unit per layer; zero2: DeepSpeed's 5e8 elements", .min = 0,
          .max = 1e6, .min_exclusive = true}),
      with_member<&S::strategy, &StrategySettings::zero2_reduce>({
          .key = "strategy.zero2_reduce", .flag = "--zero2-reduce", .label = "ZeRO-2 reduction", .kind = K::Choice,
          .help = "How each gradient bucket is reduced: reduce-scatter (each rank receives only the reduced slices it "
                  "owns, half an all-reduce's traffic; DeepSpeed's reduce_scatter: true, its default) or all-reduce "
                  "(reduce_scatter: false)",
          .framework = "DeepSpeed zero_optimization.reduce_scatter", .choices = zero2_reduce_names}),
      with_member<&S::strategy, &StrategySettings::zero3_init>({
          .key = "strategy.zero3_init", .flag = "--zero3-init", .label = "ZeRO-3 init", .kind = K::Choice,
          .help = "partitioned: each rank creates only its own shards (deepspeed.zero.Init; FSDP with a meta-device "
                  "model and param_init_fn); materialize: build on the device, then shard (the whole model resident "
                  "at creation)",
          .framework = "deepspeed.zero.Init / FSDP(module on device 'meta', param_init_fn=)",
          .choices = zero3_init_names}),
      with_member<&S::strategy, &StrategySettings::fsdp_units>({
          .key = "strategy.fsdp_units", .flag = "--fsdp-units", .label = "FSDP units", .kind = K::Choice,
          .help = "Which modules are wrapped, each one unit all-gathered and resharded together: layer (every layer "
                  "with parameters), block (every transformer block), model (the root only); the root is always "
                  "wrapped last and takes what is left",
          .framework = "fully_shard(module) on each layer / each transformer block, then fully_shard(model)",
          .unset_means = "block for a transformer, else layer", .choices = fsdp_units_names}),
      with_empty_unset_member<&S::strategy, &StrategySettings::reshard_after_forward>({
          .key = "strategy.reshard_after_forward", .flag = "--reshard-after-forward", .label = "Reshard after forward",
          .kind = K::Text,
          .help = "true: free each unit's unsharded parameters after its forward and all-gather them again for its "
                  "backward; false: keep them from forward to backward (one all-gather a step, more memory); an int k "
                  "dividing the world: keep a 1/k slice and re-gather within groups of k ranks",
          .framework = "fully_shard(reshard_after_forward=True | False | k)",
          // Free text (true, false or a number), typed in the window's form: no suggestion list, which would make it
          // a closed combo there.
          .unset_means = "None: true except for the root unit"}),
      with_member<&S::strategy, &StrategySettings::fsdp_param_dtype>({
          .key = "strategy.fsdp_param_dtype", .flag = "--fsdp-param-dtype", .label = "FSDP param dtype",
          .kind = K::Choice,
          .help = "The dtype the all-gathered parameters, activations and unsharded gradients take; the sharded "
                  "parameters and the optimizer stay fp32",
          .framework = "fully_shard(mp_policy=MixedPrecisionPolicy(param_dtype=))",
          .unset_means = "None: fp32, as the parameters", .choices = dtype_names}),
      with_member<&S::strategy, &StrategySettings::fsdp_reduce_dtype>({
          .key = "strategy.fsdp_reduce_dtype", .flag = "--fsdp-reduce-dtype", .label = "FSDP reduce dtype",
          .kind = K::Choice,
          .help = "The dtype gradients are reduce-scattered in (cast back to fp32 for the optimizer when it differs)",
          .framework = "fully_shard(mp_policy=MixedPrecisionPolicy(reduce_dtype=))",
          .unset_means = "None: the gradients' dtype (the param dtype)", .choices = dtype_names}),

      with_member<&S::accounting, &AccountingSettings::mode>({
          .key = "accounting.mode", .flag = "--accounting", .label = "Accounting", .kind = K::Choice,
          .help = "exact tensor bytes, or what torch.cuda.memory_allocated() prints under PyTorch 1.8 or 2.x rules",
          .framework = "torch.cuda.memory_allocated / max_memory_allocated / memory_reserved",
          .always_written = true, .choices = accounting_names}),
      with_empty_unset_member<&S::accounting, &AccountingSettings::gpu_arch>({
          .key = "accounting.gpu_arch", .flag = "--gpu-arch", .label = "GPU architecture", .kind = K::Text,
          .help = "Compute capability: sets PyTorch 2's cuBLAS workspace size",
          .framework = "torch.cuda.get_device_capability()", .unset_means = "from the device preset",
          .choices = gpu_arch_names}),
      with_member<&S::accounting, &AccountingSettings::cublas_workspaces>({
          .key = "accounting.cublas_workspaces", .flag = "--cublas-workspaces", .label = "cuBLAS workspaces",
          .kind = K::Choice,
          .help = "PyTorch 2.x: per-thread = every thread that runs a GEMM keeps one cached workspace (forward's main "
                  "thread and the autograd thread); autograd-only = only the autograd thread's (the open question in "
                  "GPU_CHECKLIST.md; per-thread follows CublasHandlePool.cpp)",
          .framework = "at::cuda::getCurrentCUDABlasHandle() workspaces, CUBLAS_WORKSPACE_CONFIG",
          .choices = cublas_workspace_policy_names}),
      with_member<&S::accounting, &AccountingSettings::record_function_bytes>({
          .key = "accounting.record_function_bytes", .flag = "--record-function-bytes", .label = "record_function tensor",
          .kind = K::Integer,
          .help = "PyTorch 1.x (device CPU): bytes of the uint8 handle tensor record_function keeps while Optimizer.step "
                  "runs (1.13 on x86-64: 288, what torch.ops.profiler._record_function_enter returns); 2.x: 0",
          .framework = "torch.autograd.profiler.record_function (Optimizer.step's profiling wrapper)", .min = 0,
          .max = 1 << 20}),

      with_empty_unset_member<&S::simulation, &SimulationSettings::intra_node_link>({
          .key = "simulation.intra_node_link", .flag = "--intra-node-link", .label = "Intra-node link", .kind = K::Text,
          .help = "Link preset within a node", .unset_means = "the device's", .choices = link_names}),
      with_empty_unset_member<&S::simulation, &SimulationSettings::inter_node_link>({
          .key = "simulation.inter_node_link", .flag = "--inter-node-link", .label = "Inter-node link", .kind = K::Text,
          .help = "Link preset between nodes", .unset_means = "the device's", .choices = link_names}),
      with_zero_unset_member<&S::simulation, &SimulationSettings::gpus_per_node>({
          .key = "simulation.gpus_per_node", .flag = "--gpus-per-node", .label = "GPUs per node", .kind = K::Integer,
          .help = "GPUs per node: collectives spanning nodes run at the inter-node link's speed",
          .framework = "LOCAL_WORLD_SIZE", .unset_means = "8 (RTX-4090: 4)", .min = 1, .max = 1024}),
      with_member<&S::simulation, &SimulationSettings::link_gbps>({
          .key = "simulation.link_gbps", .flag = "--link-gbps", .label = "Link GB/s", .kind = K::Number,
          .help = "Bandwidth of both links, GB/s per direction (as nccl-tests' busbw)",
          .unset_means = "the link presets'", .min = 1e-3, .max = 1e9}),
      with_member<&S::simulation, &SimulationSettings::link_latency_us>({
          .key = "simulation.link_latency_us", .flag = "--link-latency-us", .label = "Link latency (µs)",
          .kind = K::Number, .help = "Latency (alpha) per hop of both links, µs", .unset_means = "the link presets'",
          .min = 0, .max = 1e6}),
      with_member<&S::simulation, &SimulationSettings::inter_node_gbps>({
          .key = "simulation.inter_node_gbps", .flag = "--inter-node-gbps", .label = "Inter-node GB/s",
          .kind = K::Number, .help = "Inter-node bandwidth only, GB/s per direction (wins over link_gbps)",
          .unset_means = "link_gbps, else the preset's", .min = 1e-3, .max = 1e9}),
      with_member<&S::simulation, &SimulationSettings::inter_node_latency_us>({
          .key = "simulation.inter_node_latency_us", .flag = "--inter-node-latency-us",
          .label = "Inter-node latency (µs)", .kind = K::Number,
          .help = "Inter-node latency only, µs (wins over link_latency_us)",
          .unset_means = "link_latency_us, else the preset's", .min = 0, .max = 1e6}),
      with_member<&S::simulation, &SimulationSettings::compute_efficiency>({
          .key = "simulation.compute_efficiency", .flag = "--compute-efficiency", .label = "Compute efficiency",
          .kind = K::Number, .help = "Achieved fraction of the dtype's peak FLOP/s", .min = 1e-3, .max = 1,
          .always_written = true}),
      with_member<&S::simulation, &SimulationSettings::memory_efficiency>({
          .key = "simulation.memory_efficiency", .flag = "--memory-efficiency", .label = "Memory efficiency",
          .kind = K::Number, .help = "Achieved fraction of the HBM bandwidth", .min = 1e-3, .max = 1,
          .always_written = true}),
      with_member<&S::simulation, &SimulationSettings::kernel_overhead_us>({
          .key = "simulation.kernel_overhead_us", .flag = "--kernel-overhead-us", .label = "Kernel overhead (µs)",
          .kind = K::Number, .help = "Launch cost added to every compute op that does work, µs", .min = 0,
          .max = 1e6, .always_written = true}),
  };
  return rows;
}

}  // namespace

std::span<const ScenarioField> scenario_fields() { return table(); }

}  // namespace shardscope
