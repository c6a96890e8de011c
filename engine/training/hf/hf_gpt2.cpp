// GPT2LMHeadModel.forward op by op (transformers 5.x modeling_gpt2.py; see hf_modules.h). Parameters by the model's
// layer order: embeddings (wte, wpe), blocks (ln_1, attn.c_attn, attn.c_proj, ln_2, mlp.c_fc, mlp.c_proj, weights
// before biases), ln_f, lm_head (tied to wte unless untied).
#include <cmath>

#include "training/eager/checkpoint.h"
#include "training/hf/hf_modules.h"

namespace shardscope::hf::detail {

namespace {

using eager::Dtype;
using eager::ModuleScope;
using eager::Sizes;
using eager::Tensor;
namespace ops = eager::ops;

class Gpt2 {
 public:
  Gpt2(const CausalLm& lm, std::int64_t batch, std::int64_t seq)
      : lm_(lm), e_(lm.e), c_(*lm.model.transformer), batch_(batch), seq_(seq),
        checkpointing_(lm.checkpoints_blocks()) {}

  Tensor causal_lm_loss(const Tensor& ids) {
    std::vector<Tensor> cache;  // DynamicCache: what past_key_values holds until the output is dropped
    Tensor hidden = transformer(ids, cache);
    const int head = last_layer();
    Tensor logits;
    {
      const ModuleScope scope(e_, head, "lm_head");
      // hidden_states[:, slice(-0, None), :] is the whole tensor (a full slice returns self)
      logits = ops::linear(e_, hidden, parameter(lm_, head, 0, {c_.vocab, c_.hidden}));
    }
    Tensor loss = for_causal_lm_loss(e_, logits, ids);
    // GPT2LMHeadModel.forward returns: its hidden_states go; then `.loss` drops the output: logits, past_key_values
    hidden.reset();
    logits.reset();
    cache.clear();
    return loss;
  }

 private:
  int last_layer() const { return static_cast<int>(lm_.model.layers.size()) - 1; }
  std::string block_scope(int i) const { return "h." + std::to_string(i); }

  // GPT2Model.forward
  Tensor transformer(const Tensor& ids, std::vector<Tensor>& cache) {
    const ModuleScope scope(e_, 0, "transformer");
    Tensor inputs_embeds, position_embeds, mask, hidden;
    Tensor position_ids;
    {
      const ModuleScope wte(e_, 0, "wte");
      inputs_embeds = ops::embedding(e_, parameter(lm_, 0, 0, {c_.vocab, c_.hidden}), ids);
    }
    position_ids = detail::position_ids(e_, seq_);
    {
      const ModuleScope wpe(e_, 0, "wpe");
      position_embeds = ops::embedding(e_, parameter(lm_, 0, 1, {c_.max_positions, c_.hidden}), position_ids);
    }
    hidden = ops::add(e_, inputs_embeds, position_embeds);
    if (lm_.model.attention == AttentionKind::Eager) mask = eager_causal_mask(e_, batch_, seq_, inputs_embeds.dtype());
    hidden = ops::dropout(e_, hidden, c_.embd_pdrop, lm_.training);
    for (int i = 0; i < c_.layers; ++i) {
      if (!checkpointing_) {
        hidden = block(i, hidden, mask, cache);
        continue;
      }
      // GradientCheckpointingLayer.__call__: checkpoint(partial(block.__call__, **kwargs), *args), the positional
      // args hidden_states, past_key_values (None), cache_position, causal_mask (transformers 5.x GPT2Model.forward);
      // cache_position is saved too, but wpe's embedding keeps it longer. The recomputation runs after this frame has
      // gone, so the block is called on a copy of this model (its references are the pass's).
      hidden = eager::checkpoint(e_, {hidden, mask}, [model = *this, i](const std::vector<Tensor>& args) mutable {
        std::vector<Tensor> no_cache;
        return model.block(i, args[0], args[1], no_cache);
      });
    }
    {
      const int norm = last_layer() - 1;
      const ModuleScope ln_f(e_, norm, "ln_f");
      hidden = ops::layer_norm(e_, hidden, parameter(lm_, norm, 0, {c_.hidden}), parameter(lm_, norm, 1, {c_.hidden}));
    }
    // the frame's locals at return, in the order assigned
    inputs_embeds.reset();
    position_ids.reset();
    position_embeds.reset();
    mask.reset();
    return hidden;
  }

