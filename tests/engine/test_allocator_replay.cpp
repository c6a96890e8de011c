// The allocator model against real PyTorch: histories PyTorch 2.11's own caching allocator recorded on an H200
// (torch.cuda.memory._record_memory_history in tests/gpu/pytorch_reference.py --history, compacted by
// tests/gpu/compact_allocator_history.py into tests/data/pytorch-2.11-allocator/; FSDP2's by
// tests/gpu/compact_fsdp2_history.py, with each allocation's stream) are replayed request by request
// through CachingAllocatorModel; at every phase its memory_allocated() and memory_reserved() must be the figures
// PyTorch printed there. The expectations are PyTorch's measurements, not anything this code computed.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "memory/caching_allocator.h"

namespace shardscope {
namespace {

struct ReplayResult {
  int marks = 0;
  int requests = 0;
};

ReplayResult replay(const std::string& job) {
  const std::string path = std::string(SHARDSCOPE_SOURCE_DIR) + "/tests/data/pytorch-2.11-allocator/" + job + ".txt";
  std::ifstream in(path);
  EXPECT_TRUE(in) << "cannot read " << path;
  CachingAllocatorModel allocator(Bytes{1} << 40);
  std::map<long, CachingAllocatorModel::Allocation> live;
  // PyTorch drops memory_allocated() when a free is requested, but returns the block to its pool only once the
  // events of the streams that used it have completed (free_completed): between the two, the block is neither
  // counted nor reusable.
  std::map<long, Bytes> requested;
  Bytes requested_bytes = 0;
  ReplayResult result;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    char kind = 0;
    fields >> kind;
    if (kind == 'a') {
      long id = 0;
      Bytes size = 0;
      int stream = 0;  // a fourth field, when the history used several streams (FSDP2's)
      fields >> id >> size;
      if (!(fields >> stream)) stream = 0;
      live[id] = allocator.allocate(size, stream);
      ++result.requests;
    } else if (kind == 'r' || kind == 'f') {
      long id = 0;
      fields >> id;
      EXPECT_TRUE(live.count(id)) << job << ": free of unknown block " << id;
      if (!live.count(id)) return result;
      if (kind == 'r') {
        requested[id] = live.at(id).counted;
        requested_bytes += live.at(id).counted;
        continue;
      }
      requested_bytes -= requested.count(id) ? requested.at(id) : 0;
      requested.erase(id);
      allocator.free(live.at(id).block);
      live.erase(id);
    } else if (kind == 'm') {
      std::string phase;
      int step = 0;
      Bytes allocated = 0, reserved = 0;
      fields >> phase >> step >> allocated >> reserved;
      EXPECT_EQ(allocator.allocated() - requested_bytes, allocated) << job << " " << phase << " step " << step << ": memory_allocated";
      EXPECT_EQ(allocator.reserved(), reserved) << job << " " << phase << " step " << step << ": memory_reserved";
      ++result.marks;
    }
  }
  return result;
}

// 20 × Linear(2000) + ReLU, batch 2048, Adam (foreach), 3 steps: activations in 16 MB blocks that fill their own
// 2 MiB-rounded segments, Adam's state reusing freed activation blocks, the foreach temporaries.
TEST(AllocatorReplay, SingleGpuMlpMatchesPytorch211) {
  const ReplayResult r = replay("single");
  EXPECT_EQ(r.marks, 10);
  EXPECT_GT(r.requests, 700);
}

// Linear(1000) under DDP (rank 0 of 2, gloo): the bucket views, the small pool's 2 MiB segments.
TEST(AllocatorReplay, DdpLinearMatchesPytorch211) {
  const ReplayResult r = replay("ddp");
  EXPECT_EQ(r.marks, 11);
}

// The ZeroRedundancyOptimizer recipe (rank 0 of 2): DDP's 25 MiB buckets, the sharded Adam state, the broadcasts.
TEST(AllocatorReplay, ZeroRedundancyOptimizerMatchesPytorch211) {
  const ReplayResult r = replay("zero1");
  EXPECT_EQ(r.marks, 11);
}

// FSDP2 (fully_shard on each of 6 × Linear(2048) + ReLU and the root, rank 0 of 2 over gloo): allocations on four
// streams (default, all-gather copy-in, all-gather, reduce-scatter), which the caching allocator keeps apart, so the
// per-stream pools decide memory_reserved. reshard_after_forward False and True; the True history itself contains
// one late free by gloo's worker thread, which a replay of the history's own order follows.
TEST(AllocatorReplay, Fsdp2KeepsItsStreamsApartLikePytorch211) {
  for (const char* job : {"fsdp2-w2-layer-reshard0-fp32-none-6x2048", "fsdp2-w2-layer-reshard1-fp32-none-6x2048"}) {
    const ReplayResult r = replay(job);
    EXPECT_EQ(r.marks, 2) << job;
    EXPECT_GT(r.requests, 250) << job;
  }
}

}  // namespace
}  // namespace shardscope
