// The blocks of PyTorch's CUDA caching allocator, rebuilt from a memory snapshot's trace ring by address, so each
// allocation's block size is known: memory_allocated counts blocks (the request rounded to 512 B, and a large
// block that would leave ≤ 1 MiB is not split), while the ring records the bytes requested. Follows PyTorch 2.x
// c10/cuda/CUDACachingAllocator.cpp: round_size (512-byte multiples, at least 512; roundup_power2_divisions is not
// modelled), should_split (small pool: split when ≥ 512 B remain; large pool: when the request is below
// max_split_size and > 1 MiB (kSmallSize) would remain), free_block's merge with free neighbours, and a block
// freed with stream uses becoming reusable only at its free_completed (the ring's free_requested already lowered
// memory_allocated). A segment of 2 MiB (kSmallBuffer) is a small-pool segment: large-pool segments are 20 MiB for
// requests under 10 MiB and at least 10 MiB above.
// Allocations in segments the ring did not see created (made before recording started, or dropped from a full
// ring) have no known layout: alloc() returns nullopt for them.
#pragma once
#include <cstdint>
#include <map>
#include <optional>

#include "core/units.h"

namespace shardscope {

class SnapshotBlocks {
 public:
  static constexpr Bytes kMinBlockSize = 512;
  static constexpr Bytes kSmallSize = Bytes{1} << 20;
  static constexpr Bytes kSmallBuffer = Bytes{2} << 20;

  // max_split_size: the allocator setting (snapshot["allocator_settings"]["max_split_size"]); ≤ 0 means unlimited.
  explicit SnapshotBlocks(Bytes max_split_size = 0) : max_split_size_(max_split_size) {}

  static Bytes round_size(Bytes requested) { return requested < kMinBlockSize ? kMinBlockSize : (requested + kMinBlockSize - 1) / kMinBlockSize * kMinBlockSize; }

  void segment_alloc(std::uint64_t address, Bytes size);
  void segment_free(std::uint64_t address);
  // The block an allocation of `requested` bytes at `address` takes (split as the allocator splits), or nullopt
  // when no free block of a known segment starts there.
  std::optional<Bytes> alloc(std::uint64_t address, Bytes requested);
  // The block at `address` becomes free and merges with free neighbours in its segment (free_completed).
  void release(std::uint64_t address);

 private:
  struct Block {
    Bytes size = 0;
    bool allocated = false;
    std::uint64_t segment = 0;
  };
  std::map<std::uint64_t, Bytes> segments_;  // address -> size
  std::map<std::uint64_t, Block> blocks_;    // address -> block, covering every known segment
  Bytes max_split_size_;
};

}  // namespace shardscope
