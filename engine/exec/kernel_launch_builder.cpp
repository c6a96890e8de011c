// KernelLaunchBuilder: shapes from the model, rows from operand bytes (fp32 activations), optimizer step counts.
#include "exec/kernel_launch_builder.h"

#include <string>

#include "exec/tensor_table.h"

namespace shardscope::exec {

OptimizerSettings optimizer_settings(const ResolvedScenario& scenario, std::optional<double> lr) {
  OptimizerSettings settings;
  settings.kind = scenario.settings.training.optimizer;
  const bool adam = settings.kind == OptimizerKind::Adam || settings.kind == OptimizerKind::AdamW;
  settings.lr = lr.value_or(adam ? 1e-3 : 1e-2);
  settings.weight_decay = scenario.weight_decay;
  return settings;
}

namespace {

std::string where(const Program& program, OpIndex index) {
  return "rank " + std::to_string(program.rank) + " op " + std::to_string(index) + " '" +
         program.ops[static_cast<std::size_t>(index)].label + "'";
}

// Rows of a batch-first operand holding `per_row` fp32 elements (or `element_bytes`-sized ones) per sample.
int rows_of(const Program& program, OpIndex index, const std::vector<DeviceBuffer>& operands, std::size_t operand,
            std::int64_t per_row, Bytes element_bytes) {
  if (operand >= operands.size() || !operands[operand].present())
    throw LoweringBug("lowering bug: " + where(program, index) + " lacks operand " + std::to_string(operand));
  const Bytes row_bytes = per_row * element_bytes;
  const Bytes bytes = operands[operand].bytes;
  if (row_bytes <= 0 || bytes % row_bytes != 0)
    throw LoweringBug("lowering bug: " + where(program, index) + ": operand " + std::to_string(operand) + " holds " +
                      std::to_string(bytes) + " bytes, not a whole number of " + std::to_string(row_bytes) +
                      "-byte rows");
  return static_cast<int>(bytes / row_bytes);
}

}  // namespace

KernelLaunch KernelLaunchBuilder::build(const Program& program, OpIndex index, std::vector<DeviceBuffer> operands) {
  const Op& op = program.ops.at(static_cast<std::size_t>(index));
  KernelLaunch launch;
  launch.kernel = op.kernel;
  launch.scale = op.scale;
  launch.operands = std::move(operands);
  const auto& ops = launch.operands;
  switch (op.kernel) {
    case Kernel::LinearForward:
    case Kernel::LinearBackward: {
      if (op.layer < 0 || op.layer >= static_cast<int>(model_.layers.size()))
        throw LoweringBug("lowering bug: " + where(program, index) + " runs a Linear kernel but names no layer");
      const Layer& layer = model_.layers[static_cast<std::size_t>(op.layer)];
      launch.in_features = static_cast<int>(layer.in_numel);
      launch.out_features = static_cast<int>(layer.out_numel);
      // forward: input is operand 0; backward: operand 1 (operand 0 is grad_out)
      launch.rows = rows_of(program, index, ops, op.kernel == Kernel::LinearForward ? 0 : 1, layer.in_numel, 4);
      break;
    }
    case Kernel::CrossEntropyLoss:
    case Kernel::LogSoftmaxBackward:
      launch.classes = static_cast<int>(model_.output_numel);
      launch.rows = rows_of(program, index, ops, 0, model_.output_numel, 4);
      break;
    case Kernel::NllLossBackward:  // target: one int64 class id per sample
      launch.classes = static_cast<int>(model_.output_numel);
      launch.rows = rows_of(program, index, ops, 0, 1, 8);
      break;
    case Kernel::OptimizerStep: {
      launch.optimizer = optimizer_;
      const std::size_t stride = optimizer_.kind == OptimizerKind::Sgd ? 2 : optimizer_.kind == OptimizerKind::Momentum ? 3 : 4;
      std::lock_guard lock(mutex_);
      for (std::size_t p = 0; p + stride <= op.args.size(); p += stride)
        launch.optimizer_steps.push_back(++steps_[{op.args[p].tensor, op.args[p].offset}]);
      break;
    }
    default:
      break;
  }
  return launch;
}

}  // namespace shardscope::exec
