// Decoder-only transformer language models (GPT-2 and Llama families) as layer stacks: the embedding, one layer
// per block, the final norm, the LM head. Blocks are single layers so that large models lower fast; what they
// save and compute comes from model/transformer_costs.h. Presets ("gpt2", "llama-2-7b") live in assets/models/.
// Usage:
//   Model m = build_transformer(read_hf_config_file(path), options);   // throws SequenceLengthError
//   std::optional<std::string> p = model_preset_config_path("gpt2");    // assets/models/gpt2/config.json
#pragma once
#include <optional>
#include <string>

#include "model/model.h"
#include "model/transformer_config.h"

namespace shardscope {

Model build_transformer(const TransformerConfig& config, const ModelOptions& options);

// The built-in presets, in the order users see them, and the config.json each one reads.
const std::vector<std::string>& model_preset_names();
std::string model_preset_names_joined();
std::optional<std::string> model_preset_config_path(const std::string& name);

// The assets folder: $SHARDSCOPE_ASSETS_DIR when set, else the source tree's assets/ compiled in.
std::string assets_dir();

}  // namespace shardscope
