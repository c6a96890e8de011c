// Evaluates a lesson (lesson_check.h): facts per scenario, then claims, then each step's references.
#include "lessons/lesson_check.h"

#include <algorithm>
#include <cctype>
#include <sstream>

#include "core/untrusted_text.h"
#include "lessons/expression.h"

namespace shardscope::lessons {

bool EvaluatedLesson::ok() const {
  return problems_.empty() && std::all_of(claims_.begin(), claims_.end(), [](const ClaimResult& c) { return c.ok; });
}

const ScenarioFacts* EvaluatedLesson::facts(const std::string& scenario_id) const {
  const auto it = facts_.find(scenario_id);
  return it == facts_.end() ? nullptr : &it->second;
}

Value EvaluatedLesson::value(const std::string& name) const {
  const std::size_t dot = name.find('.');
  const std::string id = name.substr(0, dot);
  if (!lesson_.find_scenario(id)) {
    std::string known;
    for (const LessonScenario& s : lesson_.scenarios) known += (known.empty() ? "" : ", ") + s.id;
    throw ExpressionError(name + ": names start with a scenario id (" + known + ")");
  }
  const ScenarioFacts* f = facts(id);
  if (!f) throw ExpressionError(name + ": scenario '" + id + "' could not be run");
  if (dot == std::string::npos) throw ExpressionError(name + ": a scenario id alone is not a value");
  return fact_value(*f, name.substr(dot + 1));
}

Value EvaluatedLesson::evaluate(const std::string& expression) const {
  std::optional<Unit> unit;
  const double number = evaluate_expression(expression, [&](const std::string& name) {
    const Value v = value(name);
    if (!unit) unit = v.unit;
    return v.number;
  });
  return {number, unit.value_or(Unit::Count)};
}

std::string EvaluatedLesson::fill(const std::string& text, std::vector<double>* values) const {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '{') {
      out += text[i];
      continue;
    }
    if (i + 1 < text.size() && text[i + 1] == '{') {
      out += '{';
      ++i;
      continue;
    }
    const std::size_t close = text.find('}', i);
    if (close == std::string::npos) throw ExpressionError("a '{' without its '}'");
    const std::string inside = text.substr(i + 1, close - i - 1);
    const std::size_t bar = inside.find('|');
    const Value v = evaluate(inside.substr(0, bar));
    if (values) values->push_back(v.number);
    out += format_value(v.number, v.unit, bar == std::string::npos ? "" : inside.substr(bar + 1));
    i = close;
  }
  return out;
}

std::string EvaluatedLesson::prediction_answer(const Prediction& prediction) const {
  const Value v = evaluate(prediction.answer);
  const std::string number = format_value(v.number, v.unit, prediction.format);
  return prediction.unit.empty() ? number : number + " " + prediction.unit;
}

namespace {

// True for a formatted value that says what it counts: "4,004,352 B", "3.82 MiB", "28.3 %", "2.00×" — not "1,361".
bool has_unit(const std::string& text) {
  return std::any_of(text.begin(), text.end(), [](char c) {
    return !std::isdigit(static_cast<unsigned char>(c)) && c != ',' && c != '.' && c != '-' && c != ' ';
  });
}

}  // namespace

std::vector<std::string> EvaluatedLesson::answer_giveaways(const Prediction& prediction) const {
  const Value v = evaluate(prediction.answer);
  std::vector<std::string> formats = {prediction.format, ""};
  switch (v.unit) {
    case Unit::Bytes: formats.insert(formats.end(), {"bytes", "B", "GB", "int"}); break;
    case Unit::Nanoseconds: formats.insert(formats.end(), {"ms", "us"}); break;
    case Unit::Fraction: formats.insert(formats.end(), {"percent", "x", "num"}); break;
    case Unit::Count:
    case Unit::Number: formats.insert(formats.end(), {"int", "num", "x"}); break;
  }
  std::vector<std::string> texts;
  for (const std::string& f : formats) {
    std::string text = format_value(v.number, v.unit, f);
    // "8,008,704" also shows as "8008704"; the digits alone say as much as the figure with its unit.
    std::string digits;
    for (char c : text)
      if (c != ',') digits += c;
    for (std::string candidate : {text, digits}) {
      if (candidate.size() < 4 && !has_unit(candidate)) continue;  // "11" or "2" occur in any caption
      if (std::find(texts.begin(), texts.end(), candidate) == texts.end()) texts.push_back(candidate);
    }
  }
  return texts;
}

