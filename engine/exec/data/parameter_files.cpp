// Name and shape mapping between our parameters and a state_dict, over the safetensors reader and writer.
#include "exec/data/parameter_files.h"

#include <set>

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
};

std::vector<NamedParameter> parameters_of(const Model& model) {
  std::vector<NamedParameter> out;
  for (const Layer& layer : model.layers)
    for (const ParamSpec& spec : layer.params) {
      NamedParameter p{layer.name + "." + spec.name, spec.numel, spec.shape};
      if (p.shape.empty() && layer.kind == LayerKind::Linear && spec.name == "weight" && !model.transformer)
        p.shape = {layer.out_numel, layer.in_numel};  // nn.Linear: out × in
      if (p.shape.empty()) p.shape = {spec.numel};
      out.push_back(std::move(p));
    }
  return out;
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
    by_name[name] = std::move(tensor);
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
                             model.spec + "' has it: " + std::to_string(p.numel) + " elements)");
    if (static_cast<std::int64_t>(found->second.values.size()) != p.numel)
      throw SafetensorsError(path + ": parameter '" + key + "' holds " + std::to_string(found->second.values.size()) +
                             " elements, the model '" + model.spec + "' has " + std::to_string(p.numel));
    values[p.name] = found->second.values;
    used.insert(key);
  }
  for (const auto& [name, tensor] : by_name) {
    if (used.count(name)) continue;
    const bool old_buffer = name.ends_with(".attn.bias") || name.ends_with(".attn.masked_bias");
    const bool tied_copy = name == "lm_head.weight";  // a file that repeats the tied weight
    if (!old_buffer && !tied_copy)
      throw SafetensorsError(path + ": tensor '" + name + "' is not a parameter of '" + model.spec + "'");
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
