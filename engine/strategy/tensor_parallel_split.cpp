// TensorParallelSplit: the parts of a GPT block's forward and backward and of the vocabulary-parallel
// cross-entropy, with the collectives between them on the buffers the kernels leave their partial sums in
// (model/gpt_block_layout.h places them in the block's saved buffer).
#include "strategy/tensor_parallel_split.h"

#include <algorithm>
#include <string>

#include "model/gpt_block_layout.h"
#include "plan/kernel.h"

namespace shardscope {

namespace {

Op collective(const Op& at, CollectiveKind kind, Bytes payload, std::string label) {
  Op c;
  c.kind = OpKind::Collective;
  c.stream = Stream::Compute;
  c.collective_kind = kind;
  c.step = at.step;
  c.layer = at.layer;
  c.micro_batch = at.micro_batch;
  c.group = -1;
  c.payload = payload;
  c.label = std::move(label);
  return c;
}

// The Alloc (or Free) of `tensor` where `at` runs.
Op memory_op(const Op& at, OpKind kind, TensorId tensor, const std::string& name) {
  Op m;
  m.kind = kind;
  m.tensor = tensor;
  m.step = at.step;
  m.layer = at.layer;
  m.micro_batch = at.micro_batch;
  m.label = (kind == OpKind::Alloc ? "alloc " : "free ") + name;
  return m;
}

// A later part of `op`: the same op with another kernel and share of the work, after the part before it on the
// same stream (no deps of its own).
Op part(const Op& op, Kernel kernel, double share, const std::string& what) {
  Op p = op;
  p.kernel = kernel;
  p.flops = op.flops * share;
  p.bytes_accessed = static_cast<Bytes>(static_cast<double>(op.bytes_accessed) * share);
  p.label = op.label.str() + " (" + what + ")";
  return p;
}


}  // namespace

TensorParallelSplit::TensorParallelSplit(const Model& shard, int tp, bool sequence_parallel, std::int64_t micro_batch,
                                         ElementType activation, std::int64_t grad_element_bytes)
    : shard_(shard), tp_(tp), sp_(sequence_parallel), micro_batch_(micro_batch), activation_(activation),
      grad_element_bytes_(grad_element_bytes) {}

TensorParallelSplit::Kind TensorParallelSplit::kind_of(const Op& op) const {
  if (tp_ == 1 || op.kind != OpKind::Compute || !shard_.transformer) return Kind::None;
  if (op.compute_kind == ComputeKind::Loss && shard_.language_model && op.kernel == Kernel::CrossEntropyLoss)
    return Kind::Loss;
  if (sp_) {  // any transformer family: a block's forward (a recomputed one too) or backward
    const bool block = op.layer >= 0 && static_cast<std::size_t>(op.layer) < shard_.layers.size() &&
                       shard_.layers[static_cast<std::size_t>(op.layer)].kind == LayerKind::TransformerBlock;
    if (!block || op.label.str().ends_with("attention recompute")) return Kind::None;
    if (op.compute_kind == ComputeKind::Forward) return Kind::SequenceParallelForward;
    if (op.compute_kind == ComputeKind::Backward) return Kind::SequenceParallelBackward;
    return Kind::None;
  }
  if (shard_.transformer->family != TransformerFamily::Gpt2) return Kind::None;
  // Blocks split only in plans an executor runs (ops with operands): a simulated or accounted plan keeps each block one
  // op with its all-reduces after it, the same time and memory in a fifth fewer ops (the 1,024-rank 3-D plan: 314
  // against 375 MiB). A full recomputation's forward (GptBlockForward without its output) keeps its collectives after
  // it.
  if (op.args.empty()) return Kind::None;
  if (op.kernel == Kernel::GptBlockForward && !op.label.str().ends_with("recompute")) return Kind::BlockForward;
  if (op.kernel == Kernel::GptBlockBackward) return Kind::BlockBackward;
  return Kind::None;
}

TensorParallelSplit::Parts TensorParallelSplit::parts_of(const Op& op) const {
  switch (kind_of(op)) {
    case Kind::BlockForward: return {4, 2};   // attention, all-reduce, MLP, all-reduce
    case Kind::BlockBackward: return {5, 4};  // MLP, all-reduce, attention, all-reduce, ln_1
    case Kind::SequenceParallelForward: return {7, 1};   // alloc, block, (all-gather, reduce-scatter) × 2, free
    case Kind::SequenceParallelBackward: return {10, 1};  // alloc, block, (2 all-gathers, reduce-scatter) × 2, all-reduce, free
    case Kind::Loss: return {8, 6};           // alloc, maxima, all-reduce, sums, 2 all-reduces, finish, free
    case Kind::None: return {};
  }
  return {};
}

Bytes TensorParallelSplit::hidden_bytes() const {
  return micro_batch_ * shard_.seq * shard_.transformer->hidden * shard_.activation_element_bytes;
}

void TensorParallelSplit::append_parts(Op op, std::vector<TensorInfo>& tensors, std::vector<Op>& out) const {
  switch (kind_of(op)) {
    case Kind::BlockForward: return append_block_forward(std::move(op), out);
    case Kind::BlockBackward: return append_block_backward(std::move(op), out);
    case Kind::SequenceParallelForward: return append_sequence_parallel(std::move(op), true, tensors, out);
    case Kind::SequenceParallelBackward: return append_sequence_parallel(std::move(op), false, tensors, out);
    case Kind::Loss: return append_loss(std::move(op), tensors, out);
    case Kind::None: out.push_back(std::move(op)); return;
  }
}

namespace {

// The share of a block pass's FLOPs in its MLP (c_fc and mlp.c_proj: 2 GEMMs of 2·h·i/t FLOPs a token); the rest is
// the attention's (c_attn, attn.c_proj and the attention core).
double mlp_share(const Model& shard, const Op& op, int tp) {
  const double per_sample = shard.layers.at(static_cast<std::size_t>(op.layer)).forward_flops_per_sample;
  if (per_sample <= 0) return 0.5;
  const TransformerConfig& c = *shard.transformer;
  const double mlp = 4.0 * static_cast<double>(shard.seq) * static_cast<double>(c.hidden) *
                     static_cast<double>(c.intermediate) / tp;
  return std::clamp(mlp / per_sample, 0.0, 1.0);
}

}  // namespace

void TensorParallelSplit::append_block_forward(Op op, std::vector<Op>& out) const {
  const bool operands = !op.args.empty();
  const Bytes hidden = hidden_bytes();
  const GptBlockLayout layout =
      gpt_block_layout(*shard_.transformer, micro_batch_, shard_.seq, shard_.activation_element_bytes, tp_);
  const double mlp = mlp_share(shard_, op, tp_);
  const std::string name = shard_.layers.at(static_cast<std::size_t>(op.layer)).name;
  Op attention = part(op, Kernel::GptBlockAttentionForward, 1 - mlp, "attention");
  attention.deps = op.deps;
  Op attention_reduce = collective(op, CollectiveKind::AllReduce, hidden, "tp all-reduce " + name + " attention output");
  Op mlp_part = part(op, Kernel::GptBlockMlpForward, mlp, "mlp");
  mlp_part.deps.clear();
  Op mlp_reduce = collective(op, CollectiveKind::AllReduce, hidden, "tp all-reduce " + name + " mlp output");
  if (operands) {  // input, params×12, saved, attention, output
    const TensorSlice saved = op.args[13];
    attention_reduce.args = {TensorSlice{saved.tensor, saved.offset + layout.residual_1, hidden}};
    mlp_reduce.args = {op.args[15]};
  }
  out.push_back(std::move(attention));
  out.push_back(std::move(attention_reduce));
  out.push_back(std::move(mlp_part));
  out.push_back(std::move(mlp_reduce));
}

void TensorParallelSplit::append_block_backward(Op op, std::vector<Op>& out) const {
  const bool operands = !op.args.empty();
  const Bytes hidden = hidden_bytes();
  const GptBlockLayout layout =
      gpt_block_layout(*shard_.transformer, micro_batch_, shard_.seq, shard_.activation_element_bytes, tp_);
  const double mlp = mlp_share(shard_, op, tp_);
  const std::string name = shard_.layers.at(static_cast<std::size_t>(op.layer)).name;
  Op mlp_part = part(op, Kernel::GptBlockMlpBackward, mlp, "mlp");
  mlp_part.deps = op.deps;
  Op mlp_reduce = collective(op, CollectiveKind::AllReduce, hidden, "tp all-reduce " + name + " mlp grad input");
  Op attention = part(op, Kernel::GptBlockAttentionBackward, 1 - mlp, "attention");
  attention.deps.clear();
  Op attention_reduce = collective(op, CollectiveKind::AllReduce, hidden, "tp all-reduce " + name + " attention grad input");
  // ln_1's backward: no GEMM; it reads d(ln_1 output) and the input and adds into grad_input.
  Op norm = part(op, Kernel::GptBlockInputNormBackward, 0, "ln_1");
  norm.deps.clear();
  norm.bytes_accessed = 3 * hidden;
  if (operands) {  // grad_out, input, params×12, saved, attention, grad_input, grads×12
    const TensorSlice saved = op.args[14];
    mlp_reduce.args = {TensorSlice{saved.tensor, saved.offset + layout.ln_2_output, hidden}};
    attention_reduce.args = {TensorSlice{saved.tensor, saved.offset + layout.residual_1, hidden}};
  }
  out.push_back(std::move(mlp_part));
  out.push_back(std::move(mlp_reduce));
  out.push_back(std::move(attention));
  out.push_back(std::move(attention_reduce));
  out.push_back(std::move(norm));
}

void TensorParallelSplit::append_sequence_parallel(Op op, bool forward, std::vector<TensorInfo>& tensors,
                                                   std::vector<Op>& out) const {
  const Bytes hidden = hidden_bytes(), shard = hidden / tp_;
  const std::string name = shard_.layers.at(static_cast<std::size_t>(op.layer)).name;
  const auto transient = static_cast<TensorId>(tensors.size());
  const std::string what = forward ? name + " row-parallel output before its reduce-scatter (sequence parallel)"
                                   : name + " all-gathered gradient (sequence parallel)";
  tensors.push_back({what, hidden, Category::Temporaries, false, activation_, 0, false, {}});
  out.push_back(memory_op(op, OpKind::Alloc, transient, what));
  const Op block = op;
  out.push_back(std::move(op));
  for (const char* region : {"attention", "mlp"}) {
    const std::string where = name + " " + region;
    if (forward) {
      out.push_back(collective(block, CollectiveKind::AllGather, shard, "tp all-gather " + where + " input"));
      out.push_back(collective(block, CollectiveKind::ReduceScatter, hidden, "tp reduce-scatter " + where + " output"));
    } else {
      out.push_back(collective(block, CollectiveKind::AllGather, shard, "tp all-gather " + where + " grad output"));
      out.push_back(collective(block, CollectiveKind::AllGather, shard, "tp all-gather " + where + " input again"));
      out.push_back(collective(block, CollectiveKind::ReduceScatter, hidden, "tp reduce-scatter " + where + " grad input"));
    }
  }
  if (!forward) {  // the norms' (and GPT-2's row-parallel biases') gradients, partial sums over this rank's rows
    const TransformerConfig& c = *shard_.transformer;
    const std::int64_t whole = (c.family == TransformerFamily::Gpt2 ? 6 : 2) * c.hidden;
    out.push_back(collective(block, CollectiveKind::AllReduce, whole * grad_element_bytes_,
                             "tp all-reduce " + name + " norm and bias grads (sequence-parallel parameters)"));
  }
  out.push_back(memory_op(block, OpKind::Free, transient, what));
}

void TensorParallelSplit::append_loss(Op op, std::vector<TensorInfo>& tensors, std::vector<Op>& out) const {
  const bool operands = !op.args.empty();
  const std::int64_t rows = micro_batch_ * shard_.target_positions;
  const Bytes chunk = rows * 4;  // one fp32 a row
  const auto stats = static_cast<TensorId>(tensors.size());
  tensors.push_back({"vocab-parallel cross-entropy statistics", 3 * chunk, Category::Temporaries, false,
                     ElementType::Fp32, 0, false, {}});
  Op alloc = memory_op(op, OpKind::Alloc, stats, tensors.back().name.str());
  Op free = memory_op(op, OpKind::Free, stats, tensors.back().name.str());
  // exp dominates: the maxima and the finish read the logits once each, the sums once with an exp a logit.
  Op maxima = part(op, Kernel::VocabParallelLossMax, 0.2, "row maxima");
  maxima.deps = op.deps;
  Op max_reduce = collective(op, CollectiveKind::AllReduce, chunk, "tp all-reduce cross-entropy logits max");
  Op sums = part(op, Kernel::VocabParallelLossSums, 0.6, "target logit, sum of exp");
  sums.deps.clear();
  Op target_reduce = collective(op, CollectiveKind::AllReduce, chunk, "tp all-reduce cross-entropy target logit");
  Op sum_reduce = collective(op, CollectiveKind::AllReduce, chunk, "tp all-reduce cross-entropy sum of exp");
  Op finish = part(op, Kernel::VocabParallelLossFinish, 0.2, "log_probs, loss");
  finish.deps.clear();
  if (operands) {  // logits, target, log_probs, loss
    const TensorSlice logits = op.args[0], target = op.args[1];
    maxima.args = {logits, whole(stats)};
    max_reduce.args = {TensorSlice{stats, 0, chunk}};
    sums.args = {logits, target, whole(stats)};
    target_reduce.args = {TensorSlice{stats, chunk, chunk}};
    sum_reduce.args = {TensorSlice{stats, 2 * chunk, chunk}};
    finish.args = {logits, target, whole(stats), op.args[2], op.args[3]};
  }
  for (Op* o : {&alloc, &maxima, &max_reduce, &sums, &target_reduce, &sum_reduce, &finish, &free})
    out.push_back(std::move(*o));
}

void TensorParallelSplit::use_vocab_parallel_backward(Op& op, double& nll_scale) const {
  if (tp_ == 1 || !shard_.language_model || op.kind != OpKind::Compute) return;
  if (op.kernel == Kernel::NllLossBackward) {
    op.kernel = Kernel::VocabParallelNllLossBackward;
    nll_scale = op.scale;
  } else if (op.kernel == Kernel::LogSoftmaxBackward) {
    op.kernel = Kernel::VocabParallelLogSoftmaxBackward;
    op.scale = nll_scale;
  }
}

}  // namespace shardscope
