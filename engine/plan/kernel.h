// What an op computes, for executors: a kernel and its operands (slices of the program's tensors). The memory
// accounting and the simulator ignore both; lowering fills them so an executor can run the plan for real and a
// validator can check that every operand is alive when the op runs.
// Operands by kernel (`-` marks an optional operand, given as TensorSlice{} with tensor -1). Element type fp32 (or
// 16-bit, see below), row-major, batch-first; "rows" is the op's batch (samples on this rank / micro-batch).
//   LoadBatch            x-, y-                       this rank's slice of the global batch (exec/data/batch_source);
//                                                      a pipeline stage loads only what it reads (x first, y last)
//   LinearForward        input, weight, bias-, output output = input·weightᵀ + bias
//   LinearBackward       grad_out, input, weight, grad_input-, grad_weight, grad_bias-
//                                                      grad_input = grad_out·weight; grad_weight = grad_outᵀ·input;
//                                                      grad_bias = Σrows grad_out (all written, not accumulated)
//   ReluForward          input, output                output may be input (ReLU(inplace=True))
//   ReluBackward         grad_out, output, grad_input grad_input = grad_out where output > 0
//   MseLoss              output, target, loss         loss = mean((output − target)²) × Op::scale
//   MseLossBackward      output, target, grad_input   grad_input = 2(output − target)/numel × Op::scale
//   CrossEntropyLoss     logits, target, log_probs, loss   log_probs = log_softmax(logits); loss = mean NLL × Op::scale
//                        (Op::scale on a loss forward: 1, or under sequence parallelism 1/tp, each rank's rows'
//                        share of the whole batch's mean; strategy/tensor_parallel.h)
//   NllLossBackward      target, grad_log_probs       −Op::scale/rows at each row's target, 0 elsewhere
//                        (Op::scale on a loss backward: the gradient of the loss, 1 unless the loss was scaled,
//                        e.g. divided by a pipeline's micro-batch count)
//   LogSoftmaxBackward   grad_log_probs, log_probs, grad_logits
//   BiasAdd              input, bias, output          output = input + bias on every row (Megatron's RowParallelLinear
//                                                      adds its bias after the reduce-scatter under sequence parallelism)
//   BiasBackward         grad_out, grad_bias          grad_bias = Σrows grad_out (written, not accumulated)
//   Accumulate           (dst, src)...                each dst += src
//   Copy                 (dst, src)...                each dst = src × Op::scale (DDP copies gradients into
//                                                      its buckets divided by the world size)
//   Zero                 dst...                       each dst = 0
//   Scale                dst                          dst *= Op::scale (e.g. DDP's division by world size)
//   OptimizerStep        (param, grad, state...)×k    one torch.optim step over k parameters; the state tensors per
//                                                      parameter: SGD 0, momentum 1 (buffer), Adam/AdamW 2 (exp_avg,
//                                                      exp_avg_sq); hyperparameters from the scenario
//   UnscaleGradients     (dst, src)...                mixed precision: each fp32 master gradient dst = 16-bit src /
//                                                      the loss scale, and whether any is inf or NaN (fp16's dynamic
//                                                      loss scaling then skips the step, as GradScaler)
// Under mixed precision operands hold what their tensor's ElementType says (plan/element_type.h): a kernel reads
// 16-bit operands as their values and rounds what it writes into them; Copy converts between element types.
// GPT-2 (model/gpt_block_layout.h fixes what the saved buffers hold; tokens = rows × seq, row-major [tokens × width]):
//   EmbeddingForward     ids, wte, wpe, mask-, output  output = dropout(wte[ids] + wpe[position]), embd_pdrop; the
//                                                      keep mask (1 byte an element) written where present
//   EmbeddingBackward    grad_out, ids, mask-, grad_wte, grad_wpe, tied_grad-
//                                                      grad_wte, grad_wpe written (embedding_dense_backward); a tied
//                                                      wte then adds grad_wte into tied_grad (lm_head's, InputBuffer)
//   LayerNormForward     input, weight, bias, output
//   LayerNormBackward    grad_out, input, weight, grad_input-, grad_weight, grad_bias   (all written)
//   GptBlockForward      input, params×12, saved, attention, output-
//                                                      one GPT2Block; `saved` and `attention` receive what autograd
//                                                      keeps (or a checkpointed forward's transient working set);
//                                                      without output it stops after what backward needs (the
//                                                      recomputation of torch.utils.checkpoint)
//   GptAttentionRecompute saved, attention           selective recomputation: the attention core again from Q, K
//   GptBlockBackward     grad_out, input, params×12, saved, attention, grad_input, grads×12
//                                                      grad_input and the 12 gradients written; saved and attention
//                                                      are scratch afterwards (they are freed next)
// A tensor-parallel GPT-2 block (Megatron-LM's split; exec/cpu/gpt_block_kernels.h) runs in parts with the
// tensor-parallel all-reduces between them (strategy/tensor_parallel_split.h), each part with its whole kernel's
// operands:
//   GptBlockAttentionForward, GptBlockMlpForward               GptBlockForward's
//   GptBlockMlpBackward, GptBlockAttentionBackward, GptBlockInputNormBackward   GptBlockBackward's
// Under sequence parallelism as well (exec/cpu/gpt_block_sequence_parallel.h), each part's operands are its whole
// kernel's and two more, `gathered` (Megatron's all-gather buffer) and `partial` (a whole [b, s, h] temporary):
//   ln_1 is LayerNormForward on this rank's tokens; GptBlockAttentionForward, GptBlockResidualNorm,
//   GptBlockMlpForward, GptBlockResidual: GptBlockForward's, gathered, partial
//   GptBlockMlpDropoutBackward, GptBlockMlpBackward, GptBlockAttentionDropoutBackward, GptBlockAttentionBackward,
//   GptBlockInputNormBackward: GptBlockBackward's, gathered, partial
// and the embedding writes a whole [b, s, h] output (reduce-scattered next), its backward reads one (all-gathered).
// Under tensor parallelism the embedding and the loss are vocabulary-parallel (each rank holds vocab/tp rows of wte,
// and the logits of those ids): EmbeddingForward / EmbeddingBackward take the rank's rows, and
//   VocabParallelLossMax    logits, stats             stats' chunk 0: each row's largest logit / tp (the all-reduce
//                                                      sums them: the shift, the mean of the ranks' maxima)
//   VocabParallelLossSums   logits, target, stats     after it: chunk 1 the target logit less the shift (0 where
//                                                      another rank holds it), chunk 2 Σ exp(logit − shift) here
//   VocabParallelLossFinish logits, target, stats, log_probs, loss   after both are all-reduced: the rank's
//                                                      log_probs, and the loss (mean NLL × Op::scale)
//   VocabParallelNllLossBackward  target, grad_log_probs   NllLossBackward on the rank's ids only
//   VocabParallelLogSoftmaxBackward grad_log_probs, log_probs, grad_logits   LogSoftmaxBackward with each row's
//                                                      Σ grad_log_probs over the whole vocabulary, −Op::scale/rows
//                                                      (one target a row), rather than the rank's own part
//   (stats: fp32, rows × 3 elements; a chunk is rows elements; exec/cpu/vocab_parallel_loss_kernels.h)
// Collectives, Send and Recv take their buffer(s) in `args` too: all-reduce / broadcast / reduce: [buffer...] (one
// coalesced call over the listed buffers, in order);
// reduce-scatter: [input, output] (output = this member's chunk of the reduced input: member i of n owns elements
// [i·len/n, (i+1)·len/n) when n divides the length), or in place with parts that differ in size and need not be
// contiguous, [{}, member 0's parts..., {}, member 1's parts..., ..., {}, member n−1's parts...] (one absent slice
// opens each member's list, in group order; each part ends reduced on the member it is listed under and is
// undefined on the others: a coalesced series of reduces, DeepSpeed ZeRO-2's reduce_scatter of a bucket whose
// owners' slices interleave);
// all-gather: [input, output] (all_gather_into_tensor: member i's input lands in chunk i of the contiguous output;
// the input may be that chunk itself, in place) or [input, output_0, ..., output_{n-1}] (all_gather into a tensor
// list: one output per member in group order, each the input's size, the caller's own output may be the input;
// DeepSpeed's chunked all-gather of partitions that are not contiguous); send / recv: [buffer].
// scatter (rooted, parts may differ in size): root [input, own output-], others [output]; gather: root [own input-,
// output], others [input]. The root's buffer is the members' parts concatenated in group order, each part's size
// that member's buffer's; the root's own part may be a slice of its buffer (DataParallel's chunk 0 is a view).
#pragma once
#include <cstdint>
#include <string>

