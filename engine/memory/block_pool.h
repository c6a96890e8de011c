// PyTorch's CUDA caching allocator block rules, over any source of segments: the accounting's model hands out
// virtual addresses (memory/caching_allocator.h), the CUDA executor real cudaMalloc segments
// (exec/cuda_host/device_caching_allocator.h). Rules of c10/cuda/CUDACachingAllocator.cpp with default settings (no
// max_split_size_mb, no expandable segments, no roundup_power2_divisions); they are the same in 1.8 and 2.x:
// - round_size: requests round up to a multiple of 512 B (kMinBlockSize);
// - pools: ≤ 1 MiB (kSmallSize) small pool, else large pool;
// - get_allocation_size: new segment of 2 MiB (kSmallBuffer) for small requests, 20 MiB (kLargeBuffer) for
//   requests under 10 MiB (kMinLargeAlloc), otherwise the request rounded up to 2 MiB (kRoundLarge);
// - get_free_block: best fit among cached free blocks of the pool *of the requesting stream* (smallest size, then
//   lowest address): BlockComparatorSize orders a pool's free blocks by (stream, size, address) and get_free_block
//   takes the lower_bound of (stream, size) only if it is on that stream, so a block freed by one stream is never
//   handed to another, and a segment (with every block split from it) belongs to the stream that allocated it;
// - should_split: small pool if ≥ 512 B would remain, large pool only if > 1 MiB would remain; an unsplit block
//   counts whole in memory_allocated (stats.allocated_bytes += block->size);
// - free: the count drops at once; the block merges with free neighbours of its segment and stays cached;
// - when the source has no room (cudaMalloc fails), release_cached_blocks frees every fully free segment and
//   the allocation is tried once more.
// `stream` is the stream current when a tensor was allocated (TensorInfo::alloc_stream; 0 = the default stream).
// Every strategy allocates on stream 0, except FSDP2, whose all-gather and reduce-scatter buffers come from its own
// streams: there the per-stream pools decide memory_reserved (and, through splits, memory_allocated). The executor
// frees a block only after every stream that used it is done (exec/rank_runner.cpp), which is what
// record_stream's deferred free achieves in PyTorch. Where PyTorch's deferral shows in the counters
// (ProcessGroupGloo's broadcast flat, TensorInfo::free_completes_late), a free is done in two halves:
// free_requested, then complete_requested_frees.
// Not thread-safe. Depends on core/ only.
#pragma once
#include <cstdint>
#include <optional>
#include <set>
#include <vector>

#include "core/units.h"

namespace shardscope {

// Where segments come from: cudaMalloc / cudaFree, or a model of a device of some capacity.
class SegmentSource {
 public:
  virtual ~SegmentSource() = default;
  // A segment of exactly `size` bytes, or nullopt when the device has no room.
  virtual std::optional<std::uintptr_t> allocate_segment(Bytes size) = 0;
  virtual void release_segment(std::uintptr_t address, Bytes size) = 0;
};

class CachingBlockPool {
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

  explicit CachingBlockPool(SegmentSource& source);
  CachingBlockPool(const CachingBlockPool&) = delete;
  CachingBlockPool& operator=(const CachingBlockPool&) = delete;

  struct Block {
    BlockId id = -1;
    std::uintptr_t address = 0;
    Bytes size = 0;  // what memory_allocated counts
  };
  // nullopt: the source had no room, even after the cached free segments were released. `stream`: the pool key
  // (the CUDA stream current at the allocation, 0 = default).
  std::optional<Block> allocate(Bytes size, int stream = 0);
  void free(BlockId block);
  // CUDACachingAllocator::free of a block with stream uses (record_stream): memory_allocated drops now, but the block
  // goes back to its pool only when the events recorded on those streams have completed, which PyTorch checks at
  // the start of the next malloc (process_events). Until complete_requested_frees() the block is neither reused
  // nor merged with its neighbours.
  void free_requested(BlockId block);
  // The requested frees' events have completed: each block returns to its pool as free() would put it there.
  void complete_requested_frees();
  // torch.cuda.empty_cache(): hands every fully free segment back to the source (after completing the requested
  // frees, as release_cached_blocks does with synchronize_and_free_events).
  void release_cached_segments();

  Bytes allocated() const { return allocated_; }
  Bytes reserved() const { return reserved_; }
  std::size_t segment_count() const { return segments_; }

 private:
  struct BlockRecord {
    std::uintptr_t address = 0;
    Bytes size = 0;
    bool small_pool = false;
    bool allocated = false;
    BlockId prev = -1, next = -1;  // neighbours within the segment
    int stream = 0;                // the stream whose pool the block (and its segment) belongs to
    bool free_pending = false;     // free_requested, not yet completed: neither reusable nor mergeable
  };
  struct ByStreamSizeAddress {  // BlockComparatorSize
    const std::vector<BlockRecord>* blocks;
    bool operator()(BlockId a, BlockId b) const;
  };
  using FreeSet = std::set<BlockId, ByStreamSizeAddress>;

  FreeSet& pool(bool small) { return small ? small_free_ : large_free_; }
  std::optional<BlockId> best_fit(bool small, Bytes size, int stream);
  std::optional<BlockId> new_segment(bool small, Bytes rounded, int stream);
  BlockId new_block(const BlockRecord& block);
  void return_to_pool(BlockId block);  // merge with free neighbours, then insert into the free set

  SegmentSource& source_;
  std::vector<BlockRecord> blocks_;
  std::vector<BlockId> unused_ids_;
  std::vector<BlockId> requested_frees_;  // in request order
  FreeSet small_free_, large_free_;
  Bytes allocated_ = 0, reserved_ = 0;
  std::size_t segments_ = 0;
};

}  // namespace shardscope
