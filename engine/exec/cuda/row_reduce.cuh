// Reductions over one row by the threads of a block (kThreadsPerBlock of them) or of a warp, for the row-wise
// kernels (log_softmax, LayerNorm, attention's softmax): every thread gets the result. Sums are in double, as the
// CPU kernels' row sums, so the order the threads add in moves a result by far less than the fp32 it is rounded to.
// Device code only (included by .cu files).
#pragma once
#include "exec/cuda/launch_geometry.h"

namespace shardscope::exec::cuda {

constexpr unsigned kFullWarp = 0xffffffffu;

__device__ inline double warp_sum(double v) {
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_xor_sync(kFullWarp, v, offset);
  return v;
}

__device__ inline float warp_max(float v) {
  for (int offset = 16; offset > 0; offset /= 2) v = fmaxf(v, __shfl_xor_sync(kFullWarp, v, offset));
  return v;
}

// Block-wide, for blocks of kThreadsPerBlock threads; every thread of the block must call it (it synchronises).
__device__ inline double block_sum(double v) {
  __shared__ double partial[kThreadsPerBlock / 32];
  v = warp_sum(v);
  __syncthreads();  // partial may still be read by an earlier call's threads
  if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = v;
  __syncthreads();
  double total = 0;
  for (unsigned w = 0; w < kThreadsPerBlock / 32; ++w) total += partial[w];
  return total;
}

__device__ inline float block_max(float v) {
  __shared__ float partial[kThreadsPerBlock / 32];
  v = warp_max(v);
  __syncthreads();
  if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = v;
  __syncthreads();
  float best = partial[0];
  for (unsigned w = 1; w < kThreadsPerBlock / 32; ++w) best = fmaxf(best, partial[w]);
  return best;
}

// Blocks for `rows` rows, one block each (a grid-stride loop covers rows beyond kMaxGridBlocks).
inline unsigned row_blocks(int rows) {
  return rows <= 0 ? 1u : (static_cast<unsigned>(rows) < kMaxGridBlocks ? static_cast<unsigned>(rows) : kMaxGridBlocks);
}

}  // namespace shardscope::exec::cuda
