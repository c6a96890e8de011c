// What a frame shown to a class must never do, checked on what it drew (frame_reader.h): text cut at a panel's edge or
// off the screen, text drawn over other text, a lesson's answer on screen before it is revealed, a colour of the
// palette on screen that no legend on screen names, and a palette colour faded into another shade (which a student
// reads as another category). The window's presenter mode and its CI check (tests/gui/gui_audit.cpp) use it.
#pragma once
#include <string>
#include <vector>

#include "gui/audit/frame_reader.h"

namespace shardscope::gui::audit {

struct Problem {
  std::string kind;    // "cut", "overlap", "answer shown", "colour without legend", "faded colour"
  std::string detail;  // what and where, for a person to find it
};

struct AuditRules {
  std::vector<std::string> hidden;  // no text may contain these (a prediction's answer before it is revealed)
  bool legend = true;               // every palette colour on screen must be named by a text on screen
};

std::vector<Problem> audit_frame(const FrameContents& frame, const AuditRules& rules);

}  // namespace shardscope::gui::audit
