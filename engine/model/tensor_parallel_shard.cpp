// One tensor-parallel rank's model: parameters, per-sample sizes, saved bytes and FLOPs divided where Megatron-LM
// divides them (tensor_parallel_shard.h says which).
#include "model/tensor_parallel_shard.h"

#include "model/tensor_parallel_costs.h"

namespace shardscope {

namespace {

bool ends_with(const std::string& text, const std::string& tail) {
  return text.size() >= tail.size() && text.compare(text.size() - tail.size(), tail.size(), tail) == 0;
}

// A parameter whole on every rank: norms, the row-parallel layers' biases (added after the all-reduce), learned
// positions (Megatron-LM keeps position embeddings whole).
bool replicated_block_param(const std::string& name) {
  return name.find("ln_") != std::string::npos || name.find("layernorm") != std::string::npos ||
         ends_with(name, "c_proj.bias");
}

// Divides dimension `dim` of a parameter's recorded shape (GPT-2's Conv1D weights are in × out, so a column split is
// dimension 1, a row split dimension 0; embeddings and the head are vocab × h: dimension 0).
void split_param(ParamSpec& param, int tp, std::size_t dim) {
  param.numel /= tp;
  if (param.shape.size() > dim) param.shape[dim] /= tp;
}

// An MLP Linear's parameters get nn.Linear's shapes (weight out × in, bias out) before they split, so the shard's
// record its split dimension: FSDP chunks each parameter on dim 0 (strategy/fsdp.cpp rows_of), which for a sequence-
// parallel shard (whose per-sample sizes stay the whole layer's) cannot be told from the layer's sizes.
void give_linear_shapes(Layer& layer) {
  for (auto& param : layer.params)
    if (param.shape.empty())
      param.shape = param.name == "bias" ? std::vector<std::int64_t>{layer.out_numel}
                                         : std::vector<std::int64_t>{layer.out_numel, layer.in_numel};
}

void shard_block(Layer& layer, const Model& model, int tp, bool sp) {
  const TransformerConfig& c = *model.transformer;
  if (layer.params.size() == 1 && layer.params[0].name == "parameters") {
    // One flat tensor per block (ModelOptions::group_block_params): the whole parts are GPT-2's two LayerNorms
    // (weight and bias) and two row-parallel biases, Llama's two RMSNorm weights.
    const std::int64_t whole = (c.family == TransformerFamily::Gpt2 ? 6 : 2) * c.hidden;
    layer.params[0].numel = whole + (layer.params[0].numel - whole) / tp;
  } else {
    for (auto& param : layer.params) {
      if (replicated_block_param(param.name)) continue;
      const bool row = ends_with(param.name, "c_proj.weight");  // GPT-2 attn.c_proj / mlp.c_proj: in × out, rows
      split_param(param, tp, row ? 0 : 1);
    }
  }
  const TensorParallelBlockBytes bytes =
      tensor_parallel_block_bytes(c, model.seq, model.activation_element_bytes, model.attention, tp, sp);
  layer.in_numel = layer.out_numel = layer.in_numel / (sp ? tp : 1);
  layer.extra_saved_bytes_per_sample = bytes.replicated + bytes.split;
  layer.attention_saved_bytes_per_sample = bytes.attention;
  layer.forward_flops_per_sample /= tp;
  layer.attention_recompute_flops_per_sample /= tp;
  layer.recompute_forward_flops_per_sample /= tp;
}

}  // namespace

std::vector<TensorParallelRole> tensor_parallel_roles(const Model& model) {
  std::vector<TensorParallelRole> roles;
  int linears = 0;
  bool inside_pair = false;  // between a column-parallel Linear and its row-parallel partner (MLPs)
  for (const auto& layer : model.layers) {
    TensorParallelRole role = TensorParallelRole::Replicated;
    if (model.transformer) {
      if (layer.kind == LayerKind::TransformerBlock) role = TensorParallelRole::Block;
      else if (layer.kind == LayerKind::Embedding) role = TensorParallelRole::VocabEmbedding;
      else if (layer.kind == LayerKind::Linear) role = TensorParallelRole::VocabHead;
    } else if (layer.kind == LayerKind::Linear) {
      role = linears++ % 2 == 0 ? TensorParallelRole::ColumnParallel : TensorParallelRole::RowParallel;
      inside_pair = role == TensorParallelRole::ColumnParallel;
    } else if (inside_pair) {
      role = TensorParallelRole::ColumnParallel;  // a ReLU between the pair works on the split outputs
    }
    roles.push_back(role);
  }
  return roles;
}

Model tensor_parallel_shard(const Model& whole, int tp, bool sp) {
  if (tp == 1) return whole;
  Model model = whole;
  const auto roles = tensor_parallel_roles(whole);
  const std::int64_t seq_split = sp ? tp : 1;
  // An MLP under sequence parallelism is lowered on b/t samples a rank (strategy/lower.cpp): the rows outside the
  // tensor-parallel regions. Inside a region a rank holds all b rows of 1/t of the features, the same bytes and
  // FLOPs as b/t rows of all of them, so every per-sample size stays the whole layer's and only the parameters split;
  // the pass gathers and scatters the rows around each pair (training/model_pass_sequence_parallel.cpp).
  const bool mlp_rows_split = sp && !whole.transformer;
  if (mlp_rows_split) model.sequence_parallel_ranks = tp;
  for (std::size_t l = 0; l < model.layers.size(); ++l) {
    Layer& layer = model.layers[l];
    switch (roles[l]) {
      case TensorParallelRole::ColumnParallel:
        if (layer.kind == LayerKind::Linear) {
          give_linear_shapes(layer);
          for (auto& param : layer.params) split_param(param, tp, 0);  // weight rows (out × in) and the bias
        }
        if (mlp_rows_split) break;  // sizes per sample of the b/t batch stay the whole layer's (below)
        if (layer.kind == LayerKind::Linear) {
          layer.out_numel /= tp;
        } else {  // the ReLU inside the pair
          layer.in_numel /= tp;
          layer.out_numel /= tp;
          layer.extra_saved_bytes_per_sample /= tp;
        }
        layer.forward_flops_per_sample /= tp;
        break;
      case TensorParallelRole::RowParallel:
        give_linear_shapes(layer);
        for (auto& param : layer.params)
          if (param.name != "bias") split_param(param, tp, 1);  // weight columns; the bias is added once, whole
        if (mlp_rows_split) break;
        layer.in_numel /= tp;
        layer.forward_flops_per_sample /= tp;
        break;
      case TensorParallelRole::Block:
        shard_block(layer, whole, tp, sp);
        break;
      case TensorParallelRole::VocabEmbedding:
        split_param(layer.params.at(0), tp, 0);  // wte / embed_tokens rows; GPT-2's wpe stays whole
        layer.out_numel /= seq_split;
        layer.extra_saved_bytes_per_sample /= seq_split;  // GPT-2's dropout mask
        layer.forward_flops_per_sample /= static_cast<double>(seq_split);
        break;
      case TensorParallelRole::VocabHead:
        for (auto& param : layer.params) split_param(param, tp, 0);
        layer.in_numel /= seq_split;  // with sp the saved input is the sequence shard (gathered again in backward)
        layer.out_numel /= tp;
        layer.forward_flops_per_sample /= tp;
        break;
      case TensorParallelRole::Replicated:
        if (model.transformer) {  // the final norm, between the last block and the head
          layer.in_numel /= seq_split;
          layer.out_numel /= seq_split;
          layer.extra_saved_bytes_per_sample /= seq_split;
          layer.forward_flops_per_sample /= static_cast<double>(seq_split);
        }
        break;
    }
  }
  if (model.language_model) model.output_numel /= tp;  // vocab-parallel logits: V/t columns per rank
  model.display_name += " (tensor-parallel shard 1/" + std::to_string(tp) + (sp ? ", sequence parallel)" : ")");
  return model;
}

}  // namespace shardscope
