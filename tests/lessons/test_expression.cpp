// Lesson arithmetic (lessons/expression.h): precedence, names, functions, comparisons and their errors, against
// values worked out by hand.
#include <gtest/gtest.h>

#include <map>

#include "lessons/expression.h"

namespace shardscope::lessons {
namespace {

double eval(const std::string& text, const std::map<std::string, double>& values = {}) {
  return evaluate_expression(text, [&](const std::string& name) {
    const auto it = values.find(name);
    if (it == values.end()) throw ExpressionError("unknown " + name);
    return it->second;
  });
}

TEST(LessonExpression, ArithmeticFollowsTheUsualPrecedence) {
  EXPECT_DOUBLE_EQ(eval("1 + 2 * 3"), 7);
  EXPECT_DOUBLE_EQ(eval("(1 + 2) * 3"), 9);
  EXPECT_DOUBLE_EQ(eval("8 / 4 / 2"), 1);  // left to right
  EXPECT_DOUBLE_EQ(eval("2 - 3 - 4"), -5);
  EXPECT_DOUBLE_EQ(eval("-2 * -3"), 6);
  EXPECT_DOUBLE_EQ(eval("1.5e3 + .5"), 1500.5);
}

TEST(LessonExpression, NamesAndFunctions) {
  const std::map<std::string, double> v{{"ddp.peak.rank0", 100}, {"zero1.peak.rank0", 60}};
  EXPECT_DOUBLE_EQ(eval("zero1.peak.rank0 / ddp.peak.rank0", v), 0.6);
  EXPECT_DOUBLE_EQ(eval("max(1, 5, 3) + min(4, 2)", v), 7);
  EXPECT_DOUBLE_EQ(eval("ceil(4000000 / 512) * 512"), 4000256);  // 7812.5 blocks of 512 B round up to 7813
  EXPECT_DOUBLE_EQ(eval("floor(2.7) + abs(-1)"), 3);
  EXPECT_EQ(expression_names("a.b * (c + 2) - max(d, 1)"), (std::vector<std::string>{"a.b", "c", "d"}));
}

TEST(LessonExpression, ErrorsSayWhereAndWhat) {
  EXPECT_THROW(eval("1 +"), ExpressionError);
  EXPECT_THROW(eval("(1 + 2"), ExpressionError);
  EXPECT_THROW(eval("1 / 0"), ExpressionError);
  EXPECT_THROW(eval("sqrt(4)"), ExpressionError);
  EXPECT_THROW(eval("missing.value"), ExpressionError);
  try {
    eval("2 * (3 + )");
    FAIL();
  } catch (const ExpressionError& e) {
    EXPECT_NE(std::string(e.what()).find("at 10"), std::string::npos) << e.what();
  }
}

TEST(LessonExpression, ClaimsSplitAtOneComparison) {
  const Comparison c = split_comparison("zero1.peak.rank0 < 0.85 * ddp.peak.rank0");
  EXPECT_EQ(c.op, "<");
  EXPECT_EQ(c.left, "zero1.peak.rank0 ");
  EXPECT_EQ(c.right, " 0.85 * ddp.peak.rank0");
  EXPECT_EQ(split_comparison("a <= b").op, "<=");
  EXPECT_EQ(split_comparison("a == b").op, "==");
  EXPECT_THROW(split_comparison("a + b"), ExpressionError);
  EXPECT_THROW(split_comparison("a < b < c"), ExpressionError);
}

TEST(LessonExpression, EqualityHoldsWithinTheRelativeTolerance) {
  EXPECT_TRUE(comparison_holds(4004352, "==", 4004352, 0));
  EXPECT_FALSE(comparison_holds(4004352, "==", 4004353, 0));
  EXPECT_TRUE(comparison_holds(99.5, "==", 100, 0.01));   // 0.5 within 1 % of 100
  EXPECT_FALSE(comparison_holds(98, "==", 100, 0.01));
  EXPECT_TRUE(comparison_holds(98, "!=", 100, 0.01));
  EXPECT_TRUE(comparison_holds(1, "<", 2, 0.5));           // order comparisons ignore the tolerance
  EXPECT_FALSE(comparison_holds(2, "<", 2, 0.5));
}

}  // namespace
}  // namespace shardscope::lessons
