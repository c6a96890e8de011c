// Constructors for the layer kinds, shared by the model builders. Each states what its autograd node saves.
#pragma once
#include <string>

#include "model/layer.h"

namespace shardscope {

// nn.Linear(in, out) with bias: runs as addmm(bias, x, W.t()), saves its input (mat1); the weight is a parameter.
Layer make_linear(const std::string& name, std::int64_t in, std::int64_t out);
// nn.ReLU: saves its result (threshold_backward(grad, result, 0)).
Layer make_relu(const std::string& name, std::int64_t numel, bool inplace);
// nn.Conv2d(cin, cout, k, padding=k/2) with bias on an h×w input, stride 1: saves input (and weight).
Layer make_conv2d(const std::string& name, std::int64_t cin, std::int64_t cout, int kernel, int h, int w);
// nn.MaxPool2d(2, 2) on c×h×w: max_pool2d_with_indices saves input and int64 indices.
Layer make_maxpool2x2(const std::string& name, std::int64_t c, int h, int w);
// nn.AdaptiveAvgPool2d to the same size (VGG's 7×7): allocates its output, saves its input.
Layer make_adaptive_avgpool_identity(const std::string& name, std::int64_t numel);
// nn.Flatten / x.view(B, -1): a view, nothing saved.
Layer make_flatten(const std::string& name, std::int64_t numel);
// nn.Dropout(p) in training: native_dropout returns output and a bool mask (1 byte per element); saves the mask.
Layer make_dropout(const std::string& name, std::int64_t numel);

}  // namespace shardscope
