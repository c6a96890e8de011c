// Operand unpacking for the embedding, LayerNorm and GPT-2 block kernels.
#include "exec/cpu/transformer_dispatch.h"

#include <stdexcept>
#include <string>

#include "exec/cpu/embedding_kernels.h"
#include "exec/cpu/gpt_block_kernels.h"
#include "exec/cpu/gpt_block_sequence_parallel.h"
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
  GptBlockShape shape = gpt_block_shape(transformer_config(l), l.rows, l.seq, l.training, l.dropout_key, l.samples);
  shape.tp = l.tp;
  shape.tp_rank = l.tp_rank;
  shape.sequence_parallel = l.sequence_parallel;
  return shape;
}

LayerNormShape layer_norm_shape(const KernelLaunch& l) {
  const TransformerConfig& c = transformer_config(l);
  return {l.rows, static_cast<int>(c.hidden), static_cast<float>(c.layer_norm_epsilon)};
}

// Under tensor parallelism the rank's vocab/tp rows of wte (VocabParallelEmbedding); rank 0 adds the positions.
EmbeddingShape embedding_shape(const KernelLaunch& l) {
  const TransformerConfig& c = transformer_config(l);
  EmbeddingShape shape{l.rows, l.seq, static_cast<int>(c.hidden), c.vocab / l.tp, c.max_positions,
                       l.training ? c.embd_pdrop : 0.0, l.dropout_key, l.samples};
  shape.first_id = shape.vocab * l.tp_rank;
  shape.whole_vocab = c.vocab;
  shape.adds_positions = l.tp_rank == 0;
  if (l.sequence_parallel) shape.mask_part = {l.tp_rank, l.tp};
  return shape;
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

// GptBlockForward's operands (input, params×12, saved, attention, output-), for the whole block or a part.
void block_forward_launch(const KernelLaunch& l) {
  const GptBlockShape shape = block_shape(l);
  const auto input = floats(operand(l, 0, "input"));
  const GptBlockParams params = block_params(l, 1);
  const auto saved = raw_bytes(operand(l, 13, "saved")), attention = raw_bytes(operand(l, 14, "attention"));
  const auto output = has_operand(l, 15) ? floats(l.operands[15]) : std::span<float>{};
  const bool adds_replicated = l.tp_rank == 0;
  if (l.sequence_parallel) {  // the parts' two more operands: Megatron's all-gather buffer, the [b, s, h] partial
    const auto gathered = floats(operand(l, 16, "gathered")), partial = floats(operand(l, 17, "partial"));
    switch (l.kernel) {
      case Kernel::GptBlockAttentionForward:
        return gpt_block_sp_attention_forward(shape, gathered, params, saved, attention, partial);
      case Kernel::GptBlockResidualNorm: return gpt_block_sp_residual_norm(shape, input, params, saved, attention);
      case Kernel::GptBlockMlpForward:  // without an output: a recomputation, which stops before the partial
        return gpt_block_sp_mlp_forward(shape, gathered, params, saved, attention,
                                        output.empty() ? std::span<float>{} : partial);
      case Kernel::GptBlockResidual: return gpt_block_sp_residual(shape, params, saved, attention, output);
      default: throw std::invalid_argument(kernel_name(l.kernel) + " has no sequence-parallel form");
    }
  }
  switch (l.kernel) {
    case Kernel::GptBlockAttentionForward:
      return gpt_block_attention_forward(shape, input, params, saved, attention, adds_replicated);
    case Kernel::GptBlockMlpForward: return gpt_block_mlp_forward(shape, params, saved, attention, output, adds_replicated);
    default: return gpt_block_forward(shape, input, params, saved, attention, output);
  }
}

// GptBlockBackward's operands (grad_out, input, params×12, saved, attention, grad_input, grads×12), whole or a part.
void block_backward_launch(const KernelLaunch& l) {
  const GptBlockShape shape = block_shape(l);
  GptBlockGrads grads;
  for (std::size_t k = 0; k < grads.size(); ++k) grads[k] = floats(operand(l, 17 + k, "gradient"));
  const auto grad_out = floats(operand(l, 0, "grad_out")), input = floats(operand(l, 1, "input"));
  const GptBlockParams params = block_params(l, 2);
  const auto saved = raw_bytes(operand(l, 14, "saved")), attention = raw_bytes(operand(l, 15, "attention"));
  const auto grad_input = floats(operand(l, 16, "grad_input"));
  if (l.sequence_parallel) {  // the parts' two more operands, as the forward's
    const auto gathered = floats(operand(l, 29, "gathered")), partial = floats(operand(l, 30, "partial"));
    switch (l.kernel) {
      case Kernel::GptBlockMlpDropoutBackward:
        return gpt_block_sp_mlp_dropout_backward(shape, grad_out, saved, attention, grad_input, grads[11]);
      case Kernel::GptBlockMlpBackward:
        return gpt_block_sp_mlp_backward(shape, gathered, params, saved, attention, partial, grads);
      case Kernel::GptBlockAttentionDropoutBackward:
        return gpt_block_sp_attention_dropout_backward(shape, grad_out, params, saved, attention, grad_input, grads);
      case Kernel::GptBlockAttentionBackward:
        return gpt_block_sp_attention_backward(shape, gathered, params, saved, attention, partial, grads);
      case Kernel::GptBlockInputNormBackward:
        return gpt_block_sp_input_norm_backward(shape, input, params, saved, attention, grad_input, grads);
      default: throw std::invalid_argument(kernel_name(l.kernel) + " has no sequence-parallel form");
    }
  }
  switch (l.kernel) {
    case Kernel::GptBlockMlpBackward:
      return gpt_block_mlp_backward(shape, grad_out, params, saved, attention, grad_input, grads);
    case Kernel::GptBlockAttentionBackward:
      return gpt_block_attention_backward(shape, grad_out, params, saved, attention, grad_input, grads);
    case Kernel::GptBlockInputNormBackward:
      return gpt_block_input_norm_backward(shape, input, params, saved, attention, grad_input, grads);
    default: return gpt_block_backward(shape, grad_out, input, params, saved, attention, grad_input, grads);
  }
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
    case Kernel::GptBlockForward:
    case Kernel::GptBlockAttentionForward:
    case Kernel::GptBlockMlpForward:
    case Kernel::GptBlockResidualNorm:
    case Kernel::GptBlockResidual: return block_forward_launch(l);
    case Kernel::GptAttentionRecompute: {
      const GptBlockShape shape = block_shape(l);
      return gpt_attention_recompute(shape, raw_bytes(operand(l, 0, "saved")), raw_bytes(operand(l, 1, "attention")));
    }
    case Kernel::GptBlockBackward:
    case Kernel::GptBlockMlpBackward:
    case Kernel::GptBlockAttentionBackward:
    case Kernel::GptBlockInputNormBackward:
    case Kernel::GptBlockMlpDropoutBackward:
    case Kernel::GptBlockAttentionDropoutBackward: return block_backward_launch(l);
    default:
      throw std::invalid_argument(kernel_name(l.kernel) + " is not a transformer kernel");
  }
}

}  // namespace shardscope::exec::cpu
