// HostBlockCache: a freed block comes back for a request of its size, never for another size; what it holds (live
// plus cached) stays within the peak of live bytes, hand-counted in 64-byte-rounded sizes; CpuTrackingAllocator
// reuses blocks while still counting the exact requests.
#include <gtest/gtest.h>

#include <cstdint>
#include <utility>
#include <vector>

#include "exec/cpu/host_memory.h"
#include "exec/tracking_allocator.h"

namespace shardscope::exec {
namespace {

TEST(HostBlockCache, AFreedBlockServesTheNextRequestOfItsSize) {
  HostBlockCache cache(64);
  void* first = cache.allocate(1000);  // rounded: 1024
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(first) % 64, 0u);
  EXPECT_EQ(cache.live_bytes(), 1024u);
  cache.release(first, 1000);
  EXPECT_EQ(cache.live_bytes(), 0u);
  EXPECT_EQ(cache.cached_bytes(), 1024u);
  void* again = cache.allocate(1000);
  EXPECT_EQ(again, first);
  EXPECT_EQ(cache.cached_bytes(), 0u);
  // 1020 rounds to the same 1024: the same block may serve it.
  cache.release(again, 1000);
  EXPECT_EQ(cache.allocate(1020), first);
  cache.release(first, 1020);
}

TEST(HostBlockCache, AnotherSizeGetsAFreshBlockWithinThePeak) {
  HostBlockCache cache(64);
  void* a = cache.allocate(4096);
  void* b = cache.allocate(4096);  // peak live 8192
  cache.release(a, 4096);
  // live 4096 + cached 4096 + 2048 = 10240 > peak 8192: the cached block goes, then the request is served fresh.
  void* c = cache.allocate(2048);
  EXPECT_EQ(cache.cached_bytes(), 0u);
  EXPECT_EQ(cache.live_bytes(), 6144u);  // 4096 + 2048
  cache.release(b, 4096);
  cache.release(c, 2048);
  EXPECT_EQ(cache.cached_bytes(), 6144u);  // both kept: 6144 <= peak 8192
  // 0 + 6144 + 8192 > max(peak 8192, 0 + 8192): everything cached is freed for the new size.
  void* d = cache.allocate(8192);
  EXPECT_EQ(cache.cached_bytes(), 0u);
  EXPECT_EQ(cache.live_bytes(), 8192u);
  cache.release(d, 8192);
}

TEST(HostBlockCache, EvictsTheSmallestBlockThatCoversTheExcess) {
  HostBlockCache cache(64);
  void* small = cache.allocate(64);
  void* medium = cache.allocate(1024);
  void* large = cache.allocate(4096);
  void* pinned = cache.allocate(128);  // peak live 64 + 1024 + 4096 + 128 = 5312
  cache.release(small, 64);
  cache.release(medium, 1024);
  cache.release(large, 4096);
  // live 128 + cached 5184 + 640 = 5952 > 5312: excess 640; the 1024-byte block alone covers it.
  void* fresh = cache.allocate(640);
  EXPECT_EQ(cache.cached_bytes(), 64u + 4096u);
  EXPECT_EQ(cache.allocate(64), small);
  EXPECT_EQ(cache.allocate(4096), large);
  for (auto [block, size] : {std::pair{small, 64}, {large, 4096}, {pinned, 128}, {fresh, 640}}) cache.release(block, size);
  cache.trim();
  EXPECT_EQ(cache.cached_bytes(), 0u);
}

TEST(HostBlockCache, TrackingAllocatorReusesBlocksAndCountsExactBytes) {
  CpuTrackingAllocator allocator;
  std::vector<AllocationEvent> events;
  allocator.set_listener([&](const AllocationEvent& e) { events.push_back(e); });
  const Allocation first = allocator.allocate(1000, Category::Gradients, "w.grad");
  allocator.free(first.data);
  const Allocation second = allocator.allocate(1000, Category::Gradients, "w.grad");
  EXPECT_EQ(second.data, first.data);  // the step's second gradient lands in memory already faulted in
  EXPECT_EQ(second.counted_bytes, 1000);
  EXPECT_EQ(allocator.live_total_bytes(), 1000);
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[1].reserved_after, 0);  // the cached block is not counted: reserved follows the plan's bytes
  EXPECT_EQ(events[2].reserved_after, 1000);
  allocator.free(second.data);
}

}  // namespace
}  // namespace shardscope::exec
