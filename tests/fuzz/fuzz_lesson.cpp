// libFuzzer target: a lesson file's text through parse_lesson_json (the files instructors write and share), then
// each claim split at its comparison and both sides evaluated, as `lessons check` does before it has runs (names
// read as 1.5). A file that is not a lesson must give LessonError and a bad claim ExpressionError; nothing else may
// escape, crash, recurse without bound, or trip ASan / UBSan. Scenario files a lesson names are read relative to the
// shipped lessons (assets/lessons), so the seeds (assets/lessons/*.json) resolve theirs. Scenarios are not run.
#include <cstddef>
#include <cstdint>
#include <string>

#include "lessons/expression.h"
#include "lessons/lesson.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace shardscope::lessons;
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const Lesson lesson = parse_lesson_json(text, "fuzz.json", SHARDSCOPE_LESSONS_DIR);
    for (const Claim& claim : lesson.claims) {
      try {
        const Comparison c = split_comparison(claim.check);
        const auto value_of = [](const std::string&) { return 1.5; };
        (void)comparison_holds(evaluate_expression(c.left, value_of), c.op, evaluate_expression(c.right, value_of), claim.tolerance);
      } catch (const ExpressionError&) {
      }
    }
    (void)lesson.short_path();
  } catch (const LessonError&) {
  }
  return 0;
}
