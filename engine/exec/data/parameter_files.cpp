// Name and shape mapping between our parameters and a state_dict, over the safetensors reader and writer.
#include "exec/data/parameter_files.h"

#include <set>

#include "core/untrusted_text.h"

namespace shardscope::exec {

namespace {

bool is_gpt2(const Model& model) {
  return model.transformer && model.transformer->family == TransformerFamily::Gpt2;
}

// A pipeline's last-stage copy of tied word embeddings: not a parameter of the state_dict (it starts at zero and
// becomes wte through the embedding group's all-reduce; strategy/pipeline_stage.cpp).
bool is_tied_copy(const Model& model, const std::string& name) {
  return model.transformer && model.transformer->tie_word_embeddings && name == "lm_head.weight";
}

// Parameters in registration order, with their shapes as the state_dict holds them.
struct NamedParameter {
  std::string name;
  std::int64_t numel = 0;
  std::vector<std::int64_t> shape;
  bool shape_known = false;  // the shape is the module's; otherwise only numel is (a Llama projection, a Conv2d weight)
};

std::vector<NamedParameter> parameters_of(const Model& model) {
  std::vector<NamedParameter> out;
  for (const Layer& layer : model.layers)
    for (const ParamSpec& spec : layer.params) {
      NamedParameter p{layer.name + "." + spec.name, spec.numel, spec.shape, !spec.shape.empty()};
      const bool module = !model.transformer && (layer.kind == LayerKind::Linear || layer.kind == LayerKind::Conv2d);
      if (p.shape.empty() && module && layer.kind == LayerKind::Linear && spec.name == "weight") {
        p.shape = {layer.out_numel, layer.in_numel};  // nn.Linear: weight (out_features, in_features)
        p.shape_known = true;
      }
      // nn.Linear and nn.Conv2d: bias (out_features,) / (out_channels,) (torch/nn/modules/linear.py, conv.py).
      if (p.shape.empty() && module && spec.name == "bias") p.shape_known = true;
      if (p.shape.empty()) p.shape = {spec.numel};
      out.push_back(std::move(p));
    }
  return out;
}

std::string shape_text(const std::vector<std::int64_t>& shape) {
  std::string text = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

// Why the file's shape is not the module's, for the message: GPT-2's Conv1D stores weight in × out
// (transformers/pytorch_utils.py, Conv1D: self.weight = nn.Parameter(torch.empty(nx, nf))), nn.Linear out × in.
std::string shape_rule(const Model& model, const std::string& name) {
  if (model.transformer && model.transformer->family == TransformerFamily::Gpt2 &&
      (name.find(".c_attn.weight") != std::string::npos || name.find(".c_proj.weight") != std::string::npos ||
       name.find(".c_fc.weight") != std::string::npos))
    return " (GPT-2's Conv1D stores its weight in × out; a transposed weight is refused, as load_state_dict refuses it)";
  if (!model.transformer && name.ends_with(".weight")) return " (nn.Linear stores its weight out × in)";
  return "";
}

std::string strip(const std::string& text, const std::string& prefix) {
  return text.rfind(prefix, 0) == 0 ? text.substr(prefix.size()) : text;
}

}  // namespace

std::string state_dict_name(const Model& model, const std::string& name) {
  if (!is_gpt2(model)) return name;
  if (name.rfind("lm_head.", 0) == 0) return name;
  return "transformer." + strip(name, "embeddings.");
}

ParameterValues load_parameter_file(const std::string& path, const Model& model) {
  std::map<std::string, SafetensorsTensor> by_name;
  for (SafetensorsTensor& tensor : read_safetensors(path)) {
    std::string name = tensor.name;
    if (is_gpt2(model) && name.rfind("lm_head.", 0) != 0 && name.rfind("transformer.", 0) != 0) name = "transformer." + name;
    // One parameter under two spellings ("wte.weight" and "transformer.wte.weight"): which one load_state_dict would
    // take depends on the module it loads into, so neither is guessed.
    const auto [existing, added] = by_name.try_emplace(name, std::move(tensor));
    if (!added)
      throw SafetensorsError(path + ": tensors '" + printable(existing->second.name) + "' " + shape_text(existing->second.shape) +
                             " and '" + printable(tensor.name) + "' " + shape_text(tensor.shape) + " are both parameter '" +
                             printable(name) + "'; keep one");
  }
  ParameterValues values;
  std::set<std::string> used;
  for (const NamedParameter& p : parameters_of(model)) {
    if (is_tied_copy(model, p.name)) continue;
    std::string key = state_dict_name(model, p.name);
    if (!by_name.count(key) && is_gpt2(model) && key == "lm_head.weight") key = "transformer.wte.weight";  // tied in the file
    const auto found = by_name.find(key);
    if (found == by_name.end())
      throw SafetensorsError(path + ": parameter '" + state_dict_name(model, p.name) + "' is missing (the model '" +
                             printable(model.spec) + "' has it: " + std::to_string(p.numel) + " elements)");
    if (static_cast<std::int64_t>(found->second.values.size()) != p.numel)
      throw SafetensorsError(path + ": parameter '" + key + "' holds " + std::to_string(found->second.values.size()) +
                             " elements, the model '" + printable(model.spec) + "' has " + std::to_string(p.numel));
    if (p.shape_known && found->second.shape != p.shape)
      throw SafetensorsError(path + ": parameter '" + printable(found->second.name) + "' has shape " + shape_text(found->second.shape) +
                             ", the model '" + printable(model.spec) + "' has " + shape_text(p.shape) + shape_rule(model, p.name));
    values[p.name] = found->second.values;
    used.insert(key);
  }
  for (const auto& [name, tensor] : by_name) {
    if (used.count(name)) continue;
    const bool old_buffer = name.ends_with(".attn.bias") || name.ends_with(".attn.masked_bias");
    const bool tied_copy = name == "lm_head.weight";  // a file that repeats the tied weight
    if (!old_buffer && !tied_copy)
      throw SafetensorsError(path + ": tensor '" + printable(tensor.name) + "' is not a parameter of '" + printable(model.spec) + "'");
  }
  return values;
}

void save_parameter_file(const std::string& path, const Model& model, const ParameterValues& values) {
  std::vector<SafetensorsTensor> tensors;
  for (const NamedParameter& p : parameters_of(model)) {
    if (is_tied_copy(model, p.name)) continue;  // equal to wte, which is written
    const auto found = values.find(p.name);
    if (found == values.end())
      throw SafetensorsError(path + ": the run holds no values of parameter '" + p.name + "' to save");
    tensors.push_back({state_dict_name(model, p.name), p.shape, found->second});
  }
  write_safetensors(path, tensors, {{"format", "pt"}});
}

}  // namespace shardscope::exec
