// The scratch ATen's CUDA reductions allocate through the caching allocator: when one output's values are spread
// over several thread blocks, a staging buffer for the blocks' partial results and a semaphore per output column
// of blocks, both freed when the kernel returns. Follows aten/src/ATen/native/cuda/Reduce.cuh (setReduceConfig,
// ReduceConfig::global_memory_size / semaphore_size) of PyTorch 2.x for fp32 sums and means. Checked against
// PyTorch 2.11 on an H200 (132 multiprocessors): Linear(2000)'s bias gradient over 2048 rows takes 32,768,000 B
// and 64 B; the mean of 4,096,000 values 2,000 B and 4 B; the mean of 64,000 values none.
#pragma once
#include <cstdint>

#include "core/units.h"

namespace shardscope {

struct ReductionScratch {
  Bytes staging = 0;
  Bytes semaphores = 0;
};

// `outputs` results, each the sum of `inputs_per_output` fp32 values. along_rows: the reduced dimension is the slow
// one (the column sums of a row-major [rows, outputs] matrix: a Linear's bias gradient); otherwise each output's
// values are contiguous (a full reduction: mse_loss's mean). None when the device's properties are unknown (0).
ReductionScratch cuda_reduction_scratch(std::int64_t outputs, std::int64_t inputs_per_output, bool along_rows,
                                        int multiprocessors, int max_threads_per_multiprocessor);

}  // namespace shardscope
