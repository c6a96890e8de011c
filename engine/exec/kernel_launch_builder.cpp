// KernelLaunchBuilder: shapes from the model, rows from operand bytes (fp32 activations), optimizer step counts.
#include "exec/kernel_launch_builder.h"

#include <string>

#include "exec/shared_kernels/dropout_mask.h"
#include "exec/tensor_table.h"
#include "model/gpt_block_layout.h"

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

// Rows of a batch-first operand holding `per_row` elements per sample (of the operand's element type; bytes for
// opaque ones, so `per_row` counts bytes there: 8 an int64 id).
int rows_of(const Program& program, OpIndex index, const std::vector<DeviceBuffer>& operands, std::size_t operand,
            std::int64_t per_row) {
  if (operand >= operands.size() || !operands[operand].present())
    throw LoweringBug("lowering bug: " + where(program, index) + " lacks operand " + std::to_string(operand));
  const Bytes row_bytes = per_row * element_bytes(operands[operand].element);
  const Bytes bytes = operands[operand].bytes;
  if (row_bytes <= 0 || bytes % row_bytes != 0)
    throw LoweringBug("lowering bug: " + where(program, index) + ": operand " + std::to_string(operand) + " holds " +
                      std::to_string(bytes) + " bytes, not a whole number of " + std::to_string(row_bytes) +
                      "-byte rows");
  return static_cast<int>(bytes / row_bytes);
}

// Rows of a GPT block's `saved` operand (operand 0), one sample's layout a row: `fp32_row` bytes, or `bit16_row`
// when the operand is 16-bit (its masks stay 1 byte an element).
int saved_rows(const Program& program, OpIndex index, const std::vector<DeviceBuffer>& operands, Bytes fp32_row,
               Bytes bit16_row) {
  if (operands.empty() || !operands[0].present())
    throw LoweringBug("lowering bug: " + where(program, index) + " lacks operand 0");
  const Bytes row = is_16_bit(operands[0].element) ? bit16_row : fp32_row;
  if (row <= 0 || operands[0].bytes % row != 0)
    throw LoweringBug("lowering bug: " + where(program, index) + ": saved holds " + std::to_string(operands[0].bytes) +
                      " bytes, not a whole number of " + std::to_string(row) + "-byte samples");
  return static_cast<int>(operands[0].bytes / row);
}

}  // namespace

// Rows: tokens for LayerNorm, samples for the embedding and the blocks (from the first operand's bytes).
void KernelLaunchBuilder::transformer_launch(const Program& program, OpIndex index, KernelLaunch& launch) const {
  const Op& op = program.ops.at(static_cast<std::size_t>(index));
  if (!model_.transformer)
    throw LoweringBug("lowering bug: " + where(program, index) + " runs a transformer kernel on a model without a config");
  const TransformerConfig& c = *model_.transformer;
  launch.transformer = &*model_.transformer;
  launch.seq = model_.seq;
  launch.training = training_;
  launch.dropout_key = exec::dropout_key(seed_, op.step, op.layer);
  const auto& ops = launch.operands;
  switch (op.kernel) {
    case Kernel::EmbeddingForward:
    case Kernel::EmbeddingBackward:
      launch.rows = rows_of(program, index, ops, op.kernel == Kernel::EmbeddingForward ? 0 : 1, model_.seq * 8);
      break;
    case Kernel::LayerNormForward:
    case Kernel::LayerNormBackward:
      launch.rows = rows_of(program, index, ops, op.kernel == Kernel::LayerNormForward ? 0 : 1, c.hidden);
      break;
    case Kernel::GptAttentionRecompute:
      launch.rows = saved_rows(program, index, ops, gpt_block_layout(c, 1, model_.seq, 4, tp_, sequence_parallel_).saved_bytes,
                               gpt_block_layout(c, 1, model_.seq, 2, tp_, sequence_parallel_).saved_bytes);
      break;
    default: {  // a block (or part): forward from its input (operand 0), backward from its input (operand 1); a
                // sequence-parallel shard's input is its share of the tokens (the layer's in_numel a sample)
      const bool forward = op.kernel == Kernel::GptBlockForward || op.kernel == Kernel::GptBlockAttentionForward ||
                           op.kernel == Kernel::GptBlockMlpForward || op.kernel == Kernel::GptBlockResidualNorm ||
                           op.kernel == Kernel::GptBlockResidual;
      if (op.layer < 0 || op.layer >= static_cast<int>(model_.layers.size()))
        throw LoweringBug("lowering bug: " + where(program, index) + " runs a GPT block kernel but names no layer");
      launch.rows = rows_of(program, index, ops, forward ? 0 : 1, model_.layers[static_cast<std::size_t>(op.layer)].in_numel);
    }
  }
  // Which samples of the step's global batch the pass holds, for the dropout masks, as exec/data/batch_loading.cpp
  // loads them: the program's share data.index of data.count is global samples index + count · j (DistributedSampler),
  // and micro-batch m of `rows` samples takes its rows m · rows on. (LayerNorm's rows are tokens; it draws no mask.)
  const std::int64_t first_row = op.micro_batch < 0 ? 0 : static_cast<std::int64_t>(op.micro_batch) * launch.rows;
  launch.samples = {program.data.index + program.data.count * first_row, program.data.count};
}

