// LossScaler's update rule and the ranks' overflow vote (see loss_scaler.h).
#include "exec/loss_scaler.h"

#include <chrono>

namespace shardscope::exec {

void LossScaler::update(bool overflow) {
  // torch/csrc/.../AmpKernels _amp_update_scale_: back off and reset the tracker on overflow, else count the step
  // and grow once the tracker reaches the interval.
  if (overflow) {
    scale_ *= settings_.backoff_factor;
    growth_tracker_ = 0;
    ++skipped_;
    return;
  }
  if (++growth_tracker_ == settings_.growth_interval) {
    scale_ *= settings_.growth_factor;
    growth_tracker_ = 0;
  }
}

bool OverflowVote::any_overflow(int step, bool overflow) {
  std::unique_lock lock(mutex_);
  Tally& tally = tallies_[step];
  ++tally.votes;
  tally.overflow = tally.overflow || overflow;
  changed_.notify_all();
  // A failed rank never votes: the run's stop flag ends the wait (checked every few milliseconds, since RunControl
  // wakes only the op completions it watches).
  while (tally.votes < voters_) {
    if (control_.stopped()) throw RunStopped();
    changed_.wait_for(lock, std::chrono::milliseconds(20));
  }
  return tally.overflow;
}

}  // namespace shardscope::exec
