// The GPT-2 kernels' operands (plan/kernel.h) as spans for the CPU kernels of this folder.
#pragma once
#include "exec/exec_layer.h"

#include "exec/backend.h"

namespace shardscope::exec::cpu {

// Kernel::EmbeddingForward … GptBlockBackward; throws std::invalid_argument on another kernel or a missing operand.
void run_transformer_kernel(const KernelLaunch& launch);

}  // namespace shardscope::exec::cpu