#include "core/units.h"

namespace shardscope {

using TensorId = std::int32_t;

enum class Kernel : std::uint8_t {
  None,  // takes time only (waits, library copies an executor need not perform)
  LoadBatch,
  LinearForward,
  LinearBackward,
  ReluForward,
  ReluBackward,
  MseLoss,
  MseLossBackward,
  CrossEntropyLoss,
  NllLossBackward,
  LogSoftmaxBackward,
  Accumulate,
  Copy,
  Zero,
  Scale,
  OptimizerStep,
  EmbeddingForward,
  EmbeddingBackward,
  LayerNormForward,
  LayerNormBackward,
  GptBlockForward,
  GptAttentionRecompute,
  GptBlockAttentionForward,
  GptBlockMlpForward,
  GptBlockMlpBackward,
  GptBlockAttentionBackward,
  GptBlockInputNormBackward,
  GptBlockResidualNorm,
  GptBlockResidual,
  GptBlockMlpDropoutBackward,
  GptBlockAttentionDropoutBackward,
  GptBlockBackward,
  UnscaleGradients,
  BiasAdd,
  BiasBackward,
  VocabParallelLossMax,
  VocabParallelLossSums,
  VocabParallelLossFinish,
  VocabParallelNllLossBackward,
  VocabParallelLogSoftmaxBackward,
};

std::string kernel_name(Kernel kernel);

// The GPT-2 kernels (EmbeddingForward … GptBlockBackward, the block's tensor-parallel parts among them), which take
// their shapes from the model's config.
inline bool is_transformer_kernel(Kernel kernel) {
  return kernel >= Kernel::EmbeddingForward && kernel <= Kernel::GptBlockBackward;
}

// A byte range of a tensor: [offset, offset + bytes); bytes 0 means to the tensor's end.
struct TensorSlice {
  TensorId tensor = -1;
  Bytes offset = 0;
  Bytes bytes = 0;
  bool present() const { return tensor >= 0; }
};

inline TensorSlice whole(TensorId tensor) { return TensorSlice{tensor, 0, 0}; }

}  // namespace shardscope
