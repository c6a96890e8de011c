// Names of layer kinds, as PyTorch spells the modules.
#include "model/layer.h"

namespace shardscope {

std::string layer_kind_name(LayerKind kind) {
  switch (kind) {
    case LayerKind::Linear: return "Linear";
    case LayerKind::Conv2d: return "Conv2d";
    case LayerKind::ReLU: return "ReLU";
    case LayerKind::MaxPool2d: return "MaxPool2d";
    case LayerKind::AdaptiveAvgPool2d: return "AdaptiveAvgPool2d";
    case LayerKind::Flatten: return "Flatten";
    case LayerKind::Dropout: return "Dropout";
    case LayerKind::Embedding: return "Embedding";
    case LayerKind::TransformerBlock: return "TransformerBlock";
    case LayerKind::LayerNorm: return "LayerNorm";
    case LayerKind::RmsNorm: return "RMSNorm";
    case LayerKind::ParameterBlock: return "ParameterBlock";
  }
  return "?";
}

}  // namespace shardscope
