// Ranks whose memory series are the same sample for sample share one chart, one timeline row and one device card
// ("ranks 0–63"), so 64 identical DDP ranks are one picture and a pipeline shows one per stage. Pure logic over a
// TraceData; every panel that draws per device takes these groups from the frame.
#pragma once
#include <string>
#include <vector>

#include "trace/store/trace_store.h"

namespace shardscope::gui {

struct RankGroup {
  std::vector<int> ranks;
  std::string label;  // "rank 3", "ranks 0–63"; tensor-parallel runs add coordinates: "rank 3 (tp1·pp0·dp1)"
};

// Groups ranks whose memory series are the same sample for sample, in rank order of each group's first rank.
std::vector<RankGroup> group_identical_ranks(const TraceData& data);

}  // namespace shardscope::gui
