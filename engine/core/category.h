// Memory categories: every byte a plan allocates belongs to exactly one. Names here are the JSON keys.
#pragma once
#include <array>
#include <optional>
#include <string_view>

#include "core/units.h"

namespace shardscope {

enum class Category : int {
  Parameters = 0,
  Gradients,
  DdpBuckets,
  OptimizerState,
  Activations,
  Temporaries,           // autograd buffers, activation gradients, library workspaces
  CommunicationBuffers,  // flat copies made for collectives
  // Whole (unsharded) parameters a sharding strategy all-gathers for a unit's forward or backward and frees after:
  // FSDP2's all_gather_outputs, ZeRO-3's gathered units. Apart from communication buffers, so that a student sees
  // the sharded parameters (blue) and the gathered copies as what they are, and compare puts zero3 and fsdp side by side.
  GatheredParameters,
};
constexpr int kCategoryCount = 8;

constexpr std::array<Category, kCategoryCount> kAllCategories = {
    Category::Parameters,  Category::Gradients,   Category::DdpBuckets,          Category::OptimizerState,
    Category::Activations, Category::Temporaries, Category::CommunicationBuffers, Category::GatheredParameters};

// Stable snake_case key ("ddp_buckets"), used in JSON and CSV.
std::string_view category_key(Category category);
// Human label ("DDP buckets").
std::string_view category_label(Category category);
std::optional<Category> category_from_key(std::string_view key);

// Bytes per category; indexable by Category.
struct CategoryBytes {
  std::array<Bytes, kCategoryCount> bytes{};
  Bytes& operator[](Category c) { return bytes[static_cast<int>(c)]; }
  Bytes operator[](Category c) const { return bytes[static_cast<int>(c)]; }
  Bytes total() const {
    Bytes sum = 0;
    for (Bytes b : bytes) sum += b;
    return sum;
  }
};

}  // namespace shardscope
