// Reads lesson files (lesson.h): strict like scenario files, so a typo in a key is an error, never a silent default.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <set>

#include <nlohmann/json.hpp>

#include "core/json_input.h"
#include "core/untrusted_text.h"

#include "lessons/lesson.h"
#include "model/transformer.h"

namespace shardscope::lessons {

namespace {

using json = nlohmann::ordered_json;

constexpr std::uint64_t kMaxLessonInteger = 1'000'000;
constexpr std::size_t kMaxDemoRanks = 16, kMaxDemoValues = 64;

// [a-z][a-z0-9_]{0,63}, checked by hand: std::regex recurses once a character, so a 50,000-character id crashed it.
bool valid_id(const std::string& id) {
  if (id.empty() || id.size() > 64 || id[0] < 'a' || id[0] > 'z') return false;
  return std::all_of(id.begin(), id.end(), [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_'; });
}

class Reader {
 public:
  Reader(std::string path, std::string base_dir) : path_(std::move(path)), base_dir_(std::move(base_dir)) {}

  [[noreturn]] void fail(const std::string& where, const std::string& what) const {
    throw LessonError(path_ + ": " + (where.empty() ? "" : where + ": ") + what);
  }

  void only_keys(const json& object, const std::string& where, std::initializer_list<const char*> keys) const {
    if (!object.is_object()) fail(where, "must be an object");
    for (const auto& item : object.items()) {
      const std::string& key = item.key();  // not a structured binding: clang 14 cannot capture those in a lambda
      if (std::none_of(keys.begin(), keys.end(), [&](const char* k) { return key == k; })) {
        std::string known;
        for (const char* k : keys) known += std::string(known.empty() ? "" : ", ") + k;
        fail(where, "unknown key '" + key + "' (known: " + known + ")");
      }
    }
  }
  std::string text(const json& object, const char* key, const std::string& where, bool required) const {
    if (!object.contains(key)) {
      if (required) fail(where, std::string("missing '") + key + "'");
      return "";
    }
    if (!object[key].is_string()) fail(where + (where.empty() ? "" : ".") + key, "must be text");
    return object[key].get<std::string>();
  }
  // Read whole, never wrapped: 4294967296 is refused, not read as 0.
  int integer(const json& object, const char* key, const std::string& where, int fallback) const {
    if (!object.contains(key)) return fallback;
    const json& value = object[key];
    const std::string at = where + (where.empty() ? "" : ".") + key;
    if (!value.is_number_integer()) fail(at, "must be an integer");
    if (value.is_number_unsigned() ? value.get<std::uint64_t>() > kMaxLessonInteger
                                   : std::llabs(value.get<std::int64_t>()) > static_cast<long long>(kMaxLessonInteger))
      fail(at, "must be between -" + std::to_string(kMaxLessonInteger) + " and " + std::to_string(kMaxLessonInteger));
    return static_cast<int>(value.get<std::int64_t>());
  }

  LessonScenario scenario(const std::string& id, const json& entry) const {
    const std::string where = "scenarios." + id;
    if (!valid_id(id))
      fail("scenarios." + printable(id, 60), "scenario ids are 1 to 64 lower-case letters, digits and '_', starting with a "
                                            "letter (they are used in expressions)");
    only_keys(entry, where, {"file", "scenario", "set", "all_reduce_demo"});
    LessonScenario result{id, "inline", std::nullopt, {}};
    const int sources = int(entry.contains("file")) + int(entry.contains("scenario")) + int(entry.contains("all_reduce_demo"));
    if (sources != 1) fail(where, "give exactly one of 'file', 'scenario' and 'all_reduce_demo'");
    if (entry.contains("all_reduce_demo")) {
      if (entry.contains("set")) fail(where, "'set' applies to scenarios, not to the all-reduce demo");
      return demo(where, id, entry["all_reduce_demo"]);
    }
    json scenario_json;
    if (entry.contains("file")) {
      result.source = text(entry, "file", where, true);
      const std::filesystem::path file = std::filesystem::path(base_dir_) / result.source;
      // As a scenario file is read: a regular file, bounded in size and depth, no duplicate keys.
      try {
        scenario_json = parse_json_input(read_input_file(file.string()), file.string(), {.reject_duplicate_keys = true});
      } catch (const JsonInputError& error) {
        fail(where + ".file", error.what());
      }
    } else {
      scenario_json = entry["scenario"];
      if (!scenario_json.is_object()) fail(where + ".scenario", "must be an object (a scenario file's content)");
    }
    if (entry.contains("set")) {
      if (!entry["set"].is_object()) fail(where + ".set", "must be an object (merged over the scenario)");
      scenario_json.merge_patch(entry["set"]);
    }
    try {
      result.scenario = parse_scenario_json(scenario_json.dump(), path_ + " " + where);
    } catch (const ScenarioError& error) {
      fail("", error.what());
    }
    return result;
  }

  LessonScenario demo(const std::string& where, const std::string& id, const json& ranks) const {
    LessonScenario result{id, "inline", std::nullopt, {}};
    if (!ranks.is_array() || ranks.size() < 2) fail(where + ".all_reduce_demo", "must list at least two ranks' buffers");
    // The demo runs a thread a rank and draws every value: a class reads a few ranks of a few values.
    if (ranks.size() > kMaxDemoRanks)
      fail(where + ".all_reduce_demo", std::to_string(ranks.size()) + " ranks: at most " + std::to_string(kMaxDemoRanks));
    for (const json& buffer : ranks)
      if (buffer.is_array() && buffer.size() > kMaxDemoValues)
        fail(where + ".all_reduce_demo", "a rank's buffer of " + std::to_string(buffer.size()) + " values: at most " +
                                             std::to_string(kMaxDemoValues));
    for (const json& buffer : ranks) {
      if (!buffer.is_array() || buffer.empty()) fail(where + ".all_reduce_demo", "each rank's buffer is a non-empty list of numbers");
      std::vector<float> values;
      for (const json& v : buffer) {
        if (!v.is_number()) fail(where + ".all_reduce_demo", "each rank's buffer is a list of numbers");
        values.push_back(v.get<float>());
      }
      if (!result.all_reduce_demo.empty() && values.size() != result.all_reduce_demo.front().size())
        fail(where + ".all_reduce_demo", "every rank's buffer has the same length (as all_reduce requires)");
      result.all_reduce_demo.push_back(std::move(values));
    }
    return result;
  }

  Anchor anchor(const json& at, const std::string& where) const {
    Anchor result;
    if (at.is_string()) {
      result.phase = at.get<std::string>();
      return result;
    }
    only_keys(at, where, {"op", "rank", "step"});
    result.op = text(at, "op", where, true);
    result.rank = integer(at, "rank", where, 0);
    result.step = integer(at, "step", where, -1);
    return result;
  }

  Highlight highlight(const json& h, const std::string& where) const {
    only_keys(h, where, {"rank", "category", "from", "to"});
    Highlight result;
    result.rank = integer(h, "rank", where, -1);
    if (h.contains("category")) {
      const std::string key = text(h, "category", where, true);
      result.category = category_from_key(key);
      if (!result.category) fail(where + ".category", "unknown category '" + key + "' (parameters, gradients, ddp_buckets, optimizer_state, activations, temporaries, communication_buffers, gathered_parameters)");
    }
    result.from = text(h, "from", where, false);
    result.to = text(h, "to", where, false);
    if (result.from.empty() != result.to.empty()) fail(where, "a span needs both 'from' and 'to'");
    return result;
  }

  LessonStep step(const json& s, const std::string& where, const Lesson& lesson) const {
    only_keys(s, where, {"title", "scenario", "compare", "at", "narration", "highlight", "predict", "ring_step", "short", "align"});
    LessonStep result;
    result.title = text(s, "title", where, true);
    result.scenario = text(s, "scenario", where, false);
    if (result.scenario.empty()) result.scenario = lesson.scenarios.front().id;
    const LessonScenario* shown = lesson.find_scenario(result.scenario);
    if (!shown) fail(where + ".scenario", "no scenario '" + result.scenario + "' in this lesson");
    result.compare = text(s, "compare", where, false);
    if (!result.compare.empty()) {
      const LessonScenario* other = lesson.find_scenario(result.compare);
      if (!other) fail(where + ".compare", "no scenario '" + result.compare + "' in this lesson");
      if (other->is_demo() || shown->is_demo()) fail(where + ".compare", "the all-reduce demo is not compared");
    }
    if (s.contains("at")) result.at = anchor(s["at"], where + ".at");
    else result.at.phase = "end";
    result.narration = text(s, "narration", where, true);
    if (s.contains("highlight")) result.highlight = highlight(s["highlight"], where + ".highlight");
    if (s.contains("predict")) {
      const json& p = s["predict"];
      only_keys(p, where + ".predict", {"question", "answer", "format", "unit"});
      result.predict = Prediction{text(p, "question", where + ".predict", true), text(p, "answer", where + ".predict", true),
                                  text(p, "format", where + ".predict", false), text(p, "unit", where + ".predict", false)};
    }
    result.ring_step = integer(s, "ring_step", where, -1);
    if (result.ring_step >= 0 && !shown->is_demo()) fail(where + ".ring_step", "only for an all-reduce demo scenario");
    if (shown->is_demo() && result.ring_step < 0) result.ring_step = 0;
    if (const std::string align = text(s, "align", where, false); !align.empty()) {
      if (align != "phase" && align != "time") fail(where + ".align", "must be 'phase' or 'time' (got '" + align + "')");
      if (result.compare.empty()) fail(where + ".align", "only for a step that compares two runs");
      result.align_by_time = align == "time";
    }
    if (s.contains("short")) {
      if (!s["short"].is_boolean()) fail(where + ".short", "must be true or false (is this step on the lesson's short path?)");
      result.short_path = s["short"].get<bool>();
    }
    return result;
  }

  Lesson lesson(const json& root) const {
    only_keys(root, "", {"title", "question", "order", "scenarios", "claims", "steps"});
    Lesson result;
    result.file = path_;
    result.id = std::filesystem::path(path_).stem().string();
    result.title = text(root, "title", "", true);
    result.question = text(root, "question", "", true);
    result.order = integer(root, "order", "", 0);
    if (!root.contains("scenarios") || !root["scenarios"].is_object() || root["scenarios"].empty())
      fail("scenarios", "must name at least one scenario: {\"id\": {\"file\": ...} or {\"scenario\": {...}}}");
    for (const auto& [id, entry] : root["scenarios"].items()) result.scenarios.push_back(scenario(id, entry));
    if (root.contains("claims")) {
      if (!root["claims"].is_array()) fail("claims", "must be a list");
      for (std::size_t i = 0; i < root["claims"].size(); ++i) {
        const json& c = root["claims"][i];
        const std::string where = "claims[" + std::to_string(i) + "]";
        only_keys(c, where, {"says", "check", "tolerance"});
        Claim claim{text(c, "says", where, true), text(c, "check", where, true), 0};
        if (c.contains("tolerance")) {
          if (!c["tolerance"].is_number() || c["tolerance"].get<double>() < 0) fail(where + ".tolerance", "must be a number >= 0");
          claim.tolerance = c["tolerance"].get<double>();
        }
        result.claims.push_back(std::move(claim));
      }
    }
    if (!root.contains("steps") || !root["steps"].is_array() || root["steps"].empty()) fail("steps", "must list at least one step");
    for (std::size_t i = 0; i < root["steps"].size(); ++i)
      result.steps.push_back(step(root["steps"][i], "steps[" + std::to_string(i) + "]", result));
    return result;
  }

 private:
  std::string path_, base_dir_;
};

}  // namespace

const LessonScenario* Lesson::find_scenario(const std::string& wanted) const {
  for (const LessonScenario& s : scenarios)
    if (s.id == wanted) return &s;
  return nullptr;
}

std::vector<int> Lesson::short_path() const {
  std::vector<int> path;
  for (std::size_t i = 0; i < steps.size(); ++i)
    if (steps[i].short_path) path.push_back(static_cast<int>(i));
  if (path.empty())
    for (std::size_t i = 0; i < steps.size(); ++i) path.push_back(static_cast<int>(i));
  return path;
}

Lesson parse_lesson_json(const std::string& text, const std::string& path, const std::string& base_dir) {
  json root;
  try {
    // Nesting bounded (a lesson is about 6 deep; its inline scenarios are dumped and read again), duplicate keys
    // refused as in scenario files.
    root = parse_json_input(text, path, {.reject_duplicate_keys = true});
  } catch (const JsonInputError& error) {
    throw LessonError(error.what());
  }
  return Reader(path, base_dir).lesson(root);
}

Lesson load_lesson_file(const std::string& path) {
  std::string text;
  try {
    text = read_input_file(path);  // regular files only, at most kMaxInputFileBytes
  } catch (const JsonInputError& error) {
    throw LessonError(error.what());
  }
  return parse_lesson_json(text, path, std::filesystem::path(path).parent_path().string());
}

std::vector<Lesson> load_lessons_dir(const std::string& dir) {
  std::vector<std::string> files;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(dir, error))
    if (entry.path().extension() == ".json") files.push_back(entry.path().string());
  if (error) throw LessonError(dir + ": cannot list the lessons: " + error.message());
  std::vector<Lesson> lessons;
  for (const std::string& file : files) lessons.push_back(load_lesson_file(file));
  std::sort(lessons.begin(), lessons.end(), [](const Lesson& a, const Lesson& b) { return std::tie(a.order, a.id) < std::tie(b.order, b.id); });
  return lessons;
}

std::string default_lessons_dir() { return assets_dir() + "/lessons"; }

}  // namespace shardscope::lessons
