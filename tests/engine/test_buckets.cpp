// Bucket and chunk assignment rules (c10d compute_bucket_assignment_by_size, comm.py _take_tensors,
// ZeroRedundancyOptimizer partitioning, DataParallel chunking), checked on hand-worked inputs.
#include <gtest/gtest.h>

#include "strategy/bucket_assignment.h"
#include "strategy/data_parallel.h"
#include "strategy/zero1.h"

namespace shardscope {
namespace {

using Buckets = std::vector<std::vector<int>>;

TEST(BucketAssignment, ClosesOnceTheLimitIsReachedThenAdvancesLimit) {
  // limits [10, 25]: 4+7 = 11 ≥ 10 closes; then 9+9 = 18 < 25, +9 = 27 ≥ 25 closes; 1 left over.
  EXPECT_EQ(assign_buckets_by_size({4, 7, 9, 9, 9, 1}, {10, 25}), (Buckets{{0, 1}, {2, 3, 4}, {5}}));
  // A tensor larger than the limit gets its own bucket; the last limit stays in force.
  EXPECT_EQ(assign_buckets_by_size({30, 30, 5}, {10, 25}), (Buckets{{0}, {1}, {2}}));
}

TEST(BucketAssignment, PythonTakeTensorsClosesBeforeOverflow) {
  // limit 10: 4+7 would overflow, so [4] closes first; 7+3 = 10 is not over; 12 alone.
  EXPECT_EQ(take_tensors_python({4, 7, 3, 12}, 10), (Buckets{{0}, {1, 2}, {3}}));
}

TEST(ZeroPartition, GreedyToTheLightestRank) {
  // Sorted by size (1.10+): 8→r0, 5→r1, 3→r1 (5 < 8), 1→r1 (8 vs 8: lowest rank → r0). Registration order: [3,5,1,8].
  EXPECT_EQ(partition_parameters({3, 5, 1, 8}, 2, true), (std::vector<int>{1, 1, 0, 0}));
  // Registration order (1.8): 3→r0, 5→r1, 1→r0 (3 < 5), 8→r0 (4 < 5).
  EXPECT_EQ(partition_parameters({3, 5, 1, 8}, 2, false), (std::vector<int>{0, 1, 0, 0}));
}

TEST(DataParallelChunks, TorchChunkSizes) {
  EXPECT_EQ(data_parallel_chunk_sizes(8, 2), (std::vector<std::int64_t>{4, 4}));
  EXPECT_EQ(data_parallel_chunk_sizes(10, 4), (std::vector<std::int64_t>{3, 3, 3, 1}));
  EXPECT_EQ(data_parallel_chunk_sizes(5, 4), (std::vector<std::int64_t>{2, 2, 1, 0}));  // only 3 devices used
}

TEST(DataParallelChunks, BalancedDataParallelRule) {
  EXPECT_EQ(balanced_chunk_sizes(32, 4, 2), (std::vector<std::int64_t>{2, 10, 10, 10}));  // unit = 30 // 3
  EXPECT_EQ(balanced_chunk_sizes(33, 4, 2), (std::vector<std::int64_t>{2, 11, 10, 10}));  // remainder to device 1
  EXPECT_EQ(balanced_chunk_sizes(30, 3, 0), (std::vector<std::int64_t>{0, 15, 15}));
  EXPECT_EQ(balanced_chunk_sizes(32, 4, 8), (std::vector<std::int64_t>{8, 8, 8, 8}));    // g ≥ unit: equal chunks
}

}  // namespace
}  // namespace shardscope
