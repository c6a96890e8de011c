// check_cpu_support: dtype, layer kinds, then every op of every rank for a missing kernel or buffer.
#include "exec/cpu/cpu_support.h"

#include <string>

#include "exec/executor.h"

namespace shardscope::exec {

namespace {

// GPT-2 runs (gpt_block_kernels.h); Llama's RMSNorm, rotary positions and SwiGLU have no kernels yet.
void check_transformer(const Model& model) {
  const TransformerConfig& c = *model.transformer;
  if (c.family != TransformerFamily::Gpt2)
    throw UnsupportedPlanError("'" + model.spec + "' is a Llama-family model: the CPU backend executes GPT-2 models only "
                               "(RMSNorm, rotary positions and SwiGLU have no kernels yet)");
  if (c.activation_function != "gelu_new")
    throw UnsupportedPlanError("'" + model.spec + "' uses activation_function '" + c.activation_function +
                               "': the CPU backend runs GPT-2's \"gelu_new\" (the tanh approximation) only");
  if (2 * c.intermediate < 3 * c.hidden)
    throw UnsupportedPlanError("'" + model.spec + "' has n_inner " + std::to_string(c.intermediate) + " below 1.5 × n_embd: "
                               "the CPU backend's block backward needs the MLP's saved tensors as room for the Q, K, V gradient");
  for (const Layer& layer : model.layers)
    if (layer.kind == LayerKind::TransformerBlock && layer.params.size() != 12)
      throw UnsupportedPlanError("layer '" + layer.name + "' holds its parameters as one flat tensor (a plan this large "
                                 "groups them): too large to execute on the CPU");
}

// What is modelled for memory and simulate but has no kernels: refused by the option's name, never run otherwise.
void check_options(const ResolvedScenario& scenario) {
  const Model& model = scenario.model;
  if (model.transformer && model.implementation == TransformerImplementation::Hf)
    throw UnsupportedPlanError("--implementation hf (transformers' modules op by op) is modelled for memory and simulate; "
                               "the backends execute Megatron-LM's block: use --implementation megatron to run");
  if (model.transformer && model.attention != AttentionKind::Eager)
    throw UnsupportedPlanError("--attention " + attention_name(model.attention) + " is modelled for memory and simulate; "
                               "the backends' GPT-2 block computes eager attention: use --attention eager to run");
  if (is_autocast(scenario.settings.training.precision))
    throw UnsupportedPlanError("--precision " + precision_name(scenario.settings.training.precision) +
                               " (torch.autocast) is modelled for memory and simulate; the backends run fp32 or --dtype's "
                               "mixed precision: use --precision none to run");
}

void check_layers(const ResolvedScenario& scenario) {
  check_options(scenario);
  if (scenario.model.transformer) check_transformer(scenario.model);
  for (const Layer& layer : scenario.model.layers) {
    switch (layer.kind) {
      case LayerKind::Linear:
      case LayerKind::ReLU:
      case LayerKind::Flatten:
        continue;
      case LayerKind::Embedding:
      case LayerKind::TransformerBlock:
      case LayerKind::LayerNorm:
        if (scenario.model.transformer) continue;
        break;
      case LayerKind::Dropout:
        if (scenario.settings.training.no_grad) continue;  // identity under model.eval()
        throw UnsupportedPlanError("layer '" + layer.name + "' is Dropout in training mode: the CPU backend runs "
                                   "Dropout only in eval (--no-grad), where it is the identity");
      default:
        break;
    }
    throw UnsupportedPlanError("layer '" + layer.name + "' is " + layer_kind_name(layer.kind) +
                               ": the CPU backend runs Linear, ReLU, Flatten, Dropout in eval and GPT-2's layers");
  }
}

// A compute op without a kernel is fine only where there is no math: waits, copies a CPU run need not make,
// layers that are the identity (Dropout in eval).
bool needs_math(const ResolvedScenario& scenario, const Op& op) {
  switch (op.compute_kind) {
    case ComputeKind::Loss:
    case ComputeKind::LossBackward:
    case ComputeKind::Optimizer:
      return true;
    case ComputeKind::Copy:
      return false;
    case ComputeKind::Forward:
    case ComputeKind::Backward:
      break;
  }
  if (op.layer < 0 || op.layer >= static_cast<int>(scenario.model.layers.size())) return false;
  const LayerKind kind = scenario.model.layers[static_cast<std::size_t>(op.layer)].kind;
  return kind == LayerKind::Linear || kind == LayerKind::ReLU || kind == LayerKind::Embedding ||
         kind == LayerKind::TransformerBlock || kind == LayerKind::LayerNorm;
}

std::string where(const Program& program, std::size_t index) {
  return "rank " + std::to_string(program.rank) + " op " + std::to_string(index) + " '" + program.ops[index].label + "'";
}

void check_ops(const ResolvedScenario& scenario, const Plan& plan) {
  const std::string lowering = "the '" + plan.strategy + "' lowering is not annotated with kernels for executors yet";
  for (const Program& program : plan.programs) {
    for (std::size_t i = 0; i < program.ops.size(); ++i) {
      const Op& op = program.ops[i];
      if (op.kind == OpKind::Compute && op.kernel == Kernel::None && needs_math(scenario, op)) {
        std::string what = where(program, i) + " has no kernel";
        if (op.layer >= 0 && op.layer < static_cast<int>(scenario.model.layers.size())) {
          const Layer& layer = scenario.model.layers[static_cast<std::size_t>(op.layer)];
          what += " but computes layer '" + layer.name + "' (" + layer_kind_name(layer.kind) + ")";
        }
        throw UnsupportedPlanError(what + ": " + lowering);
      }
      const bool communication = op.kind == OpKind::Collective || op.kind == OpKind::Send || op.kind == OpKind::Recv;
      if (communication && op.payload > 0 && op.args.empty())
        throw UnsupportedPlanError(where(program, i) + " names no buffer: " + lowering);
    }
  }
}

}  // namespace

void check_cpu_support(const ResolvedScenario& scenario, const Plan& plan) {
  check_layers(scenario);
  check_ops(scenario, plan);
}

}  // namespace shardscope::exec
