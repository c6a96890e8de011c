// LlamaForCausalLM.forward op by op (transformers 5.x modeling_llama.py; see hf_modules.h). Parameters by the model's
// layer order: embed_tokens, blocks (q, k, v, o projections, gate, up, down, input_layernorm,
// post_attention_layernorm), norm, lm_head.
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

// The RMSNorm epsilon of LlamaConfig (rms_norm_eps): it only shifts values, never bytes.
constexpr double kRmsEps = 1e-6;

class Llama {
 public:
  Llama(const CausalLm& lm, std::int64_t batch, std::int64_t seq)
      : lm_(lm), e_(lm.e), c_(*lm.model.transformer), batch_(batch), seq_(seq),
        checkpointing_(lm.checkpoints_blocks()) {}

  Tensor causal_lm_loss(const Tensor& ids) {
    std::vector<Tensor> cache;
    Tensor hidden = model(ids, cache);
    const int head = last_layer();
    Tensor logits;
    {
      const ModuleScope scope(e_, head, "lm_head");
      logits = ops::linear(e_, hidden, parameter(lm_, head, 0, {c_.vocab, c_.hidden}));
    }
    Tensor loss = for_causal_lm_loss(e_, logits, ids);
    hidden.reset();
    logits.reset();
    cache.clear();
    return loss;
  }

 private:
  int last_layer() const { return static_cast<int>(lm_.model.layers.size()) - 1; }
  std::string layer_scope(int i) const { return "model.layers." + std::to_string(i); }

  // LlamaModel.forward
  Tensor model(const Tensor& ids, std::vector<Tensor>& cache) {
    const ModuleScope scope(e_, 0, "model");
    Tensor inputs_embeds;
    {
      const ModuleScope embed(e_, 0, "model.embed_tokens");
      inputs_embeds = ops::embedding(e_, parameter(lm_, 0, 0, {c_.vocab, c_.hidden}), ids);
    }
    Tensor position_ids = detail::position_ids(e_, seq_);
    Tensor mask;
    if (lm_.model.attention == AttentionKind::Eager) mask = eager_causal_mask(e_, batch_, seq_, inputs_embeds.dtype());
    Tensor hidden = inputs_embeds;
    Tensor cos, sin;
    rotary(inputs_embeds.dtype(), cos, sin);
    for (int i = 0; i < c_.layers; ++i) {
      if (!checkpointing_) {
        hidden = decoder_layer(i, hidden, mask, cos, sin, cache);
        continue;
      }
      // GradientCheckpointingLayer.__call__: checkpoint(partial(layer.__call__, **kwargs), hidden_states). LlamaModel
      // passes the rest by keyword (attention_mask, position_embeddings, position_ids, cache_position), so the
      // context's partial holds them until the loss is freed. The recomputation runs after this frame has gone: the
      // layer is called on a copy of this model (its references are the pass's).
      hidden = eager::checkpoint(
          e_, {hidden},
          [model = *this, i, mask, cos, sin](const std::vector<Tensor>& args) mutable {
            std::vector<Tensor> no_cache;
            return model.decoder_layer(i, args[0], mask, cos, sin, no_cache);
          },
          {mask, cos, sin, position_ids});
    }
    {
      const int norm = last_layer() - 1;
      hidden = rms_norm(norm, 0, "model.norm", hidden);
    }
    // the frame's locals at return, in the order assigned
    inputs_embeds.reset();
    position_ids.reset();
    mask.reset();
    cos.reset();
    sin.reset();
    return hidden;
  }

  // LlamaRotaryEmbedding.forward under no_grad: freqs = inv_freq @ position_ids (fp32, autocast off), emb =
  // cat(freqs, freqs), cos / sin scaled by attention_scaling, cast to the hidden states' dtype.
  void rotary(Dtype dtype, Tensor& cos, Tensor& sin) {
    const ModuleScope scope(e_, 0, "model.rotary_emb");
    const bool was = e_.grad_enabled;
    e_.grad_enabled = false;
    const std::int64_t hd = c_.head_dim();
    Tensor positions = e_.empty("rotary positions (float)", {1, 1, seq_}, Dtype::F32);
    Tensor freqs = e_.empty("rotary freqs", {1, hd / 2, seq_}, Dtype::F32);
    e_.gemm(false);  // inv_freq @ position_ids is a GEMM: the forward thread's first, its cuBLAS workspace made here
    Tensor emb = e_.empty("rotary emb", {1, seq_, hd}, Dtype::F32);
    {
      Tensor raw = e_.empty("emb.cos()", {1, seq_, hd}, Dtype::F32);
      cos = e_.empty("cos", {1, seq_, hd}, Dtype::F32);
    }
    {
      Tensor raw = e_.empty("emb.sin()", {1, seq_, hd}, Dtype::F32);
      sin = e_.empty("sin", {1, seq_, hd}, Dtype::F32);
    }
    e_.compute(e_.kind(), "rotary embedding", static_cast<double>(4 * emb.numel()), 4 * emb.bytes(),
               eager::elementwise_work(WorkKind::Unary, emb.dtype()));
    positions.reset();
    freqs.reset();
    emb.reset();
    cos = ops::to(e_, cos, dtype);
    sin = ops::to(e_, sin, dtype);
    e_.grad_enabled = was;
  }

