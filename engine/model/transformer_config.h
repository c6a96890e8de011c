// The shape of a decoder-only transformer as a Hugging Face config.json describes it (GPT-2 and Llama families).
// Reading only: building layers from it is model/transformer.cpp. Must not depend on strategies or scenarios.
// Usage:
//   TransformerConfig c = read_hf_config_file("assets/models/gpt2/config.json");  // throws ModelSpecError
#pragma once
#include <cstdint>
#include <string>

namespace shardscope {

enum class TransformerFamily {
  Gpt2,   // LayerNorm with bias, learned positions, GELU MLP, biases everywhere, tied embeddings by default
  Llama,  // RMSNorm, rotary positions, SwiGLU MLP, no biases, grouped-query attention, untied by default
};

struct TransformerConfig {
  TransformerFamily family = TransformerFamily::Gpt2;
  std::string name;                  // shown to users: the preset name or the config file
  std::int64_t hidden = 0;           // h: n_embd / hidden_size
  int layers = 0;                    // n_layer / num_hidden_layers
  int heads = 0;                     // a: n_head / num_attention_heads
  int kv_heads = 0;                  // num_key_value_heads (GQA); = heads for GPT-2
  std::int64_t intermediate = 0;     // MLP width: n_inner (null → 4h) / intermediate_size
  std::int64_t vocab = 0;            // V: vocab_size
  int max_positions = 0;             // n_positions / max_position_embeddings
  bool tie_word_embeddings = true;   // lm_head.weight is the token embedding
  // What executors need beyond the shape (GPT-2's GPT2Config; the accounting does not depend on them): dropout
  // probabilities in training, LayerNorm's epsilon, the MLP activation ("gelu_new": GELU's tanh approximation).
  double embd_pdrop = 0.1, attn_pdrop = 0.1, resid_pdrop = 0.1;
  double layer_norm_epsilon = 1e-5;
  std::string activation_function = "gelu_new";

  std::int64_t head_dim() const { return hidden / heads; }
  std::int64_t kv_width() const { return head_dim() * kv_heads; }  // k_proj / v_proj output features
};

// Parses config.json text; `source` names the file in messages ("gpt2/config.json: missing key 'n_embd'").
TransformerConfig parse_hf_config(const std::string& json_text, const std::string& source);
TransformerConfig read_hf_config_file(const std::string& path);

}  // namespace shardscope
