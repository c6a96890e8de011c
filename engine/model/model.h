// A model = an ordered stack of layers plus its input and output sizes; built from a spec string.
// Usage:
//   Model m = parse_model_spec("mlp:20x2000");   // throws ModelSpecError with a readable message
#pragma once
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "model/layer.h"

namespace shardscope {

struct ModelOptions {
  bool inplace_relu_set = false;  // when false, each model uses its own default (mlp: out-of-place, vgg16: in-place as torchvision)
  bool inplace_relu = false;
};

struct Model {
  std::string spec;               // as given: "mlp:20x2000", "vgg16"
  std::string display_name;       // "20 × Linear(2000, 2000)"
  std::vector<Layer> layers;
  std::int64_t input_numel = 0;   // per sample
  std::int64_t output_numel = 0;  // per sample (classes for cross-entropy)
  std::int64_t parameter_count() const;
  bool has_unknown_workspaces() const;
};

class ModelSpecError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

Model parse_model_spec(const std::string& spec, const ModelOptions& options = {});

// Builders, one per model family (model/mlp.cpp, model/vgg16.cpp).
Model build_mlp(int layer_count, std::int64_t width, bool relu, bool inplace_relu);
Model build_vgg16(bool inplace_relu);
// `params:N[:BLOCKS]`: N parameters in BLOCKS equal blocks, nothing else (model/parameter_blocks.cpp).
Model build_parameter_blocks(std::int64_t parameter_count, int block_count);
Model parse_parameter_blocks(const std::string& spec, const std::vector<std::string>& parts);

}  // namespace shardscope
