// What a lesson may quote of one of its scenarios: the plan lowered, its memory accounted (as `shardscope-cli
// memory` does) and its step simulated (as `simulate` does), or the all-reduce demo run for real; and the names
// expressions use for those figures ("peak.rank0", "category.optimizer_state.rank1", "step_time", ...; the README
// lists them all).
#pragma once
#include <optional>
#include <string>

#include "lessons/ring_demo.h"
#include "memory/accounting.h"
#include "model/transformer_config.h"
#include "plan/plan.h"
#include "run/simulation_result.h"
#include "scenario/scenario.h"

namespace shardscope::lessons {

struct LessonScenario;

enum class Unit { Bytes, Nanoseconds, Fraction, Count, Number };

struct Value {
  double number = 0;
  Unit unit = Unit::Number;
};

struct ScenarioFacts {
  std::string id;
  std::optional<ResolvedScenario> scenario;
  Plan plan;
  MemoryReport memory;
  SimulationResult timing;
  std::optional<TransformerConfig> transformer;  // when the model is a transformer preset or config
  std::optional<RingDemo> demo;
};

// Lowers, accounts and simulates (or runs the demo). Throws ScenarioError for settings the engine refuses.
ScenarioFacts compute_facts(const LessonScenario& scenario);

// `path` is a name without its scenario id ("peak.rank0"). Throws ExpressionError naming what is wrong.
Value fact_value(const ScenarioFacts& facts, const std::string& path);

// "4,004,352 B", "3.82 MiB", "1.23 ms", "28.3 %"...: `format` is one of bytes, B, GB, ms, us, percent, int, x,
// num, or "" for the unit's own. Throws ExpressionError for an unknown format.
std::string format_value(double number, Unit unit, const std::string& format);

}  // namespace shardscope::lessons
