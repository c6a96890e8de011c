// A lesson evaluated against its own runs: every scenario lowered, accounted and simulated (lesson_facts.h), every
// claim checked, every step's narration, prediction, anchor and highlight resolved. What `shardscope-cli lessons
// check` reports and the window's presenter mode shows.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "lessons/lesson.h"
#include "lessons/lesson_facts.h"

namespace shardscope::lessons {

struct ClaimResult {
  std::string says, check, op;
  double left = 0, right = 0;  // the values compared
  Unit unit = Unit::Number;    // of the left side
  bool ok = false;
  std::string error;  // why it could not be evaluated ("" when it was)
};

class EvaluatedLesson {
 public:
  const Lesson& lesson() const { return lesson_; }
  const std::vector<ClaimResult>& claims() const { return claims_; }
  // Scenarios that failed, placeholders that do not resolve, anchors naming no phase or op, ...: each names the
  // step or scenario ("steps[2].narration: ddp.peak.rank5: the run has 2 ranks").
  const std::vector<std::string>& problems() const { return problems_; }
  bool ok() const;
  const ScenarioFacts* facts(const std::string& scenario_id) const;

  // "zero1.peak.rank0": a value; the name's first part is a scenario id. Throws ExpressionError.
  Value value(const std::string& name) const;
  // An expression's value and the unit of its first name (Count when it has none).
  Value evaluate(const std::string& expression) const;
  // Narration with each "{expr}" / "{expr|format}" replaced; "{{" is a literal brace. Throws ExpressionError.
  // `values`, when given, receives each placeholder's value.
  std::string fill(const std::string& text, std::vector<double>* values = nullptr) const;
  std::string prediction_answer(const Prediction& prediction) const;
  // Every way the window could print the prediction's answer (its format, the other formats of its unit, the bare
  // digits), leaving out strings so short that they occur anywhere ("2"): what must not be on screen before reveal.
  std::vector<std::string> answer_giveaways(const Prediction& prediction) const;

 private:
  friend EvaluatedLesson evaluate_lesson(const Lesson& lesson);
  explicit EvaluatedLesson(Lesson lesson) : lesson_(std::move(lesson)) {}
  void check_step(const LessonStep& step, const std::string& where);
  Lesson lesson_;
  std::map<std::string, ScenarioFacts> facts_;
  std::vector<ClaimResult> claims_;
  std::vector<std::string> problems_;
};

// Never throws for a lesson's content: what fails is in claims() and problems().
EvaluatedLesson evaluate_lesson(const Lesson& lesson);

}  // namespace shardscope::lessons
