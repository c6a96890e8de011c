// A model of PyTorch's CUDA caching allocator (c10/cuda/CUDACachingAllocator.cpp) on one device and one stream,
// giving what torch.cuda.memory_allocated() and memory_reserved() report. The rules are the same in 1.8 and
// 2.x with default settings (no max_split_size_mb, no expandable segments, no roundup_power2_divisions):
// - round_size: requests round up to a multiple of 512 B (kMinBlockSize);
// - pools: ≤ 1 MiB (kSmallSize) small pool, else large pool;
// - get_allocation_size: new segment of 2 MiB (kSmallBuffer) for small requests, 20 MiB (kLargeBuffer) for
//   requests under 10 MiB (kMinLargeAlloc), otherwise the request rounded up to 2 MiB (kRoundLarge);
// - get_free_block: best fit among cached free blocks of the pool (smallest size, then lowest address);
// - should_split: small pool if ≥ 512 B would remain, large pool only if > 1 MiB would remain; an unsplit block
//   counts whole in memory_allocated (stats.allocated_bytes += block->size);
// - free: the count drops at once; the block merges with free neighbours and stays cached (reserved);
// - when cudaMalloc would exceed the device, release_cached_blocks frees every fully free segment and retries.
// Not thread-safe.
#pragma once
#include <cstdint>
#include <optional>
#include <set>
#include <vector>

#include "core/units.h"

namespace shardscope {

class CachingAllocatorModel {
 public:
  using BlockId = std::int32_t;

  static constexpr Bytes kMinBlockSize = 512;
  static constexpr Bytes kSmallSize = 1 * kMiB;
  static constexpr Bytes kSmallBuffer = 2 * kMiB;
  static constexpr Bytes kLargeBuffer = 20 * kMiB;
  static constexpr Bytes kMinLargeAlloc = 10 * kMiB;
  static constexpr Bytes kRoundLarge = 2 * kMiB;

  static Bytes round_size(Bytes size);
  static Bytes allocation_size(Bytes rounded);

  // capacity: device bytes cudaMalloc may hand out in total.
  explicit CachingAllocatorModel(Bytes capacity);

  struct Allocation {
    BlockId block;
    Bytes counted;      // what memory_allocated grows by (the block size)
    bool out_of_memory;  // the device could not hold it even after freeing cached segments; counted anyway
  };
  Allocation allocate(Bytes size);
  void free(BlockId block);

  Bytes allocated() const { return allocated_; }
  Bytes reserved() const { return reserved_; }
  std::size_t segment_count() const { return segments_; }

 private:
  struct Block {
    Bytes address = 0;
    Bytes size = 0;
    bool small_pool = false;
    bool allocated = false;
    BlockId prev = -1, next = -1;  // neighbours within the segment
  };
  struct BySizeThenAddress {
    const std::vector<Block>* blocks;
    bool operator()(BlockId a, BlockId b) const;
  };
  using FreeSet = std::set<BlockId, BySizeThenAddress>;

  FreeSet& pool(bool small) { return small ? small_free_ : large_free_; }
  std::optional<BlockId> best_fit(bool small, Bytes size);
  BlockId new_block(const Block& block);
  void release_cached_segments();

  Bytes capacity_;
  std::vector<Block> blocks_;
  std::vector<BlockId> unused_ids_;
  FreeSet small_free_, large_free_;
  Bytes allocated_ = 0, reserved_ = 0;
  Bytes next_address_ = 0;
  std::size_t segments_ = 0;
};

}  // namespace shardscope