  // LlamaRMSNorm.forward
  Tensor rms_norm(int L, int weight, const std::string& path, const Tensor& x) {
    const ModuleScope scope(e_, L, path);
    const Dtype input_dtype = x.dtype();
    Tensor hidden = ops::to(e_, x, Dtype::F32);
    Tensor variance = ops::mean_last(e_, ops::pow_scalar(e_, hidden, 2.0));
    {
      const Tensor r = ops::rsqrt(e_, ops::add_scalar(e_, variance, kRmsEps));
      hidden = ops::mul(e_, hidden, r);
    }
    const Tensor w = parameter(lm_, L, weight, {c_.hidden});
    Tensor out = ops::mul(e_, w, ops::to(e_, hidden, input_dtype));
    hidden.reset();
    variance.reset();
    return out;
  }

  // LlamaDecoderLayer.forward
  Tensor decoder_layer(int i, Tensor hidden, const Tensor& mask, const Tensor& cos, const Tensor& sin,
                       std::vector<Tensor>& cache) {
    const int L = 1 + i;
    const ModuleScope scope(e_, L, layer_scope(i));
    Tensor residual = hidden;
    hidden = rms_norm(L, 7, layer_scope(i) + ".input_layernorm", hidden);
    hidden = attention(L, layer_scope(i) + ".self_attn", hidden, mask, cos, sin, cache);
    hidden = ops::add(e_, residual, hidden);
    residual = hidden;
    hidden = rms_norm(L, 8, layer_scope(i) + ".post_attention_layernorm", hidden);
    hidden = mlp(L, layer_scope(i) + ".mlp", hidden);
    hidden = ops::add(e_, residual, hidden);
    return hidden;
  }

  // rotate_half: cat((-x2, x1), dim=-1) of the last dim's halves
  Tensor rotate_half(const Tensor& x) {
    const std::int64_t half = x.sizes().back() / 2;
    const Tensor x1 = ops::slice(e_, x, -1, 0, half);
    const Tensor x2 = ops::slice(e_, x, -1, half, 2 * half);
    const Tensor minus = ops::neg(e_, x2);
    return ops::cat(e_, {&minus, &x1}, -1);
  }

  // apply_rotary_pos_emb for one of q, k: (x * cos) + (rotate_half(x) * sin)
  Tensor rotary_embed(const Tensor& x, const Tensor& cos, const Tensor& sin) {
    Tensor left = ops::mul(e_, x, cos);
    Tensor right = ops::mul(e_, rotate_half(x), sin);
    Tensor sum = ops::add(e_, left, right);
    left.reset();  // BINARY_OP drops its left operand, then its right
    right.reset();
    return sum;
  }

  // repeat_kv: [b, kv, s, d] -> [b, kv·n, s, d] (expand, then a reshape that copies); itself when n == 1
  Tensor repeat_kv(const Tensor& x, std::int64_t n) {
    if (n == 1) return x;
    const Sizes s = x.sizes();
    return ops::reshape(e_, ops::expand(e_, ops::unsqueeze(e_, x, 2), {s[0], s[1], n, s[2], s[3]}), {s[0], s[1] * n, s[2], s[3]});
  }

