// Model spec parsing ("mlp:20x2000", "mlp:4x1024:relu", "vgg16", "gpt2", "hf:PATH/config.json") and
// model-wide queries.
#include <charconv>
#include <sstream>
#include <vector>

#include "core/untrusted_text.h"
#include "model/model.h"
#include "model/transformer.h"

namespace shardscope {

std::int64_t Model::parameter_count() const {
  std::int64_t n = 0;
  for (const auto& layer : layers) n += layer.param_numel();
  return n;
}

std::int64_t Model::parameter_tensor_count() const {
  std::int64_t n = 0;
  for (const auto& layer : layers) n += static_cast<std::int64_t>(layer.params.size());
  return n;
}

int Model::transformer_block_count() const {
  int blocks = 0;
  for (const auto& layer : layers) blocks += layer.kind == LayerKind::TransformerBlock;
  return blocks;
}

bool Model::has_unknown_workspaces() const {
  for (const auto& layer : layers)
    if (layer.workspace_unknown) return true;
  return false;
}

namespace {

std::vector<std::string> split(const std::string& text, char separator) {
  std::vector<std::string> parts;
  std::stringstream stream(text);
  std::string part;
  while (std::getline(stream, part, separator)) parts.push_back(part);
  return parts;
}

bool parse_positive(const std::string& text, std::int64_t& value) {
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  return ec == std::errc() && ptr == end && value > 0;
}

Model parse_mlp(const std::string& spec, const std::vector<std::string>& parts, const ModelOptions& options) {
  const std::string usage = "expected mlp:LAYERSxWIDTH[:relu], e.g. mlp:20x2000 or mlp:4x1024:relu";
  if (parts.size() < 2 || parts.size() > 3) throw ModelSpecError("model '" + printable(spec) + "': " + usage);
  const auto dims = split(parts[1], 'x');
  std::int64_t layers = 0, width = 0;
  if (dims.size() != 2 || !parse_positive(dims[0], layers) || !parse_positive(dims[1], width))
    throw ModelSpecError("model '" + printable(spec) + "': " + usage);
  if (layers > 100000) throw ModelSpecError("model '" + printable(spec) + "': at most 100000 layers");
  if (width > (1 << 20)) throw ModelSpecError("model '" + printable(spec) + "': width at most 1048576");
  bool relu = false;
  if (parts.size() == 3) {
    if (parts[2] != "relu") throw ModelSpecError("model '" + printable(spec) + "': unknown option '" + printable(parts[2]) + "'; " + usage);
    relu = true;
  }
  const bool inplace = options.inplace_relu_set ? options.inplace_relu : false;
  Model model = build_mlp(static_cast<int>(layers), width, relu, inplace);
  model.spec = spec;
  return model;
}

std::string known_models() {
  return "expected mlp:LAYERSxWIDTH[:relu], vgg16, params:N[:BLOCKS], hf:PATH/config.json or a preset (" + model_preset_names_joined() + ")";
}

// `name` is what users see: the preset name, or the config file for hf:PATH.
Model parse_transformer(const std::string& spec, const std::string& config_path, const std::string& name,
                        const ModelOptions& options) {
  TransformerConfig config = read_hf_config_file(config_path);
  config.name = name;
  const std::int64_t given = config.vocab;
  config.vocab = (given + options.vocab_multiple - 1) / options.vocab_multiple * options.vocab_multiple;
  Model model = build_transformer(config, options);
  model.spec = spec;
  if (config.vocab != given)
    model.notes.push_back("vocabulary padded from " + std::to_string(given) + " to " + std::to_string(config.vocab) +
                          " (a multiple of " + std::to_string(options.vocab_multiple) +
                          " = make_vocab_size_divisible_by × tp, as Megatron-LM pads it for its vocabulary-parallel "
                          "embedding and LM head): the extra rows and logit columns are counted, and are never a target");
  return model;
}

}  // namespace

Model parse_model_spec(const std::string& spec, const ModelOptions& options) {
  if (spec.rfind("hf:", 0) == 0) {
    if (spec.size() == 3) throw ModelSpecError("model 'hf:' names no file; expected hf:PATH/config.json");
    return parse_transformer(spec, spec.substr(3), spec.substr(3), options);
  }
  if (const auto preset = model_preset_config_path(spec)) return parse_transformer(spec, *preset, spec, options);
  const auto parts = split(spec, ':');
  if (parts.empty()) throw ModelSpecError("model is empty; " + known_models());
  if (parts[0] == "mlp") return parse_mlp(spec, parts, options);
  if (parts[0] == "params") return parse_parameter_blocks(spec, parts);
  if (parts[0] == "vgg16" && parts.size() == 1) {
    Model model = build_vgg16(options.inplace_relu_set ? options.inplace_relu : true);
    return model;
  }
  throw ModelSpecError("unknown model '" + printable(spec) + "'; " + known_models());
}

}  // namespace shardscope
