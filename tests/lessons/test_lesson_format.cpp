// Lesson files (lessons/lesson.h, lesson_check.h): strict reading with errors that name the key, and evaluation:
// claims, narration numbers and anchors against a small run whose bytes are worked out by hand.
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>

#include "lessons/expression.h"
#include "lessons/lesson_check.h"

namespace shardscope::lessons {
namespace {

// One Linear(1000, 1000) on one H100 under PyTorch 2.x rules: weight 4,000,000 B and bias 4,000 B, each rounded
// up to a multiple of 512 B: 4,000,256 + 4,096 = 4,004,352 B after .to().
const std::string kScenario =
    R"j("one": {"scenario": {"name": "one layer", "model": {"spec": "mlp:1x1000"}, "training": {"batch": 8, "optimizer": "sgd", "steps": 1},
        "cluster": {"world": 1}, "strategy": {"name": "single"}, "accounting": {"mode": "pytorch-2"}}})j";

Lesson parse(const std::string& body) { return parse_lesson_json("{" + body + "}", "test.json", "."); }

std::string lesson_text(const std::string& claims, const std::string& steps) {
  return R"j("title": "t", "question": "q", "scenarios": {)j" + kScenario + R"j(, "ring": {"all_reduce_demo": [[1, 2], [3, 4]]}},
            "claims": [)j" + claims + R"j(], "steps": [)j" + steps + "]";
}

std::string error_of(const std::string& body) {
  try {
    parse(body);
  } catch (const LessonError& e) {
    return e.what();
  }
  return "";
}

TEST(LessonFormat, UnknownKeysAndBadReferencesAreNamed) {
  EXPECT_NE(error_of(lesson_text("", R"j({"title": "a", "narration": "n", "predict": {"question": "q", "answr": "1"}})j"))
                .find("test.json: steps[0].predict: unknown key 'answr'"), std::string::npos);
  EXPECT_NE(error_of(lesson_text("", R"j({"title": "a", "narration": "n", "scenario": "two"})j")).find("steps[0].scenario: no scenario 'two'"),
            std::string::npos);
  EXPECT_NE(error_of(lesson_text("", R"j({"title": "a", "narration": "n", "highlight": {"category": "weights"}})j"))
                .find("unknown category 'weights'"), std::string::npos);
  EXPECT_NE(error_of(lesson_text("", R"j({"title": "a", "narration": "n", "ring_step": 1})j")).find("ring_step: only for an all-reduce demo"),
            std::string::npos);
  EXPECT_NE(error_of(R"j("title": "t", "question": "q", "scenarios": {"Bad-Id": {"scenario": {}}}, "steps": [])j").find("scenarios.Bad-Id"),
            std::string::npos);
  EXPECT_NE(error_of(R"j("title": "t", "question": "q", "scenarios": {"a": {"scenario": {"training": {"batchsize": 1}}}}, "steps": [{"title": "a", "narration": "n"}])j")
                .find("batchsize"), std::string::npos);
  EXPECT_NE(error_of(R"j("title": "t", "question": "q", "scenarios": {"d": {"all_reduce_demo": [[1, 2], [3]]}}, "steps": [{"title": "a", "narration": "n"}])j")
                .find("same length"), std::string::npos);
  EXPECT_NE(error_of(lesson_text("", R"j({"title": "a", "narration": "n"})j") + R"j(, "extra": 1)j").find("unknown key 'extra'"), std::string::npos);
}

// Issue 18: a lesson is read as a scenario file is: nesting bounded (an inline scenario nested 100,000 deep would be
// dumped recursively), duplicate keys refused, errors naming the file.
TEST(LessonFormat, HostileJsonEndsInAnError) {
  const std::string deep = error_of(R"j("title": )j" + std::string(100000, '[') + std::string(100000, ']'));
  EXPECT_EQ(deep.rfind("test.json: title[0]", 0), 0u) << deep.substr(0, 200);
  EXPECT_NE(deep.find("nested more than 64 levels deep"), std::string::npos) << deep.substr(0, 200);
  EXPECT_EQ(error_of(R"j("title": "a", "title": "b")j").rfind("test.json: title: duplicate key", 0), 0u);
  EXPECT_NE(error_of(R"j("title": 1e400)j").find("test.json: is not valid JSON: line 1, column 11: the number 1e400"), std::string::npos);
}

