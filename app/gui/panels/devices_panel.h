// Devices: one card per device (or per group of identical devices) — a stacked bar of the memory held at the
// playhead, by category, against capacity; the peak marker; numbers in binary units; OOM in red.
#pragma once
#include <vector>

#include "gui/panels/panel.h"
#include "gui/panels/window_facts.h"
#include "memory/accounting.h"

namespace shardscope::gui {

class DevicesPanel final : public Panel {
 public:
  explicit DevicesPanel(const WindowFacts& facts) : facts_(facts) {}
  // From the window's facts: for executed runs, per rank, the accounting's peak, shown beside the measured one with a
  // marker on the bar; per rank, the largest tensors live at its peak, named under its card.
  void draw(const PanelFrame& frame) override;

 private:
  void draw_cards(const TraceStore& store, const std::vector<RankGroup>& groups, const Playback& playback,
                  const std::vector<Bytes>& predicted_peaks, const std::vector<std::vector<LiveTensor>>& peak_tensors);
  const WindowFacts& facts_;
  // An opened trace names the tensors held at each rank's peak by replaying its allocations up to it, which visits
  // them all: done again only when the peak or the allocations before it change, not every frame.
  struct PeakTensors {
    const void* trace = nullptr;  // the rank's memory series: another trace differs (the same one grown: allocations_before)
    int rank = -1;
    TimeNs t_ns = 0;
    std::size_t allocations_before = 0;  // allocations at or before t_ns (they are in time order)
    std::vector<LiveTensor> tensors;
  };
  const std::vector<LiveTensor>& replayed_peak_tensors(const TraceData& data, const RankTimeline& rank, TimeNs t_ns);
  std::vector<PeakTensors> peak_tensors_;
};

}  // namespace shardscope::gui
