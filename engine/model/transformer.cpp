// Layer stacks of GPT2LMHeadModel and LlamaForCausalLM (transformers' modeling_gpt2.py / modeling_llama.py):
// parameters named and ordered as their state_dict registers them, so DDP buckets and ZeRO shards follow HF.
#include "model/transformer.h"

#include <cmath>

#include "model/transformer_costs.h"

namespace shardscope {

namespace {

bool is_gpt2(const TransformerConfig& c) { return c.family == TransformerFamily::Gpt2; }

// GPT2PreTrainedModel._init_weights (transformers 4.x): weights normal(0, 0.02), the residual projections
// (c_proj) scaled by 1/sqrt(2·n_layer), biases 0, LayerNorm weight 1. Executors draw uniform values with the same
// standard deviation (bound = std·√3), so the scale of training matches without a normal generator.
constexpr double kGpt2InitStd = 0.02;
ParamSpec gpt2_weight(std::string name, std::vector<std::int64_t> shape, double std_dev = kGpt2InitStd) {
  std::int64_t numel = 1;
  for (std::int64_t d : shape) numel *= d;
  ParamSpec spec{std::move(name), numel};
  spec.shape = std::move(shape);
  spec.init_bound = std_dev * 1.7320508075688772;
  return spec;
}
ParamSpec gpt2_constant(std::string name, std::int64_t numel, float value) {
  ParamSpec spec{std::move(name), numel};
  spec.shape = {numel};
  spec.init_constant = true;
  spec.init_value = value;
  return spec;
}

// GPT-2 wte + wpe, then dropout (embd_pdrop); Llama embed_tokens. The node keeps the token ids (the input x)
// for embedding_dense_backward, which produces a dense V×h weight gradient; GPT-2 also keeps its dropout mask.
Layer make_embedding(const TransformerConfig& c, std::int64_t seq) {
  Layer layer;
  layer.kind = LayerKind::Embedding;
  if (is_gpt2(c)) {
    layer.name = "embeddings";
    layer.params = {gpt2_weight("wte.weight", {c.vocab, c.hidden}),
                    gpt2_weight("wpe.weight", {static_cast<std::int64_t>(c.max_positions), c.hidden})};
    layer.extra_saved_bytes_per_sample = seq * c.hidden;  // dropout mask, 1 byte per element
  } else {
    layer.name = "embed_tokens";
    layer.params = {{"weight", c.vocab * c.hidden}};
  }
  layer.in_numel = seq;
  layer.out_numel = seq * c.hidden;
  layer.saves_input = true;
  layer.forward_flops_per_sample = static_cast<double>(seq * c.hidden);  // the gather (and GPT-2's wte + wpe add)
  return layer;
}

std::vector<ParamSpec> block_params(const TransformerConfig& c) {
  const std::int64_t h = c.hidden, i = c.intermediate, kv = c.kv_width();
  if (is_gpt2(c)) {  // Conv1D layers (weight in×out) with biases; LayerNorms with bias
    const double residual_std = kGpt2InitStd / std::sqrt(2.0 * c.layers);
    return {gpt2_constant("ln_1.weight", h, 1),      gpt2_constant("ln_1.bias", h, 0),
            gpt2_weight("attn.c_attn.weight", {h, 3 * h}), gpt2_constant("attn.c_attn.bias", 3 * h, 0),
            gpt2_weight("attn.c_proj.weight", {h, h}, residual_std), gpt2_constant("attn.c_proj.bias", h, 0),
            gpt2_constant("ln_2.weight", h, 1),      gpt2_constant("ln_2.bias", h, 0),
            gpt2_weight("mlp.c_fc.weight", {h, i}),  gpt2_constant("mlp.c_fc.bias", i, 0),
            gpt2_weight("mlp.c_proj.weight", {i, h}, residual_std), gpt2_constant("mlp.c_proj.bias", h, 0)};
  }
  return {{"self_attn.q_proj.weight", h * h},  {"self_attn.k_proj.weight", kv * h},
          {"self_attn.v_proj.weight", kv * h}, {"self_attn.o_proj.weight", h * h},
          {"mlp.gate_proj.weight", i * h},     {"mlp.up_proj.weight", i * h},
          {"mlp.down_proj.weight", h * i},     {"input_layernorm.weight", h},
          {"post_attention_layernorm.weight", h}};
}

Layer make_block(const TransformerConfig& c, int index, std::int64_t seq, std::int64_t element_bytes, bool group_params,
                 AttentionKind attention) {
  Layer layer;
  layer.name = (is_gpt2(c) ? "h." : "layers.") + std::to_string(index);
  layer.kind = LayerKind::TransformerBlock;
  layer.params = block_params(c);
  if (group_params) {  // one flat tensor: fewer ops for very large plans, same bytes
    std::int64_t numel = 0;
    for (const auto& param : layer.params) numel += param.numel;
    layer.params = {{"parameters", numel}};
  }
  layer.in_numel = layer.out_numel = seq * c.hidden;
  const BlockActivationBytes saved = block_activation_bytes(c, seq, element_bytes, attention);
  layer.saves_input = true;  // the first norm's input is the block input: the lowering shares that tensor
  layer.extra_saved_bytes_per_sample = saved.other;
  layer.attention_saved_bytes_per_sample = saved.attention;
  layer.forward_flops_per_sample = block_forward_flops(c, seq);
  layer.attention_recompute_flops_per_sample = attention_scores_flops(c, seq);
  layer.recompute_forward_flops_per_sample = block_recompute_flops(c, seq);
  return layer;
}

// ln_f (LayerNorm with bias) / norm (RMSNorm): saves its input, as the paper counts norms.
Layer make_final_norm(const TransformerConfig& c, std::int64_t seq) {
  Layer layer;
  layer.name = is_gpt2(c) ? "ln_f" : "norm";
  layer.kind = is_gpt2(c) ? LayerKind::LayerNorm : LayerKind::RmsNorm;
  layer.params = is_gpt2(c) ? std::vector<ParamSpec>{gpt2_constant("weight", c.hidden, 1), gpt2_constant("bias", c.hidden, 0)}
                            : std::vector<ParamSpec>{{"weight", c.hidden}};
  layer.in_numel = layer.out_numel = seq * c.hidden;
  layer.saves_input = true;
  layer.forward_flops_per_sample = 5.0 * static_cast<double>(seq * c.hidden);
  return layer;
}

// lm_head: Linear(h, V, bias=False), saves its input; tied to the token embedding when the config says so.
Layer make_lm_head(const TransformerConfig& c, std::int64_t seq, bool tied) {
  Layer layer;
  layer.name = "lm_head";
  layer.kind = LayerKind::Linear;
  if (tied) {
    layer.tied_layer = 0;
    layer.tied_param = 0;
  } else {
    layer.params = {is_gpt2(c) ? gpt2_weight("weight", {c.vocab, c.hidden}) : ParamSpec{"weight", c.vocab * c.hidden}};
    if (c.tie_word_embeddings) {  // a pipeline's copy: zero, then the embedding group's all-reduce makes it wte
      layer.params[0].init_constant = true;
      layer.params[0].init_value = 0;
    }
  }
  layer.in_numel = seq * c.hidden;
  layer.out_numel = seq * c.vocab;
  layer.saves_input = true;
  layer.forward_flops_per_sample = lm_head_flops(c, seq);
  return layer;
}

std::string display_name(const TransformerConfig& c, std::int64_t seq) {
  std::string text = c.name + ": " + std::to_string(c.layers) + " blocks, hidden " + std::to_string(c.hidden) + ", " +
                     std::to_string(c.heads) + " heads";
  if (c.kv_heads != c.heads) text += " (" + std::to_string(c.kv_heads) + " KV)";
  text += ", vocab " + std::to_string(c.vocab) + ", seq " + std::to_string(seq);
  return text;
}

}  // namespace

Model build_transformer(const TransformerConfig& c, const ModelOptions& options) {
  if (options.seq > c.max_positions)
    throw SequenceLengthError("sequence length " + std::to_string(options.seq) + " exceeds " + c.name + "'s " +
                              std::to_string(c.max_positions) + " positions");
  const std::int64_t seq = options.seq > 0 ? options.seq : c.max_positions;
  Model model;
  model.seq = static_cast<int>(seq);
  model.language_model = true;
  model.transformer = c;
  model.checkpoint = options.checkpoint;
  model.activation_element_bytes = options.activation_element_bytes;
  model.input_numel = seq;
  model.input_element_bytes = 8;  // int64 token ids
  model.output_numel = seq * c.vocab;
  model.target_positions = seq;
  model.display_name = display_name(c, seq);
  model.layers.reserve(static_cast<std::size_t>(c.layers) + 3);
  model.layers.push_back(make_embedding(c, seq));
  model.implementation = options.implementation;
  model.attention = options.attention.value_or(options.implementation == TransformerImplementation::Hf ? AttentionKind::Sdpa
                                                                                                      : AttentionKind::Eager);
  for (int i = 0; i < c.layers; ++i)
    model.layers.push_back(make_block(c, i, seq, options.activation_element_bytes, options.group_block_params, model.attention));
  model.layers.push_back(make_final_norm(c, seq));
  // LlamaModel registers rotary_emb after norm; its LlamaRotaryEmbedding holds inv_freq and original_inv_freq
  // (head_dim / 2 fp32 each) as buffers, which .to(device) moves after norm.weight (measured on 2.11: two 128-byte
  // allocations for head_dim 64). Megatron's count has no such tensors.
  if (!is_gpt2(c) && model.implementation == TransformerImplementation::Hf)
    model.layers.back().buffers = {{"rotary_emb.inv_freq", c.head_dim() / 2 * 4}, {"rotary_emb.original_inv_freq", c.head_dim() / 2 * 4}};
  const bool tied = c.tie_word_embeddings && !options.untie_embeddings;
  model.layers.push_back(make_lm_head(c, seq, tied));
  if (c.tie_word_embeddings && !tied)
    model.notes.push_back("tied word embeddings: the last pipeline stage holds its own copy for lm_head (as Megatron-LM's "
                          "word_embeddings_for_head), counted in the parameters; an all-reduce between the first and "
                          "last stage makes it wte at creation and sums the two copies' gradients every step");
  if (options.group_block_params)
    model.notes.push_back("each transformer block's parameters are one flat tensor here (a plan this large lowers "
                          "faster so); DDP buckets and ZeRO-1 shards then follow whole blocks, not HF's tensors");
  if (model.implementation == TransformerImplementation::Hf)
    model.notes.push_back("blocks follow transformers' modules op by op (hf implementation: every tensor autograd saves, "
                          "each temporary, the KV cache use_cache keeps during forward, the loss over shifted labels "
                          "with logits upcast to fp32), as transformers 5.x runs them on PyTorch 2.x");
  else if (model.attention == AttentionKind::Eager)
    model.notes.push_back("transformer activations per block follow Korthikanti et al. 2022 (Table 2) with attention "
                          "scores materialised (eager attention); fused SDPA/flash attention would drop the a·s² term");
  else
    model.notes.push_back("transformer activations per block follow Korthikanti et al. 2022 (Table 2) with a fused "
                          "attention kernel: the a·s² scores, probabilities and dropout mask give way to a logsumexp "
                          "per head and position");
  return model;
}

}  // namespace shardscope