  // GPT2Block.forward
  Tensor block(int i, Tensor hidden, const Tensor& mask, std::vector<Tensor>& cache) {
    const int L = 1 + i;
    const ModuleScope scope(e_, L, block_scope(i));
    const std::int64_t h = c_.hidden;
    Tensor residual = hidden;
    {
      const ModuleScope ln(e_, L, block_scope(i) + ".ln_1");
      hidden = ops::layer_norm(e_, hidden, parameter(lm_, L, 0, {h}), parameter(lm_, L, 1, {h}));
    }
    Tensor attn_output, attn_weights;
    attention(L, block_scope(i) + ".attn", hidden, mask, cache, attn_output, attn_weights);
    hidden = ops::add(e_, attn_output, residual);
    residual = hidden;
    {
      const ModuleScope ln(e_, L, block_scope(i) + ".ln_2");
      hidden = ops::layer_norm(e_, hidden, parameter(lm_, L, 6, {h}), parameter(lm_, L, 7, {h}));
    }
    Tensor feed_forward = mlp(L, block_scope(i) + ".mlp", hidden);
    hidden = ops::add(e_, residual, feed_forward);
    residual.reset();
    attn_output.reset();
    attn_weights.reset();
    feed_forward.reset();
    return hidden;
  }

  // Conv1D.forward: addmm(bias, x.view(-1, x.size(-1)), weight).view(*x.shape[:-1], nf)
  Tensor conv1d(int L, int weight, const Tensor& x, std::int64_t in, std::int64_t out) {
    const Tensor bias = parameter(lm_, L, weight + 1, {out});
    const Tensor x2 = ops::view(e_, x, {x.numel() / in, in});
    const Tensor w = parameter(lm_, L, weight, {in, out});
    Sizes size_out = x.sizes();
    size_out.back() = out;
    return ops::view(e_, ops::addmm(e_, bias, x2, w), size_out);
  }

