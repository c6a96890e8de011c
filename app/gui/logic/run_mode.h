// The run modes the window offers, shared by the run-mode panel (which draws them) and the session (which runs them).
// Depends on nothing: the panels see it without seeing the session or the executors.
#pragma once

namespace shardscope::gui {

// Simulate: time the plan with the cost model. ExecuteCpu: run it for real on CPU threads (engine/exec), drawing
// live as it goes, with the exact accounting's prediction beside what the allocator measured. ExecuteGpu: the same
// on the machine's CUDA GPUs (engine/exec/cuda), the pytorch-2 accounting's prediction beside the caching
// allocator's measured blocks; without a usable GPU the run is refused with the reason (kept in the
// session's error()).
enum class RunMode { Simulate, ExecuteCpu, ExecuteGpu };

}  // namespace shardscope::gui
