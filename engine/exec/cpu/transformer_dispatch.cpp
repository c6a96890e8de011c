// Operand unpacking for the embedding, LayerNorm and GPT-2 block kernels.
#include "exec/cpu/transformer_dispatch.h"

#include <stdexcept>
#include <string>

#include "exec/cpu/embedding_kernels.h"
#include "exec/cpu/gpt_block_kernels.h"
#include "exec/cpu/layer_norm_kernels.h"
#include "exec/cpu/operand_spans.h"
#include "exec/kernel_operands.h"
#include "model/gpt_block_layout.h"

namespace shardscope::exec::cpu {

namespace {

std::span<std::uint8_t> masks(const KernelLaunch& l, std::size_t index) {
  return has_operand(l, index) ? byte_masks(l.operands[index]) : std::span<std::uint8_t>{};
}

GptBlockShape block_shape(const KernelLaunch& l) {
  return gpt_block_shape(transformer_config(l), l.rows, l.seq, l.training, l.dropout_key, l.samples);
}

LayerNormShape layer_norm_shape(const KernelLaunch& l) {
  const TransformerConfig& c = transformer_config(l);
  return {l.rows, static_cast<int>(c.hidden), static_cast<float>(c.layer_norm_epsilon)};
}

EmbeddingShape embedding_shape(const KernelLaunch& l) {
  const TransformerConfig& c = transformer_config(l);
  return {l.rows, l.seq, static_cast<int>(c.hidden), c.vocab, c.max_positions, l.training ? c.embd_pdrop : 0.0,
          l.dropout_key, l.samples};
}

GptBlockParams block_params(const KernelLaunch& l, std::size_t first) {
  GptBlockParams params;
  for (std::size_t k = 0; k < params.size(); ++k) params[k] = floats(operand(l, first + k, "parameter"));
  return params;
}

void embedding_backward_launch(const KernelLaunch& l) {
  const auto grad_wte = floats(operand(l, 3, "grad_wte"));
  embedding_backward(embedding_shape(l), floats(operand(l, 0, "grad_out")), int64s(operand(l, 1, "ids")), masks(l, 2),
                     grad_wte, floats(operand(l, 4, "grad_wpe")));
  if (!has_operand(l, 5)) return;
  const auto tied = floats(l.operands[5]);  // lm_head's gradient of the same weight: autograd's InputBuffer sum
  if (tied.size() != grad_wte.size()) throw std::invalid_argument("embedding_backward: tied_grad differs from grad_wte in size");
  for (std::size_t k = 0; k < tied.size(); ++k) tied[k] += grad_wte[k];
}

void block_backward_launch(const KernelLaunch& l) {
  const GptBlockShape shape = block_shape(l);
  GptBlockGrads grads;
  for (std::size_t k = 0; k < grads.size(); ++k) grads[k] = floats(operand(l, 17 + k, "gradient"));
  gpt_block_backward(shape, floats(operand(l, 0, "grad_out")), floats(operand(l, 1, "input")), block_params(l, 2),
                     raw_bytes(operand(l, 14, "saved")), raw_bytes(operand(l, 15, "attention")),
                     floats(operand(l, 16, "grad_input")), grads);
}

}  // namespace

void run_transformer_kernel(const KernelLaunch& l) {
  switch (l.kernel) {
    case Kernel::EmbeddingForward:
      return embedding_forward(embedding_shape(l), int64s(operand(l, 0, "ids")), floats(operand(l, 1, "wte")),
                               floats(operand(l, 2, "wpe")), masks(l, 3), floats(operand(l, 4, "output")));
    case Kernel::EmbeddingBackward: return embedding_backward_launch(l);
    case Kernel::LayerNormForward:
      return layer_norm_forward(layer_norm_shape(l), floats(operand(l, 0, "input")), floats(operand(l, 1, "weight")),
                                floats(operand(l, 2, "bias")), floats(operand(l, 3, "output")));
    case Kernel::LayerNormBackward:
      return layer_norm_backward(layer_norm_shape(l), floats(operand(l, 0, "grad_out")), floats(operand(l, 1, "input")),
                                 floats(operand(l, 2, "weight")), has_operand(l, 3) ? floats(l.operands[3]) : std::span<float>{},
                                 false, floats(operand(l, 4, "grad_weight")), floats(operand(l, 5, "grad_bias")));
    case Kernel::GptBlockForward: {
      const GptBlockShape shape = block_shape(l);
      return gpt_block_forward(shape, floats(operand(l, 0, "input")), block_params(l, 1), raw_bytes(operand(l, 13, "saved")),
                               raw_bytes(operand(l, 14, "attention")), has_operand(l, 15) ? floats(l.operands[15]) : std::span<float>{});
    }
    case Kernel::GptAttentionRecompute: {
      const GptBlockShape shape = block_shape(l);
      return gpt_attention_recompute(shape, raw_bytes(operand(l, 0, "saved")), raw_bytes(operand(l, 1, "attention")));
    }
    case Kernel::GptBlockBackward: return block_backward_launch(l);
    default:
      throw std::invalid_argument(kernel_name(l.kernel) + " is not a transformer kernel");
  }
}

}  // namespace shardscope::exec::cpu
