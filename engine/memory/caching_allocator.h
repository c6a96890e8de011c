// A model of PyTorch's CUDA caching allocator (c10/cuda/CUDACachingAllocator.cpp) on one device, a pool per stream,
// giving what torch.cuda.memory_allocated() and memory_reserved() report. The rules live in memory/block_pool.h
// (shared with the CUDA executor's real allocator); this model feeds them virtual segments from a device of a
// given capacity and, unlike a real device, goes on past the capacity so that the accounting can show by how
// much a plan does not fit. Not thread-safe.
#pragma once
#include <cstdint>
#include <optional>

#include "core/units.h"
#include "memory/block_pool.h"

namespace shardscope {

class CachingAllocatorModel {
 public:
  using BlockId = CachingBlockPool::BlockId;

  static constexpr Bytes kMinBlockSize = CachingBlockPool::kMinBlockSize;
  static constexpr Bytes kSmallSize = CachingBlockPool::kSmallSize;
  static constexpr Bytes kSmallBuffer = CachingBlockPool::kSmallBuffer;
  static constexpr Bytes kLargeBuffer = CachingBlockPool::kLargeBuffer;
  static constexpr Bytes kMinLargeAlloc = CachingBlockPool::kMinLargeAlloc;
  static constexpr Bytes kRoundLarge = CachingBlockPool::kRoundLarge;

  static Bytes round_size(Bytes size) { return CachingBlockPool::round_size(size); }
  static Bytes allocation_size(Bytes rounded) { return CachingBlockPool::allocation_size(rounded); }

  // capacity: device bytes cudaMalloc may hand out in total.
  explicit CachingAllocatorModel(Bytes capacity) : segments_(capacity), pool_(segments_) {}

  struct Allocation {
    BlockId block;
    Bytes counted;      // what memory_allocated grows by (the block size)
    bool out_of_memory;  // the device could not hold it even after freeing cached segments; counted anyway
  };
  Allocation allocate(Bytes size, int stream = 0);  // stream: the pool key (block_pool.h)
  void free(BlockId block) { pool_.free(block); }
  // The two halves of a free whose block returns to the cache late (CachingBlockPool::free_requested).
  void free_requested(BlockId block) { pool_.free_requested(block); }
  void complete_requested_frees() { pool_.complete_requested_frees(); }

  Bytes allocated() const { return pool_.allocated(); }
  Bytes reserved() const { return pool_.reserved(); }
  std::size_t segment_count() const { return pool_.segment_count(); }

 private:
  // Virtual addresses from 0 up; refuses what would exceed the capacity unless told to overcommit.
  class VirtualSegments final : public SegmentSource {
   public:
    explicit VirtualSegments(Bytes capacity) : capacity_(capacity) {}
    std::optional<std::uintptr_t> allocate_segment(Bytes size) override;
    void release_segment(std::uintptr_t, Bytes size) override { in_use_ -= size; }
    bool overcommit = false;

   private:
    Bytes capacity_;
    Bytes in_use_ = 0;
    std::uintptr_t next_address_ = 0;
  };

  VirtualSegments segments_;
  CachingBlockPool pool_;
};

}  // namespace shardscope
