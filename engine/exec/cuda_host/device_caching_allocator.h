// The executor's allocator for a GPU: PyTorch 2.x caching-allocator rules (memory/block_pool.h) over a segment
// source (cudaMalloc in exec/cuda/, a fake device in tests), so every tensor counts its rounded block as
// torch.cuda.memory_allocated() does, reserved bytes are the cached segments as memory_reserved() reports, and a
// request the device cannot hold even after the cached segments were released throws OutOfMemoryError.
// Backend-neutral host code, built everywhere; depends on core/, memory/ and the TrackingAllocator only.
#pragma once
#include "exec/exec_layer.h"
#include <memory>
#include <unordered_map>

#include "exec/tracking_allocator.h"
#include "memory/block_pool.h"

namespace shardscope::exec {

class DeviceCachingAllocator final : public TrackingAllocator {
 public:
  explicit DeviceCachingAllocator(std::unique_ptr<SegmentSource> source);
  ~DeviceCachingAllocator() override;

  // torch.cuda.empty_cache(): cached segments back to the device.
  void empty_cache();
  Bytes reserved_bytes() const;
  std::size_t segment_count() const;

 protected:
  RawBlock raw_allocate(Bytes bytes, int stream) override;
  void raw_free(void* data, Bytes requested_bytes) override;
  void raw_free_late(void* data, Bytes requested_bytes) override;  // CachingBlockPool::free_requested
  void raw_complete_late_frees() override;
  Bytes reserved_bytes_locked() const override;

 private:
  // The pool is guarded by pool_mutex_, always taken after the base class's lock (raw_* run under it).
  std::unique_ptr<SegmentSource> source_;
  CachingBlockPool pool_;
  std::unordered_map<void*, CachingBlockPool::BlockId> block_of_;
  mutable std::mutex pool_mutex_;
};

}  // namespace shardscope::exec
