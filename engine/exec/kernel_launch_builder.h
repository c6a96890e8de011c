// Turns a compute op of the plan into a KernelLaunch: its kernel and resolved operands, plus the shapes the plan
// does not hold (in/out features of its Linear layer, rows from the input's bytes, classes from the model) and the
// optimizer's hyperparameters and per-parameter step counts. One per rank; used by the thread running the op.
#pragma once
#include "exec/exec_layer.h"
#include <algorithm>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

#include "exec/backend.h"
#include "model/tensor_parallel_shard.h"
#include "plan/plan.h"
#include "scenario/scenario.h"

namespace shardscope::exec {

// torch.optim's defaults for what the scenario does not set: lr 1e-3 (Adam, AdamW) or 1e-2 (SGD), momentum 0.9
// for 'momentum' (the value the scenario's optimizer name stands for); weight decay from the scenario.
OptimizerSettings optimizer_settings(const ResolvedScenario& scenario, std::optional<double> lr);

class KernelLaunchBuilder {
 public:
  KernelLaunchBuilder(const ResolvedScenario& scenario, OptimizerSettings optimizer, std::uint64_t seed)
      : model_(tensor_parallel_shard(scenario.model, scenario.settings.strategy.tp,
                                     scenario.settings.strategy.sequence_parallel && scenario.model.transformer)),
        optimizer_(optimizer), seed_(seed), training_(!scenario.settings.training.no_grad),
        tp_(std::max(1, scenario.settings.strategy.tp)),
        sequence_parallel_(scenario.settings.strategy.sequence_parallel && scenario.model.transformer) {}

  // Throws LoweringBug (exec/tensor_table.h) when the op's operands do not fit its layer's shape. Counts one more
  // step for every parameter of an OptimizerStep (keyed by its tensor and offset, so ZeRO shards count apart).
  KernelLaunch build(const Program& program, OpIndex index, std::vector<DeviceBuffer> operands);

 private:
  void transformer_launch(const Program& program, OpIndex index, KernelLaunch& launch) const;

  // The rank's model: under tensor parallelism the shard the plan was lowered on (model/tensor_parallel_shard.h), so
  // that a split Linear's features are the shard's; otherwise the scenario's model. An MLP's shard under sequence
  // parallelism keeps whole per-sample sizes for its b/t-sample lowering; its GEMMs' features are those of the
  // shard without it (sequence parallelism moves rows, not features), the rows come from the operands.
  const Model model_;
  OptimizerSettings optimizer_;
  std::uint64_t seed_;
  bool training_;
  int tp_;  // the tensor-parallel group's size; rank r is its member r mod tp_ (tp fastest)
  bool sequence_parallel_;  // a transformer's sequence parallelism (an MLP's moves rows, not the kernels' shapes)
  std::mutex mutex_;  // guards steps_ (an optimizer op may run on a stream thread)
  std::map<std::pair<TensorId, Bytes>, std::int64_t> steps_;
};

}  // namespace shardscope::exec
