// A model's parameters in a safetensors file, named as the framework's state_dict names them: GPT-2 as transformers'
// GPT2LMHeadModel ("transformer.h.0.attn.c_attn.weight", Conv1D weights in × out), other models by their layer and
// parameter names ("fc3.weight"). `run --load-params` reads initial values from one, `run --save-params` writes
// the trained ones.
#pragma once
#include "exec/exec_layer.h"
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "exec/data/safetensors.h"
#include "model/model.h"

namespace shardscope::exec {

// Our parameter name (layer name + "." + parameter name, as the plan's ParameterInit has it) -> its values.
using ParameterValues = std::map<std::string, std::vector<float>>;

// The state_dict name of one of our parameters ("embeddings.wte.weight" -> "transformer.wte.weight").
std::string state_dict_name(const Model& model, const std::string& name);

// Every parameter of `model` from the file, checked for presence and size; a GPT-2 file may name them with or
// without the "transformer." prefix (GPT2LMHeadModel's or GPT2Model's state_dict), and may leave out a tied
// lm_head.weight (save_pretrained drops shared tensors); the copy of tied embeddings a pipeline's last stage holds
// is not read (it starts at zero and becomes wte through the plan's all-reduce, as Megatron-LM's
// word_embeddings_for_head) nor written. Buffers transformers once saved (attn.bias,
// attn.masked_bias) are ignored; any other unknown name is an error, as load_state_dict(strict=True) makes it.
// Throws SafetensorsError naming the file and the parameter.
ParameterValues load_parameter_file(const std::string& path, const Model& model);

// Writes `values` (whole parameters by our names, as assemble_model_parameters gives them) under state_dict names,
// in registration order with their shapes; a tied lm_head is not written twice. Throws SafetensorsError.
void save_parameter_file(const std::string& path, const Model& model, const ParameterValues& values);

}  // namespace shardscope::exec
