// ModelPass for GPT-2's layers: which tensors their kernels read and write (plan/kernel.h), and the working set of a
// block forward that keeps less than everything.
// A block is one op. Its forward keeps what model/gpt_block_layout.h lays out in its saved buffers; a forward that
// keeps less (checkpointed: full or selective recomputation, or under no_grad) still computes every one of those
// tensors, so it holds the part it does not keep in a "forward working set" (Temporaries) for the op's duration.
// PyTorch frees each intermediate of such a forward once it is consumed, so its true transient peak is somewhat
// lower: the working set is an upper bound, and the executor holds exactly it.
#include "training/model_pass.h"

#include "model/transformer_costs.h"

namespace shardscope {

namespace {

// What the block's layer records it keeps (model/transformer.cpp fills it from block_activation_bytes; a
// tensor-parallel shard from tensor_parallel_block_bytes), so that a shard's working set is the shard's.
BlockActivationBytes block_bytes(const Layer& layer) {
  BlockActivationBytes bytes;
  bytes.other = layer.extra_saved_bytes_per_sample;
  bytes.attention = layer.attention_saved_bytes_per_sample;
  return bytes;
}

}  // namespace

bool ModelPass::executes_as_gpt2() const {
  return model_.transformer && model_.transformer->family == TransformerFamily::Gpt2;
}

TensorId ModelPass::block_forward_working_set(std::size_t l) {
  const Layer& layer = model_.layers[l];
  if (layer.kind != LayerKind::TransformerBlock || !executes_as_gpt2()) return -1;
  const bool grad = settings_.grad_enabled;
  const CheckpointMode mode = model_.checkpoint;
  const BlockActivationBytes bytes = block_bytes(layer);
  Bytes per_sample = 0;
  if (!grad || mode == CheckpointMode::Full) per_sample += bytes.other;
  if (!grad || mode != CheckpointMode::None) per_sample += bytes.attention;
  if (per_sample == 0) return -1;
  return b_.alloc(layer.name + " forward working set", settings_.batch * per_sample, Category::Temporaries);
}

void ModelPass::annotate_transformer_forward(OpIndex op, std::size_t l, TensorId input, TensorId output,
                                             TensorId working_set) {
  const Layer& layer = model_.layers[l];
  const auto& params = operands_[l];
  const auto& saved = saved_[l];
  const bool grad = settings_.grad_enabled;
  if (layer.kind == LayerKind::Embedding) {
    // saved_[l]: the ids, the dropout mask (GPT-2), the weight handle.
    const TensorSlice mask = grad && saved.size() > 2 ? whole(saved[1]) : TensorSlice{};
    b_.set_kernel(op, Kernel::EmbeddingForward, {operand(input), params.at(0), params.at(1), mask, operand(output)});
  } else if (layer.kind == LayerKind::LayerNorm) {
    b_.set_kernel(op, Kernel::LayerNormForward, {operand(input), params.at(0), params.at(1), operand(output)});
  } else if (layer.kind == LayerKind::TransformerBlock) {
    const CheckpointMode mode = model_.checkpoint;
    const BlockActivationBytes per_sample = block_bytes(layer);
    const Bytes other = settings_.batch * per_sample.other, attention = settings_.batch * per_sample.attention;
    const bool keeps_other = grad && mode != CheckpointMode::Full;
    const bool keeps_attention = grad && mode == CheckpointMode::None;
    // saved_[l]: the input, then the kept buffers in order (save_block_activations), then the weight handle.
    const TensorSlice saved_other = keeps_other ? whole(saved.at(1)) : TensorSlice{working_set, 0, other};
    const TensorSlice saved_attention = keeps_attention ? whole(saved.at(2))
                                                        : TensorSlice{working_set, keeps_other ? 0 : other, attention};
    std::vector<TensorSlice> args{operand(input)};
    args.insert(args.end(), params.begin(), params.end());
    args.insert(args.end(), {saved_other, saved_attention, operand(output)});
    b_.set_kernel(op, Kernel::GptBlockForward, std::move(args));
  }
}

void ModelPass::annotate_recompute(OpIndex op, std::size_t l, const std::vector<TensorId>& recomputed) {
  if (!executes_as_gpt2()) return;
  const auto& saved = saved_[l];
  if (model_.checkpoint == CheckpointMode::Full) {  // the whole block again from its kept input, up to what backward reads
    std::vector<TensorSlice> args{whole(saved.at(0))};
    const auto& params = operands_[l];
    args.insert(args.end(), params.begin(), params.end());
    args.insert(args.end(), {whole(recomputed.at(0)), whole(recomputed.at(1)), TensorSlice{}});
    b_.set_kernel(op, Kernel::GptBlockForward, std::move(args));
  } else {
    b_.set_kernel(op, Kernel::GptAttentionRecompute, {whole(saved.at(1)), whole(recomputed.at(0))});
  }
}

void ModelPass::annotate_transformer_backward(OpIndex op, std::size_t l, const BackwardTensors& t) {
  const Layer& layer = model_.layers[l];
  const auto& params = operands_[l];
  const auto& saved = saved_[l];
  const auto optional = [](TensorId id) { return id >= 0 ? whole(id) : TensorSlice{}; };
  if (layer.kind == LayerKind::Embedding) {
    // A tied wte: its own gradient is computed apart, then added into lm_head's (the InputBuffer's sum).
    const bool tied = !t.summed_into_pending.empty();
    const TensorId grad_wte = tied ? t.summed_into_pending.front() : t.param_grads.at(0);
    b_.set_kernel(op, Kernel::EmbeddingBackward,
                  {operand(t.grad_output), operand(saved.at(0)), saved.size() > 2 ? whole(saved[1]) : TensorSlice{},
                   whole(grad_wte), whole(t.param_grads.at(1)), tied ? whole(t.param_grads.at(0)) : TensorSlice{}});
  } else if (layer.kind == LayerKind::LayerNorm) {
    b_.set_kernel(op, Kernel::LayerNormBackward,
                  {operand(t.grad_output), operand(saved.at(0)), params.at(0), optional(t.grad_input),
                   whole(t.param_grads.at(0)), whole(t.param_grads.at(1))});
  } else if (layer.kind == LayerKind::TransformerBlock) {
    const CheckpointMode mode = model_.checkpoint;
    const TensorId other = mode == CheckpointMode::Full ? t.recomputed.at(0) : saved.at(1);
    const TensorId attention = mode == CheckpointMode::None ? saved.at(2) : t.recomputed.back();
    std::vector<TensorSlice> args{operand(t.grad_output), operand(saved.at(0))};
    args.insert(args.end(), params.begin(), params.end());
    args.insert(args.end(), {whole(other), whole(attention), optional(t.grad_input)});
    for (TensorId g : t.param_grads) args.push_back(whole(g));
    b_.set_kernel(op, Kernel::GptBlockBackward, std::move(args));
  }
}

}  // namespace shardscope
