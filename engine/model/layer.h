// A layer of a sequential model as lowering needs it: parameters, shapes per sample, what autograd saves, FLOPs.
// Independent of strategies and of any framework; sizes are element counts per sample unless named otherwise.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace shardscope {

// ParameterBlock: parameters without activations or FLOPs (the `params:N` model of model states only).
enum class LayerKind {
  Linear, Conv2d, ReLU, MaxPool2d, AdaptiveAvgPool2d, Flatten, Dropout, ParameterBlock,
  Embedding, TransformerBlock, LayerNorm, RmsNorm  // transformer decoders (model/transformer.cpp)
};

std::string layer_kind_name(LayerKind kind);

struct ParamSpec {
  std::string name;     // "weight", "bias", "attn.c_attn.weight" (inside a transformer block)
  std::int64_t numel;   // elements
  // How executors initialise it: uniform in [-init_bound, init_bound), or nn.Linear's 1/sqrt(fan_in) when 0;
  // a constant instead when init_constant is set (LayerNorm's weight 1, GPT-2's biases 0).
  double init_bound = 0;
  bool init_constant = false;
  float init_value = 0;
  std::vector<std::int64_t> shape = {};  // as the framework's state_dict holds it; empty: one dimension, numel
};

struct Layer {
  std::string name;             // "fc3", "features.0"
  LayerKind kind = LayerKind::Linear;
  std::vector<ParamSpec> params;
  std::int64_t in_numel = 0;    // input elements per sample
  std::int64_t out_numel = 0;   // output elements per sample
  // What the autograd node keeps for backward (derivatives.yaml): its input, its output, and extra
  // tensors such as max-pool indices (int64) or dropout masks (bool), in bytes per sample.
  bool saves_input = false;
  bool saves_output = false;
  std::int64_t extra_saved_bytes_per_sample = 0;
  bool inplace = false;         // output aliases input (ReLU(inplace=True))
  bool is_view = false;         // output is a view of the input (Flatten): no bytes, no saved state
  bool identity_in_eval = false;  // Dropout: a no-op under model.eval()
  // Forward FLOPs per sample (multiply-add = 2). Backward is modelled as 2x forward for layers with
  // parameters (input gradient + weight gradient) and 1x for the others.
  double forward_flops_per_sample = 0;
  // True where a library workspace of unknown size is involved (cuDNN convolutions): numbers are estimates.
  bool workspace_unknown = false;
  // Transformer blocks: the attention-core part of what the block saves (scores, softmax, its dropout mask;
  // Korthikanti et al. 2022's 5as²b term), kept apart from extra_saved_bytes_per_sample because selective
  // recomputation drops exactly this part, and the FLOPs of recomputing it (model/transformer_costs.h,
  // attention_scores_flops: QKᵀ, as the recomputation stops before the product with V).
  std::int64_t attention_saved_bytes_per_sample = 0;
  double attention_recompute_flops_per_sample = 0;
  // Transformer blocks: the FLOPs of a full recomputation, which stops at the last tensor the block's backward reads
  // (model/transformer_costs.h, block_recompute_flops).
  double recompute_forward_flops_per_sample = 0;
  // A weight owned by another layer (GPT-2's lm_head uses wte.weight): that layer and parameter index; -1: none.
  // The tied weight is counted once, with its owner.
  int tied_layer = -1;
  int tied_param = -1;
  // Buffers the module registers after this layer's parameters (Llama's rotary inv_freq): moved to the device with the
  // parameters by Module._apply, never trained or reduced. Bytes each.
  std::vector<std::pair<std::string, std::int64_t>> buffers;

  bool has_weight() const { return !params.empty() || tied_layer >= 0; }
  // A forward pass's FLOPs per sample: the layer's own, or a full recomputation's (a block, which stops earlier).
  double forward_pass_flops_per_sample(bool full_recompute) const {
    return full_recompute ? recompute_forward_flops_per_sample : forward_flops_per_sample;
  }

  std::int64_t param_numel() const {
    std::int64_t n = 0;
    for (const auto& p : params) n += p.numel;
    return n;
  }
};

}  // namespace shardscope