  // GPT2Attention.forward
  void attention(int L, const std::string& path, const Tensor& x, const Tensor& mask, std::vector<Tensor>& cache,
                 Tensor& attn_output, Tensor& attn_weights) {
    const ModuleScope scope(e_, L, path);
    const std::int64_t h = c_.hidden, heads = c_.heads, hd = c_.head_dim();
    Tensor query, key, value;
    {
      Tensor qkv;
      {
        const ModuleScope c_attn(e_, L, path + ".c_attn");
        qkv = conv1d(L, 2, x, h, 3 * h);
      }
      std::vector<Tensor> pieces = ops::split(e_, qkv, h, 2);
      query = std::move(pieces[0]);
      key = std::move(pieces[1]);
      value = std::move(pieces[2]);
    }
    key = ops::transpose(e_, ops::view(e_, key, {batch_, seq_, heads, hd}), 1, 2);
    value = ops::transpose(e_, ops::view(e_, value, {batch_, seq_, heads, hd}), 1, 2);
    query = ops::transpose(e_, ops::view(e_, query, {batch_, seq_, heads, hd}), 1, 2);
    // past_key_values.update: torch.cat([empty, key_states], dim=-2), a copy the cache keeps (none when
    // gradient checkpointing has turned use_cache off)
    if (!checkpointing_) {
      // DynamicLayer.lazy_initialization makes both empty tensors in the keys' dtype, so cat promotes the values
      // to it (under autocast Llama's rotated keys are fp32, its values bf16: the cached values are fp32)
      Tensor keys = ops::cat(e_, {&key}, -2, key.dtype());
      Tensor values = ops::cat(e_, {&value}, -2, key.dtype());
      cache.push_back(keys);
      cache.push_back(values);
      key = std::move(keys);
      value = std::move(values);
    }
    const double scaling = 1.0 / std::sqrt(static_cast<double>(hd));
    if (lm_.model.attention == AttentionKind::Eager) {
      // eager_attention_forward
      attn_weights = ops::mul_scalar(e_, ops::matmul(e_, query, ops::transpose(e_, key, -1, -2)), scaling);
      if (mask.defined()) attn_weights = ops::add(e_, attn_weights, mask);
      attn_weights = ops::softmax(e_, attn_weights);
      attn_weights = ops::to(e_, attn_weights, value.dtype());  // .type(value.dtype)
      attn_weights = ops::dropout(e_, attn_weights, c_.attn_pdrop, lm_.training);
      attn_output = ops::transpose(e_, ops::matmul(e_, attn_weights, value), 1, 2);
    } else {
      // sdpa_attention_forward: is_causal with no mask, then attn_output.transpose(1, 2).contiguous()
      const Dtype dtype = ops::autocast_dtype(e_).value_or(query.dtype());
      attn_output = ops::scaled_dot_product_attention(e_, query, key, value, sdpa_kernel(lm_.model.attention, dtype, false),
                                                      lm_.training ? c_.attn_pdrop : 0.0);
      attn_output = ops::contiguous(e_, ops::transpose(e_, attn_output, 1, 2));
    }
    attn_output = ops::contiguous(e_, ops::reshape(e_, attn_output, {batch_, seq_, h}));
    {
      const ModuleScope c_proj(e_, L, path + ".c_proj");
      attn_output = conv1d(L, 4, attn_output, h, h);
    }
    attn_output = ops::dropout(e_, attn_output, c_.resid_pdrop, lm_.training);
    // returns (attn_output, attn_weights); its locals (the q, k, v views of c_attn's output) go
    query.reset();
    key.reset();
    value.reset();
  }

  // GPT2MLP.forward with NewGELUActivation
  Tensor mlp(int L, const std::string& path, const Tensor& x) {
    const ModuleScope scope(e_, L, path);
    const std::int64_t h = c_.hidden, inner = c_.intermediate;
    Tensor hidden;
    {
      const ModuleScope c_fc(e_, L, path + ".c_fc");
      hidden = conv1d(L, 8, x, h, inner);
    }
    {
      const ModuleScope act(e_, L, path + ".act");
      hidden = gelu_new(hidden);
    }
    {
      const ModuleScope c_proj(e_, L, path + ".c_proj");
      hidden = conv1d(L, 10, hidden, inner, h);
    }
    return ops::dropout(e_, hidden, c_.resid_pdrop, lm_.training);
  }

  // NewGELUActivation: 0.5 * x * (1.0 + tanh(sqrt(2 / pi) * (x + 0.044715 * pow(x, 3.0)))), each temporary freed
  // once the next op has consumed it
  Tensor gelu_new(const Tensor& x) {
    const Tensor half = ops::mul_scalar(e_, x, 0.5);
    Tensor inner;
    {
      Tensor t = ops::mul_scalar(e_, ops::pow_scalar(e_, x, 3.0), 0.044715);
      t = ops::add(e_, x, t);
      t = ops::mul_scalar(e_, t, std::sqrt(2.0 / M_PI));
      t = ops::tanh(e_, t);
      inner = ops::add_scalar(e_, t, 1.0);
    }
    return ops::mul(e_, half, inner);
  }

  CausalLm lm_;  // a copy: a checkpointed block runs again in backward, after the caller's CausalLm has gone
  eager::Eager& e_;
  const TransformerConfig& c_;
  std::int64_t batch_, seq_;
  bool checkpointing_;
};

}  // namespace

Tensor gpt2_causal_lm_loss(const CausalLm& lm, const Tensor& ids) {
  Gpt2 model(lm, ids.size(0), ids.size(1));
  return model.causal_lm_loss(ids);
}

}  // namespace shardscope::hf::detail
