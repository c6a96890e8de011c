// Reading Hugging Face config.json files. Keys and defaults follow transformers' configuration_gpt2.py
// (GPT2Config: n_inner=None → 4·n_embd, tie_word_embeddings=True) and configuration_llama.py (LlamaConfig:
// num_key_value_heads=None → num_attention_heads, tie_word_embeddings=False), transformers 4.3x–4.4x.
#include "model/transformer_config.h"

#include <cstdint>
#include <limits>
#include <optional>

#include <nlohmann/json.hpp>

#include "core/json_input.h"
#include "model/model.h"

namespace shardscope {

namespace {

using nlohmann::json;

class ConfigReader {
 public:
  ConfigReader(const json& root, std::string source) : root_(root), source_(std::move(source)) {}

  [[noreturn]] void fail(const std::string& key, const std::string& problem) const {
    throw ModelSpecError(source_ + ": '" + key + "' " + problem);
  }

  // A positive integer, required unless a default is given; JSON null counts as absent (HF writes n_inner: null).
  std::int64_t positive(const std::string& key, std::optional<std::int64_t> fallback = std::nullopt) const {
    const auto it = root_.find(key);
    if (it == root_.end() || it->is_null()) {
      if (fallback) return *fallback;
      fail(key, "is missing (a positive integer is required)");
    }
    // Quoted bounded (describe_json_value): a value from the file may be nested thousands deep or megabytes long.
    if (it->is_number_unsigned() && it->get<std::uint64_t>() > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
      fail(key, "is too large (got " + describe_json_value(*it) + ")");
    if (!it->is_number_integer()) fail(key, "must be a positive integer (got " + describe_json_value(*it) + ")");
    const auto value = it->get<std::int64_t>();
    if (value <= 0) fail(key, "must be positive (got " + std::to_string(value) + ")");
    return value;
  }

  // A number below 1 and at least 0 (HF's dropout rates) or above 0 (LayerNorm's epsilon); the default when absent
  // or null.
  double fraction(const std::string& key, double fallback, bool zero_allowed) const {
    const auto it = root_.find(key);
    if (it == root_.end() || it->is_null()) return fallback;
    const std::string range = zero_allowed ? "[0, 1)" : "(0, 1)";
    if (!it->is_number()) fail(key, "must be a number in " + range + " (got " + describe_json_value(*it) + ")");
    const double value = it->get<double>();
    if (!(value < 1 && (zero_allowed ? value >= 0 : value > 0))) fail(key, "must be in " + range + " (got " + describe_json_value(*it) + ")");
    return value;
  }

  std::string text(const std::string& key, const std::string& fallback) const {
    const auto it = root_.find(key);
    if (it == root_.end() || it->is_null()) return fallback;
    if (!it->is_string()) fail(key, "must be a string (got " + describe_json_value(*it) + ")");
    return it->get<std::string>();
  }

  bool boolean(const std::string& key, bool fallback) const {
    const auto it = root_.find(key);
    if (it == root_.end() || it->is_null()) return fallback;
    if (!it->is_boolean()) fail(key, "must be true or false (got " + describe_json_value(*it) + ")");
    return it->get<bool>();
  }

 private:
  const json& root_;
  std::string source_;
};

void check_shape(const TransformerConfig& c, const ConfigReader& reader, const std::string& heads_key,
                 const std::string& kv_key) {
  constexpr std::int64_t kMaxWidth = 1 << 20, kMaxVocab = 1 << 24;
  constexpr int kMaxLayers = 10000, kMaxPositions = 1 << 22;
  if (c.hidden > kMaxWidth) reader.fail("hidden size", "is at most " + std::to_string(kMaxWidth));
  if (c.intermediate > 8 * kMaxWidth) reader.fail("intermediate size", "is at most " + std::to_string(8 * kMaxWidth));
  if (c.vocab > kMaxVocab) reader.fail("vocab_size", "is at most " + std::to_string(kMaxVocab));
  if (c.layers > kMaxLayers) reader.fail("layer count", "is at most " + std::to_string(kMaxLayers));
  if (c.max_positions > kMaxPositions) reader.fail("max positions", "is at most " + std::to_string(kMaxPositions));
  if (c.hidden % c.heads != 0)
    reader.fail(heads_key, "must divide the hidden size " + std::to_string(c.hidden) + " (got " + std::to_string(c.heads) + ")");
  if (c.kv_heads > c.heads || c.heads % c.kv_heads != 0)
    reader.fail(kv_key, "must divide " + heads_key + " = " + std::to_string(c.heads) + " (got " + std::to_string(c.kv_heads) + ")");
}

int as_int(std::int64_t value, const ConfigReader& reader, const std::string& key) {
  if (value > 1'000'000'000) reader.fail(key, "is too large (got " + std::to_string(value) + ")");
  return static_cast<int>(value);
}

TransformerConfig gpt2_config(const ConfigReader& r) {
  TransformerConfig c;
  c.family = TransformerFamily::Gpt2;
  c.hidden = r.positive("n_embd");
  c.layers = as_int(r.positive("n_layer"), r, "n_layer");
  c.heads = as_int(r.positive("n_head"), r, "n_head");
  c.kv_heads = c.heads;
  c.vocab = r.positive("vocab_size");
  c.max_positions = as_int(r.positive("n_positions"), r, "n_positions");
  c.intermediate = r.positive("n_inner", 4 * c.hidden);
  c.tie_word_embeddings = r.boolean("tie_word_embeddings", true);
  c.embd_pdrop = r.fraction("embd_pdrop", 0.1, true);
  c.attn_pdrop = r.fraction("attn_pdrop", 0.1, true);
  c.resid_pdrop = r.fraction("resid_pdrop", 0.1, true);
  c.layer_norm_epsilon = r.fraction("layer_norm_epsilon", 1e-5, false);
  c.activation_function = r.text("activation_function", "gelu_new");
  check_shape(c, r, "n_head", "n_head");
  return c;
}

TransformerConfig llama_config(const ConfigReader& r) {
  TransformerConfig c;
  c.family = TransformerFamily::Llama;
  c.hidden = r.positive("hidden_size");
  c.layers = as_int(r.positive("num_hidden_layers"), r, "num_hidden_layers");
  c.heads = as_int(r.positive("num_attention_heads"), r, "num_attention_heads");
  c.kv_heads = as_int(r.positive("num_key_value_heads", c.heads), r, "num_key_value_heads");
  c.intermediate = r.positive("intermediate_size");
  c.vocab = r.positive("vocab_size");
  c.max_positions = as_int(r.positive("max_position_embeddings"), r, "max_position_embeddings");
  c.tie_word_embeddings = r.boolean("tie_word_embeddings", false);
  check_shape(c, r, "num_attention_heads", "num_key_value_heads");
  return c;
}

}  // namespace

TransformerConfig parse_hf_config(const std::string& json_text, const std::string& source) {
  json root;
  try {
    // Bounded nesting; duplicate keys are allowed, as transformers' json.load allows them (the last wins).
    root = parse_json_input(json_text, source);
  } catch (const JsonInputError& error) {
    throw ModelSpecError(error.what());
  }
  if (!root.is_object()) throw ModelSpecError(source + ": expected a JSON object (a Hugging Face config.json)");
  const ConfigReader reader(root, source);
  const auto type = root.find("model_type");
  if (type == root.end()) reader.fail("model_type", "is missing; expected \"gpt2\" or \"llama\"");
  if (!type->is_string()) reader.fail("model_type", "must be a string; expected \"gpt2\" or \"llama\"");
  const std::string model_type = type->get<std::string>();
  const auto quoted_type = describe_json_value(*type);
  TransformerConfig config;
  if (model_type == "gpt2") config = gpt2_config(reader);
  else if (model_type == "llama") config = llama_config(reader);
  else reader.fail("model_type", "is " + quoted_type + "; supported: \"gpt2\", \"llama\"");
  config.name = source;
  return config;
}

TransformerConfig read_hf_config_file(const std::string& path) {
  std::string text;
  try {
    text = read_input_file(path);  // regular files only, at most kMaxInputFileBytes: never /dev/zero
  } catch (const JsonInputError& error) {
    throw ModelSpecError(std::string(error.what()) + " (expected a Hugging Face config.json)");
  }
  return parse_hf_config(text, path);
}

}  // namespace shardscope
