// CachingBlockPool: block splitting, best fit and merging as in PyTorch's CUDACachingAllocator (see block_pool.h).
#include "memory/block_pool.h"

#include <tuple>

namespace shardscope {

Bytes CachingBlockPool::round_size(Bytes size) {
  return size < kMinBlockSize ? kMinBlockSize : round_up(size, kMinBlockSize);
}

Bytes CachingBlockPool::allocation_size(Bytes rounded) {
  if (rounded <= kSmallSize) return kSmallBuffer;
  if (rounded < kMinLargeAlloc) return kLargeBuffer;
  return round_up(rounded, kRoundLarge);
}

// c10/cuda/CUDACachingAllocator.cpp BlockComparatorSize: stream, then size, then address.
bool CachingBlockPool::ByStreamSizeAddress::operator()(BlockId a, BlockId b) const {
  const BlockRecord& x = (*blocks)[static_cast<std::size_t>(a)];
  const BlockRecord& y = (*blocks)[static_cast<std::size_t>(b)];
  return std::tie(x.stream, x.size, x.address) < std::tie(y.stream, y.size, y.address);
}

CachingBlockPool::CachingBlockPool(SegmentSource& source)
    : source_(source), small_free_(ByStreamSizeAddress{&blocks_}), large_free_(ByStreamSizeAddress{&blocks_}) {}

CachingBlockPool::BlockId CachingBlockPool::new_block(const BlockRecord& block) {
  if (!unused_ids_.empty()) {
    const BlockId id = unused_ids_.back();
    unused_ids_.pop_back();
    blocks_[static_cast<std::size_t>(id)] = block;
    return id;
  }
  blocks_.push_back(block);
  return static_cast<BlockId>(blocks_.size() - 1);
}

std::optional<CachingBlockPool::BlockId> CachingBlockPool::best_fit(bool small, Bytes size, int stream) {
  // A probe block (stream, size, address 0) orders before every real block of that stream and size; what follows it
  // on another stream is no fit (get_free_block's `(*it)->stream != p.stream()`).
  const BlockId probe = new_block(BlockRecord{0, size, small, false, -1, -1, stream});
  FreeSet& free_set = pool(small);
  auto it = free_set.lower_bound(probe);
  unused_ids_.push_back(probe);
  if (it == free_set.end() || blocks_[static_cast<std::size_t>(*it)].stream != stream) return std::nullopt;
  const BlockId found = *it;
  free_set.erase(it);
  return found;
}

void CachingBlockPool::release_cached_segments() {
  complete_requested_frees();
  for (FreeSet* free_set : {&large_free_, &small_free_}) {
    for (auto it = free_set->begin(); it != free_set->end();) {
      const BlockRecord& block = blocks_[static_cast<std::size_t>(*it)];
      if (block.prev < 0 && block.next < 0) {  // a whole segment
        source_.release_segment(block.address, block.size);
        reserved_ -= block.size;
        --segments_;
        unused_ids_.push_back(*it);
        it = free_set->erase(it);
      } else {
        ++it;
      }
    }
  }
}

std::optional<CachingBlockPool::BlockId> CachingBlockPool::new_segment(bool small, Bytes rounded, int stream) {
  const Bytes segment = allocation_size(rounded);
  std::optional<std::uintptr_t> address = source_.allocate_segment(segment);
  if (!address) {
    // PyTorch: release_cached_blocks() and retry the cudaMalloc once.
    release_cached_segments();
    address = source_.allocate_segment(segment);
    if (!address) return std::nullopt;
  }
  reserved_ += segment;
  ++segments_;
  return new_block(BlockRecord{*address, segment, small, false, -1, -1, stream});
}

std::optional<CachingBlockPool::Block> CachingBlockPool::allocate(Bytes size, int stream) {
  const Bytes rounded = round_size(size);
  const bool small = rounded <= kSmallSize;
  std::optional<BlockId> found = best_fit(small, rounded, stream);
  if (!found) found = new_segment(small, rounded, stream);
  if (!found) return std::nullopt;
  const BlockId id = *found;
  BlockRecord& block = blocks_[static_cast<std::size_t>(id)];
  const Bytes remaining = block.size - rounded;
  const bool split = small ? remaining >= kMinBlockSize : remaining > kSmallSize;
  if (split) {
    BlockRecord rest{block.address + static_cast<std::uintptr_t>(rounded), remaining, small, false, id, block.next,
                     block.stream};
    block.size = rounded;
    const BlockId rest_id = new_block(rest);
    BlockRecord& self = blocks_[static_cast<std::size_t>(id)];  // new_block may have reallocated
    if (self.next >= 0) blocks_[static_cast<std::size_t>(self.next)].prev = rest_id;
    self.next = rest_id;
    pool(small).insert(rest_id);
  }
  BlockRecord& allocated = blocks_[static_cast<std::size_t>(id)];
  allocated.allocated = true;
  allocated_ += allocated.size;
  return Block{id, allocated.address, allocated.size};
}

void CachingBlockPool::free(BlockId id) {
  BlockRecord& block = blocks_[static_cast<std::size_t>(id)];
  block.allocated = false;
  allocated_ -= block.size;
  return_to_pool(id);
}

void CachingBlockPool::free_requested(BlockId id) {
  BlockRecord& block = blocks_[static_cast<std::size_t>(id)];
  block.allocated = false;
  block.free_pending = true;
  allocated_ -= block.size;
  requested_frees_.push_back(id);
}

void CachingBlockPool::complete_requested_frees() {
  // In request order, as process_events walks the events: the merges (and so the surviving block ids) follow it.
  for (const BlockId id : requested_frees_) {
    blocks_[static_cast<std::size_t>(id)].free_pending = false;
    return_to_pool(id);
  }
  requested_frees_.clear();
}

void CachingBlockPool::return_to_pool(BlockId id) {
  BlockRecord* block = &blocks_[static_cast<std::size_t>(id)];
  FreeSet& free_set = pool(block->small_pool);
  // Merge with a free neighbour: the survivor keeps the lower address.
  auto absorb = [&](BlockId left, BlockId right) {
    BlockRecord& l = blocks_[static_cast<std::size_t>(left)];
    BlockRecord& r = blocks_[static_cast<std::size_t>(right)];
    l.size += r.size;
    l.next = r.next;
    if (r.next >= 0) blocks_[static_cast<std::size_t>(r.next)].prev = left;
    unused_ids_.push_back(right);
  };
  // A neighbour whose free is still pending is not free yet (free_block in PyTorch merges only with blocks in the pool).
  const auto mergeable = [&](BlockId neighbour) {
    const BlockRecord& n = blocks_[static_cast<std::size_t>(neighbour)];
    return !n.allocated && !n.free_pending;
  };
  const BlockId next = block->next;
  if (next >= 0 && mergeable(next)) {
    free_set.erase(next);
    absorb(id, next);
  }
  block = &blocks_[static_cast<std::size_t>(id)];
  const BlockId prev = block->prev;
  if (prev >= 0 && mergeable(prev)) {
    free_set.erase(prev);
    absorb(prev, id);
    free_set.insert(prev);
    return;
  }
  free_set.insert(id);
}

}  // namespace shardscope
