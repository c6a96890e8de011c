// The compact storage of an op's label and dependencies (plan/op_label.h, plan/op_deps.h): they must read and copy
// like the std::string and std::vector they replaced.
#include <gtest/gtest.h>

#include <sstream>
#include <thread>
#include <vector>

#include "plan/op.h"
#include "plan/plan.h"

namespace shardscope {
namespace {

TEST(OpLabel, EqualTextsShareOneString) {
  const std::string built = std::string("all-reduce ") + "bucket 2";
  const OpLabel a = built;
  const OpLabel b = "all-reduce bucket 2";
  EXPECT_EQ(&a.str(), &b.str());
  EXPECT_EQ(a, b);
  EXPECT_NE(a, OpLabel("all-reduce bucket 3"));
}

TEST(OpLabel, ReadsLikeAString) {
  Op op;
  EXPECT_TRUE(op.label.empty());
  EXPECT_EQ(op.label, "");
  op.label = std::string("fc3 backward");
  EXPECT_EQ(op.label, "fc3 backward");
  EXPECT_EQ(op.label.size(), 12u);
  EXPECT_EQ(op.label.find("backward"), 4u);
  EXPECT_EQ("'" + op.label + "'", "'fc3 backward'");
  EXPECT_EQ(std::string("op ") + op.label, "op fc3 backward");
  const std::string copy = op.label;
  EXPECT_EQ(copy, "fc3 backward");
  std::ostringstream out;
  out << op.label;
  EXPECT_EQ(out.str(), "fc3 backward");
}

// The window lowers on a worker thread while other code may lower too: every thread gets the same string.
TEST(OpLabel, InterningIsThreadSafe) {
  std::vector<const std::string*> seen(4);
  std::vector<std::thread> threads;
  for (std::size_t t = 0; t < seen.size(); ++t)
    threads.emplace_back([&seen, t] {
      for (int i = 0; i < 1000; ++i) seen[t] = &OpLabel("layer " + std::to_string(i)).str();
    });
  for (auto& thread : threads) thread.join();
  for (const auto* s : seen) EXPECT_EQ(s, &OpLabel("layer 999").str());
}

TEST(OpDeps, HoldsTwoInlineAndGrowsPastThem) {
  OpDeps deps;
  EXPECT_TRUE(deps.empty());
  for (OpIndex i = 0; i < 37; ++i) deps.push_back(i * 3);
  ASSERT_EQ(deps.size(), 37u);
  for (OpIndex i = 0; i < 37; ++i) EXPECT_EQ(deps[static_cast<std::size_t>(i)], i * 3);
  OpIndex sum = 0;
  for (OpIndex d : deps) sum += d;
  EXPECT_EQ(sum, 3 * (36 * 37 / 2));
}

TEST(OpDeps, CopiesAndMovesKeepTheValues) {
  const std::vector<OpIndex> many = {4, 8, 15, 16, 23, 42};
  for (const std::vector<OpIndex>& values : {std::vector<OpIndex>{}, std::vector<OpIndex>{7}, many}) {
    const OpDeps original = values;
    OpDeps copy = original;
    EXPECT_EQ(std::vector<OpIndex>(copy.begin(), copy.end()), values);
    OpDeps moved = std::move(copy);
    EXPECT_EQ(std::vector<OpIndex>(moved.begin(), moved.end()), values);
    EXPECT_TRUE(copy.empty());  // NOLINT(bugprone-use-after-move): a moved-from list is empty
    OpDeps assigned = {1, 2, 3};
    assigned = original;
    EXPECT_EQ(std::vector<OpIndex>(assigned.begin(), assigned.end()), values);
    assigned = std::move(moved);
    EXPECT_EQ(std::vector<OpIndex>(assigned.begin(), assigned.end()), values);
  }
}

TEST(OpDeps, AnOpStaysSmall) {
  // Two interned names, inline deps, operands behind one pointer and a count, 1-byte kinds and a 32-bit sequence
  // beside the other ints: the fields' sizes, not a measured figure.
  EXPECT_LE(sizeof(Op), 120u);
  // An interned name, a byte count, the small fields, and the initial values behind one pointer.
  EXPECT_LE(sizeof(TensorInfo), 32u);
}

TEST(OpArgs, ReadsLikeAVectorAndCopiesItsOperands) {
  Op op;
  EXPECT_TRUE(op.args.empty());
  EXPECT_EQ(op.args.begin(), op.args.end());
  const std::vector<TensorSlice> built = {whole(3), TensorSlice{4, 16, 32}};
  op.args = built;
  Op copy = op;
  op.args = {whole(7)};  // the copy keeps its own two
  ASSERT_EQ(copy.args.size(), 2u);
  EXPECT_EQ(copy.args[0].tensor, 3);
  EXPECT_EQ(copy.args[1].offset, 16);
  EXPECT_EQ(copy.args[1].bytes, 32);
  std::vector<TensorId> tensors;
  for (const TensorSlice& slice : copy.args) tensors.push_back(slice.tensor);
  EXPECT_EQ(tensors, (std::vector<TensorId>{3, 4}));
  const Op moved = std::move(copy);
  EXPECT_EQ(moved.args.size(), 2u);
  ASSERT_EQ(op.args.size(), 1u);
  EXPECT_EQ(op.args[0].tensor, 7);
}

TEST(ParameterInits, ReadsLikeAVectorAndCopiesItsRanges) {
  TensorInfo tensor;
  EXPECT_TRUE(tensor.initial_values.empty());
  EXPECT_EQ(tensor.initial_values.begin(), tensor.initial_values.end());
  tensor.initial_values.push_back({.name = "fc1.weight", .numel = 6, .fan_in = 3});
  tensor.initial_values.push_back({.name = "fc1.bias", .offset = 24, .numel = 2, .constant = true});
  TensorInfo copy = tensor;
  tensor.initial_values.push_back({.name = "fc2.weight"});  // the copy keeps its own two ranges
  ASSERT_EQ(copy.initial_values.size(), 2u);
  EXPECT_EQ(copy.initial_values[0].name, "fc1.weight");
  EXPECT_EQ(copy.initial_values[1].offset, 24);
  std::vector<std::string> names;
  for (const ParameterInit& init : copy.initial_values) names.push_back(init.name);
  EXPECT_EQ(names, (std::vector<std::string>{"fc1.weight", "fc1.bias"}));
  const TensorInfo moved = std::move(copy);
  EXPECT_EQ(moved.initial_values.size(), 2u);
  EXPECT_EQ(tensor.initial_values.size(), 3u);
}

}  // namespace
}  // namespace shardscope