TEST(LessonFormat, ClaimsAreCheckedAgainstTheRun) {
  const Lesson lesson = parse(lesson_text(
      R"j({"says": "rounded to 512 B", "check": "one.allocated.model_created.rank0 == 512 * ceil(4000000 / 512) + 512 * ceil(4000 / 512)"},
         {"says": "wrong on purpose", "check": "one.allocated.model_created.rank0 < 4000000"},
         {"says": "the ring sums", "check": "ring.ring.result.rank1.1 == 2 + 4"})j",
      R"j({"title": "a", "at": "model_created", "narration": "It prints {one.allocated.model_created.rank0|B}, {one.allocated.model_created.rank0}."})j"));
  const EvaluatedLesson evaluated = evaluate_lesson(lesson);
  ASSERT_EQ(evaluated.claims().size(), 3u);
  EXPECT_TRUE(evaluated.claims()[0].ok) << evaluated.claims()[0].error;
  EXPECT_DOUBLE_EQ(evaluated.claims()[0].left, 4004352);
  EXPECT_FALSE(evaluated.claims()[1].ok);
  EXPECT_TRUE(evaluated.claims()[2].ok) << evaluated.claims()[2].error;
  EXPECT_FALSE(evaluated.ok());
  EXPECT_TRUE(evaluated.problems().empty()) << evaluated.problems().front();
  EXPECT_EQ(evaluated.fill(lesson.steps[0].narration), "It prints 4,004,352 B, 3.82 MiB.");  // 4,004,352 / 2^20 = 3.819
}

