// SegmentedArray (trace/store/segmented_array.h) against std::vector doing the same appends, inserts and truncations:
// equal contents at every size, across the block edges (64, 64 + 128, ..., then every 16,384), and element addresses that never move
// as the array grows (what spares a live run the vector's copy).
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

#include "trace/store/segmented_array.h"

namespace shardscope {
namespace {

template <class T>
void expect_same(const SegmentedArray<T>& got, const std::vector<T>& want, const char* when) {
  ASSERT_EQ(got.size(), want.size()) << when;
  for (std::size_t i = 0; i < want.size(); ++i) ASSERT_EQ(got[i], want[i]) << when << ", element " << i;
  ASSERT_TRUE(std::equal(got.begin(), got.end(), want.begin(), want.end())) << when << ": iteration";
}

TEST(SegmentedArray, AppendsAcrossBlockEdgesAsAVector) {
  SegmentedArray<long> array;
  std::vector<long> model;
  EXPECT_TRUE(array.empty());
  // The first block grows at 64, 128, ..., 2,048; later blocks begin at 4,096, 8,192, ...
  for (long i = 0; i < 60000; ++i) {
    array.push_back(3 * i + 1);
    model.push_back(3 * i + 1);
  }
  expect_same(array, model, "after 60000 appends");
  EXPECT_EQ(array.front(), 1);
  EXPECT_EQ(array.back(), 3 * 59999 + 1);
  for (std::size_t edge : {63u, 64u, 127u, 128u, 2047u, 2048u, 4095u, 4096u, 8191u, 8192u, 53247u, 53248u})
    EXPECT_EQ(array[edge], model[edge]) << edge;
}

TEST(SegmentedArray, ElementsPastTheFirstBlockNeverMove) {
  SegmentedArray<int> array;
  for (int i = 0; i <= 5000; ++i) array.push_back(i);
  const int* held = &array[5000];
  for (int i = 5001; i < 100000; ++i) array.push_back(i);
  EXPECT_EQ(&array[5000], held);
  EXPECT_EQ(*held, 5000);
}

TEST(SegmentedArray, RandomInsertsTruncationsAndSearchesMatchAVector) {
  std::mt19937 random(11);
  SegmentedArray<int> array;
  std::vector<int> model;
  for (int i = 0; i < 20000; ++i) {  // several blocks, so the operations below cross their edges
    array.push_back(i % 1000);
    model.push_back(i % 1000);
  }
  for (int round = 0; round < 3000; ++round) {
    const unsigned what = random() % 10;
    if (what < 6 || model.empty()) {  // append
      const int value = static_cast<int>(random() % 1000);
      array.push_back(value);
      model.push_back(value);
    } else if (what < 9) {  // insert before a random position (a late span begin)
      const auto at = static_cast<std::ptrdiff_t>(random() % (model.size() + 1));
      const int value = static_cast<int>(random() % 1000);
      const auto it = array.insert(array.begin() + at, value);
      model.insert(model.begin() + at, value);
      ASSERT_EQ(*it, value);
      ASSERT_EQ(it - array.begin(), at);
    } else {  // drop a tail of up to 20 (the array keeps several blocks)
      const auto keep = static_cast<std::ptrdiff_t>(model.size() - std::min<std::size_t>(model.size(), random() % 21));
      array.erase_to_end(array.begin() + keep);
      model.erase(model.begin() + keep, model.end());
    }
  }
  ASSERT_GT(model.size(), 3 * 4096u);
  expect_same(array, model, "after 3000 random operations");
  // Sorted, it answers binary searches as the vector does (the timeline's lookups).
  std::sort(array.begin(), array.end());
  std::sort(model.begin(), model.end());
  expect_same(array, model, "sorted");
  for (int probe = -1; probe <= 1001; probe += 7) {
    EXPECT_EQ(std::lower_bound(array.begin(), array.end(), probe) - array.begin(),
              std::lower_bound(model.begin(), model.end(), probe) - model.begin()) << probe;
    EXPECT_EQ(std::upper_bound(array.begin(), array.end(), probe) - array.begin(),
              std::upper_bound(model.begin(), model.end(), probe) - model.begin()) << probe;
  }
}

TEST(SegmentedArray, CopiesAreIndependentAndClearEmpties) {
  SegmentedArray<int> array;
  for (int i = 0; i < 300; ++i) array.push_back(i);
  SegmentedArray<int> copy = array;
  copy[5] = -1;
  copy.push_back(300);
  EXPECT_EQ(array[5], 5);
  EXPECT_EQ(array.size(), 300u);
  EXPECT_EQ(copy.size(), 301u);
  SegmentedArray<int> moved = std::move(copy);
  EXPECT_EQ(moved[5], -1);
  array.clear();
  EXPECT_TRUE(array.empty());
  array.push_back(9);
  EXPECT_EQ(array.back(), 9);
}

}  // namespace
}  // namespace shardscope
