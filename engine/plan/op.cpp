// Names of op kinds, streams and collectives, as shown to users and written in traces.
#include "plan/op.h"

namespace shardscope {

std::string op_kind_name(OpKind kind) {
  switch (kind) {
    case OpKind::Compute: return "compute";
    case OpKind::Collective: return "collective";
    case OpKind::Send: return "send";
    case OpKind::Recv: return "recv";
    case OpKind::Alloc: return "alloc";
    case OpKind::Free: return "free";
    case OpKind::Phase: return "phase";
  }
  return "?";
}

std::string stream_name(Stream stream) {
  switch (stream) {
    case Stream::Compute: return "compute";
    case Stream::Communication: return "communication";
    case Stream::Copy: return "copy";
  }
  return "?";
}

std::string compute_kind_name(ComputeKind kind) {
  switch (kind) {
    case ComputeKind::Forward: return "forward";
    case ComputeKind::Backward: return "backward";
    case ComputeKind::Loss: return "loss";
    case ComputeKind::LossBackward: return "loss backward";
    case ComputeKind::Optimizer: return "optimizer";
    case ComputeKind::Copy: return "copy";
  }
  return "?";
}

std::string collective_kind_name(CollectiveKind kind) {
  switch (kind) {
    case CollectiveKind::AllReduce: return "all-reduce";
    case CollectiveKind::Broadcast: return "broadcast";
    case CollectiveKind::Reduce: return "reduce";
    case CollectiveKind::AllGather: return "all-gather";
    case CollectiveKind::ReduceScatter: return "reduce-scatter";
    case CollectiveKind::Scatter: return "scatter";
    case CollectiveKind::Gather: return "gather";
    case CollectiveKind::Barrier: return "barrier";
  }
  return "?";
}

std::string kernel_name(Kernel kernel) {
  switch (kernel) {
    case Kernel::None: return "none";
    case Kernel::LoadBatch: return "load_batch";
    case Kernel::LinearForward: return "linear_forward";
    case Kernel::LinearBackward: return "linear_backward";
    case Kernel::ReluForward: return "relu_forward";
    case Kernel::ReluBackward: return "relu_backward";
    case Kernel::MseLoss: return "mse_loss";
    case Kernel::MseLossBackward: return "mse_loss_backward";
    case Kernel::CrossEntropyLoss: return "cross_entropy_loss";
    case Kernel::NllLossBackward: return "nll_loss_backward";
    case Kernel::LogSoftmaxBackward: return "log_softmax_backward";
    case Kernel::Accumulate: return "accumulate";
    case Kernel::Copy: return "copy";
    case Kernel::Zero: return "zero";
    case Kernel::Scale: return "scale";
    case Kernel::OptimizerStep: return "optimizer_step";
    case Kernel::EmbeddingForward: return "embedding_forward";
    case Kernel::EmbeddingBackward: return "embedding_backward";
    case Kernel::LayerNormForward: return "layer_norm_forward";
    case Kernel::LayerNormBackward: return "layer_norm_backward";
    case Kernel::GptBlockForward: return "gpt_block_forward";
    case Kernel::GptAttentionRecompute: return "gpt_attention_recompute";
    case Kernel::GptBlockAttentionForward: return "gpt_block_attention_forward";
    case Kernel::GptBlockMlpForward: return "gpt_block_mlp_forward";
    case Kernel::GptBlockMlpBackward: return "gpt_block_mlp_backward";
    case Kernel::GptBlockAttentionBackward: return "gpt_block_attention_backward";
    case Kernel::GptBlockInputNormBackward: return "gpt_block_input_norm_backward";
    case Kernel::GptBlockResidualNorm: return "gpt_block_residual_norm";
    case Kernel::GptBlockResidual: return "gpt_block_residual";
    case Kernel::GptBlockMlpDropoutBackward: return "gpt_block_mlp_dropout_backward";
    case Kernel::GptBlockAttentionDropoutBackward: return "gpt_block_attention_dropout_backward";
    case Kernel::GptBlockBackward: return "gpt_block_backward";
    case Kernel::UnscaleGradients: return "unscale_gradients";
    case Kernel::BiasAdd: return "bias_add";
    case Kernel::BiasBackward: return "bias_backward";
    case Kernel::VocabParallelLossMax: return "vocab_parallel_loss_max";
    case Kernel::VocabParallelLossSums: return "vocab_parallel_loss_sums";
    case Kernel::VocabParallelLossFinish: return "vocab_parallel_loss_finish";
    case Kernel::VocabParallelNllLossBackward: return "vocab_parallel_nll_loss_backward";
    case Kernel::VocabParallelLogSoftmaxBackward: return "vocab_parallel_log_softmax_backward";
  }
  return "?";
}

}  // namespace shardscope
