// cuda_reduction_scratch: ReduceConfig's choices replayed for an fp32 reduction (Reduce.cuh, PyTorch 2.x).
#include "training/reduction_scratch.h"

#include <algorithm>

namespace shardscope {

namespace {

constexpr std::int64_t kMaxThreads = 512;  // ReduceConfig::MAX_NUM_THREADS
constexpr std::int64_t kWarp = 32;
constexpr std::int64_t kVectorWidth = 4;   // vt0 and the widest output vector for 4-byte values
constexpr std::int64_t kMinValuesPerThread = 16;
constexpr std::int64_t kMaxValuesPerThread = 256;
constexpr Bytes kFp32 = 4;

std::int64_t div_up(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

std::int64_t last_pow2(std::int64_t n) {
  std::int64_t p = 1;
  while (p * 2 <= n) p *= 2;
  return p;
}

}  // namespace

ReductionScratch cuda_reduction_scratch(std::int64_t outputs, std::int64_t inputs_per_output, bool along_rows,
                                        int multiprocessors, int max_threads_per_multiprocessor) {
  if (multiprocessors <= 0 || max_threads_per_multiprocessor <= 0 || outputs <= 0 || inputs_per_output <= 1) return {};
  // dim0 runs along the fastest-moving stride: the outputs for a column sum, one output's values otherwise.
  std::int64_t dim0 = along_rows ? outputs : inputs_per_output;
  const std::int64_t dim1 = along_rows ? inputs_per_output : outputs;
  std::int64_t output_vec = 1;
  if (along_rows) {
    // get_output_vec_size: the widest of 4, 2, 1 dividing the output count and the row stride (both `outputs`).
    while (outputs % (output_vec * 2) == 0 && output_vec * 2 <= kVectorWidth) output_vec *= 2;
    dim0 /= output_vec;
  } else if (dim0 > 128) {
    dim0 /= kVectorWidth;  // vectorize_input
  }
  // set_block_dimension
  const std::int64_t max_threads = kMaxThreads / output_vec;
  const std::int64_t dim0_pow2 = dim0 < max_threads ? last_pow2(dim0) : max_threads;
  const std::int64_t dim1_pow2 = dim1 < max_threads ? last_pow2(dim1) : max_threads;
  std::int64_t block_width = std::min(dim0_pow2, kWarp);
  const std::int64_t block_height = std::min(dim1_pow2, max_threads / block_width);
  block_width = std::min(dim0_pow2, max_threads / block_height);
  const std::int64_t threads = block_width * block_height;

  // Splits: block x across the outputs (column sums) or one output's values; block y across values when each
  // thread would otherwise see many of them.
  std::int64_t step_input = 1, step_output = 1;
  const bool block_x_reduces = !along_rows;
  if (block_x_reduces) step_input *= block_width; else step_output *= block_width;
  const std::int64_t warp_split_threshold = std::min(block_height * 16, kMaxValuesPerThread);
  bool block_y_reduces = false;
  if (div_up(inputs_per_output, step_input) >= warp_split_threshold) {
    block_y_reduces = true;
    step_input *= block_height;
  } else {
    step_output *= block_height;
  }
  const std::int64_t target_grid = multiprocessors * (max_threads_per_multiprocessor / threads);
  const std::int64_t grid_x = div_up(outputs / output_vec, step_output);
  const std::int64_t values_per_thread = div_up(inputs_per_output, step_input);
  if (!block_y_reduces || values_per_thread < kMaxValuesPerThread || grid_x > target_grid) return {};
  const std::int64_t ctas = std::max(std::min(div_up(target_grid, grid_x), div_up(values_per_thread, kMinValuesPerThread)),
                                     div_up(values_per_thread, kMaxValuesPerThread));
  if (ctas <= 1) return {};
  Bytes staging = kFp32 * outputs * ctas;
  if (!block_x_reduces) staging *= block_width * output_vec;
  return {staging, static_cast<Bytes>(sizeof(int)) * grid_x};
}

}  // namespace shardscope
