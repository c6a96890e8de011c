// Presenter mode's layout table. A new presenter panel: its file and a row here.
#include "gui/presenter/presenter_layout.h"

#include <functional>
#include <memory>

#include "gui/panels/main_layout.h"

namespace shardscope::gui {

std::unique_ptr<Panel> make_lesson_title_panel(PresenterContext& context);
std::unique_ptr<Panel> make_narration_panel(PresenterContext& context);
std::unique_ptr<Panel> make_ring_demo_panel(PresenterContext& context);
// Shared with the main window's legend (panels/legend_panel.cpp): both groups of colours, only the op kinds on screen.
std::unique_ptr<Panel> make_lesson_legend_panel(PanelContext& context, std::function<bool()> hidden);

bool showing_ring_demo(const LessonDeck& deck) {
  const lessons::LessonStep* step = deck.step();
  if (!step) return false;
  const lessons::LessonScenario* shown = deck.lesson()->find_scenario(step->scenario);
  return shown && shown->is_demo();
}

LayoutCell presenter_layout(PresenterContext& context) {
  const LessonDeck& deck = context.deck;
  return rows(/*gaps=*/false,
              natural(leaf(panel(make_lesson_title_panel(context)))),
              columns(fraction(0.36f, child("narration", true, leaf(panel(make_narration_panel(context))))),
                      shown_if([&deck] { return !showing_ring_demo(deck); }, child("right", false, chart_column(context.window))),
                      shown_if([&deck] { return showing_ring_demo(deck); }, child("ring", true, leaf(panel(make_ring_demo_panel(context)))))),
              content(leaf(panel(make_lesson_legend_panel(context.window, [&deck] { return showing_ring_demo(deck); })))));
}

}  // namespace shardscope::gui
