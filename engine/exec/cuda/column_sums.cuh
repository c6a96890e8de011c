// Sums down the columns of a rows × cols matrix (a bias's or a LayerNorm parameter's gradient over the tokens), in
// two deterministic passes: blocks of 32 columns × 8 row lanes add chunks of rows in double into partial sums, then
// one thread a column adds its chunks in order. One thread walking every row of its column left most of the GPU
// idle (a few hundred columns, a thousand rows each). Two sums a column at once (x, y of the element's double2).
// Device code only (included by .cu files); `Element` is a functor (row, col) -> double2.
#pragma once
#include <cuda_runtime_api.h>

#include <cstddef>

#include "exec/cuda/cuda_check.h"
#include "exec/cuda/launch_geometry.h"

namespace shardscope::exec::cuda {

constexpr int kColumnTile = 32, kRowLanes = 8;

template <typename Element>
__global__ void column_partials_kernel(Element element, int rows, int cols, int rows_per_chunk, double2* partials) {
  const int c = static_cast<int>(blockIdx.x) * kColumnTile + static_cast<int>(threadIdx.x);
  const int first = static_cast<int>(blockIdx.y) * rows_per_chunk;
  const int last = min(rows, first + rows_per_chunk);
  double2 sum = make_double2(0.0, 0.0);
  if (c < cols)
    for (int r = first + static_cast<int>(threadIdx.y); r < last; r += kRowLanes) {
      const double2 v = element(r, c);
      sum.x += v.x;
      sum.y += v.y;
    }
  __shared__ double2 lanes[kRowLanes][kColumnTile];
  lanes[threadIdx.y][threadIdx.x] = sum;
  __syncthreads();
  if (threadIdx.y != 0 || c >= cols) return;
  for (int y = 1; y < kRowLanes; ++y) {
    sum.x += lanes[y][threadIdx.x].x;
    sum.y += lanes[y][threadIdx.x].y;
  }
  partials[static_cast<std::size_t>(blockIdx.y) * cols + c] = sum;
}

static __global__ void column_totals_kernel(const double2* partials, int chunks, int cols, float* x, float* y) {
  for (std::size_t c = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; c < static_cast<std::size_t>(cols);
       c += static_cast<std::size_t>(blockDim.x) * gridDim.x) {
    double2 total = make_double2(0.0, 0.0);
    for (int k = 0; k < chunks; ++k) {
      total.x += partials[static_cast<std::size_t>(k) * cols + c].x;
      total.y += partials[static_cast<std::size_t>(k) * cols + c].y;
    }
    x[c] = static_cast<float>(total.x);
    if (y != nullptr) y[c] = static_cast<float>(total.y);
  }
}

// x[c] = Σ_r element(r, c).x, and y[c] the .y sums when y is not null; launched on `stream`.
template <typename Element>
void launch_column_sums(Element element, int rows, int cols, float* x, float* y, cudaStream_t stream) {
  if (rows <= 0 || cols <= 0) return;
  const int rows_per_chunk = rows / 64 + 1 > 64 ? rows / 64 + 1 : 64;  // at most ~64 chunks: the totals stay short
  const int chunks = (rows + rows_per_chunk - 1) / rows_per_chunk;
  double2* partials = nullptr;
  const std::size_t bytes = static_cast<std::size_t>(chunks) * static_cast<std::size_t>(cols) * sizeof(double2);
  check_cuda(cudaMallocAsync(reinterpret_cast<void**>(&partials), bytes, stream), "cudaMallocAsync (column sums)");
  const dim3 grid((cols + kColumnTile - 1) / kColumnTile, chunks), block(kColumnTile, kRowLanes);
  column_partials_kernel<<<grid, block, 0, stream>>>(element, rows, cols, rows_per_chunk, partials);
  column_totals_kernel<<<grid_blocks(static_cast<std::size_t>(cols)), kThreadsPerBlock, 0, stream>>>(partials, chunks,
                                                                                                     cols, x, y);
  check_cuda(cudaFreeAsync(partials, stream), "cudaFreeAsync (column sums)");
}

}  // namespace shardscope::exec::cuda
