// Devices: one card per device (or per group of identical devices) — a stacked bar of the memory held at the
// playhead, by category, against capacity; the peak marker; numbers in binary units; OOM in red.
#pragma once
#include <vector>

#include "gui/panels/memory_panel.h"
#include "gui/playback.h"
#include "memory/accounting.h"
#include "trace/trace_store.h"

namespace shardscope::gui {

class DevicesPanel {
 public:
  // `predicted_peaks` (per rank, may be empty): for executed runs, the exact accounting's peak, shown beside the
  // measured one with a marker on the bar.
  // `peak_tensors` (per rank, may be empty): the largest tensors live at the rank's peak, named under its card.
  void draw(const TraceStore& store, const std::vector<RankGroup>& groups, const Playback& playback,
            const std::vector<Bytes>& predicted_peaks = {}, const std::vector<std::vector<LiveTensor>>& peak_tensors = {});
};

}  // namespace shardscope::gui
