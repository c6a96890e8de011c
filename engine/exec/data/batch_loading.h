// Kernel::LoadBatch for every backend: generates the rank's samples of the step on the host
// (exec/data/batch_source.h) and copies them into the op's x and y operands. Which samples: the program's data shard
// (plan.h), which lowering set (DDP and ZeRO: every rank; pipelines: the replica, split into micro-batches; single,
// DataParallel and model parallel: one loader holding the whole batch).
#pragma once
#include "exec/exec_layer.h"
#include <cstdint>
#include <vector>

#include "exec/backend.h"
#include "plan/plan.h"
#include "scenario/scenario.h"

namespace shardscope::exec {

// x: rows × model.input_numel fp32; y: rows × output_numel fp32 (MSE) or rows int64 class ids (cross-entropy).
// Either operand may be absent (a pipeline's first stage loads x, its last y). Throws LoweringBug on sizes that do
// not fit the model.
void load_batch(const ResolvedScenario& scenario, std::uint64_t seed, const Program& program, OpIndex index,
                const std::vector<DeviceBuffer>& operands, RankBackend& backend);

}  // namespace shardscope::exec
