// CachingAllocatorModel: the shared block rules (memory/block_pool.cpp) on virtual segments, past the capacity.
#include "memory/caching_allocator.h"

namespace shardscope {

std::optional<std::uintptr_t> CachingAllocatorModel::VirtualSegments::allocate_segment(Bytes size) {
  if (!overcommit && in_use_ + size > capacity_) return std::nullopt;
  const std::uintptr_t address = next_address_;
  next_address_ += static_cast<std::uintptr_t>(size);
  in_use_ += size;
  return address;
}

CachingAllocatorModel::Allocation CachingAllocatorModel::allocate(Bytes size, int stream) {
  std::optional<CachingBlockPool::Block> block = pool_.allocate(size, stream);
  if (block) return {block->id, block->size, false};
  // The pool already released the cached segments and retried: what a real device would refuse, the model
  // places anyway (flagged), so the report can say how far over the capacity the plan goes.
  segments_.overcommit = true;
  block = pool_.allocate(size, stream);
  segments_.overcommit = false;
  return {block->id, block->size, true};
}

}  // namespace shardscope
