// CpuTrackingAllocator: exact per-category accounting and peaks (hand-counted), listener events, alignment,
// injected failures and their messages, misuse, and concurrent use.
#include <gtest/gtest.h>

#include <cstdint>
#include <thread>
#include <vector>

#include "exec/tracking_allocator.h"

namespace shardscope::exec {
namespace {

TEST(TrackingAllocator, CountsExactBytesPerCategoryWithPeaks) {
  CpuTrackingAllocator allocator;
  const Allocation weight = allocator.allocate(1000, Category::Parameters, "fc1.weight");
  const Allocation grad = allocator.allocate(400, Category::Gradients, "fc1.weight.grad");
  const Allocation act = allocator.allocate(3000, Category::Activations, "fc1.out");
  EXPECT_EQ(weight.counted_bytes, 1000);  // exact: no rounding to the 64-byte alignment
  EXPECT_EQ(allocator.live_bytes()[Category::Parameters], 1000);
  EXPECT_EQ(allocator.live_bytes()[Category::Gradients], 400);
  EXPECT_EQ(allocator.live_bytes()[Category::Activations], 3000);
  EXPECT_EQ(allocator.live_total_bytes(), 4400);  // 1000 + 400 + 3000
  allocator.free(act.data);
  const Allocation temp = allocator.allocate(100, Category::Temporaries, "workspace");
  const Allocation act2 = allocator.allocate(2500, Category::Activations, "fc2.out");
  // live: 1000 + 400 + 100 + 2500 = 4000; the total peak stays at 4400 from before the free
  EXPECT_EQ(allocator.live_total_bytes(), 4000);
  EXPECT_EQ(allocator.peak_total_bytes(), 4400);
  EXPECT_EQ(allocator.peak_bytes()[Category::Activations], 3000);
  EXPECT_EQ(allocator.peak_bytes()[Category::Temporaries], 100);
  EXPECT_EQ(allocator.live_allocation_count(), 4u);
  allocator.reset_peaks();
  EXPECT_EQ(allocator.peak_total_bytes(), 4000);
  EXPECT_EQ(allocator.peak_bytes()[Category::Activations], 2500);
  for (const Allocation& a : {weight, grad, temp, act2}) allocator.free(a.data);
  EXPECT_EQ(allocator.live_total_bytes(), 0);
  EXPECT_EQ(allocator.live_bytes().total(), 0);
}

TEST(TrackingAllocator, BlocksAre64ByteAlignedAndWritable) {
  CpuTrackingAllocator allocator;
  std::vector<Allocation> blocks;
  for (Bytes size : {1, 3, 63, 64, 65, 100, 4096, 100'003}) {
    const Allocation a = allocator.allocate(size, Category::Temporaries, "t");
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(a.data) % 64, 0u) << size;
    static_cast<unsigned char*>(a.data)[size - 1] = 0xAB;  // the last requested byte is ours
    blocks.push_back(a);
  }
  EXPECT_EQ(allocator.live_total_bytes(), 1 + 3 + 63 + 64 + 65 + 100 + 4096 + 100'003);
  for (const Allocation& a : blocks) allocator.free(a.data);
}

TEST(TrackingAllocator, ListenerSeesEveryEventInOrderWithTotals) {
  CpuTrackingAllocator allocator;
  std::vector<AllocationEvent> events;
  std::vector<std::string> names;  // event names are views valid only during the call
  allocator.set_listener([&](const AllocationEvent& e) {
    events.push_back(e);
    names.emplace_back(e.name);
  });
  const Allocation a = allocator.allocate(256, Category::Parameters, "w");
  const Allocation b = allocator.allocate(128, Category::OptimizerState, "adam.m");
  allocator.free(a.data);
  allocator.free(b.data);
  ASSERT_EQ(events.size(), 4u);
  EXPECT_EQ(events[0].kind, AllocationEventKind::Alloc);
  EXPECT_EQ(events[0].id, 1u);
  EXPECT_EQ(events[0].live_after, 256);
  EXPECT_EQ(events[1].id, 2u);
  EXPECT_EQ(events[1].category, Category::OptimizerState);
  EXPECT_EQ(events[1].live_after, 384);  // 256 + 128
  EXPECT_EQ(events[1].reserved_after, 384);
  EXPECT_EQ(events[2].kind, AllocationEventKind::Free);
  EXPECT_EQ(events[2].id, 1u);
  EXPECT_EQ(events[2].counted_bytes, 256);
  EXPECT_EQ(events[2].live_after, 128);
  EXPECT_EQ(events[3].live_after, 0);
  EXPECT_EQ(names, (std::vector<std::string>{"w", "adam.m", "w", "adam.m"}));
}

TEST(TrackingAllocator, InjectedNthFailureNamesTensorCategoryBytesAndWhatIsLive) {
  CpuTrackingAllocator allocator;
  allocator.set_failure_plan({.fail_nth_allocation = 3});
  const Allocation a = allocator.allocate(3 * kMiB, Category::Parameters, "fc1.weight");
  const Allocation b = allocator.allocate(1 * kMiB, Category::Gradients, "fc1.weight.grad");
  try {
    allocator.allocate(2048, Category::Activations, "fc1.out");
    FAIL() << "the third allocation should fail";
  } catch (const OutOfMemoryError& e) {
    EXPECT_EQ(e.tensor_name(), "fc1.out");
    EXPECT_EQ(e.category(), Category::Activations);
    EXPECT_EQ(e.requested_bytes(), 2048);
    EXPECT_EQ(e.live()[Category::Parameters], 3 * kMiB);
    EXPECT_STREQ(e.what(),
                 "out of memory allocating 'fc1.out' (activations, 2048 B = 2.00 KiB): injected failure of allocation "
                 "#3; live 4.00 MiB in 2 allocations (parameters 3.00 MiB, gradients 1.00 MiB); largest: "
                 "'fc1.weight' 3.00 MiB, 'fc1.weight.grad' 1.00 MiB");
  }
  EXPECT_EQ(allocator.live_total_bytes(), 4 * kMiB);  // the failure changed nothing
  const Allocation c = allocator.allocate(2048, Category::Activations, "fc1.out");  // the 4th call succeeds
  for (const Allocation& x : {a, b, c}) allocator.free(x.data);
}

TEST(TrackingAllocator, ByteBudgetRefusesWhatWouldExceedIt) {
  CpuTrackingAllocator allocator;
  allocator.set_failure_plan({.budget_bytes = 1000});
  const Allocation a = allocator.allocate(600, Category::Parameters, "a");
  EXPECT_THROW(allocator.allocate(401, Category::Temporaries, "b"), OutOfMemoryError);  // 1001 > 1000
  const Allocation b = allocator.allocate(400, Category::Temporaries, "b");            // exactly 1000 fits
  allocator.free(a.data);
  const Allocation c = allocator.allocate(600, Category::Temporaries, "c");
  EXPECT_EQ(allocator.peak_total_bytes(), 1000);
  allocator.free(b.data);
  allocator.free(c.data);
}

TEST(TrackingAllocator, RejectsMisuse) {
  CpuTrackingAllocator allocator;
  EXPECT_THROW(allocator.allocate(0, Category::Temporaries, "empty"), std::invalid_argument);
  const Allocation a = allocator.allocate(8, Category::Temporaries, "x");
  allocator.free(a.data);
  EXPECT_THROW(allocator.free(a.data), std::invalid_argument);  // double free
  int not_ours = 0;
  EXPECT_THROW(allocator.free(&not_ours), std::invalid_argument);
}

TEST(TrackingAllocator, ConcurrentThreadsKeepExactTotals) {
  CpuTrackingAllocator allocator;
  constexpr int kThreads = 4, kRounds = 500;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&allocator, t] {
      // Each thread keeps one 1000-byte block live throughout and churns small ones.
      const Allocation keep = allocator.allocate(1000, Category::Parameters, "keep");
      for (int r = 0; r < kRounds; ++r) {
        const Allocation a = allocator.allocate(16 + t, Category::Temporaries, "churn");
        allocator.free(a.data);
      }
      (void)keep;
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(allocator.live_total_bytes(), kThreads * 1000);
  EXPECT_EQ(allocator.live_allocation_count(), static_cast<std::size_t>(kThreads));
  EXPECT_EQ(allocator.live_bytes()[Category::Temporaries], 0);
  // The destructor frees the four blocks still live.
}

}  // namespace
}  // namespace shardscope::exec
