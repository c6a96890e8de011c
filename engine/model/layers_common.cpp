// Layer constructors: parameter shapes, saved tensors and FLOPs per sample for each layer kind.
#include "model/layers_common.h"

namespace shardscope {

Layer make_linear(const std::string& name, std::int64_t in, std::int64_t out) {
  Layer layer;
  layer.name = name;
  layer.kind = LayerKind::Linear;
  layer.params = {{"weight", in * out}, {"bias", out}};
  layer.in_numel = in;
  layer.out_numel = out;
  layer.saves_input = true;
  layer.forward_flops_per_sample = 2.0 * static_cast<double>(in) * static_cast<double>(out);
  return layer;
}

Layer make_relu(const std::string& name, std::int64_t numel, bool inplace) {
  Layer layer;
  layer.name = name;
  layer.kind = LayerKind::ReLU;
  layer.in_numel = layer.out_numel = numel;
  layer.saves_output = true;
  layer.inplace = inplace;
  layer.forward_flops_per_sample = static_cast<double>(numel);
  return layer;
}

Layer make_conv2d(const std::string& name, std::int64_t cin, std::int64_t cout, int kernel, int h, int w) {
  Layer layer;
  layer.name = name;
  layer.kind = LayerKind::Conv2d;
  layer.params = {{"weight", cout * cin * kernel * kernel}, {"bias", cout}};
  layer.in_numel = cin * h * w;
  layer.out_numel = cout * h * w;
  layer.saves_input = true;
  layer.forward_flops_per_sample =
      2.0 * static_cast<double>(cin) * static_cast<double>(cout) * kernel * kernel * h * w;
  layer.workspace_unknown = true;
  return layer;
}

Layer make_maxpool2x2(const std::string& name, std::int64_t c, int h, int w) {
  Layer layer;
  layer.name = name;
  layer.kind = LayerKind::MaxPool2d;
  layer.in_numel = c * h * w;
  layer.out_numel = c * (h / 2) * (w / 2);
  layer.saves_input = true;
  layer.extra_saved_bytes_per_sample = layer.out_numel * 8;  // int64 indices
  layer.forward_flops_per_sample = static_cast<double>(layer.in_numel);
  return layer;
}

Layer make_adaptive_avgpool_identity(const std::string& name, std::int64_t numel) {
  Layer layer;
  layer.name = name;
  layer.kind = LayerKind::AdaptiveAvgPool2d;
  layer.in_numel = layer.out_numel = numel;
  layer.saves_input = true;
  layer.forward_flops_per_sample = static_cast<double>(numel);
  return layer;
}

Layer make_flatten(const std::string& name, std::int64_t numel) {
  Layer layer;
  layer.name = name;
  layer.kind = LayerKind::Flatten;
  layer.in_numel = layer.out_numel = numel;
  layer.is_view = true;
  return layer;
}

Layer make_dropout(const std::string& name, std::int64_t numel) {
  Layer layer;
  layer.name = name;
  layer.kind = LayerKind::Dropout;
  layer.in_numel = layer.out_numel = numel;
  layer.extra_saved_bytes_per_sample = numel;  // bool mask
  layer.identity_in_eval = true;
  layer.forward_flops_per_sample = static_cast<double>(numel);
  return layer;
}

}  // namespace shardscope
