// VGG16 (configuration D, Simonyan & Zisserman 2014) on 3×224×224 images, laid out as torchvision's
// `vgg16()` without batch norm: features (13 conv3x3 + ReLU, 5 max-pools), AdaptiveAvgPool2d(7, 7),
// flatten, classifier Linear(25088, 4096), ReLU, Dropout, Linear(4096, 4096), ReLU, Dropout, Linear(4096, 1000).
// torchvision uses ReLU(inplace=True) throughout. 138,357,544 parameters.
#include <string>

#include "model/layers_common.h"
#include "model/model.h"

namespace shardscope {

Model build_vgg16(bool inplace_relu) {
  Model model;
  model.spec = "vgg16";
  model.display_name = "VGG16 (224×224)";
  model.input_numel = 3 * 224 * 224;
  model.output_numel = 1000;

  // Channels per conv, 0 = max-pool (torchvision cfgs["D"]).
  const int config[] = {64, 64, 0, 128, 128, 0, 256, 256, 256, 0, 512, 512, 512, 0, 512, 512, 512, 0};
  std::int64_t channels = 3;
  int size = 224;
  int index = 0;  // torchvision's module index inside `features`
  for (int c : config) {
    const std::string prefix = "features." + std::to_string(index);
    if (c == 0) {
      model.layers.push_back(make_maxpool2x2(prefix, channels, size, size));
      size /= 2;
      index += 1;
    } else {
      model.layers.push_back(make_conv2d(prefix, channels, c, 3, size, size));
      model.layers.push_back(
          make_relu("features." + std::to_string(index + 1), static_cast<std::int64_t>(c) * size * size, inplace_relu));
      channels = c;
      index += 2;
    }
  }
  const std::int64_t flat = channels * size * size;  // 512 × 7 × 7 = 25088
  model.layers.push_back(make_adaptive_avgpool_identity("avgpool", flat));
  model.layers.push_back(make_flatten("flatten", flat));
  model.layers.push_back(make_linear("classifier.0", flat, 4096));
  model.layers.push_back(make_relu("classifier.1", 4096, inplace_relu));
  model.layers.push_back(make_dropout("classifier.2", 4096));
  model.layers.push_back(make_linear("classifier.3", 4096, 4096));
  model.layers.push_back(make_relu("classifier.4", 4096, inplace_relu));
  model.layers.push_back(make_dropout("classifier.5", 4096));
  model.layers.push_back(make_linear("classifier.6", 4096, 1000));
  return model;
}

}  // namespace shardscope
