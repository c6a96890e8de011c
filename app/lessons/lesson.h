// A guided lesson (assets/lessons/*.json, schema in the README): the question it answers, the scenarios it runs,
// the steps a presenter walks through (where the playhead goes, what to say with the run's numbers filled in,
// what to highlight, what to ask the audience to predict) and the claims checked against its own runs.
// Plain data; lesson_json.cpp reads it (unknown keys are errors), lesson_check.h evaluates it.
#pragma once
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/category.h"
#include "scenario/scenario.h"

namespace shardscope::lessons {

class LessonError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct LessonScenario {
  std::string id;                 // how steps and expressions name it: [a-z0-9_]+
  std::string source;             // the file it came from (relative to the lesson), or "inline"
  std::optional<Scenario> scenario;  // simulated and accounted; absent for an all-reduce demo
  // The all-reduce demo: each rank's buffer, all-reduced for real on the CPU backend's ring, chunk by chunk.
  std::vector<std::vector<float>> all_reduce_demo;
  bool is_demo() const { return !scenario; }
};

// Where a step puts the playhead: a phase marker ("step 2 forward", "forward", "end") or the start of an op of a
// rank (its label as the plan names it, in a given step or the first one that has it).
struct Anchor {
  std::string phase;  // "" when an op is named
  std::string op;
  int rank = 0;
  int step = -1;      // -1: the first step whose op has that label
};

// What the step talks about: a device (rank), one memory category's band, a span of the timeline between two
// phase markers. Each part is optional.
struct Highlight {
  int rank = -1;
  std::optional<Category> category;
  std::string from, to;  // phase texts, as Anchor::phase
};

// A number the audience guesses before it is revealed; the answer is an expression over the runs' figures.
struct Prediction {
  std::string question;
  std::string answer;
  std::string format;  // as a narration placeholder's format ("" = by the value's unit)
  std::string unit;    // what a bare number counts ("MB", "all-reduces"): answers always come with a unit
};

struct LessonStep {
  std::string title;
  std::string scenario;  // the scenario on screen (an id); default the lesson's first
  std::string compare;   // a second scenario drawn over it as an outline ("" for none)
  Anchor at;
  std::string narration;  // "{expr}" or "{expr|format}" placeholders are filled from the runs
  Highlight highlight;
  std::optional<Prediction> predict;
  int ring_step = -1;  // all-reduce demo: after this many ring steps (0 = the buffers as given)
  bool short_path = false;  // one of the steps a 50-minute class walks through (the lesson's short path)
  bool align_by_time = false;  // "align": "time": the compared run as it ran (a lesson about speed), not by phase
};

struct Claim {
  std::string says;   // in words
  std::string check;  // "A < B": expressions around one comparison
  double tolerance = 0;  // relative, for == and !=
};

struct Lesson {
  std::string id;  // the file's name without .json
  int order = 0;   // where it comes in the list
  std::string title;
  std::string question;  // the seed question it answers
  std::string file;
  std::vector<LessonScenario> scenarios;
  std::vector<Claim> claims;
  std::vector<LessonStep> steps;

  const LessonScenario* find_scenario(const std::string& id) const;
  // The steps of the short path, in order (the steps marked "short"; every step when none is marked).
  std::vector<int> short_path() const;
};

// Throws LessonError("path: steps[2].predict: unknown key 'answr'"). Scenario files are read relative to
// `base_dir`; a bad scenario is reported with the lesson's path and the scenario's own message.
Lesson parse_lesson_json(const std::string& text, const std::string& path, const std::string& base_dir);
Lesson load_lesson_file(const std::string& path);
// Every *.json under `dir`, by `order` then id. Throws LessonError for the first file that cannot be read.
std::vector<Lesson> load_lessons_dir(const std::string& dir);
// assets/lessons of this checkout ($SHARDSCOPE_ASSETS_DIR/lessons when that is set).
std::string default_lessons_dir();

}  // namespace shardscope::lessons
