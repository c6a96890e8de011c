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

// A rank whose program repeats its neighbour's reuses the neighbour's replay (accounting.cpp); one that differs only in
// a tensor's size, or only in a tensor's name, must get its own figures, and every rank keeps its own number.
// x (100 B) then y allocated, y freed, x freed: the peak is 100 + y, with x and y live at it.
TEST(PeakTensors, RepeatedProgramsKeepTheirOwnRankAndFigures) {
  const auto program = [](int rank, Bytes y_bytes, const char* y_name) {
    ProgramBuilder b(rank);
    const TensorId x = b.alloc("x", 100, Category::Activations);
    const TensorId y = b.alloc(y_name, y_bytes, Category::Temporaries);
    b.release(y);
    b.release(x);
    return b.finish();
  };
  Plan plan;
  plan.programs = {program(0, 50, "y"), program(1, 50, "y"), program(2, 70, "y"), program(3, 70, "z")};
  const MemoryReport exact = account_memory(plan, AccountingMode::Exact, 1 << 20);
  ASSERT_EQ(exact.ranks.size(), 4u);
  const Bytes peaks[] = {150, 150, 170, 170};
  for (std::size_t r = 0; r < 4; ++r) {
    EXPECT_EQ(exact.ranks[r].rank, static_cast<int>(r));
    EXPECT_EQ(exact.ranks[r].peak_allocated, peaks[r]) << r;
    ASSERT_EQ(exact.ranks[r].peak_tensors.size(), 2u);
    EXPECT_EQ(exact.ranks[r].series.size(), 4u);  // two allocs, two frees
  }
  EXPECT_EQ(exact.ranks[1].peak_tensors[1].name, "y");
  EXPECT_EQ(exact.ranks[2].peak_tensors[1].bytes, 70);
  EXPECT_EQ(exact.ranks[3].peak_tensors[1].name, "z");
  // PyTorch's 512 B blocks: 512 + 512 on every rank.
  for (const RankMemory& rank : account_memory(plan, AccountingMode::PyTorch2, 1 << 20).ranks) EXPECT_EQ(rank.peak_allocated, 1024);
}

}  // namespace
}  // namespace shardscope
