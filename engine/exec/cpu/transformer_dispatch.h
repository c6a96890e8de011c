// The GPT-2 kernels' operands (plan/kernel.h) as spans for the CPU kernels of this folder.
#pragma once
#include "exec/exec_layer.h"

#include "exec/backend.h"

namespace shardscope::exec::cpu {

// Kernel::EmbeddingForward … GptBlockBackward; throws std::invalid_argument on another kernel or a missing operand.
void run_transformer_kernel(const KernelLaunch& launch);

// Mixed precision (exec/cpu/fp32_staging.h): how many leading bytes of operand `operand` hold 16-bit values. A GPT
// block's `saved` and `attention` buffers end with their 1-byte dropout masks (model/gpt_block_layout.h); every
// other operand is values throughout.
Bytes gpt_block_value_bytes(const KernelLaunch* launch, std::size_t operand, const DeviceBuffer& buffer);

}  // namespace shardscope::exec::cpu
