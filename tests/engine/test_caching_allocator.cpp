// CachingAllocatorModel against the rules of c10/cuda/CUDACachingAllocator.cpp, worked by hand.
#include <gtest/gtest.h>

#include "memory/caching_allocator.h"

namespace shardscope {
namespace {

constexpr Bytes kBig = 80 * kGiB;

TEST(CachingAllocator, RoundsToMultiplesOf512) {
  EXPECT_EQ(CachingAllocatorModel::round_size(1), 512);
  EXPECT_EQ(CachingAllocatorModel::round_size(512), 512);
  EXPECT_EQ(CachingAllocatorModel::round_size(513), 1024);
  EXPECT_EQ(CachingAllocatorModel::round_size(4000), 4096);
  EXPECT_EQ(CachingAllocatorModel::round_size(4'000'000), 4'000'256);  // 7813 × 512
}

TEST(CachingAllocator, SegmentSizes) {
  EXPECT_EQ(CachingAllocatorModel::allocation_size(4096), 2 * kMiB);
  EXPECT_EQ(CachingAllocatorModel::allocation_size(1 * kMiB), 2 * kMiB);
  EXPECT_EQ(CachingAllocatorModel::allocation_size(1 * kMiB + 512), 20 * kMiB);
  EXPECT_EQ(CachingAllocatorModel::allocation_size(10 * kMiB - 512), 20 * kMiB);
  EXPECT_EQ(CachingAllocatorModel::allocation_size(10 * kMiB), 10 * kMiB);
  EXPECT_EQ(CachingAllocatorModel::allocation_size(16'000'000), 16 * kMiB);  // rounded up to 2 MiB
}

// PYTORCH_MEMORY.md worked example: nn.Linear(1000, 1000).to('cuda') counts 4,004,352 B.
TEST(CachingAllocator, LinearThousandWorkedExample) {
  CachingAllocatorModel allocator(kBig);
  const auto weight = allocator.allocate(4'000'000);  // 20 MiB segment, split: the rest is > 1 MiB
  const auto bias = allocator.allocate(4'000);        // small pool, 2 MiB segment
  EXPECT_EQ(weight.counted, 4'000'256);
  EXPECT_EQ(bias.counted, 4'096);
  EXPECT_EQ(allocator.allocated(), 4'004'352);
  EXPECT_EQ(allocator.reserved(), 22 * kMiB);
}

// A 16,000,000 B weight gets a 16 MiB segment whose 777,216 B remainder is too small to split.
TEST(CachingAllocator, UnsplitLargeBlockCountsWhole) {
  CachingAllocatorModel allocator(kBig);
  EXPECT_EQ(allocator.allocate(16'000'000).counted, 16'777'216);
}

// CUDACachingAllocator keys free blocks by (stream, size, address) and get_free_block takes a block only from the
// requesting stream: a 12 MiB block freed on stream 0 is not handed to stream 3, which cudaMallocs a segment of its
// own (12 MiB); stream 0 then gets its block back. A split remainder stays with the segment's stream.
TEST(CachingAllocator, FreeBlocksServeOnlyTheirOwnStream) {
  CachingAllocatorModel allocator(kBig);
  const auto a = allocator.allocate(12 * kMiB, 0);
  allocator.free(a.block);
  const auto b = allocator.allocate(12 * kMiB, 3);
  EXPECT_EQ(allocator.reserved(), 24 * kMiB);
  const auto c = allocator.allocate(12 * kMiB, 0);
  EXPECT_EQ(c.block, a.block);
  EXPECT_EQ(allocator.reserved(), 24 * kMiB);
  // 4 MiB on stream 1 opens a 20 MiB segment (16 MiB remainder, split off); stream 2's 4 MiB cannot use that
  // remainder, stream 1's next 4 MiB can.
  allocator.allocate(4 * kMiB, 1);
  allocator.allocate(4 * kMiB, 2);
  EXPECT_EQ(allocator.reserved(), 24 * kMiB + 2 * 20 * kMiB);
  allocator.allocate(4 * kMiB, 1);
  EXPECT_EQ(allocator.reserved(), 24 * kMiB + 2 * 20 * kMiB);
  EXPECT_EQ(allocator.allocated(), 12 * kMiB + 12 * kMiB + 3 * 4 * kMiB);
  (void)b;
}

TEST(CachingAllocator, FreedBlocksAreReusedBestFitAndMerged) {
  CachingAllocatorModel allocator(kBig);
  const auto a = allocator.allocate(12 * kMiB);  // own 12 MiB segment
  const auto b = allocator.allocate(30 * kMiB);  // own 30 MiB segment
  allocator.free(a.block);
  allocator.free(b.block);
  EXPECT_EQ(allocator.allocated(), 0);
  EXPECT_EQ(allocator.reserved(), 42 * kMiB);
  // 11 MiB fits both; best fit is the 12 MiB block, remainder 1 MiB is not > 1 MiB: counts 12 MiB.
  const auto c = allocator.allocate(11 * kMiB);
  EXPECT_EQ(c.counted, 12 * kMiB);
  EXPECT_EQ(allocator.reserved(), 42 * kMiB);
  // 5 MiB from the 30 MiB block: split (25 MiB left); two more halves of the rest merge back on free.
  const auto d = allocator.allocate(5 * kMiB);
  const auto e = allocator.allocate(5 * kMiB);
  EXPECT_EQ(d.counted, 5 * kMiB);
  allocator.free(d.block);
  allocator.free(e.block);
  const auto f = allocator.allocate(30 * kMiB);  // fits only if the pieces merged into one 30 MiB block
  EXPECT_EQ(f.counted, 30 * kMiB);
  EXPECT_EQ(allocator.reserved(), 42 * kMiB);
  EXPECT_EQ(allocator.segment_count(), 2u);
}

TEST(CachingAllocator, SmallPoolSplitsDownTo512) {
  CachingAllocatorModel allocator(kBig);
  for (int i = 0; i < 4096; ++i) allocator.allocate(512);  // exactly fills one 2 MiB segment
  EXPECT_EQ(allocator.reserved(), 2 * kMiB);
  allocator.allocate(512);
  EXPECT_EQ(allocator.reserved(), 4 * kMiB);
}

TEST(CachingAllocator, ReleasesCachedSegmentsBeforeOutOfMemory) {
  CachingAllocatorModel allocator(64 * kMiB);
  const auto a = allocator.allocate(40 * kMiB);
  allocator.free(a.block);  // cached: 40 MiB reserved, nothing allocated
  const auto b = allocator.allocate(50 * kMiB);  // 40 + 50 > 64: the cached segment is released first
  EXPECT_FALSE(b.out_of_memory);
  EXPECT_EQ(allocator.reserved(), 50 * kMiB);
  const auto c = allocator.allocate(20 * kMiB);  // 50 + 20 > 64 and nothing cached: out of memory
  EXPECT_TRUE(c.out_of_memory);
}

// A free whose block another stream used (record_stream) is done in two halves: memory_allocated drops when the
// free is requested, but until the stream's event completes the block is neither reused nor merged.
TEST(CachingAllocator, RequestedFreeIsNotReusedOrMergedUntilCompleted) {
  CachingAllocatorModel allocator(kBig);
  const auto a = allocator.allocate(12 * kMiB);  // own 12 MiB segment
  allocator.free_requested(a.block);
  EXPECT_EQ(allocator.allocated(), 0);
  const auto b = allocator.allocate(12 * kMiB);  // a's block is still out of the cache: a new segment
  EXPECT_EQ(allocator.reserved(), 24 * kMiB);
  allocator.free(b.block);
  allocator.complete_requested_frees();
  const auto c = allocator.allocate(12 * kMiB);  // both cached now: best fit takes the lower address, a's
  const auto d = allocator.allocate(12 * kMiB);
  EXPECT_EQ(allocator.reserved(), 24 * kMiB);
  EXPECT_EQ(c.counted + d.counted, 24 * kMiB);
  // Within one 20 MiB segment: x | y | rest. y's free is requested, then x is freed: x cannot merge with y yet, so a
  // 5 MiB request fits x's 3 MiB block nowhere in that segment... until y completes and the three merge.
  CachingAllocatorModel split(kBig);
  const auto x = split.allocate(3 * kMiB);
  const auto y = split.allocate(3 * kMiB);
  const auto z = split.allocate(13 * kMiB);  // 14 MiB left in the segment: 13 MiB leaves 1 MiB, not split: whole
  EXPECT_EQ(z.counted, 14 * kMiB);
  split.free_requested(y.block);
  split.free(x.block);
  EXPECT_EQ(split.reserved(), 20 * kMiB);
  const auto w = split.allocate(5 * kMiB);  // x's 3 MiB is too small, y is pending: a new 20 MiB segment
  EXPECT_EQ(split.reserved(), 40 * kMiB);
  split.free(w.block);
  split.complete_requested_frees();  // y merges with x: a 6 MiB block at the segment's start
  const auto v = split.allocate(6 * kMiB);  // best fit: the merged 6 MiB (the new segment's 20 MiB is larger)
  EXPECT_EQ(v.counted, 6 * kMiB);
  EXPECT_EQ(split.reserved(), 40 * kMiB);
}

// empty_cache / the retry before out of memory first completes the requested frees, as release_cached_blocks
// runs synchronize_and_free_events.
TEST(CachingAllocator, ReleasingTheCacheCompletesRequestedFrees) {
  CachingAllocatorModel allocator(64 * kMiB);
  const auto a = allocator.allocate(40 * kMiB);
  allocator.free_requested(a.block);
  const auto b = allocator.allocate(50 * kMiB);  // only fits once a's segment is completed and released
  EXPECT_FALSE(b.out_of_memory);
  EXPECT_EQ(allocator.reserved(), 50 * kMiB);
}

}  // namespace
}  // namespace shardscope
