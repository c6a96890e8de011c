// The main window's layout table. A new panel: its file (a class and a make_ function) and a row here.
#include "gui/panels/main_layout.h"

#include <memory>

#include "gui/panels/devices_panel.h"
#include "gui/panels/memory_panel.h"
#include "gui/panels/timeline_panel.h"

namespace shardscope::gui {

// The single-file panels (panels/<name>.cpp).
std::unique_ptr<Panel> make_run_source_panel(PanelContext& context);
std::unique_ptr<Panel> make_result_figures_panel(PanelContext& context);
std::unique_ptr<Panel> make_plan_notes_panel(PanelContext& context);
std::unique_ptr<Panel> make_comparison_table_panel(PanelContext& context);
std::unique_ptr<Panel> make_caption_panel(PanelContext& context);
std::unique_ptr<Panel> make_transport_panel(PanelContext& context);
std::unique_ptr<Panel> make_legend_panel(PanelContext& context);
std::unique_ptr<Panel> make_scenario_fields_panel(PanelContext& context);

LayoutCell chart_column(PanelContext& context) {
  return rows(/*gaps=*/true,
              fraction(0.55f, child("memory", true, leaf(panel(std::make_unique<MemoryPanel>(context.view))))),
              child("timeline", true, leaf(panel(std::make_unique<TimelinePanel>(context.view)))),
              content(leaf(panel(make_caption_panel(context)))));
}

LayoutCell main_layout(PanelContext& context) {
  return rows(/*gaps=*/false,
              columns(fraction(0.24f,
                               child("left", true,
                                     // What a run shows comes first (at 1600 x 900 above the fold), its settings after.
                                     leaf(panel(make_run_source_panel(context)), panel(make_result_figures_panel(context)),
                                          panel(make_comparison_table_panel(context)),
                                          panel(std::make_unique<DevicesPanel>(context.facts), /*separator_before=*/true),
                                          panel(make_scenario_fields_panel(context), /*separator_before=*/true),
                                          panel(make_plan_notes_panel(context)))),
                               /*min_em=*/16, /*max_em=*/26),
                      child("right", false, chart_column(context))),
              content(leaf(panel(make_transport_panel(context)))),
              content(leaf(panel(make_legend_panel(context)))));
}

}  // namespace shardscope::gui