namespace {

bool phase_exists(const ScenarioFacts& facts, const std::string& text, int rank) {
  if (text == "end" || text == "start") return true;
  std::istringstream in(text);
  std::string first, name, step_text;
  int step = -1;
  in >> first;
  name = first;
  if (first == "step") {  // "step K name", K a step number: "step -1 forward" is no phase
    if (!(in >> step_text >> name)) return false;
    const std::optional<int> count = parse_count(step_text);
    if (!count) return false;
    step = *count;
  }
  if (rank < 0 || static_cast<std::size_t>(rank) >= facts.memory.ranks.size()) return false;
  const auto& phases = facts.memory.ranks[static_cast<std::size_t>(rank)].phases;
  return std::any_of(phases.begin(), phases.end(), [&](const PhaseMemory& p) { return p.name == name && (step < 0 || p.step == step); });
}

}  // namespace

void EvaluatedLesson::check_step(const LessonStep& step, const std::string& where) {
  auto problem = [&](const std::string& what) { problems_.push_back(where + ": " + what); };
  try {
    fill(step.narration);
  } catch (const ExpressionError& e) {
    problem(std::string("narration: ") + e.what());
  }
  if (step.predict) {
    try {
      // Predict, then reveal: the narration shown before P must not already print the answer, in any format.
      const std::string answer = prediction_answer(*step.predict);
      // A count or a size needs its unit; a plain value ("num": an element of the all-reduce demo) has none.
      if (!has_unit(answer) && step.predict->format != "num") problem("predict: the answer " + answer + " is a bare number; give it a unit (\"unit\": \"MB\", \"all-reduces\")");
      const double number = evaluate(step.predict->answer).number;
      std::vector<double> shown;
      const std::string narration = fill(step.narration, &shown);
      const bool same_value = std::any_of(shown.begin(), shown.end(), [&](double v) { return comparison_holds(v, "==", number, 1e-9); });
      if (same_value || narration.find(answer) != std::string::npos) problem("narration gives the prediction's answer (" + answer + ") away");
    } catch (const ExpressionError& e) {
      problem(std::string("predict.answer: ") + e.what());
    }
  }
  const ScenarioFacts* shown = facts(step.scenario);
  if (!shown) return;  // its failure is already a problem
  if (shown->demo) {
    if (step.ring_step > static_cast<int>(shown->demo->steps.size()) - 1)
      problem("ring_step " + std::to_string(step.ring_step) + ": the ring has " + std::to_string(shown->demo->steps.size() - 1) + " steps");
    return;
  }
  const int ranks = static_cast<int>(shown->plan.programs.size());
  if (!step.at.op.empty()) {
    if (step.at.rank < 0 || step.at.rank >= ranks) {
      problem("at.rank " + std::to_string(step.at.rank) + ": the run has " + std::to_string(ranks) + " ranks");
    } else {
      const auto& ops = shown->plan.programs[static_cast<std::size_t>(step.at.rank)].ops;
      // The window finds an op by its span (compute, communication) or by its tensor's allocation.
      auto placeable = [&](const Op& op) {
        return op.label == step.at.op && (step.at.step < 0 || op.step == step.at.step) && op.kind != OpKind::Free && op.kind != OpKind::Phase;
      };
      if (std::none_of(ops.begin(), ops.end(), placeable))
        problem("at: rank " + std::to_string(step.at.rank) + " has no op '" + step.at.op + "'" +
                (step.at.step < 0 ? "" : " in step " + std::to_string(step.at.step)));
    }
  } else if (!phase_exists(*shown, step.at.phase, 0)) {
    problem("at: no phase '" + step.at.phase + "' in scenario " + step.scenario);
  }
  if (step.highlight.rank >= ranks) problem("highlight.rank " + std::to_string(step.highlight.rank) + ": the run has " + std::to_string(ranks) + " ranks");
  for (const std::string& phase : {step.highlight.from, step.highlight.to})
    if (!phase.empty() && !phase_exists(*shown, phase, 0)) problem("highlight: no phase '" + phase + "' in scenario " + step.scenario);
}

EvaluatedLesson evaluate_lesson(const Lesson& lesson) {
  EvaluatedLesson result(lesson);
  for (const LessonScenario& scenario : lesson.scenarios) {
    try {
      result.facts_.emplace(scenario.id, compute_facts(scenario));
    } catch (const std::exception& e) {
      result.problems_.push_back("scenarios." + scenario.id + ": " + e.what());
    }
  }
  for (const Claim& claim : lesson.claims) {
    ClaimResult r{claim.says, claim.check, "", 0, 0, Unit::Number, false, ""};
    try {
      const Comparison c = split_comparison(claim.check);
      r.op = c.op;
      const Value left = result.evaluate(c.left);
      r.left = left.number;
      r.unit = left.unit;
      r.right = result.evaluate(c.right).number;
      r.ok = comparison_holds(r.left, r.op, r.right, claim.tolerance);
    } catch (const ExpressionError& e) {
      r.error = e.what();
    }
    result.claims_.push_back(std::move(r));
  }
  for (std::size_t i = 0; i < lesson.steps.size(); ++i) result.check_step(lesson.steps[i], "steps[" + std::to_string(i) + "]");
  return result;
}

}  // namespace shardscope::lessons
