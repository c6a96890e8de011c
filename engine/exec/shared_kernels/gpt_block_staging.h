// Which bytes of a GPT block's operands are 16-bit values when a run stages them through fp32 (mixed precision):
// the rule both backends' staging follows (exec/cpu/fp32_staging.h, exec/cuda/device_staging.h).
#pragma once
#include "exec/exec_layer.h"
#include <cstddef>

#include "exec/backend.h"

namespace shardscope::exec {

// How many leading bytes of operand `operand` hold 16-bit values. A GPT
// block's `saved` and `attention` buffers end with their 1-byte dropout masks (model/gpt_block_layout.h); every
// other operand is values throughout.
Bytes gpt_block_value_bytes(const KernelLaunch* launch, std::size_t operand, const DeviceBuffer& buffer);

}  // namespace shardscope::exec