KernelLaunch KernelLaunchBuilder::build(const Program& program, OpIndex index, std::vector<DeviceBuffer> operands) {
  const Op& op = program.ops.at(static_cast<std::size_t>(index));
  KernelLaunch launch;
  launch.kernel = op.kernel;
  launch.scale = op.scale;
  launch.tp = tp_;
  launch.tp_rank = program.rank % tp_;
  launch.sequence_parallel = sequence_parallel_;
  launch.operands = std::move(operands);
  const auto& ops = launch.operands;
  switch (op.kernel) {
    case Kernel::LinearForward:
    case Kernel::LinearBackward: {
      if (op.layer < 0 || op.layer >= static_cast<int>(model_.layers.size()))
        throw LoweringBug("lowering bug: " + where(program, index) + " runs a Linear kernel but names no layer");
      const Layer& layer = model_.layers[static_cast<std::size_t>(op.layer)];
      // A language model's Linear (lm_head) maps each token: per-sample sizes over the sequence.
      const std::int64_t tokens = model_.language_model && model_.seq > 0 ? model_.seq : 1;
      launch.in_features = static_cast<int>(layer.in_numel / tokens);
      launch.out_features = static_cast<int>(layer.out_numel / tokens);
      // A transformer's head under sequence parallelism keeps this rank's share of the sequence as its input (the
      // shard's in_numel) but runs its GEMM on the all-gathered tokens: whole rows of h.
      if (sequence_parallel_ && model_.transformer) launch.in_features *= tp_;
      // forward: input is operand 0; backward: operand 1 (operand 0 is grad_out)
      launch.rows = rows_of(program, index, ops, op.kernel == Kernel::LinearForward ? 0 : 1, launch.in_features);
      break;
    }
    // A language model's cross-entropy has a row per token (logits.view(-1, V), targets.view(-1)).
    // Vocabulary-parallel: the rank's logits (the shard's output_numel).
    case Kernel::CrossEntropyLoss:
    case Kernel::LogSoftmaxBackward:
    case Kernel::VocabParallelLossMax:
    case Kernel::VocabParallelLossSums:
    case Kernel::VocabParallelLossFinish:
    case Kernel::VocabParallelLogSoftmaxBackward:
      launch.classes = static_cast<int>(model_.output_numel / model_.target_positions);
      launch.rows = rows_of(program, index, ops, 0, launch.classes);
      break;
    case Kernel::NllLossBackward:  // target: one int64 class id per row
    case Kernel::VocabParallelNllLossBackward:
      launch.classes = static_cast<int>(model_.output_numel / model_.target_positions);
      launch.rows = rows_of(program, index, ops, 0, 8);
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
      if (is_transformer_kernel(op.kernel)) transformer_launch(program, index, launch);
      break;
  }
  return launch;
}

}  // namespace shardscope::exec
