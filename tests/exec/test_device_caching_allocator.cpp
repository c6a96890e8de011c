// DeviceCachingAllocator (the CUDA backend's allocator) on a fake device: every expectation is worked by hand from
// the rules of c10/cuda/CUDACachingAllocator.cpp (PyTorch 2.x, default settings), as ../shared/PYTORCH_MEMORY.md
// states them, so the bookkeeping is checked without a GPU.
#include <gtest/gtest.h>

#include <vector>

#include "exec/cuda_host/device_caching_allocator.h"

namespace shardscope::exec {
namespace {

// A device of `capacity` bytes handing out fake addresses (never dereferenced); records what was asked.
class FakeDevice final : public SegmentSource {
 public:
  struct Log {
    std::vector<Bytes> mallocs, frees;
    int refusals = 0;
  };
  FakeDevice(Bytes capacity, Log& log) : capacity_(capacity), log_(log) {}
  std::optional<std::uintptr_t> allocate_segment(Bytes size) override {
    if (in_use_ + size > capacity_) {
      ++log_.refusals;
      return std::nullopt;
    }
    in_use_ += size;
    log_.mallocs.push_back(size);
    const std::uintptr_t address = next_;
    next_ += static_cast<std::uintptr_t>(size) + 4096;
    return address;
  }
  void release_segment(std::uintptr_t, Bytes size) override {
    in_use_ -= size;
    log_.frees.push_back(size);
  }

