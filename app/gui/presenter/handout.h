// A lesson as a handout students can read without ShardScope (shardscope --lesson ID --export DIR): each step's
// picture (step-N.png, answers revealed) with its title, narration, question and answer, on one HTML page.
#pragma once
#include <string>
#include <vector>

#include "lessons/lesson.h"

namespace shardscope::gui {

struct HandoutStep {
  std::string image;      // file name beside the page ("step-3.png")
  std::string title;
  std::string narration;  // with the run's numbers filled in
  std::string question;   // "" when the step asks nothing
  std::string answer;
};

// The page's HTML (UTF-8; every text escaped).
std::string handout_html(const lessons::Lesson& lesson, const std::vector<HandoutStep>& steps);

}  // namespace shardscope::gui
