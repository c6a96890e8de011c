// Memory over time: per device a stacked area chart by category, the capacity line, phase markers and the
// playhead; hover shows the values at that instant. Ranks with identical series share one chart ("ranks 0–7"),
// so 64 identical DDP ranks are one chart and a pipeline shows one per stage.
#pragma once
#include <string>
#include <vector>

#include "gui/highlight.h"
#include "gui/playback.h"
#include "gui/time_view.h"
#include "trace/trace_store.h"

namespace shardscope::gui {

struct RankGroup {
  std::vector<int> ranks;
  std::string label;  // "rank 3", "ranks 0–63"
};

// Groups ranks whose memory series are the same sample for sample.
std::vector<RankGroup> group_identical_ranks(const TraceData& data);

class MemoryPanel {
 public:
  // `compare`: a second run drawn over each chart as an outline of its total allocated, aligned by step and phase
  // (run_alignment.h), and counted in the shared scale.
  void draw(const TraceStore& store, const std::vector<RankGroup>& groups, TimeView& view, Playback& playback,
            const TraceStore* compare = nullptr);
  // One scale for every chart (devices compare at a glance), or each chart scaled to its own peak (View menu).
  bool one_scale = true;
  // Presenter mode: what the lesson step points at.
  Highlight highlight;

 private:
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
