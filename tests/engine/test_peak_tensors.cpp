// What is live at the peak (accounting.h: RankMemory::peak_tensors), on hand-made programs whose peaks are worked
// out by hand, in exact bytes and in PyTorch's 512 B blocks.
#include <gtest/gtest.h>

#include "memory/accounting.h"
#include "plan/program_builder.h"

namespace shardscope {
namespace {

// a (100 B) and b (3,000 B) live, a freed, c (2,000 B) allocated, c freed, d (50 B): the peak is b + c.
Plan three_tensor_plan() {
  ProgramBuilder b(0);
  const TensorId a = b.alloc("a", 100, Category::Activations);
  const TensorId big = b.alloc("b", 3000, Category::Gradients);
  b.release(a);
  const TensorId c = b.alloc("c", 2000, Category::Temporaries);
  b.release(c);
  const TensorId d = b.alloc("d", 50, Category::Temporaries);
  b.release(d);
  b.release(big);
  Plan plan;
  plan.programs.push_back(b.finish());
  return plan;
}

TEST(PeakTensors, ExactBytesLargestFirst) {
  const RankMemory rank = account_memory(three_tensor_plan(), AccountingMode::Exact, kGiB).ranks[0];
  EXPECT_EQ(rank.peak_allocated, 5000);
  ASSERT_EQ(rank.peak_tensors.size(), 2u);
  EXPECT_EQ(rank.peak_tensors[0].name, "b");
  EXPECT_EQ(rank.peak_tensors[0].bytes, 3000);
  EXPECT_EQ(rank.peak_tensors[0].category, Category::Gradients);
  EXPECT_EQ(rank.peak_tensors[1].name, "c");
  EXPECT_EQ(rank.peak_tensors[1].bytes, 2000);
  const Plan plan = three_tensor_plan();
  const Program& program = plan.programs[0];
  EXPECT_EQ(program.ops[static_cast<std::size_t>(rank.peak_tensors[1].allocated_at)].kind, OpKind::Alloc);
  EXPECT_EQ(program.ops[static_cast<std::size_t>(rank.peak_tensors[1].allocated_at)].tensor, rank.peak_tensors[1].tensor);
}

// PyTorch 2.x counts blocks rounded up to 512 B: b 3,072, c 2,048.
TEST(PeakTensors, PyTorchCountsRoundedBlocks) {
  const RankMemory rank = account_memory(three_tensor_plan(), AccountingMode::PyTorch2, kGiB).ranks[0];
  EXPECT_EQ(rank.peak_allocated, 3072 + 2048);
  ASSERT_EQ(rank.peak_tensors.size(), 2u);
  EXPECT_EQ(rank.peak_tensors[0].bytes, 3072);
  EXPECT_EQ(rank.peak_tensors[1].bytes, 2048);
}

// Twelve equal tensors live at the peak: ten kept, the earliest allocated first.
TEST(PeakTensors, KeepsTheTenLargestEarliestFirst) {
  ProgramBuilder b(0);
  for (int i = 0; i < 12; ++i) b.alloc("t" + std::to_string(i), 1024, Category::Parameters);
  Plan plan;
  plan.programs.push_back(b.finish());
  const RankMemory rank = account_memory(plan, AccountingMode::Exact, kGiB).ranks[0];
  ASSERT_EQ(rank.peak_tensors.size(), kPeakTensors);
  for (std::size_t i = 0; i < kPeakTensors; ++i) EXPECT_EQ(rank.peak_tensors[i].name, "t" + std::to_string(i));
}

}  // namespace
}  // namespace shardscope
