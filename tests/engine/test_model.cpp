// Model specs and layer tables against published and hand-computed figures.
#include <gtest/gtest.h>

#include "model/model.h"

namespace shardscope {
namespace {

TEST(Mlp, SpecAndParameterCount) {
  const Model m = parse_model_spec("mlp:20x2000");
  EXPECT_EQ(m.layers.size(), 20u);
  EXPECT_EQ(m.parameter_count(), 20 * (2000 * 2000 + 2000));
  const Model relu = parse_model_spec("mlp:4x1024:relu");
  EXPECT_EQ(relu.layers.size(), 7u);  // Linear, ReLU, Linear, ReLU, Linear, ReLU, Linear
  EXPECT_EQ(relu.layers[1].kind, LayerKind::ReLU);
  EXPECT_FALSE(relu.layers[1].inplace);
  EXPECT_EQ(relu.layers[0].forward_flops_per_sample, 2.0 * 1024 * 1024);
}

TEST(Mlp, BadSpecsAreRejectedWithUsage) {
  for (const char* spec : {"mlp", "mlp:20", "mlp:0x10", "mlp:2x-3", "mlp:2x3:gelu", "mlp:axb", "resnet"}) {
    try {
      parse_model_spec(spec);
      ADD_FAILURE() << spec << " was accepted";
    } catch (const ModelSpecError& error) {
      EXPECT_NE(std::string(error.what()).find("expected"), std::string::npos) << error.what();
    }
  }
}

// torchvision vgg16(): 138,357,544 parameters (the figure torchvision's documentation lists).
TEST(Vgg16, PublishedParameterCount) {
  const Model m = parse_model_spec("vgg16");
  EXPECT_EQ(m.parameter_count(), 138'357'544);
  int convs = 0, pools = 0, linears = 0;
  for (const auto& layer : m.layers) {
    convs += layer.kind == LayerKind::Conv2d;
    pools += layer.kind == LayerKind::MaxPool2d;
    linears += layer.kind == LayerKind::Linear;
  }
  EXPECT_EQ(convs, 13);
  EXPECT_EQ(pools, 5);
  EXPECT_EQ(linears, 3);
  EXPECT_TRUE(m.has_unknown_workspaces());
}

TEST(Vgg16, ShapesSavedTensorsAndFlops) {
  const Model m = parse_model_spec("vgg16");
  const Layer& conv1 = m.layers[0];
  EXPECT_EQ(conv1.in_numel, 3 * 224 * 224);
  EXPECT_EQ(conv1.out_numel, 64 * 224 * 224);
  EXPECT_EQ(conv1.forward_flops_per_sample, 2.0 * 3 * 64 * 9 * 224 * 224);
  EXPECT_TRUE(m.layers[1].inplace);  // torchvision's ReLU(inplace=True)
  const Layer& pool1 = m.layers[4];
  EXPECT_EQ(pool1.kind, LayerKind::MaxPool2d);
  EXPECT_EQ(pool1.out_numel, 64 * 112 * 112);
  EXPECT_EQ(pool1.extra_saved_bytes_per_sample, 64 * 112 * 112 * 8);  // int64 indices
  // Classifier input: 512 × 7 × 7 after five halvings of 224.
  bool found = false;
  for (const auto& layer : m.layers)
    if (layer.name == "classifier.0") {
      EXPECT_EQ(layer.in_numel, 25088);
      found = true;
    }
  EXPECT_TRUE(found);
  // Total forward FLOPs per image ≈ 31 GFLOPs (15.5 G multiply-adds, as commonly cited for VGG16).
  double flops = 0;
  for (const auto& layer : m.layers) flops += layer.forward_flops_per_sample;
  EXPECT_NEAR(flops / 1e9, 31.0, 0.5);
}

TEST(Vgg16, InplaceReluCanBeTurnedOff) {
  ModelOptions options;
  options.inplace_relu_set = true;
  options.inplace_relu = false;
  EXPECT_FALSE(parse_model_spec("vgg16", options).layers[1].inplace);
}

}  // namespace
}  // namespace shardscope
