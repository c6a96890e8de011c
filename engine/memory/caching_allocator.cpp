// CachingAllocatorModel: block splitting, best fit and merging as in PyTorch's CUDACachingAllocator.
#include "memory/caching_allocator.h"

#include <tuple>

namespace shardscope {

Bytes CachingAllocatorModel::round_size(Bytes size) {
  return size < kMinBlockSize ? kMinBlockSize : round_up(size, kMinBlockSize);
}

Bytes CachingAllocatorModel::allocation_size(Bytes rounded) {
  if (rounded <= kSmallSize) return kSmallBuffer;
  if (rounded < kMinLargeAlloc) return kLargeBuffer;
  return round_up(rounded, kRoundLarge);
}

bool CachingAllocatorModel::BySizeThenAddress::operator()(BlockId a, BlockId b) const {
  const Block& x = (*blocks)[static_cast<std::size_t>(a)];
  const Block& y = (*blocks)[static_cast<std::size_t>(b)];
  return std::tie(x.size, x.address) < std::tie(y.size, y.address);
}

CachingAllocatorModel::CachingAllocatorModel(Bytes capacity)
    : capacity_(capacity), small_free_(BySizeThenAddress{&blocks_}), large_free_(BySizeThenAddress{&blocks_}) {}

CachingAllocatorModel::BlockId CachingAllocatorModel::new_block(const Block& block) {
  if (!unused_ids_.empty()) {
    const BlockId id = unused_ids_.back();
    unused_ids_.pop_back();
    blocks_[static_cast<std::size_t>(id)] = block;
    return id;
  }
  blocks_.push_back(block);
  return static_cast<BlockId>(blocks_.size() - 1);
}

std::optional<CachingAllocatorModel::BlockId> CachingAllocatorModel::best_fit(bool small, Bytes size) {
  // A probe block (size, address 0) orders before every real block of that size.
  const BlockId probe = new_block(Block{-1, size, small, false, -1, -1});
  FreeSet& free_set = pool(small);
  auto it = free_set.lower_bound(probe);
  unused_ids_.push_back(probe);
  if (it == free_set.end()) return std::nullopt;
  const BlockId found = *it;
  free_set.erase(it);
  return found;
}

void CachingAllocatorModel::release_cached_segments() {
  for (FreeSet* free_set : {&large_free_, &small_free_}) {
    for (auto it = free_set->begin(); it != free_set->end();) {
      const Block& block = blocks_[static_cast<std::size_t>(*it)];
      if (block.prev < 0 && block.next < 0) {
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

CachingAllocatorModel::Allocation CachingAllocatorModel::allocate(Bytes size) {
  const Bytes rounded = round_size(size);
  const bool small = rounded <= kSmallSize;
  bool out_of_memory = false;
  auto found = best_fit(small, rounded);
  if (!found) {
    const Bytes segment = allocation_size(rounded);
    if (reserved_ + segment > capacity_) {
      release_cached_segments();
      found = best_fit(small, rounded);  // freeing whole segments never creates a fit, but keep the order honest
      out_of_memory = !found && reserved_ + segment > capacity_;
    }
    if (!found) {
      found = new_block(Block{next_address_, segment, small, false, -1, -1});
      next_address_ += segment;
      reserved_ += segment;
      ++segments_;
    }
  }
  const BlockId id = *found;
  Block& block = blocks_[static_cast<std::size_t>(id)];
  const Bytes remaining = block.size - rounded;
  const bool split = small ? remaining >= kMinBlockSize : remaining > kSmallSize;
  if (split) {
    Block rest{block.address + rounded, remaining, small, false, id, block.next};
    block.size = rounded;
    const BlockId rest_id = new_block(rest);
    Block& self = blocks_[static_cast<std::size_t>(id)];  // new_block may have reallocated
    if (self.next >= 0) blocks_[static_cast<std::size_t>(self.next)].prev = rest_id;
    self.next = rest_id;
    pool(small).insert(rest_id);
  }
  Block& allocated = blocks_[static_cast<std::size_t>(id)];
  allocated.allocated = true;
  allocated_ += allocated.size;
  return {id, allocated.size, out_of_memory};
}

void CachingAllocatorModel::free(BlockId id) {
  Block* block = &blocks_[static_cast<std::size_t>(id)];
  block->allocated = false;
  allocated_ -= block->size;
  FreeSet& free_set = pool(block->small_pool);
  // Merge with a free neighbour: the survivor keeps the lower address.
  auto absorb = [&](BlockId left, BlockId right) {
    Block& l = blocks_[static_cast<std::size_t>(left)];
    Block& r = blocks_[static_cast<std::size_t>(right)];
    l.size += r.size;
    l.next = r.next;
    if (r.next >= 0) blocks_[static_cast<std::size_t>(r.next)].prev = left;
    unused_ids_.push_back(right);
  };
  const BlockId next = block->next;
  if (next >= 0 && !blocks_[static_cast<std::size_t>(next)].allocated) {
    free_set.erase(next);
    absorb(id, next);
  }
  block = &blocks_[static_cast<std::size_t>(id)];
  const BlockId prev = block->prev;
  if (prev >= 0 && !blocks_[static_cast<std::size_t>(prev)].allocated) {
    free_set.erase(prev);
    absorb(prev, id);
    free_set.insert(prev);
    return;
  }
  free_set.insert(id);
}

}  // namespace shardscope
