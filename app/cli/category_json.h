// A per-category byte map as the JSON object every report writes: keys are category_key() (parameters, gradients,
// ddp_buckets, optimizer_state, activations, temporaries, communication_buffers, gathered_parameters), values bytes.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

#include "core/category.h"

namespace shardscope::cli {

inline nlohmann::json categories_json(const CategoryBytes& bytes) {
  nlohmann::json object = nlohmann::json::object();
  for (Category category : kAllCategories) object[std::string(category_key(category))] = bytes[category];
  return object;
}

}  // namespace shardscope::cli
