// Presenter mode's layout table: the lesson's title line, the narration beside the chart column (or the ring demo
// for an all-reduce step), and both legends (memory categories, the op kinds on screen) along the bottom.
#pragma once
#include "gui/panels/layout.h"
#include "gui/panels/window_facts.h"
#include "gui/presenter/lesson_deck.h"

namespace shardscope::gui {

// What presenter panels are given beyond the window's context: the open lesson and whether answers show from the
// start (--reveal).
struct PresenterContext {
  PanelContext& window;
  const LessonDeck& deck;
  const bool& reveal_all;
};

// True when the step on screen is the all-reduce demo, which replaces the charts.
bool showing_ring_demo(const LessonDeck& deck);

LayoutCell presenter_layout(PresenterContext& context);

}  // namespace shardscope::gui
