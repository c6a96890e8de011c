// compute_bucket_assignment_by_size from torch/csrc/distributed/c10d/reducer.cpp (same rule in 1.8 and 2.x):
// tensors are appended to the open bucket, which closes as soon as its size reaches the current limit; the
// limit then advances to the next one (staying on the last). Used by DDP's Reducer and broadcast_coalesced.
#pragma once
#include <vector>

#include "core/units.h"

namespace shardscope {

// Returns buckets as lists of indices into `sizes`. With `sort_by_first_index` (the call without
// tensor_indices) buckets are ordered by their smallest index; otherwise in creation order (bucket rebuild).
std::vector<std::vector<int>> assign_buckets_by_size(const std::vector<Bytes>& sizes, const std::vector<Bytes>& limits,
                                                     bool sort_by_first_index = true);

// torch/nn/parallel/comm.py _take_tensors (Python, used by reduce_add_coalesced): a chunk closes *before* a
// tensor that would take it past the limit (if the chunk is not empty).
std::vector<std::vector<int>> take_tensors_python(const std::vector<Bytes>& sizes, Bytes limit);

}  // namespace shardscope