 private:
  Bytes capacity_;
  Log& log_;
  Bytes in_use_ = 0;
  std::uintptr_t next_ = 0x7f0000000000;
};

DeviceCachingAllocator make(Bytes capacity, FakeDevice::Log& log) {
  return DeviceCachingAllocator(std::make_unique<FakeDevice>(capacity, log));
}

TEST(DeviceCachingAllocator, LinearLayerCountsRoundedBlocksAsTorchMemoryAllocated) {
  // nn.Linear(1000, 1000).to('cuda'): 4,000,000 B weight -> 7813 × 512 = 4,000,256 B in a new 20 MiB segment
  // (1 MiB < size < 10 MiB), split; 4,000 B bias -> 4,096 B in a new 2 MiB small segment. 4,004,352 B allocated.
  FakeDevice::Log log;
  auto allocator = make(80 * kGiB, log);
  const Allocation weight = allocator.allocate(4'000'000, Category::Parameters, "weight");
  const Allocation bias = allocator.allocate(4'000, Category::Parameters, "bias");
  EXPECT_EQ(weight.counted_bytes, 4'000'256);
  EXPECT_EQ(bias.counted_bytes, 4'096);
  EXPECT_EQ(allocator.live_total_bytes(), 4'004'352);
  EXPECT_EQ(allocator.live_bytes()[Category::Parameters], 4'004'352);
  EXPECT_EQ(allocator.reserved_bytes(), 22 * kMiB);
  EXPECT_EQ(log.mallocs, (std::vector<Bytes>{20 * kMiB, 2 * kMiB}));
}

TEST(DeviceCachingAllocator, UnsplitRemainderCountsWhole) {
  // 16,000,000 B -> 16 MiB segment (≥ 10 MiB: rounded up to 2 MiB); the 777,216 B rest is not > 1 MiB: unsplit.
  FakeDevice::Log log;
  auto allocator = make(80 * kGiB, log);
  EXPECT_EQ(allocator.allocate(16'000'000, Category::Activations, "a").counted_bytes, 16 * kMiB);
  EXPECT_EQ(allocator.peak_bytes()[Category::Activations], 16 * kMiB);
}

TEST(DeviceCachingAllocator, FreedBlocksStayCachedAndAreReused) {
  FakeDevice::Log log;
  auto allocator = make(80 * kGiB, log);
  const Allocation a = allocator.allocate(3 * kMiB, Category::Temporaries, "a");  // 20 MiB segment, split
  allocator.free(a.data);
  EXPECT_EQ(allocator.live_total_bytes(), 0);
  EXPECT_EQ(allocator.reserved_bytes(), 20 * kMiB);  // cached, as memory_reserved() keeps it
  const Allocation b = allocator.allocate(5 * kMiB, Category::Temporaries, "b");  // best fit: the merged 20 MiB
  EXPECT_EQ(b.counted_bytes, 5 * kMiB);
  EXPECT_EQ(b.data, a.data);  // the same segment start
  EXPECT_EQ(log.mallocs.size(), 1u);
}

TEST(DeviceCachingAllocator, AllocationEventsCarryBlockSizesAndReservedBytes) {
  FakeDevice::Log log;
  auto allocator = make(80 * kGiB, log);
  std::vector<AllocationEvent> events;
  allocator.set_listener([&](const AllocationEvent& e) { events.push_back(e); });
  const Allocation a = allocator.allocate(100, Category::Gradients, "g");
  allocator.free(a.data);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].counted_bytes, 512);
  EXPECT_EQ(events[0].live_after, 512);
  EXPECT_EQ(events[0].reserved_after, 2 * kMiB);
  EXPECT_EQ(events[1].kind, AllocationEventKind::Free);
  EXPECT_EQ(events[1].live_after, 0);
  EXPECT_EQ(events[1].reserved_after, 2 * kMiB);
}

TEST(DeviceCachingAllocator, CachedSegmentsAreReleasedWhenTheDeviceIsFullThenRetried) {
  // 30 MiB device: a 16 MiB segment stays cached after its block is freed; a 20 MiB segment does not fit beside it,
  // so (as release_cached_blocks) the cached segment goes back and cudaMalloc is retried.
  FakeDevice::Log log;
  auto allocator = make(30 * kMiB, log);
  const Allocation a = allocator.allocate(16'000'000, Category::Activations, "a");
  allocator.free(a.data);
  const Allocation b = allocator.allocate(20'000'000, Category::Activations, "b");  // 20 MiB segment, unsplit
  EXPECT_EQ(b.counted_bytes, 20 * kMiB);
  EXPECT_EQ(log.refusals, 1);
  EXPECT_EQ(log.frees, (std::vector<Bytes>{16 * kMiB}));
  EXPECT_EQ(allocator.reserved_bytes(), 20 * kMiB);
  EXPECT_EQ(allocator.segment_count(), 1u);
}

TEST(DeviceCachingAllocator, DeviceOutOfMemoryThrowsAndLeavesTheCountsAlone) {
  FakeDevice::Log log;
  auto allocator = make(30 * kMiB, log);
  allocator.allocate(16'000'000, Category::Parameters, "w");
  try {
    allocator.allocate(20'000'000, Category::Activations, "big");
    FAIL() << "expected OutOfMemoryError";
  } catch (const OutOfMemoryError& e) {
    EXPECT_EQ(e.tensor_name(), "big");
    EXPECT_EQ(e.requested_bytes(), 20'000'000);
    EXPECT_NE(std::string(e.what()).find("out of memory allocating 'big'"), std::string::npos) << e.what();
  }
  EXPECT_EQ(log.refusals, 2);  // the first cudaMalloc, and the retry after releasing (nothing cached)
  EXPECT_EQ(allocator.live_total_bytes(), 16 * kMiB);
  EXPECT_EQ(allocator.live_allocation_count(), 1u);
}

TEST(DeviceCachingAllocator, EmptyCacheAndDestructionHandEverySegmentBack) {
  FakeDevice::Log log;
  {
    auto allocator = make(80 * kGiB, log);
    const Allocation a = allocator.allocate(1000, Category::Temporaries, "a");
    allocator.allocate(12 * kMiB, Category::Temporaries, "b");  // 12 MiB segment, stays live
    allocator.free(a.data);
    allocator.empty_cache();
    EXPECT_EQ(log.frees, (std::vector<Bytes>{2 * kMiB}));
    EXPECT_EQ(allocator.reserved_bytes(), 12 * kMiB);
  }
  EXPECT_EQ(log.frees, (std::vector<Bytes>{2 * kMiB, 12 * kMiB}));
}

// A free marked to complete late (TensorInfo::free_completes_late: ProcessGroupGloo's record_stream on a broadcast
// flat) drops the live count at once but keeps the block out of the cache until complete_late_frees().
TEST(DeviceCachingAllocator, LateFreeKeepsTheBlockUntilCompleted) {
  FakeDevice::Log log;
  auto allocator = make(80 * kGiB, log);
  const Allocation flat = allocator.allocate(64 * kMiB, Category::CommunicationBuffers, "flat");  // own 64 MiB segment
  allocator.free(flat.data, /*completes_late=*/true);
  EXPECT_EQ(allocator.live_total_bytes(), 0);
  const Allocation bucket = allocator.allocate(64 * kMiB, Category::DdpBuckets, "bucket");
  EXPECT_NE(bucket.data, flat.data);
  EXPECT_EQ(allocator.reserved_bytes(), 128 * kMiB);
  allocator.complete_late_frees();
  const Allocation workspace = allocator.allocate(32 * kMiB, Category::Temporaries, "workspace");
  EXPECT_EQ(workspace.data, flat.data);  // carved from the flat's segment, now back in the cache
  EXPECT_EQ(allocator.reserved_bytes(), 128 * kMiB);
  EXPECT_EQ(log.mallocs, (std::vector<Bytes>{64 * kMiB, 64 * kMiB}));
}

}  // namespace
}  // namespace shardscope::exec
