// Names of the memory categories.
#include "core/category.h"

namespace shardscope {

namespace {
struct CategoryName {
  Category category;
  std::string_view key;
  std::string_view label;
};
constexpr std::array<CategoryName, kCategoryCount> kNames = {{
    {Category::Parameters, "parameters", "parameters"},
    {Category::Gradients, "gradients", "gradients"},
    {Category::DdpBuckets, "ddp_buckets", "DDP buckets"},
    {Category::OptimizerState, "optimizer_state", "optimizer state"},
    {Category::Activations, "activations", "activations"},
    {Category::Temporaries, "temporaries", "temporaries"},
    {Category::CommunicationBuffers, "communication_buffers", "communication buffers"},
    {Category::GatheredParameters, "gathered_parameters", "gathered parameters"},
}};
}  // namespace

std::string_view category_key(Category category) { return kNames[static_cast<int>(category)].key; }
std::string_view category_label(Category category) { return kNames[static_cast<int>(category)].label; }

std::optional<Category> category_from_key(std::string_view key) {
  for (const auto& name : kNames)
    if (name.key == key) return name.category;
  return std::nullopt;
}

}  // namespace shardscope