  // LlamaAttention.forward
  Tensor attention(int L, const std::string& path, const Tensor& x, const Tensor& mask, const Tensor& cos_in,
                   const Tensor& sin_in, std::vector<Tensor>& cache) {
    const ModuleScope scope(e_, L, path);
    const std::int64_t h = c_.hidden, heads = c_.heads, kv_heads = c_.kv_heads, hd = c_.head_dim();
    auto project = [&](int weight, std::int64_t n_heads, const char* name) {
      const ModuleScope proj(e_, L, path + "." + name);
      const Tensor y = ops::linear(e_, x, parameter(lm_, L, weight, {n_heads * hd, h}));
      return ops::transpose(e_, ops::view(e_, y, {batch_, seq_, n_heads, hd}), 1, 2);
    };
    Tensor query = project(0, heads, "q_proj");
    Tensor key = project(1, kv_heads, "k_proj");
    Tensor value = project(2, kv_heads, "v_proj");
    {
      const Tensor cos = ops::unsqueeze(e_, cos_in, 1);
      const Tensor sin = ops::unsqueeze(e_, sin_in, 1);
      Tensor q_embed = rotary_embed(query, cos, sin);
      Tensor k_embed = rotary_embed(key, cos, sin);
      query = std::move(q_embed);
      key = std::move(k_embed);
    }
    if (!checkpointing_) {  // no cache when gradient checkpointing has turned use_cache off
      // key_states, value_states = past_key_values.update(...): both copied, then both names rebound
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
    const std::int64_t groups = heads / kv_heads;
    Tensor attn_output;
    if (lm_.model.attention == AttentionKind::Eager) {
      // eager_attention_forward
      const Tensor key_states = repeat_kv(key, groups);
      const Tensor value_states = repeat_kv(value, groups);
      Tensor weights = ops::mul_scalar(e_, ops::matmul(e_, query, ops::transpose(e_, key_states, 2, 3)), scaling);
      if (mask.defined()) weights = ops::add(e_, weights, mask);
      weights = ops::to(e_, ops::softmax(e_, weights, Dtype::F32), query.dtype());
      weights = ops::dropout(e_, weights, 0.0, lm_.training);
      attn_output = ops::matmul(e_, weights, value_states);
      attn_output = ops::contiguous(e_, ops::transpose(e_, attn_output, 1, 2));
    } else {
      // sdpa_attention_forward: enable_gqa instead of repeat_kv (torch ≥ 2.5, no mask), is_causal
      const Dtype dtype = ops::autocast_dtype(e_).value_or(query.dtype());
      attn_output = ops::scaled_dot_product_attention(e_, query, key, value, sdpa_kernel(lm_.model.attention, dtype, groups > 1), 0.0);
      attn_output = ops::contiguous(e_, ops::transpose(e_, attn_output, 1, 2));
    }
    attn_output = ops::contiguous(e_, ops::reshape(e_, attn_output, {batch_, seq_, h}));
    {
      const ModuleScope o_proj(e_, L, path + ".o_proj");
      attn_output = ops::linear(e_, attn_output, parameter(lm_, L, 3, {h, h}));
    }
    query.reset();
    key.reset();
    value.reset();
    return attn_output;
  }

  // LlamaMLP.forward: down_proj(act_fn(gate_proj(x)) * up_proj(x))
  Tensor mlp(int L, const std::string& path, const Tensor& x) {
    const ModuleScope scope(e_, L, path);
    const std::int64_t h = c_.hidden, inner = c_.intermediate;
    Tensor gated;
    {
      Tensor gate;
      {
        const ModuleScope proj(e_, L, path + ".gate_proj");
        gate = ops::linear(e_, x, parameter(lm_, L, 4, {inner, h}));
      }
      Tensor act;
      {
        const ModuleScope fn(e_, L, path + ".act_fn");
        act = ops::silu(e_, gate);
      }
      Tensor up;
      {
        const ModuleScope proj(e_, L, path + ".up_proj");
        up = ops::linear(e_, x, parameter(lm_, L, 5, {inner, h}));
      }
      gated = ops::mul(e_, act, up);
    }
    const ModuleScope proj(e_, L, path + ".down_proj");
    return ops::linear(e_, gated, parameter(lm_, L, 6, {h, inner}));
  }

  CausalLm lm_;  // a copy: a checkpointed layer runs again in backward, after the caller's CausalLm has gone
  eager::Eager& e_;
  const TransformerConfig& c_;
  std::int64_t batch_, seq_;
  bool checkpointing_;
};

}  // namespace

Tensor llama_causal_lm_loss(const CausalLm& lm, const Tensor& ids) {
  Llama model(lm, ids.size(0), ids.size(1));
  return model.causal_lm_loss(ids);
}

}  // namespace shardscope::hf::detail
