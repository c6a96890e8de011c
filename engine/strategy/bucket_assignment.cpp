// Bucket assignment rules of PyTorch's c10d and comm utilities.
#include "strategy/bucket_assignment.h"

#include <algorithm>

namespace shardscope {

std::vector<std::vector<int>> assign_buckets_by_size(const std::vector<Bytes>& sizes, const std::vector<Bytes>& limits,
                                                     bool sort_by_first_index) {
  std::vector<std::vector<int>> buckets;
  std::vector<int> open;
  Bytes open_size = 0;
  std::size_t limit_index = 0;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    open.push_back(static_cast<int>(i));
    open_size += sizes[i];
    if (open_size >= limits[limit_index]) {
      buckets.push_back(std::move(open));
      open.clear();
      open_size = 0;
      if (limit_index + 1 < limits.size()) ++limit_index;
    }
  }
  if (!open.empty()) buckets.push_back(std::move(open));
  if (sort_by_first_index)
    std::stable_sort(buckets.begin(), buckets.end(), [](const auto& a, const auto& b) { return a.front() < b.front(); });
  return buckets;
}

std::vector<std::vector<int>> take_tensors_python(const std::vector<Bytes>& sizes, Bytes limit) {
  std::vector<std::vector<int>> chunks;
  std::vector<int> open;
  Bytes open_size = 0;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    if (!open.empty() && open_size + sizes[i] > limit) {
      chunks.push_back(std::move(open));
      open.clear();
      open_size = 0;
    }
    open.push_back(static_cast<int>(i));
    open_size += sizes[i];
  }
  if (!open.empty()) chunks.push_back(std::move(open));
  return chunks;
}

}  // namespace shardscope
