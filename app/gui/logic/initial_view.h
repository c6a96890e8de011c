// Where the window first looks at a run: from just before its first phase marker to its end. A recorded PyTorch run
// starts its clock with the process, so seconds of imports and setup come before the model exists (8.5 s before
// `model_created` in a recorded GPT-2 job, whose 12 steps take 0.8 s); the view skips them and the whole run stays
// one "Zoom to the whole run" (View menu), a zoom out or a pan away. Pure logic, unit-tested
// (tests/gui/test_memory_scale.cpp).
#pragma once
#include <optional>

#include "core/units.h"

namespace shardscope::gui {

struct TimeRange {
  TimeNs t0 = 0, t1 = 1;
};

// The run spans [begin, end]; first_phase is the earliest phase marker of any rank (none: the whole run). The view
// starts a fortieth of the rest of the run before that marker, so what led up to it (the parameters' allocations)
// and the marker's line are inside, never before `begin`; it ends at `end`.
TimeRange initial_view(TimeNs begin, TimeNs end, std::optional<TimeNs> first_phase);

}  // namespace shardscope::gui
