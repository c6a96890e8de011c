// Rank placement for the CUDA backend: the global-rank rule (node_rank × ranks_per_node + local index), GPU sharing
// when ranks outnumber GPUs on one node, and the refusals; expectations written out by hand.
#include <gtest/gtest.h>

#include "exec/cuda_host/rank_placement.h"

namespace shardscope::exec {
namespace {

TEST(RankPlacement, OneRankPerGpuOnOneNode) {
  const RankPlacement p = place_ranks(2, 1, 4);
  EXPECT_FALSE(p.shares_devices);
  EXPECT_EQ(p.ranks[0].device, 0);
  EXPECT_EQ(p.ranks[1].device, 1);
  EXPECT_EQ(device_label(p, 1, "NVIDIA H100"), "GPU 1 (NVIDIA H100)");
}

TEST(RankPlacement, ConsecutiveRanksShareAGpuWhenThereAreTooFew) {
  const RankPlacement p = place_ranks(4, 1, 2);  // 4 ranks, 2 GPUs: 0,1 -> GPU 0; 2,3 -> GPU 1
  EXPECT_TRUE(p.shares_devices);
  EXPECT_EQ(p.ranks[0].device, 0);
  EXPECT_EQ(p.ranks[1].device, 0);
  EXPECT_EQ(p.ranks[2].device, 1);
  EXPECT_EQ(p.ranks[3].device, 1);
  EXPECT_EQ(device_label(p, 3, "NVIDIA H100"), "GPU 1 (NVIDIA H100, shared by ranks 2,3: local collectives)");
  const RankPlacement three = place_ranks(3, 1, 2);  // floor(local × 2 / 3): 0, 0, 1
  EXPECT_EQ(three.ranks[1].device, 0);
  EXPECT_EQ(three.ranks[2].device, 1);
}

TEST(RankPlacement, GlobalRankIsNodeRankTimesGpusPerNodePlusLocalIndex) {
  const RankPlacement p = place_ranks(8, 2, 4);
  EXPECT_EQ(p.ranks_per_node, 4);
  EXPECT_EQ(p.ranks[5].node, 1);  // 5 = 1 × 4 + 1
  EXPECT_EQ(p.ranks[5].local_index, 1);
  EXPECT_EQ(p.ranks[5].device, 1);
  EXPECT_TRUE(p.is_local(5, 1));
  EXPECT_FALSE(p.is_local(5, 0));
  EXPECT_EQ(device_label(p, 5, "A100"), "node 1 GPU 1 (A100)");
}

TEST(RankPlacement, RefusesWhatCannotRun) {
  EXPECT_THROW(place_ranks(5, 2, 4), std::invalid_argument);  // does not split over the nodes
  EXPECT_THROW(place_ranks(8, 2, 2), std::invalid_argument);  // sharing across nodes
  EXPECT_THROW(place_ranks(2, 1, 0), std::invalid_argument);  // no GPU
}

}  // namespace
}  // namespace shardscope::exec
