// The 16-bit value bytes of a GPT block's saved buffers (model/gpt_block_layout.h).
#include "exec/shared_kernels/gpt_block_staging.h"

#include <stdexcept>
#include <string>

#include "exec/kernel_operands.h"
#include "model/gpt_block_layout.h"

namespace shardscope::exec {

Bytes gpt_block_value_bytes(const KernelLaunch* l, std::size_t operand, const DeviceBuffer& buffer) {
  std::size_t saved = 0;
  switch (l->kernel) {  // the block's and its tensor-parallel parts' (plan/kernel.h: the whole kernel's operands)
    case Kernel::GptBlockForward:
    case Kernel::GptBlockAttentionForward:
    case Kernel::GptBlockMlpForward:
    case Kernel::GptBlockResidualNorm:
    case Kernel::GptBlockResidual: saved = 13; break;
    case Kernel::GptAttentionRecompute: saved = 0; break;
    case Kernel::GptBlockBackward:
    case Kernel::GptBlockMlpBackward:
    case Kernel::GptBlockAttentionBackward:
    case Kernel::GptBlockInputNormBackward:
    case Kernel::GptBlockMlpDropoutBackward:
    case Kernel::GptBlockAttentionDropoutBackward: saved = 14; break;
    default: return buffer.bytes;
  }
  if (operand != saved && operand != saved + 1) return buffer.bytes;
  const GptBlockLayout layout = gpt_block_layout(transformer_config(*l), l->rows, l->seq, 2, l->tp, l->sequence_parallel);
  const bool attention = operand == saved + 1;
  const Bytes expected = attention ? layout.attention_bytes : layout.saved_bytes;
  if (buffer.bytes != expected)
    throw std::invalid_argument(kernel_name(l->kernel) + ": the 16-bit " + (attention ? "attention" : "saved") + " buffer holds " +
                                std::to_string(buffer.bytes) + " bytes, the layout of " + std::to_string(l->rows) +
                                " samples " + std::to_string(expected));
  return attention ? layout.probability_mask : layout.attention_mask;
}

}  // namespace shardscope::exec
