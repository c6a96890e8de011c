// The scratch of ATen's CUDA reductions against what PyTorch 2.11 allocated on an H200 (132 multiprocessors, 2048
// threads each), read from its caching allocator's history (tests/data/pytorch-2.11-allocator/single.txt: the
// 32,768,000 B + 64 B pair in every Linear backward, the 2,000 B + 4 B pair in mse_loss's mean).
#include <gtest/gtest.h>

#include "training/reduction_scratch.h"

namespace shardscope {
namespace {

constexpr int kH200Multiprocessors = 132, kThreadsPerMultiprocessor = 2048;

ReductionScratch on_h200(std::int64_t outputs, std::int64_t inputs, bool along_rows) {
  return cuda_reduction_scratch(outputs, inputs, along_rows, kH200Multiprocessors, kThreadsPerMultiprocessor);
}

// Linear(2000, 2000)'s bias gradient at batch 2048: grad_output [2048, 2000] summed over its rows.
TEST(ReductionScratch, BiasGradientOfLinear2000AtBatch2048) {
  const ReductionScratch s = on_h200(2000, 2048, true);
  EXPECT_EQ(s.staging, 32'768'000);
  EXPECT_EQ(s.semaphores, 64);
}

// mse_loss's mean over [2048, 2000] (4,096,000 values): one output.
TEST(ReductionScratch, MeanOfFourMillionValues) {
  const ReductionScratch s = on_h200(1, 2048 * 2000, false);
  EXPECT_EQ(s.staging, 2'000);
  EXPECT_EQ(s.semaphores, 4);
}

// The means PyTorch reduced without scratch: 64 × 1000 (the DDP example) and 20 × 2000 (the ZeRO recipe); the bias
// gradients at batch 64 and 20 likewise.
TEST(ReductionScratch, SmallReductionsTakeNone) {
  for (const auto& [outputs, inputs, along_rows] :
       {std::tuple{1, 64 * 1000, false}, std::tuple{1, 20 * 2000, false}, std::tuple{1000, 64, true},
        std::tuple{2000, 20, true}}) {
    const ReductionScratch s = on_h200(outputs, inputs, along_rows);
    EXPECT_EQ(s.staging, 0) << outputs << " × " << inputs;
    EXPECT_EQ(s.semaphores, 0) << outputs << " × " << inputs;
  }
}

// Unknown device properties (the 1.x profile): nothing modelled.
TEST(ReductionScratch, UnknownDeviceModelsNone) {
  const ReductionScratch s = cuda_reduction_scratch(2000, 2048, true, 0, 0);
  EXPECT_EQ(s.staging + s.semaphores, 0);
}

}  // namespace
}  // namespace shardscope
