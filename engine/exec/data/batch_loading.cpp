// load_batch: sample indices of the program's data shard, then host buffers, then one copy per operand.
#include "exec/data/batch_loading.h"

#include <cstring>
#include <string>

#include "exec/data/batch_source.h"
#include "exec/sixteen_bit.h"
#include "exec/tensor_table.h"

namespace shardscope::exec {

namespace {

std::int64_t rows_of(const DeviceBuffer& buffer, Bytes row_bytes, const std::string& where, const char* what) {
  if (buffer.bytes % row_bytes != 0)
    throw LoweringBug("lowering bug: " + where + ": " + what + " holds " + std::to_string(buffer.bytes) +
                      " bytes, not whole samples of " + std::to_string(row_bytes) + " bytes");
  return buffer.bytes / row_bytes;
}

template <typename T>
std::span<const std::byte> bytes_of(const std::vector<T>& values) {
  return std::as_bytes(std::span<const T>(values));
}

}  // namespace

void load_batch(const ResolvedScenario& scenario, std::uint64_t seed, const Program& program, OpIndex index,
                const std::vector<DeviceBuffer>& operands, RankBackend& backend) {
  const Op& op = program.ops.at(static_cast<std::size_t>(index));
  const Model& model = scenario.model;
  const std::string where = "rank " + std::to_string(program.rank) + " op " + std::to_string(index) + " '" + op.label + "'";
  const bool mse = scenario.settings.training.loss == LossKind::Mse;
  const DeviceBuffer x = operands.size() > 0 ? operands[0] : DeviceBuffer{};
  const DeviceBuffer y = operands.size() > 1 ? operands[1] : DeviceBuffer{};
  std::int64_t rows = 0;
  if (x.present()) rows = rows_of(x, model.input_numel * model.input_element_bytes, where, "x");
  if (y.present()) {
    // An MSE target is fp32, or the output's 16-bit dtype when the model computes in it (fsdp's param_dtype).
    const std::int64_t y_rows =
        rows_of(y, mse ? model.output_numel * element_bytes(y.element) : model.target_positions * 8, where, "y");
    if (rows != 0 && rows != y_rows)
      throw LoweringBug("lowering bug: " + where + ": x holds " + std::to_string(rows) + " samples, y " + std::to_string(y_rows));
    rows = y_rows;
  }
  if (rows == 0) return;

  // The rank's whole batch of the step, then this op's micro-batch of it (consecutive rows, as torch.chunk).
  const DataShard shard = program.data;
  const int micro = op.micro_batch < 0 ? 0 : op.micro_batch;
  const std::int64_t rank_batch = op.micro_batch < 0 ? rows : rows * scenario.settings.strategy.micro_batches;
  const BatchSlice slice{op.step > 0 ? op.step - 1 : 0, static_cast<int>(rank_batch * shard.count), shard.count,
                         shard.index};
  const std::vector<std::int64_t> all = rank_sample_indices(slice);
  const std::vector<std::int64_t> samples(all.begin() + micro * rows, all.begin() + (micro + 1) * rows);

  const BatchSource source(seed, static_cast<int>(model.input_numel));
  if (model.language_model) {  // token ids in, next tokens as targets
    const auto count = static_cast<std::size_t>(rows * model.seq);
    std::vector<std::int64_t> ids(x.present() ? count : 0), targets(y.present() ? count : 0);
    source.fill_token_sequences(samples, model.seq, model.output_numel / model.target_positions, ids, targets);
    if (x.present()) backend.copy_from_host(x, bytes_of(ids));
    if (y.present()) backend.copy_from_host(y, bytes_of(targets));
    return;
  }
  if (x.present()) {
    std::vector<float> inputs(static_cast<std::size_t>(rows * model.input_numel));
    source.fill_inputs(samples, inputs);
    backend.copy_from_host(x, bytes_of(inputs));
  }
  if (!y.present()) return;
  if (mse) {
    std::vector<float> targets(static_cast<std::size_t>(rows * model.output_numel));
    source.fill_regression_targets(samples, static_cast<int>(model.output_numel), targets);
    if (is_16_bit(y.element)) {  // the same values, rounded to the target's dtype as torch.randn(dtype=) would hold them
      std::vector<std::byte> bits(static_cast<std::size_t>(y.bytes));
      narrow(y.element, targets, bits.data());
      backend.copy_from_host(y, bits);
    } else {
      backend.copy_from_host(y, bytes_of(targets));
    }
  } else {
    std::vector<std::int32_t> classes(static_cast<std::size_t>(rows));
    source.fill_class_targets(samples, static_cast<int>(model.output_numel), classes);
    const std::vector<std::int64_t> wide(classes.begin(), classes.end());  // torch holds class ids as int64
    backend.copy_from_host(y, bytes_of(wide));
  }
}

}  // namespace shardscope::exec
