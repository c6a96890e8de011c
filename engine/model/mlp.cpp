// The `mlp` model family: N × Linear(width, width) with bias, optionally a ReLU between layers
// (nn.Sequential order: Linear, ReLU, Linear, ..., Linear — no activation after the last layer).
#include <string>

#include "model/layers_common.h"
#include "model/model.h"

namespace shardscope {

Model build_mlp(int layer_count, std::int64_t width, bool relu, bool inplace_relu) {
  Model model;
  model.input_numel = width;
  model.output_numel = width;
  for (int i = 0; i < layer_count; ++i) {
    model.layers.push_back(make_linear("fc" + std::to_string(i), width, width));
    if (relu && i + 1 < layer_count) model.layers.push_back(make_relu("relu" + std::to_string(i), width, inplace_relu));
  }
  model.display_name = std::to_string(layer_count) + " × Linear(" + std::to_string(width) + ", " +
                       std::to_string(width) + ")" + (relu ? (inplace_relu ? " + ReLU(inplace)" : " + ReLU") : "");
  return model;
}

}  // namespace shardscope
