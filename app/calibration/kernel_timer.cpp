// KernelTimer: warm-up, calls per repetition from one timed call, median of the repetitions.
#include "calibration/kernel_timer.h"

#include <algorithm>
#include <chrono>
#include <vector>

namespace shardscope::calibration {

namespace {

// Seconds of `count` calls: the devices' own times summed where every call reports one, else the host clock.
double run(const std::function<std::optional<TimeNs>()>& call, int count) {
  const auto start = std::chrono::steady_clock::now();
  double device = 0;
  bool all_device = true;
  for (int i = 0; i < count; ++i) {
    const std::optional<TimeNs> t = call();
    if (t) device += static_cast<double>(*t) * 1e-9;
    else all_device = false;
  }
  const double host = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return all_device ? device : host;
}

}  // namespace

double KernelTimer::seconds(const std::function<std::optional<TimeNs>()>& call) const {
  call();  // warm-up: first-touch of fresh buffers, BLAS's thread set-up, cuBLAS's kernel choice
  const double once = std::max(run(call, 1), 1e-7);
  const int count = std::clamp(static_cast<int>(min_rep_s_ / once), 1, 10000);
  std::vector<double> per_call;
  for (int r = 0; r < reps_; ++r) per_call.push_back(run(call, count) / count);
  std::sort(per_call.begin(), per_call.end());
  return per_call[per_call.size() / 2];
}

}  // namespace shardscope::calibration
