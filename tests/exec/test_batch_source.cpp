// Batch source: rank slices against a plain re-statement of DistributedSampler + DataLoader, and the same
// samples for world 2 × batch 8 as for world 1 × batch 16.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <vector>

#include "exec/data/batch_source.h"

namespace shardscope::exec {
namespace {

// torch DistributedSampler(shuffle=False, drop_last=False) over a dataset of `length`, then DataLoader batches:
// indices = range(length); padded to a multiple of world; rank's list = indices[rank::world]; batch s = list[sB:(s+1)B].
std::vector<std::int64_t> sampler_then_loader(std::int64_t length, int world, int rank, int per_rank_batch, int step) {
  std::vector<std::int64_t> indices;
  for (std::int64_t i = 0; i < length; ++i) indices.push_back(i);
  const std::int64_t total = (length + world - 1) / world * world;
  for (std::int64_t i = 0; indices.size() < static_cast<std::size_t>(total); ++i) indices.push_back(indices[i]);
  std::vector<std::int64_t> rank_list;
  for (std::int64_t i = rank; i < total; i += world) rank_list.push_back(indices[i]);
  return {rank_list.begin() + step * per_rank_batch, rank_list.begin() + (step + 1) * per_rank_batch};
}

TEST(BatchSource, RankSlicesFollowDistributedSampler) {
  for (int world : {1, 2, 3, 4}) {
    for (int rank = 0; rank < world; ++rank) {
      for (int step : {0, 1, 5}) {
        const int global = 12;
        EXPECT_EQ(rank_sample_indices({step, global, world, rank}),
                  sampler_then_loader(1200, world, rank, global / world, step))
            << "world " << world << " rank " << rank << " step " << step;
      }
    }
  }
}

TEST(BatchSource, WorldTwoBatchEightSeesWorldOneBatchSixteen) {
  const BatchSource source(2024, 5);
  for (int step : {0, 3}) {
    const auto whole = rank_sample_indices({step, 16, 1, 0});
    std::vector<float> whole_inputs(16 * 5), whole_targets(16 * 2);
    std::vector<std::int32_t> whole_classes(16);
    source.fill_inputs(whole, whole_inputs);
    source.fill_regression_targets(whole, 2, whole_targets);
    source.fill_class_targets(whole, 10, whole_classes);
    std::map<std::int64_t, std::vector<float>> rows;  // sample → its inputs, targets and class
    for (std::size_t r = 0; r < whole.size(); ++r) {
      std::vector<float> row(whole_inputs.begin() + r * 5, whole_inputs.begin() + (r + 1) * 5);
      row.insert(row.end(), whole_targets.begin() + r * 2, whole_targets.begin() + (r + 1) * 2);
      row.push_back(static_cast<float>(whole_classes[r]));
      rows[whole[r]] = row;
    }
    std::set<std::int64_t> seen;
    for (int rank = 0; rank < 2; ++rank) {
      const auto mine = rank_sample_indices({step, 16, 2, rank});
      ASSERT_EQ(mine.size(), 8u);
      std::vector<float> inputs(8 * 5), targets(8 * 2);
      std::vector<std::int32_t> classes(8);
      source.fill_inputs(mine, inputs);
      source.fill_regression_targets(mine, 2, targets);
      source.fill_class_targets(mine, 10, classes);
      for (std::size_t r = 0; r < mine.size(); ++r) {
        std::vector<float> row(inputs.begin() + r * 5, inputs.begin() + (r + 1) * 5);
        row.insert(row.end(), targets.begin() + r * 2, targets.begin() + (r + 1) * 2);
        row.push_back(static_cast<float>(classes[r]));
        ASSERT_TRUE(rows.count(mine[r])) << "sample " << mine[r] << " is not in the world-1 batch";
        EXPECT_EQ(row, rows[mine[r]]);
        seen.insert(mine[r]);
      }
    }
    EXPECT_EQ(seen.size(), 16u);  // the two ranks together hold all 16, none twice
  }
}

TEST(BatchSource, ValuesDependOnSeedAndSampleOnly) {
  const BatchSource a(1, 64), b(1, 64), other(2, 64);
  const std::vector<std::int64_t> samples = {7, 1000000007};
  std::vector<float> va(128), vb(128), vo(128);
  a.fill_inputs(samples, va);
  b.fill_inputs(samples, vb);
  other.fill_inputs(samples, vo);
  EXPECT_EQ(va, vb);
  EXPECT_NE(va, vo);
  EXPECT_NE(std::vector<float>(va.begin(), va.begin() + 64), std::vector<float>(va.begin() + 64, va.end()));
}

TEST(BatchSource, InputsUniformInRangeAndClassesCoverEveryId) {
  const BatchSource source(99, 100);
  std::vector<std::int64_t> samples(1000);
  for (std::size_t i = 0; i < samples.size(); ++i) samples[i] = static_cast<std::int64_t>(i);
  std::vector<float> inputs(1000 * 100);
  source.fill_inputs(samples, inputs);
  double sum = 0.0;
  for (float v : inputs) {
    ASSERT_GE(v, -1.0f);
    ASSERT_LT(v, 1.0f);
    sum += v;
  }
  // U(−1, 1) has variance 1/3: the mean of 100 000 values has standard deviation 0.0018; allow 4 of those.
  EXPECT_NEAR(sum / inputs.size(), 0.0, 0.0073);
  std::vector<std::int32_t> classes(1000);
  source.fill_class_targets(samples, 10, classes);
  std::vector<int> counts(10, 0);
  for (std::int32_t c : classes) {
    ASSERT_GE(c, 0);
    ASSERT_LT(c, 10);
    ++counts[static_cast<std::size_t>(c)];
  }
  for (int count : counts) EXPECT_GT(count, 50);  // expected 100 each
}

TEST(BatchSource, RejectsBadSlicesAndBufferSizes) {
  EXPECT_THROW(rank_sample_indices({0, 10, 4, 0}), std::invalid_argument);  // 10 is not a multiple of 4
  EXPECT_THROW(rank_sample_indices({0, 8, 2, 2}), std::invalid_argument);   // rank outside the world
  const BatchSource source(1, 3);
  std::vector<float> wrong(5);
  EXPECT_THROW(source.fill_inputs(std::vector<std::int64_t>{0, 1}, wrong), std::invalid_argument);
}

}  // namespace
}  // namespace shardscope::exec
