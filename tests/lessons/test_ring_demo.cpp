// The all-reduce lesson's demo, run on the CPU backend's ring: every rank's buffer after every ring step, worked
// out by hand from the ring schedule (cpu_communicator.cpp): in reduce-scatter step s, rank me adds chunk
// (me − s − 2) mod n received from rank me − 1; in all-gather step s it copies chunk (me − s − 1) mod n.
#include <gtest/gtest.h>

#include "lessons/ring_demo.h"

namespace shardscope::lessons {
namespace {

using Buffers = std::vector<std::vector<float>>;

TEST(RingDemo, ThreeRanksSumChunkByChunk) {
  const RingDemo demo = run_ring_all_reduce({{1, 2, 3}, {10, 20, 30}, {4, 5, 6}});
  ASSERT_EQ(demo.steps.size(), 5u);  // the start, then 2(n − 1) = 4 ring steps
  EXPECT_EQ(demo.steps[0].buffers, (Buffers{{1, 2, 3}, {10, 20, 30}, {4, 5, 6}}));
  // Reduce-scatter step 1: rank 0 gets chunk 1 from rank 2 (2 + 5), rank 1 chunk 2 from rank 0 (30 + 3), rank 2
  // chunk 0 from rank 1 (4 + 10).
  EXPECT_EQ(demo.steps[1].buffers, (Buffers{{1, 7, 3}, {10, 20, 33}, {14, 5, 6}}));
  EXPECT_EQ(demo.steps[1].chunk_received, (std::vector<int>{1, 2, 0}));
  // Step 2: each rank completes its own chunk: 14 + 1, 7 + 20, 33 + 6.
  EXPECT_EQ(demo.steps[2].buffers, (Buffers{{15, 7, 3}, {10, 27, 33}, {14, 5, 39}}));
  EXPECT_EQ(demo.steps[2].chunk_received, (std::vector<int>{0, 1, 2}));
  // All-gather: the finished chunks travel on round the ring.
  EXPECT_EQ(demo.steps[3].buffers, (Buffers{{15, 7, 39}, {15, 27, 33}, {14, 27, 39}}));
  EXPECT_EQ(demo.steps[4].buffers, (Buffers{{15, 27, 39}, {15, 27, 39}, {15, 27, 39}}));
  EXPECT_EQ(demo.steps[1].phase, "reduce-scatter");
  EXPECT_EQ(demo.steps[3].phase, "all-gather");
}

TEST(RingDemo, UnevenChunksAndRefusals) {
  // 5 elements over 2 ranks: chunks of 3 and 2 (the first count % n chunks one larger); sums 1+10, ... 5+50.
  const RingDemo demo = run_ring_all_reduce({{1, 2, 3, 4, 5}, {10, 20, 30, 40, 50}});
  EXPECT_EQ(demo.chunks, (std::vector<std::pair<std::size_t, std::size_t>>{{0, 3}, {3, 5}}));
  EXPECT_EQ(demo.result(), (Buffers{{11, 22, 33, 44, 55}, {11, 22, 33, 44, 55}}));
  EXPECT_THROW(run_ring_all_reduce({{1, 2}}), std::invalid_argument);
  EXPECT_THROW(run_ring_all_reduce({{1, 2}, {1}}), std::invalid_argument);
}

}  // namespace
}  // namespace shardscope::lessons
