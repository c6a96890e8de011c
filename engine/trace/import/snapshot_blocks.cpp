// SnapshotBlocks: the caching allocator's split and merge by address (see snapshot_blocks.h).
#include "trace/import/snapshot_blocks.h"

namespace shardscope {

void SnapshotBlocks::segment_alloc(std::uint64_t address, Bytes size) {
  if (size <= 0) return;
  segment_free(address);  // a stale segment at that address (the ring lost its free) is replaced
  segments_[address] = size;
  blocks_[address] = Block{size, false, address};
}

void SnapshotBlocks::segment_free(std::uint64_t address) {
  const auto segment = segments_.find(address);
  if (segment == segments_.end()) return;
  const std::uint64_t end = address + static_cast<std::uint64_t>(segment->second);  // sizes are checked: no wrap
  for (auto it = blocks_.lower_bound(address); it != blocks_.end() && it->first < end;)
    it = it->second.segment == address ? blocks_.erase(it) : std::next(it);  // overlapping segments: a damaged file
  segments_.erase(segment);
}

std::optional<Bytes> SnapshotBlocks::alloc(std::uint64_t address, Bytes requested) {
  const auto it = blocks_.find(address);
  if (it == blocks_.end() || it->second.allocated) return std::nullopt;
  Block& block = it->second;
  const Bytes size = round_size(requested);
  if (size > block.size) return std::nullopt;  // not the block the allocator used: the layout is unknown
  const Bytes remaining = block.size - size;
  const bool small_pool = segments_[block.segment] == kSmallBuffer;
  const bool split = small_pool ? remaining >= kMinBlockSize
                                : (max_split_size_ <= 0 || size < max_split_size_) && remaining > kSmallSize;
  if (split) {
    blocks_[address + static_cast<std::uint64_t>(size)] = Block{remaining, false, block.segment};
    block.size = size;
  }
  block.allocated = true;
  return block.size;
}

void SnapshotBlocks::release(std::uint64_t address) {
  auto it = blocks_.find(address);
  if (it == blocks_.end() || !it->second.allocated) return;
  it->second.allocated = false;
  // Merge with the next block, then with the previous one (free_block's try_merge_blocks on both sides).
  if (auto next = std::next(it); next != blocks_.end() && !next->second.allocated && next->second.segment == it->second.segment &&
                                 it->first + static_cast<std::uint64_t>(it->second.size) == next->first) {
    it->second.size += next->second.size;
    blocks_.erase(next);
  }
  if (it != blocks_.begin()) {
    auto prev = std::prev(it);
    if (!prev->second.allocated && prev->second.segment == it->second.segment &&
        prev->first + static_cast<std::uint64_t>(prev->second.size) == it->first) {
      prev->second.size += it->second.size;
      blocks_.erase(it);
    }
  }
}

}  // namespace shardscope
