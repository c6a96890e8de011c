// DeviceCachingAllocator: TrackingAllocator's raw blocks from a CachingBlockPool.
#include "exec/cuda_host/device_caching_allocator.h"

namespace shardscope::exec {

DeviceCachingAllocator::DeviceCachingAllocator(std::unique_ptr<SegmentSource> source)
    : source_(std::move(source)), pool_(*source_) {}

DeviceCachingAllocator::~DeviceCachingAllocator() {
  release_all_live();
  std::lock_guard lock(pool_mutex_);
  pool_.release_cached_segments();
}

// Keyed by the plan's stream tag, whichever CUDA stream the executor then runs the op on: the pools must be PyTorch's.
TrackingAllocator::RawBlock DeviceCachingAllocator::raw_allocate(Bytes bytes, int stream) {
  std::lock_guard lock(pool_mutex_);
  const auto block = pool_.allocate(bytes, stream);
  if (!block) return {};
  void* data = reinterpret_cast<void*>(block->address);
  block_of_[data] = block->id;
  return {data, block->size};
}

void DeviceCachingAllocator::raw_free(void* data, Bytes) {
  std::lock_guard lock(pool_mutex_);
  const auto it = block_of_.find(data);
  if (it == block_of_.end()) return;  // the base class already refused unknown pointers
  pool_.free(it->second);
  block_of_.erase(it);
}

void DeviceCachingAllocator::raw_free_late(void* data, Bytes) {
  std::lock_guard lock(pool_mutex_);
  const auto it = block_of_.find(data);
  if (it == block_of_.end()) return;
  pool_.free_requested(it->second);
  block_of_.erase(it);
}

void DeviceCachingAllocator::raw_complete_late_frees() {
  std::lock_guard lock(pool_mutex_);
  pool_.complete_requested_frees();
}

Bytes DeviceCachingAllocator::reserved_bytes_locked() const { return reserved_bytes(); }

void DeviceCachingAllocator::empty_cache() {
  std::lock_guard lock(pool_mutex_);
  pool_.release_cached_segments();
}

Bytes DeviceCachingAllocator::reserved_bytes() const {
  std::lock_guard lock(pool_mutex_);
  return pool_.reserved();
}

std::size_t DeviceCachingAllocator::segment_count() const {
  std::lock_guard lock(pool_mutex_);
  return pool_.segment_count();
}

}  // namespace shardscope::exec
