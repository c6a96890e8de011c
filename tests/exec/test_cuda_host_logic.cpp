// The CUDA backend's host-side arithmetic, checked without a GPU: the element-wise kernels' grid size
// (exec/cuda/launch_geometry.h) and the NCCL layout of collectives (exec/cuda/collective_layout.h: group ranks,
// chunks, the in-place test) and the version strings a CUDA run records in its trace header
// (exec/cuda_host/runtime_versions.h). Expectations written out by hand.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "exec/cuda/collective_layout.h"
#include "exec/cuda/launch_geometry.h"
#include "exec/cuda_host/runtime_versions.h"

namespace shardscope::exec::cuda {
namespace {

// CUDA's 1000 * major + 10 * minor; NCCL's 10000 * major + 100 * minor + patch (NCCL_VERSION_CODE since 2.9).
TEST(CudaRuntimeVersions, IntegersBecomeTheVersionsPeopleWrite) {
  EXPECT_EQ(cuda_version_text(13000), "13.0");
  EXPECT_EQ(cuda_version_text(12040), "12.4");
  EXPECT_EQ(cuda_version_text(11080), "11.8");
  EXPECT_EQ(nccl_version_text(22809), "2.28.9");
  EXPECT_EQ(nccl_version_text(21903), "2.19.3");
}

TEST(CudaLaunchGeometry, OneThreadPerElementNeverAnEmptyGridAndCapped) {
  EXPECT_EQ(grid_blocks(0), 1u);  // an empty grid is a launch error; the loop then does nothing
  EXPECT_EQ(grid_blocks(1), 1u);
  EXPECT_EQ(grid_blocks(256), 1u);
  EXPECT_EQ(grid_blocks(257), 2u);
  EXPECT_EQ(grid_blocks(65535u * 256u), 65535u);
  EXPECT_EQ(grid_blocks(65535u * 256u + 1), 65535u);  // the grid-stride loops take the rest
  // Beyond 2^31 and 2^32 elements (a 16 GiB fp32 tensor): no int or unsigned wrap to a small grid.
  EXPECT_EQ(grid_blocks(std::size_t{1} << 31), 65535u);
  EXPECT_EQ(grid_blocks((std::size_t{1} << 32) + 1), 65535u);
}

TEST(CudaCollectiveLayout, GroupIndexIsTheNcclRankInTheGroupsCommunicator) {
  const std::vector<int> group{4, 6, 1};  // ring order, not sorted
  EXPECT_EQ(group_index(group, 4), 0);
  EXPECT_EQ(group_index(group, 6), 1);
  EXPECT_EQ(group_index(group, 1), 2);  // a root given as global rank 1 is NCCL root 2
  EXPECT_THROW(group_index(group, 0), std::invalid_argument);
}

TEST(CudaCollectiveLayout, EvenBuffersUseNcclsCallsUnevenOnesTensorSplitChunks) {
  const ChunkedLayout even = chunked_layout(12, 4, 2);
  EXPECT_TRUE(even.even);
  EXPECT_EQ(even.chunk.begin, 6u);
  EXPECT_EQ(even.chunk.size, 3u);
  // 10 over 4: sizes 3, 3, 2, 2 (torch.tensor_split), so member 2 owns [6, 8) and NCCL's count-per-rank calls
  // cannot express it.
  const ChunkedLayout uneven = chunked_layout(10, 4, 2);
  EXPECT_FALSE(uneven.even);
  EXPECT_EQ(uneven.chunk.begin, 6u);
  EXPECT_EQ(uneven.chunk.size, 2u);
  EXPECT_EQ(chunked_layout(10, 4, 3).chunk.begin, 8u);
  EXPECT_TRUE(chunked_layout(5, 1, 0).even);
  EXPECT_THROW(chunked_layout(8, 2, 2), std::invalid_argument);
}

}  // namespace
}  // namespace shardscope::exec::cuda
