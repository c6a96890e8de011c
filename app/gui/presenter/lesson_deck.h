// Presenter mode's state: the lessons on disk, the one open, its evaluation (run in the background: a lesson's
// scenarios take seconds), the step on screen, whether its prediction is revealed and whether the screen is
// blanked. No ImGui: the window (presenter_view.cpp) draws it and maps keys onto it.
#pragma once
#include <future>
#include <memory>
#include <string>
#include <vector>

#include "lessons/lesson_check.h"

namespace shardscope::gui {

class LessonDeck {
 public:
  ~LessonDeck();
  // Reads every lesson under `dir`; an unreadable file is kept in error() and the others stay.
  void load(const std::string& dir);
  const std::vector<lessons::Lesson>& lessons() const { return lessons_; }
  const std::string& error() const { return error_; }

  // Opens a lesson at its first step and starts evaluating it; false (nothing changes) for an unknown id.
  bool open(const std::string& id);
  void close();
  const lessons::Lesson* lesson() const { return open_ < 0 ? nullptr : &lessons_[static_cast<std::size_t>(open_)]; }
  // Collects a finished evaluation; true on the frame it arrives.
  bool poll();
  bool evaluating() const { return pending_.valid(); }
  const lessons::EvaluatedLesson* evaluated() const { return evaluated_.get(); }

  int step_index() const { return step_; }
  int step_count() const { return lesson() ? static_cast<int>(lesson()->steps.size()) : 0; }
  const lessons::LessonStep* step() const { return lesson() ? &lesson()->steps[static_cast<std::size_t>(step_)] : nullptr; }
  // Each returns true when the step changed; a new step starts with its prediction hidden. next() and previous()
  // follow the path: every step, or the lesson's short path (short_path, --path short) for a 50-minute class.
  bool next();
  bool previous();
  bool go_to(int index);
  bool short_path = false;
  std::vector<int> path() const;  // the steps next() walks, in order
  int path_position() const;      // where the step on screen is on the path (0-based)

  bool revealed = false;  // P: the prediction's answer shows
  bool blank = false;     // B: the screen is black

  // The step's narration with the run's numbers, or why it cannot be filled yet ("running the scenarios…").
  std::string narration() const;
  std::string answer() const;  // "" until evaluated

 private:
  std::vector<lessons::Lesson> lessons_;
  std::string error_;
  int open_ = -1;
  int step_ = 0;
  std::future<std::unique_ptr<lessons::EvaluatedLesson>> pending_;
  std::unique_ptr<lessons::EvaluatedLesson> evaluated_;
};

}  // namespace shardscope::gui