TEST(LessonFormat, StepsThatPointAtNothingAreProblems) {
  const Lesson lesson = parse(lesson_text("",
      R"j({"title": "a", "at": "step 3 forward", "narration": "{one.peak.rank5}"},
         {"title": "b", "at": {"op": "no such op", "rank": 0}, "narration": "ok", "predict": {"question": "q", "answer": "one.peak.rank0 / 0"}},
         {"title": "c", "scenario": "ring", "ring_step": 3, "narration": "{one.bubble|furlongs}"})j"));
  const EvaluatedLesson evaluated = evaluate_lesson(lesson);
  const auto& problems = evaluated.problems();
  ASSERT_EQ(problems.size(), 6u);
  EXPECT_NE(problems[0].find("steps[0]: narration: one.peak.rank5: the run has 1 ranks"), std::string::npos) << problems[0];
  EXPECT_NE(problems[1].find("steps[0]: at: no phase 'step 3 forward'"), std::string::npos) << problems[1];
  EXPECT_NE(problems[2].find("steps[1]: predict.answer"), std::string::npos) << problems[2];
  EXPECT_NE(problems[3].find("steps[1]: at: rank 0 has no op 'no such op'"), std::string::npos) << problems[3];
  EXPECT_NE(problems[4].find("unknown format 'furlongs'"), std::string::npos) << problems[4];
  EXPECT_NE(problems[5].find("ring_step 3: the ring has 2 steps"), std::string::npos) << problems[5];  // 2(n − 1), n = 2
  EXPECT_FALSE(evaluated.ok());
}


TEST(LessonFormat, ANarrationThatGivesThePredictionAwayIsAProblem) {
  const Lesson lesson = parse(lesson_text("",
      R"j({"title": "a", "narration": "After .to() it prints {one.allocated.model_created.rank0|B}.",
          "predict": {"question": "what does it print?", "answer": "one.allocated.model_created.rank0", "format": "B"}})j"));
  const EvaluatedLesson evaluated = evaluate_lesson(lesson);
  ASSERT_EQ(evaluated.problems().size(), 1u);
  EXPECT_NE(evaluated.problems()[0].find("gives the prediction's answer (4,004,352 B) away"), std::string::npos) << evaluated.problems()[0];
}

// Times a class reads aloud: three significant digits, never "1.07e+03 µs".
TEST(LessonFormat, TimesHaveThreeDigitsAndNoExponent) {
  EXPECT_EQ(format_value(1'070'000, Unit::Nanoseconds, "us"), "1,070 µs");
  EXPECT_EQ(format_value(1'234'000, Unit::Nanoseconds, "ms"), "1.23 ms");
  EXPECT_EQ(format_value(98'760'000'000, Unit::Nanoseconds, "ms"), "98,800 ms");
  EXPECT_EQ(format_value(4'560, Unit::Nanoseconds, "us"), "4.56 µs");
  EXPECT_EQ(format_value(12, Unit::Nanoseconds, "us"), "0.0120 µs");
}

// Formats that show whole numbers take them within ±2^63 (9.22e18); past it, a clear error rather than what
// std::llround happened to return ({1e300|int} showed "−0", {1e19|bytes} a negative size).
TEST(LessonFormat, NumbersPastWholeRangeAreAnErrorNotAWrongValue) {
  for (const char* format : {"int", "B", "bytes", "duration", "us"}) {
    for (const double number : {1e300, -1e300, 1e19, std::numeric_limits<double>::infinity()}) {
      const double shown = std::string(format) == "us" ? number * 1e3 : number;  // us shows ns / 1e3
      try {
        const std::string text = format_value(shown, Unit::Bytes, format);
        ADD_FAILURE() << format << " showed " << shown << " as '" << text << "'";
      } catch (const ExpressionError& e) {
        EXPECT_NE(std::string(e.what()).find("cannot be shown in format '" + std::string(format) + "', which shows whole numbers within ±2^63"),
                  std::string::npos) << e.what();
      }
    }
  }
  // Just inside the range: 2^62 B is 2^32 GiB (format_bytes stops at GiB), 9e18 grouped by thousands.
  EXPECT_EQ(format_value(4611686018427387904.0, Unit::Bytes, "bytes"), "4294967296.00 GiB");
  EXPECT_EQ(format_value(9e18, Unit::Count, "int"), "9,000,000,000,000,000,000");
  EXPECT_EQ(format_value(-9e18, Unit::Count, "int"), "−9,000,000,000,000,000,000");
  EXPECT_EQ(format_value(1e300, Unit::Number, "num"), "1e+300");
}

// What must not be on screen before a prediction is revealed: the answer in its own format, in the other formats of
// its unit, and as bare digits; never a string so short it occurs anywhere.
TEST(LessonFormat, AnAnswersGiveawaysAreEveryFormOfIt) {
  const Lesson lesson = parse(lesson_text("",
      R"j({"title": "a", "narration": "n", "short": true,
          "predict": {"question": "what does it print?", "answer": "one.allocated.model_created.rank0", "format": "B"}},
         {"title": "b", "narration": "m"})j"));
  const EvaluatedLesson evaluated = evaluate_lesson(lesson);
  const std::vector<std::string> giveaways = evaluated.answer_giveaways(*lesson.steps[0].predict);
  for (const std::string expected : {"4,004,352 B", "4004352 B", "3.82 MiB", "4,004,352", "4004352"})
    EXPECT_NE(std::find(giveaways.begin(), giveaways.end(), expected), giveaways.end()) << expected;
  EXPECT_EQ(lesson.short_path(), std::vector<int>{0}) << "the steps marked short";
}

TEST(LessonFormat, ShortMustBeTrueOrFalse) {
  EXPECT_NE(error_of(lesson_text("", R"j({"title": "a", "narration": "n", "short": "yes"})j")).find("steps[0].short: must be true or false"),
            std::string::npos);
}

}  // namespace
}  // namespace shardscope::lessons
