// A GPT model's ops whose tensor-parallel collectives fall inside them, rewritten as parts with those collectives
// between (Megatron-LM's order, core/transformer/transformer_layer.py and core/tensor_parallel/cross_entropy.py):
// - a block's forward (without sequence parallelism): its attention part, the all-reduce of the row-parallel
//   attn.c_proj's output, its MLP part, the all-reduce of mlp.c_proj's output;
// - its backward: the MLP part, the all-reduce of d(ln_2 output) (fc1's column-parallel input gradient), the
//   attention part, the all-reduce of d(ln_1 output), then ln_1's backward;
// - under sequence parallelism a block's forward and backward with their all-gathers and reduce-scatters: in plans
//   with operands (GPT-2's, executed) in parts between them (exec/cpu/gpt_block_sequence_parallel.h), elsewhere one
//   op with its collectives after it; either way with the transient [s, b, h] tensor Megatron's
//   region makes around them: the row-parallel layers' partial output before its reduce-scatter (forward), the
//   all-gathered output gradient and the partial input gradient before its reduce-scatter (backward), counted as one
//   b·s·h temporary alive for the op and its collectives (an upper bound on the true lifetimes inside it); and after
//   the backward the all-reduce of the gradients sequence parallelism leaves partial on each rank, the norms' and the
//   row-parallel biases' (Megatron's finalize_model_grads._allreduce_layernorm_grads; once a block as autograd makes
//   them, as the MLP pairs' biases, where Megatron coalesces them once a step);
// - under sequence parallelism the embedding's and LM head's collectives where Megatron has them: the embedding
//   reduce-scatters its whole output (and all-gathers its output gradient before its backward), the head all-gathers
//   its input into Megatron's buffer before its forward and again before its backward, whose whole input gradient it
//   reduce-scatters; each whole [s, b, h] output or gradient a temporary around them;
// - the vocabulary-parallel cross-entropy: the row maxima, the target logit and Σ exp, each all-reduced (b·s fp32;
//   the maxima summed into their mean where Megatron's all-reduce takes the MAX: exec/cpu/
//   vocab_parallel_loss_kernels.h), then log_probs and the loss, over a small fp32 statistics tensor (3 · b·s) it
//   allocates and frees around them.
// The parts keep their whole op's operands (plan/kernel.h) and share its FLOPs and bytes; the collectives carry the
// buffers they reduce, so the executors run the plan as it is drawn. Blocks split only in plans with operands (what
// an executor runs; the same time and memory as the whole op with its collectives after it, in fewer ops); the loss
// splits in every plan, since its statistics tensor is memory the accounting must count alike. The loss backward
// keeps its ops and takes the vocabulary-parallel kernels. Used by strategy/tensor_parallel.cpp.
#pragma once
#include <vector>

#include "model/gpt_block_layout.h"
#include "model/model.h"
#include "model/tensor_parallel_shard.h"
#include "plan/plan.h"

namespace shardscope {

// The ops the split (and strategy/tensor_parallel.cpp) adds where `at` runs (its step, layer and micro-batch): a
// collective on the tensor-parallel group (group −1, numbered later) of the compute stream, and the Alloc or Free of
// a tensor.
Op tensor_parallel_collective(const Op& at, CollectiveKind kind, Bytes payload, std::string label);
Op memory_op(const Op& at, OpKind kind, TensorId tensor, const std::string& name);

class TensorParallelSplit {
 public:
  // `shard`: the tensor-parallel rank's model (model/tensor_parallel_shard.h); `micro_batch`: samples an op holds.
  // `activation`: the activations' element type; `grad_element_bytes`: a gradient element's (the parameters' dtype).
  TensorParallelSplit(const Model& shard, int tp, bool sequence_parallel, std::int64_t micro_batch,
                      ElementType activation, std::int64_t grad_element_bytes);

  // How many ops `op` becomes (1: it stays as it is, with strategy/tensor_parallel.cpp's collectives after it), and
  // which of them stands for it (the part later ops' dependencies on `op` point to: the last compute part).
  struct Parts {
    std::size_t count = 1;
    std::size_t stands_for = 0;
  };
  Parts parts_of(const Op& op) const;
  // Appends `op`'s parts and collectives (collectives on group −1, unnumbered) to `out`; a tensor it needs is added to
  // `tensors`. `gathered`: Megatron's all-gather buffer under sequence parallelism, once allocated (else −1).
  void append_parts(Op op, TensorId gathered, std::vector<TensorInfo>& tensors, std::vector<Op>& out) const;
  // The loss backward's ops take the vocabulary-parallel kernels (the softmax's with the NLL's loss gradient, which
  // `nll_scale` carries from one to the other, in program order).
  void use_vocab_parallel_backward(Op& op, double& nll_scale) const;

 private:
  enum class Kind {
    None, BlockForward, BlockBackward, SequenceParallelForward, SequenceParallelBackward,
    SequenceParallelEmbeddingForward, SequenceParallelEmbeddingBackward, SequenceParallelHeadForward,
    SequenceParallelHeadBackward, Loss
  };
  Kind kind_of(const Op& op) const;
  bool runs_in_parts(const Op& op) const;  // a sequence-parallel GPT-2 block with operands: the executed form
  // What a block's parts share: its name, its saved buffer's layout, its MLP's share of the work.
  struct BlockPass {
    std::string name;
    GptBlockLayout layout;
    double mlp = 0;
  };
  BlockPass block_pass(const Op& op, bool sequence_parallel) const;
  Bytes hidden_bytes() const;  // one whole [b, s, h] activation
  void append_block_forward(Op op, std::vector<Op>& out) const;
  void append_block_backward(Op op, std::vector<Op>& out) const;
  void append_sequence_parallel(Op op, bool forward, TensorId gathered, std::vector<TensorInfo>& tensors,
                                std::vector<Op>& out) const;
  void append_sequence_parallel_io(Op op, Kind kind, TensorId gathered, std::vector<TensorInfo>& tensors,
                                   std::vector<Op>& out) const;
  TensorId add_transient(const Op& at, const std::string& what, std::vector<TensorInfo>& tensors, std::vector<Op>& out) const;
  void append_loss(Op op, std::vector<TensorInfo>& tensors, std::vector<Op>& out) const;

  const Model& shard_;
  std::vector<TensorParallelRole> roles_;
  int tp_;
  bool sp_;
  std::int64_t micro_batch_;
  ElementType activation_;
  std::int64_t grad_element_bytes_;
};

}  // namespace shardscope
