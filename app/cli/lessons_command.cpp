// The lessons command (lessons_command.h).
#include "cli/lessons_command.h"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <ostream>

#include "lessons/lesson_check.h"

namespace shardscope::cli {

namespace {

using nlohmann::ordered_json;

std::vector<lessons::Lesson> chosen(const std::string& dir, const std::vector<std::string>& ids) {
  std::vector<lessons::Lesson> all = lessons::load_lessons_dir(dir);
  if (ids.empty()) return all;
  std::vector<lessons::Lesson> picked;
  for (const std::string& id : ids) {
    const auto it = std::find_if(all.begin(), all.end(), [&](const lessons::Lesson& l) { return l.id == id; });
    if (it == all.end()) {
      std::string known;
      for (const auto& l : all) known += (known.empty() ? "" : ", ") + l.id;
      throw lessons::LessonError("no lesson '" + id + "' in " + dir + " (" + known + ")");
    }
    picked.push_back(*it);
  }
  return picked;
}

// Claims compare exact figures: bytes are shown to the byte.
std::string side(double value, lessons::Unit unit) { return lessons::format_value(value, unit, unit == lessons::Unit::Bytes ? "B" : ""); }

}  // namespace

void print_lessons(const std::string& dir, bool json, std::ostream& out) {
  const std::vector<lessons::Lesson> all = lessons::load_lessons_dir(dir);
  if (json) {
    ordered_json root{{"lessons", ordered_json::array()}};
    for (const auto& l : all)
      root["lessons"].push_back({{"id", l.id}, {"title", l.title}, {"question", l.question}, {"steps", l.steps.size()},
                                 {"short_path_steps", l.short_path().size()}});
    out << root.dump(2) << "\n";
    return;
  }
  std::size_t steps = 0, short_steps = 0;
  for (const auto& l : all) {
    out << fmt::format("{:<24} {}\n{:<24} “{}”\n{:<24} {} steps, short path {}\n", l.id, l.title, "", l.question, "", l.steps.size(),
                       l.short_path().size());
    steps += l.steps.size();
    short_steps += l.short_path().size();
  }
  // A class reads, predicts and discusses a step in about a minute and a half.
  out << fmt::format("\n{} lessons: {} steps in all (about {:.0f} minutes), {} on the short paths (about {:.0f} minutes)\n", all.size(), steps,
                     1.5 * static_cast<double>(steps), short_steps, 1.5 * static_cast<double>(short_steps));
  out << "shardscope --presenter --lesson ID [--path short]   opens one in the window's presenter mode\n";
}

bool check_lessons(const std::string& dir, const std::vector<std::string>& ids, bool json, std::ostream& out) {
  bool all_ok = true;
  ordered_json root{{"ok", true}, {"lessons", ordered_json::array()}};
  for (const lessons::Lesson& lesson : chosen(dir, ids)) {
    const lessons::EvaluatedLesson evaluated = lessons::evaluate_lesson(lesson);
    all_ok = all_ok && evaluated.ok();
    ordered_json entry{{"id", lesson.id}, {"ok", evaluated.ok()}, {"claims", ordered_json::array()}, {"problems", evaluated.problems()}};
    if (!json) out << (evaluated.ok() ? "ok    " : "FAIL  ") << lesson.id << " — " << lesson.title << "\n";
    for (const lessons::ClaimResult& c : evaluated.claims()) {
      ordered_json claim{{"says", c.says}, {"check", c.check}, {"left", c.left}, {"op", c.op}, {"right", c.right}, {"ok", c.ok}};
      if (!c.error.empty()) claim["error"] = c.error;
      entry["claims"].push_back(claim);
      if (json) continue;
      out << "  " << (c.ok ? "✓ " : "✗ ") << c.says << "\n";
      if (c.error.empty()) out << "      " << c.check << ": " << side(c.left, c.unit) << " " << c.op << " " << side(c.right, c.unit) << "\n";
      else out << "      " << c.error << "\n";
    }
    if (!json)
      for (const std::string& problem : evaluated.problems()) out << "  ✗ " << problem << "\n";
    root["lessons"].push_back(entry);
  }
  root["ok"] = all_ok;
  if (json) out << root.dump(2) << "\n";
  return all_ok;
}

}  // namespace shardscope::cli
