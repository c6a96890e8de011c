// The device-memory measurement path of GPU runs, without a GPU: a DeviceMemory trace event (bytes = device use,
// reserved_after = total, allocated_after = the allocator's segments) reaches the TraceStore's sample, and the
// "outside the allocator" figure is use minus the allocator's segments.
#include <gtest/gtest.h>

#include "exec/backends/backend_factory.h"
#include "trace/store/trace_store.h"

namespace shardscope {
namespace {

TEST(DeviceMemoryTrace, SampleKeepsUseTotalAndAllocatorSegments) {
  TraceStore store;
  TraceHeader header;
  header.devices.push_back({0, "GPU 0 (test)", 80 * kGiB, 0});
  store.begin(header);
  TraceEvent e;
  e.kind = TraceEventKind::DeviceMemory;
  e.rank = 0;
  e.t_ns = 1000;
  e.bytes = 900 * kMiB;            // cudaMemGetInfo: total - free
  e.reserved_after = 80 * kGiB;    // total
  e.allocated_after = 22 * kMiB;   // the caching allocator's segments
  e.text = "model_created";
  store.emit(e);
  store.end();
  store.read([](const TraceData& d) {
    ASSERT_EQ(d.ranks.size(), 1u);
    ASSERT_EQ(d.ranks[0].device_memory.size(), 1u);
    const TraceDeviceMemorySample& s = d.ranks[0].device_memory[0];
    EXPECT_EQ(s.t_ns, 1000);
    EXPECT_EQ(s.used, 900 * kMiB);
    EXPECT_EQ(s.total, 80 * kGiB);
    EXPECT_EQ(s.allocator_reserved, 22 * kMiB);
  });
}

TEST(DeviceMemoryTrace, OutsideTheAllocatorIsUseMinusSegments) {
  exec::DeviceMemoryMeasurement m{"forward", 1, 900 * kMiB, 80 * kGiB, 22 * kMiB};
  EXPECT_EQ(m.outside_allocator(), 878 * kMiB);
  m.allocator_reserved = 1 * kGiB;  // another process freed memory between the two reads: never negative
  EXPECT_EQ(m.outside_allocator(), 0);
}

}  // namespace
}  // namespace shardscope
