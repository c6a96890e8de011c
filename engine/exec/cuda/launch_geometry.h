// Grid size of the CUDA backend's element-wise kernels (cuda_kernels.cu), free of CUDA headers so that
// tests/exec/test_cuda_host_logic.cpp checks it on machines without a GPU or toolkit.
#pragma once
#include "exec/exec_layer.h"
#include <cstddef>

namespace shardscope::exec::cuda {

inline constexpr unsigned kThreadsPerBlock = 256;
// gridDim.x may reach 2^31 − 1 on every GPU the backend builds for, but 65535 blocks already fill an H100 many times
// over; the kernels' grid-stride loops cover the elements beyond.
inline constexpr unsigned kMaxGridBlocks = 65535;

// Blocks for n elements: one thread each up to kMaxGridBlocks blocks, never 0 (a launch with an empty grid fails).
// In size_t throughout: a tensor may hold more than 2^31 elements.
constexpr unsigned grid_blocks(std::size_t n) {
  const std::size_t blocks = (n + kThreadsPerBlock - 1) / kThreadsPerBlock;
  if (blocks == 0) return 1;
  return blocks < kMaxGridBlocks ? static_cast<unsigned>(blocks) : kMaxGridBlocks;
}

}  // namespace shardscope::exec::cuda
