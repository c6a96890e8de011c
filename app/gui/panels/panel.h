// The one interface every panel of the window implements, and what each frame hands it: the run on screen (and a
// run compared with it), how its ranks group, the playhead, the shared time view, what is selected (a lesson
// step's highlight) and the rectangle the layout gives it. A panel draws into the current ImGui window; what it needs
// beyond the frame (the window's facts, its requests) it is given when made (window_facts.h). The layouts
// (layout.h) say which panel goes where. ImGui and the core only: never the executors or the simulator.
#pragma once
#include <imgui.h>

#include <string>
#include <vector>

#include "gui/logic/highlight.h"
#include "gui/logic/playback.h"
#include "gui/logic/rank_group.h"
#include "gui/logic/time_view.h"
#include "trace/store/trace_store.h"

namespace shardscope::gui {

struct PanelFrame {
  const TraceStore& store;
  const TraceStore* compared;  // a second run laid over this one; nullptr when nothing is compared
  const std::vector<RankGroup>& groups;
  Playback& playback;
  TimeView& view;
  const Highlight& selection;  // presenter mode: the device, category and span the step points at
  ImVec2 size{0, 0};           // the layout's rectangle for this panel (width, and height where the layout fixes it)
  // Presenter mode, before a prediction is revealed: every form of its answer ("8,008,704 B", "7.64 MiB"). Panels
  // pass the figures they print through redact(), so no peak label or caption gives the answer away.
  const std::vector<std::string>* hidden = nullptr;
};

// `text` with each hidden answer replaced by "?".
inline std::string redact(const std::vector<std::string>* hidden, std::string text) {
  if (!hidden) return text;
  for (const std::string& h : *hidden)
    for (std::size_t at = h.empty() ? std::string::npos : text.find(h); at != std::string::npos; at = text.find(h, at + 1))
      text.replace(at, h.size(), "?");
  return text;
}

// How tall a panel sized by its content is, for the layout to keep its room: in ImGui frame lines (frame height with
// spacing; fractions allowed) plus pixels.
struct ContentHeight {
  float lines = 0;
  float pixels = 0;
};

class Panel {
 public:
  virtual ~Panel() = default;
  virtual void draw(const PanelFrame& frame) = 0;
  // The room a panel in a row sized by its content needs at this width; panels that fill what they are given keep
  // the default (none).
  virtual ContentHeight content_height(const PanelFrame& /*frame*/, float /*width*/) { return {}; }
};

}  // namespace shardscope::gui
