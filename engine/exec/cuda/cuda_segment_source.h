// Segments for the executor's caching allocator (exec/cuda_host/device_caching_allocator.h) from cudaMalloc on one
// device. CUDA backend only.
#pragma once
#include "exec/exec_layer.h"
#include "memory/block_pool.h"

namespace shardscope::exec::cuda {

class CudaSegmentSource final : public SegmentSource {
 public:
  explicit CudaSegmentSource(int device) : device_(device) {}
  // nullopt when cudaMalloc reports cudaErrorMemoryAllocation (the pool then empties its cache and retries,
  // and the allocator throws OutOfMemoryError); any other error throws.
  std::optional<std::uintptr_t> allocate_segment(Bytes size) override;
  void release_segment(std::uintptr_t address, Bytes size) override;

 private:
  int device_;
};

}  // namespace shardscope::exec::cuda
