// `shardscope-cli lessons`: the guided lessons under assets/lessons (list), and `lessons check`: every lesson's
// scenarios run and claims checked, so a change to the engine can never silently empty a lesson.
#pragma once
#include <iosfwd>
#include <string>
#include <vector>

namespace shardscope::cli {

// {"lessons": [{"id", "title", "question"}]} or a text table. Throws lessons::LessonError for an unreadable file.
void print_lessons(const std::string& dir, bool json, std::ostream& out);
// Evaluates the lessons (all, or those named by id) and prints, per lesson, whether it holds, each claim with the
// values compared, and each problem. {"ok", "lessons": [{"id", "ok", "claims": [{"says", "check", "left", "op",
// "right", "ok", "error"}], "problems": [...]}]}. Returns true when every lesson holds. Throws LessonError for an
// unreadable file or an unknown id.
bool check_lessons(const std::string& dir, const std::vector<std::string>& ids, bool json, std::ostream& out);

}  // namespace shardscope::cli
