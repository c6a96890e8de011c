// tensor_parallel_inits: shard element j of a parameter split along one dimension is whole element
// o · (mid · tp · inner) + k · mid · inner + r, where o = j / (mid · inner), r = j mod (mid · inner) and mid is the
// shard's size along the split dimension; a range of the shard becomes one range per run of mid · inner elements.
#include "strategy/tensor_parallel_params.h"

#include <algorithm>
#include <map>
#include <string>

#include "model/tensor_parallel_shard.h"

namespace shardscope {

namespace {

struct Split {
  std::int64_t run = 0;          // mid · inner: the shard's contiguous elements between two jumps (0: not split)
  std::int64_t whole_numel = 0;
  std::int64_t fan_in = 0;       // the whole layer's
};

// The MLP Linear pairs' splits (nn.Linear's weight is out × in, row-major): a column-parallel layer keeps rows
// k·out/tp.. of weight and bias, one run; a row-parallel weight keeps columns k·in/tp.. of each of its out rows.
void add_linear_splits(const Model& whole, int tp, std::map<std::string, Split>& splits) {
  const auto roles = tensor_parallel_roles(whole);
  for (std::size_t l = 0; l < whole.layers.size(); ++l) {
    const Layer& layer = whole.layers[l];
    if (layer.kind != LayerKind::Linear) continue;
    for (const ParamSpec& param : layer.params) {
      Split split{0, param.numel, layer.in_numel};
      if (roles[l] == TensorParallelRole::ColumnParallel) split.run = param.numel / tp;
      else if (roles[l] == TensorParallelRole::RowParallel && param.name != "bias") split.run = layer.in_numel / tp;
      splits[layer.name + "." + param.name] = split;
    }
  }
}

// A GPT-2 model's (model/tensor_parallel_shard.h splits it): Conv1D weights are in × out. c_attn's columns are Q, K
// and V side by side, and a rank keeps its heads' columns of each, so its run is hidden/tp (three a row; its bias
// likewise); mlp.c_fc's columns (and bias) run inner/tp; the row-parallel attn.c_proj and mlp.c_proj weights and the
// vocabulary-parallel wte and lm_head keep whole rows k·rows/tp.., one run; norms, wpe and the c_proj biases whole.
void add_gpt2_splits(const Model& whole, int tp, std::map<std::string, Split>& splits) {
  const auto roles = tensor_parallel_roles(whole);
  const TransformerConfig& c = *whole.transformer;
  for (std::size_t l = 0; l < whole.layers.size(); ++l) {
    const Layer& layer = whole.layers[l];
    for (std::size_t p = 0; p < layer.params.size(); ++p) {
      const ParamSpec& param = layer.params[p];
      std::int64_t run = 0;
      if (roles[l] == TensorParallelRole::Block) {
        if (param.name.starts_with("attn.c_attn.")) run = c.hidden / tp;
        else if (param.name.starts_with("mlp.c_fc.")) run = c.intermediate / tp;
        else if (param.name.ends_with("c_proj.weight")) run = param.numel / tp;
      } else if ((roles[l] == TensorParallelRole::VocabEmbedding && p == 0) || roles[l] == TensorParallelRole::VocabHead) {
        run = param.numel / tp;
      }
      splits[layer.name + "." + param.name] = Split{run, param.numel, 0};
    }
  }
}

std::map<std::string, Split> parameter_splits(const Model& whole, int tp) {
  std::map<std::string, Split> splits;
  if (whole.transformer) add_gpt2_splits(whole, tp, splits);
  else add_linear_splits(whole, tp, splits);
  return splits;
}

}  // namespace

bool tensor_parallel_inits_placed(const Model& whole) {
  if (!whole.transformer) return true;
  if (whole.transformer->family != TransformerFamily::Gpt2) return false;
  for (const Layer& layer : whole.layers)  // a block's parameters as one flat tensor cannot be placed piece by piece
    if (layer.kind == LayerKind::TransformerBlock && layer.params.size() != 12) return false;
  return true;
}

ParameterInits tensor_parallel_inits(const ParameterInits& shard_inits, Bytes element_bytes, const Model& whole, int tp,
                                     int k) {
  if (!tensor_parallel_inits_placed(whole)) return shard_inits;
  const auto splits = parameter_splits(whole, tp);
  ParameterInits out;
  for (const ParameterInit& init : shard_inits) {
    const auto found = splits.find(init.copy_of.empty() ? init.name : init.copy_of);
    if (found == splits.end()) {
      out.push_back(init);
      continue;
    }
    const Split& split = found->second;
    ParameterInit base = init;
    if (split.fan_in > 0) base.fan_in = split.fan_in;
    base.parameter_numel = split.whole_numel;
    if (split.run == 0) {  // whole on every rank
      out.push_back(base);
      continue;
    }
    // Walk the shard range run by run; each piece starts where the previous one ended in the tensor.
    std::int64_t j = init.first_element;
    const std::int64_t end = init.first_element + init.numel;
    Bytes offset = init.offset;
    while (j < end) {
      const std::int64_t o = j / split.run, r = j % split.run;
      const std::int64_t n = std::min(end - j, split.run - r);
      ParameterInit piece = base;
      piece.first_element = o * split.run * tp + k * split.run + r;
      piece.numel = n;
      piece.offset = offset;
      out.push_back(piece);
      offset += n * element_bytes;
      j += n;
    }
  }
  return out;
}

}  // namespace shardscope
