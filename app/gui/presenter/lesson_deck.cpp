// Presenter mode's lesson state (lesson_deck.h).
#include "gui/presenter/lesson_deck.h"

#include <algorithm>
#include <chrono>

#include "lessons/expression.h"

namespace shardscope::gui {

LessonDeck::~LessonDeck() {
  if (pending_.valid()) pending_.wait();
}

void LessonDeck::load(const std::string& dir) {
  try {
    lessons_ = lessons::load_lessons_dir(dir);
    error_.clear();
  } catch (const lessons::LessonError& e) {
    error_ = e.what();
  }
}

bool LessonDeck::open(const std::string& id) {
  const auto it = std::find_if(lessons_.begin(), lessons_.end(), [&](const lessons::Lesson& l) { return l.id == id; });
  if (it == lessons_.end()) return false;
  if (pending_.valid()) pending_.wait();  // a lesson opened a moment ago: let its evaluation end first
  open_ = static_cast<int>(it - lessons_.begin());
  step_ = 0;
  revealed = blank = false;
  evaluated_.reset();
  pending_ = std::async(std::launch::async, [lesson = *it] {
    return std::make_unique<lessons::EvaluatedLesson>(lessons::evaluate_lesson(lesson));
  });
  return true;
}

void LessonDeck::close() {
  if (pending_.valid()) pending_.wait();
  pending_ = {};
  evaluated_.reset();
  open_ = -1;
  blank = revealed = false;
}

bool LessonDeck::poll() {
  if (!pending_.valid() || pending_.wait_for(std::chrono::seconds(0)) != std::future_status::ready) return false;
  evaluated_ = pending_.get();
  return true;
}

bool LessonDeck::go_to(int index) {
  if (!lesson() || index < 0 || index >= step_count() || index == step_) return false;
  step_ = index;
  revealed = false;
  return true;
}

std::vector<int> LessonDeck::path() const {
  if (!lesson()) return {};
  if (short_path) return lesson()->short_path();
  std::vector<int> all(static_cast<std::size_t>(step_count()));
  for (int i = 0; i < step_count(); ++i) all[static_cast<std::size_t>(i)] = i;
  return all;
}

// The path's next (or previous) step after the one on screen; a step off the path (opened by number) moves to the
// nearest path step in that direction.
bool LessonDeck::next() {
  for (const int i : path())
    if (i > step_) return go_to(i);
  return false;
}

bool LessonDeck::previous() {
  const std::vector<int> steps = path();
  for (auto it = steps.rbegin(); it != steps.rend(); ++it)
    if (*it < step_) return go_to(*it);
  return false;
}

int LessonDeck::path_position() const {
  const std::vector<int> steps = path();
  return static_cast<int>(std::lower_bound(steps.begin(), steps.end(), step_) - steps.begin());
}

std::string LessonDeck::narration() const {
  if (!step()) return "";
  if (!evaluated_) return "Running the lesson's scenarios…";
  try {
    return evaluated_->fill(step()->narration);
  } catch (const lessons::ExpressionError& e) {
    return std::string("(this step's numbers cannot be filled: ") + e.what() + ")";
  }
}

std::string LessonDeck::answer() const {
  if (!step() || !step()->predict || !evaluated_) return "";
  try {
    return evaluated_->prediction_answer(*step()->predict);
  } catch (const lessons::ExpressionError& e) {
    return std::string("(cannot be computed: ") + e.what() + ")";
  }
}

}  // namespace shardscope::gui
