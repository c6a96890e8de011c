// Memory over time: per device a stacked area chart by category, the capacity line, phase markers and the
// playhead; hover shows the values at that instant. Ranks with identical series share one chart ("ranks 0–7",
// logic/rank_group.h), so 64 identical DDP ranks are one chart and a pipeline shows one per stage.
#pragma once
#include <vector>

#include "gui/panels/panel.h"
#include "gui/panels/window_facts.h"

namespace shardscope::gui {

class MemoryPanel final : public Panel {
 public:
  explicit MemoryPanel(const ViewOptions& options) : options_(options) {}
  // A compared run is drawn over each chart as an outline of its total allocated, aligned by step and phase
  // (run_alignment.h), and counted in the shared scale. The selection (presenter mode) frames its device's chart,
  // fades the other categories and shades its span.
  void draw(const PanelFrame& frame) override;

 private:
  const ViewOptions& options_;
  bool one_scale = true;  // every chart on one scale, or each to its own peak (View menu), read each frame
  Highlight highlight;    // the frame's selection, read each frame
  const std::vector<std::string>* hidden_ = nullptr;  // the frame's hidden answers, read each frame

  Bytes focused_band(const TraceData& data, const std::vector<RankGroup>& groups, const TimeView& view) const;
  void draw_charts(const TraceData& data, const std::vector<RankGroup>& groups, TimeView& view, Playback& playback,
                   const TraceData* compare);
  void draw_chart(const TraceData& data, const RankGroup& group, Bytes capacity, Bytes scale, TimeView& view,
                  Playback& playback, float height, const TraceData* compare);
  // Past kMaxCharts groups: one chart of the band between the least and the most allocated rank at each instant.
  void draw_aggregate(const TraceData& data, Bytes capacity, Bytes scale, TimeView& view, Playback& playback, float height);

  struct Envelope {
    std::uint64_t generation = ~0ull;
    TimeNs t0 = 0, t1 = 0;
    int columns = 0;
    std::vector<Bytes> low, high;
  };
  Envelope envelope_;
};

inline constexpr std::size_t kMaxCharts = 8;

}  // namespace shardscope::gui
