// fp16's dynamic loss scaling, as torch.cuda.amp.GradScaler does it (torch/amp/grad_scaler.py, 2.x; DeepSpeed's
// DynamicLossScaler and Megatron's DynamicGradScaler follow the same rule): the loss gradient is multiplied by the
// scale; the unscaled fp32 gradients are checked for inf / NaN; a step that overflowed is skipped (no update, the
// optimizer's step count unchanged) and the scale multiplied by the backoff factor; after `growth_interval` steps in
// a row without overflow the scale grows by the growth factor. bf16 needs none (its range is fp32's).
#pragma once
#include "exec/exec_layer.h"
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>

#include "exec/run_control.h"

namespace shardscope::exec {

// GradScaler's defaults.
struct LossScaleSettings {
  double initial_scale = 65536.0;  // 2^16
  double growth_factor = 2.0;
  double backoff_factor = 0.5;
  int growth_interval = 2000;
};

// One rank's scale. Every rank of a run applies the same decisions (OverflowVote), so all scales agree.
class LossScaler {
 public:
  explicit LossScaler(LossScaleSettings settings) : settings_(settings), scale_(settings.initial_scale) {}
  double scale() const { return scale_; }
  // GradScaler.update() after a step: `overflow` says whether any rank found inf / NaN.
  void update(bool overflow);
  int skipped_steps() const { return skipped_; }

 private:
  LossScaleSettings settings_;
  double scale_;
  int growth_tracker_ = 0;
  int skipped_ = 0;
};

// The agreement on whether a step overflowed, shared by the ranks of a run: a rank's step is skipped when any
// rank's gradients overflowed (DeepSpeed all-reduces its overflow flag over the data-parallel group, Megatron its
// found_inf over the model-parallel group; ZeRO-2/3 ranks each see only their partition, pipeline stages only
// their layers). The CPU backend's ranks are threads of one process, so the vote is a rendezvous in memory rather
// than a collective in the plan; the flag's few bytes are not in the accounting (training/mixed_precision.h).
class OverflowVote {
 public:
  // `voters`: the ranks that step an optimizer each step (those whose programs unscale gradients).
  OverflowVote(int voters, const RunControl& control) : voters_(voters), control_(control) {}
  // This rank's vote for `step`; returns whether any voter of the step overflowed once all have voted. Throws
  // RunStopped when the run stops meanwhile.
  bool any_overflow(int step, bool overflow);

 private:
  struct Tally {
    int votes = 0;
    bool overflow = false;
  };
  int voters_;
  const RunControl& control_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::map<int, Tally> tallies_;
};

}  // namespace shardscope::exec
