// The combinations of --implementation, --attention and --precision (see implementation_rules.h).
#include "scenario/implementation_rules.h"

#include "scenario/strategy_rules.h"

namespace shardscope {

bool strategy_lowers_eager_pass(StrategyKind kind) {
  return kind == StrategyKind::Single || kind == StrategyKind::Ddp || kind == StrategyKind::Zero1 ||
         kind == StrategyKind::Zero2;
}

bool uses_eager_pass(const ResolvedScenario& resolved) {
  return resolved.model.implementation == TransformerImplementation::Hf || is_autocast(resolved.settings.training.precision);
}

namespace {

bool is_mlp(const Model& model) {
  for (const Layer& layer : model.layers)
    if (layer.kind != LayerKind::Linear && layer.kind != LayerKind::ReLU) return false;
  return !model.layers.empty();
}

}  // namespace

void check_model_implementation(const ResolvedScenario& resolved) {
  const Scenario& s = resolved.settings;
  const Model& model = resolved.model;
  const std::string& spec = s.model.spec;
  const bool transformer = model.transformer.has_value();
  if (!transformer && s.model.implementation != TransformerImplementation::Megatron)
    throw ScenarioError("model.implementation", "applies to GPT-2 / Llama models (gpt2, llama-2-7b, hf:PATH/config.json); '" +
                                                    spec + "' has no transformer blocks");
  if (!transformer && s.model.attention)
    throw ScenarioError("model.attention", "applies to GPT-2 / Llama models; '" + spec + "' has no attention");
  const bool hf = model.implementation == TransformerImplementation::Hf;
  const bool autocast = is_autocast(s.training.precision);
  if (autocast && s.training.dtype != Dtype::Fp32)
    throw ScenarioError("training.precision", "torch.autocast trains fp32 parameters; --dtype " + dtype_name(s.training.dtype) +
                                                  " is the ZeRO paper's 16-bit parameters with fp32 master weights: choose "
                                                  "one (--dtype fp32 with --precision, or --precision none)");
  if (autocast && transformer && !hf)
    throw ScenarioError("training.precision", "Megatron-LM's blocks do not run under torch.autocast (its mixed precision "
                                                  "is --dtype bf16 / fp16); use --implementation hf to predict an autocast HF model");
  if (autocast && !transformer && !is_mlp(model))
    throw ScenarioError("training.precision", "torch.autocast is modelled for MLPs (mlp:...) and GPT-2 / Llama with "
                                                  "--implementation hf; '" + spec + "' has other layers");
  if (hf || autocast) {
    if (!strategy_lowers_eager_pass(s.strategy.kind))
      throw ScenarioError(hf ? "model.implementation" : "training.precision",
                          std::string(hf ? "the hf implementation" : "torch.autocast") + " is modelled for single, ddp, "
                          "zero1 and zero2, whose ranks each train a replica; '" + strategy_name(s.strategy.kind) + "' is not yet");
    if (s.accounting.mode == AccountingMode::PyTorch18)
      throw ScenarioError("accounting.mode", std::string(hf ? "the hf implementation follows transformers 5 on PyTorch 2.x" :
                                                              "torch.autocast is modelled with PyTorch 2.x's rules") +
                                                 "; use --accounting pytorch-2 or exact");
  }
  if (hf)
    for (const Layer& layer : model.layers)
      if (layer.kind == LayerKind::TransformerBlock && layer.params.size() == 1)
        throw ScenarioError("model.implementation", "a plan this large holds each block's parameters as one flat tensor "
                                                    "(over 65,536 parameter tensors on all ranks), which transformers' "
                                                    "modules do not have; use fewer ranks or --implementation megatron");
  // transformers' gradient_checkpointing_enable(): whole blocks under reentrant checkpointing (training/eager/checkpoint.h)
  if (hf && s.training.checkpoint == CheckpointMode::Selective)
    throw ScenarioError("training.checkpoint", "transformers' gradient_checkpointing_enable() re-runs whole blocks: with "
                                               "--implementation hf use --checkpoint full (or none); selective is Megatron-LM's");
  if (transformer && model.attention != AttentionKind::Eager && s.training.checkpoint == CheckpointMode::Selective)
    throw ScenarioError("training.checkpoint", "selective recomputation re-runs the materialised attention core; with "
                                               "--attention " + attention_name(model.attention) + " there is none to recompute");
  if (transformer && model.attention == AttentionKind::Flash) {
    const bool sixteen_bit = autocast || (!hf && s.training.dtype != Dtype::Fp32) || (hf && s.training.dtype != Dtype::Fp32);
    if (!sixteen_bit)
      throw ScenarioError("model.attention", "the flash kernel takes fp16 / bf16 inputs only (PyTorch's SDPA raises "
                                             "\"No available kernel\" on fp32); use --attention sdpa (the memory-efficient "
                                             "kernel in fp32) or --precision autocast-bf16");
  }
}

}  // namespace shardscope
