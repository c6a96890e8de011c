// The window's layouts as tables (layout.h): the main window, and the chart column (memory, timeline, caption) that
// presenter mode's layout reuses beside its narration.
#pragma once
#include "gui/panels/layout.h"
#include "gui/panels/window_facts.h"

namespace shardscope::gui {

// Left: where the run comes from, its figures, the comparison, the device cards, then the scenario's fields and the
// plan's notes. Right: the chart column. Bottom: the transport bar and the legend.
LayoutCell main_layout(PanelContext& context);
// Memory charts (55 % of the room), the timeline under them, the caption's two lines below.
LayoutCell chart_column(PanelContext& context);

}  // namespace shardscope::gui
