// Seconds per call of a kernel, as calibrate.py's Timer measures PyTorch's: one warm-up call, then calls repeated
// until a repetition lasts at least `min_rep_s`, the median over `reps` repetitions. A call that reports the
// device's own time (the CUDA backend's events) is timed by that; otherwise by the host clock around it (the CPU
// backend, where the call is the work).
#pragma once
#include <functional>
#include <optional>

#include "core/units.h"

namespace shardscope::calibration {

class KernelTimer {
 public:
  KernelTimer(double min_rep_s, int reps) : min_rep_s_(min_rep_s), reps_(reps) {}
  // `call` runs the kernel once and returns the device's time for it where there is one.
  double seconds(const std::function<std::optional<TimeNs>()>& call) const;

 private:
  double min_rep_s_;
  int reps_;
};

}  // namespace shardscope::calibration
