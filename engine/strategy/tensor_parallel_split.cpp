// TensorParallelSplit: the parts of a GPT block's forward and backward and of the vocabulary-parallel
// cross-entropy, with the collectives between them on the buffers the kernels leave their partial sums in
// (model/gpt_block_layout.h places them in the block's saved buffer).
#include "strategy/tensor_parallel_split.h"

#include <algorithm>
#include <string>

#include "model/gpt_block_layout.h"
#include "plan/block_recompute.h"
#include "plan/kernel.h"

namespace shardscope {

Op tensor_parallel_collective(const Op& at, CollectiveKind kind, Bytes payload, std::string label) {
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

namespace {

// `args` with operand `index` replaced.
OpArgs replaced(const OpArgs& args, std::size_t index, TensorSlice slice) {
  std::vector<TensorSlice> out(args.begin(), args.end());
  out.at(index) = slice;
  return out;
}

// A collective that runs before `op`: it waits for what `op` waited for, and `op` then follows it on the stream.
Op collective_before(Op& op, CollectiveKind kind, Bytes payload, std::string label) {
  Op c = tensor_parallel_collective(op, kind, payload, std::move(label));
  c.deps = op.deps;
  op.deps.clear();
  return c;
}

// A part of `op`: the same op with another kernel and share of the work. The first part waits for what `op` waited
// for; a later one runs after the part before it on the same stream (no deps of its own).
Op part(const Op& op, Kernel kernel, double share, const std::string& what, bool first = false) {
  Op p = op;
  p.kernel = kernel;
  p.flops = op.flops * share;
  p.bytes_accessed = static_cast<Bytes>(static_cast<double>(op.bytes_accessed) * share);
  p.label = op.label.str() + " (" + what + ")";
  if (!first) p.deps.clear();
  return p;
}

}  // namespace

TensorParallelSplit::TensorParallelSplit(const Model& shard, int tp, bool sequence_parallel, std::int64_t micro_batch,
                                         ElementType activation, std::int64_t grad_element_bytes)
    : shard_(shard), roles_(tensor_parallel_roles(shard)), tp_(tp), sp_(sequence_parallel), micro_batch_(micro_batch),
      activation_(activation), grad_element_bytes_(grad_element_bytes) {}

TensorParallelSplit::Kind TensorParallelSplit::kind_of(const Op& op) const {
  if (tp_ == 1 || op.kind != OpKind::Compute || !shard_.transformer) return Kind::None;
  if (op.compute_kind == ComputeKind::Loss && shard_.language_model && op.kernel == Kernel::CrossEntropyLoss)
    return Kind::Loss;
  if (sp_) {  // any transformer family: a block's forward (a recomputed one too) or backward, the embedding, the head
    if (op.layer < 0 || static_cast<std::size_t>(op.layer) >= roles_.size()) return Kind::None;
    const bool forward = op.compute_kind == ComputeKind::Forward, backward = op.compute_kind == ComputeKind::Backward;
    switch (roles_[static_cast<std::size_t>(op.layer)]) {
      case TensorParallelRole::Block:
        if (op.label.str().ends_with(kAttentionRecomputeSuffix)) return Kind::None;
        return forward ? Kind::SequenceParallelForward : backward ? Kind::SequenceParallelBackward : Kind::None;
      case TensorParallelRole::VocabEmbedding:
        return forward ? Kind::SequenceParallelEmbeddingForward : backward ? Kind::SequenceParallelEmbeddingBackward : Kind::None;
      case TensorParallelRole::VocabHead:
        return forward ? Kind::SequenceParallelHeadForward : backward ? Kind::SequenceParallelHeadBackward : Kind::None;
      default: return Kind::None;
    }
  }
  if (shard_.transformer->family != TransformerFamily::Gpt2) return Kind::None;
  // Blocks split only in plans an executor runs (ops with operands): a simulated or accounted plan keeps each block one
  // op with its all-reduces after it, the same time and memory in a fifth fewer ops (the 1,024-rank 3-D plan: 314
  // against 375 MiB). A full recomputation's forward (GptBlockForward without its output) splits too, and stops where
  // the recomputation stops (after GELU: no mlp.c_proj, so no second all-reduce).
  if (op.args.empty()) return Kind::None;
  if (op.kernel == Kernel::GptBlockForward) return Kind::BlockForward;
  if (op.kernel == Kernel::GptBlockBackward) return Kind::BlockBackward;
  return Kind::None;
}

bool TensorParallelSplit::runs_in_parts(const Op& op) const {
  return !op.args.empty() && shard_.transformer->family == TransformerFamily::Gpt2 &&
         (op.kernel == Kernel::GptBlockBackward || op.kernel == Kernel::GptBlockForward);
}

TensorParallelSplit::Parts TensorParallelSplit::parts_of(const Op& op) const {
  switch (kind_of(op)) {
    case Kind::BlockForward: return is_full_recompute(op) ? Parts{3, 2} : Parts{4, 2};  // attention, all-reduce, MLP, all-reduce
    case Kind::BlockBackward: return {5, 4};  // MLP, all-reduce, attention, all-reduce, ln_1
    // alloc, block, (all-gather, reduce-scatter) × 2, free; in parts: alloc, ln_1, all-gather, attention,
    // reduce-scatter, residual and ln_2, all-gather, MLP, reduce-scatter, residual, free
    // (a recomputation stops after GELU: no last reduce-scatter, and in parts no last residual)
    case Kind::SequenceParallelForward: {
      const std::size_t stops_early = is_full_recompute(op) ? 1 : 0;
      return !runs_in_parts(op) ? Parts{7 - stops_early, 1} : Parts{11 - 2 * stops_early, 9 - 2 * stops_early};
    }
    // alloc, block, (2 all-gathers, reduce-scatter) × 2, all-reduce, free; in parts: alloc, MLP dropout, 2 all-gathers,
    // MLP, reduce-scatter, ln_2 and attention dropout, 2 all-gathers, attention, reduce-scatter, ln_1, all-reduce, free
    case Kind::SequenceParallelBackward: return runs_in_parts(op) ? Parts{14, 11} : Parts{10, 1};
    case Kind::SequenceParallelEmbeddingForward: return {4, 1};   // alloc, embedding, reduce-scatter, free
    case Kind::SequenceParallelEmbeddingBackward: return {4, 2};  // alloc, all-gather, embedding, free
    case Kind::SequenceParallelHeadForward: return {2, 1};        // all-gather, head
    case Kind::SequenceParallelHeadBackward: return {5, 2};       // alloc, all-gather, head, reduce-scatter, free
    case Kind::Loss: return {8, 6};           // alloc, maxima, all-reduce, sums, 2 all-reduces, finish, free
    case Kind::None: return {};
  }
  return {};
}

Bytes TensorParallelSplit::hidden_bytes() const {
  return micro_batch_ * shard_.seq * shard_.transformer->hidden * shard_.activation_element_bytes;
}

void TensorParallelSplit::append_parts(Op op, TensorId gathered, std::vector<TensorInfo>& tensors,
                                       std::vector<Op>& out) const {
  const Kind kind = kind_of(op);
  switch (kind) {
    case Kind::BlockForward: return append_block_forward(std::move(op), out);
    case Kind::BlockBackward: return append_block_backward(std::move(op), out);
    case Kind::SequenceParallelForward: return append_sequence_parallel(std::move(op), true, gathered, tensors, out);
    case Kind::SequenceParallelBackward: return append_sequence_parallel(std::move(op), false, gathered, tensors, out);
    case Kind::SequenceParallelEmbeddingForward:
    case Kind::SequenceParallelEmbeddingBackward:
    case Kind::SequenceParallelHeadForward:
    case Kind::SequenceParallelHeadBackward: return append_sequence_parallel_io(std::move(op), kind, gathered, tensors, out);
    case Kind::Loss: return append_loss(std::move(op), tensors, out);
    case Kind::None: out.push_back(std::move(op)); return;
  }
}

namespace {

// The share of a block pass's FLOPs in its MLP (c_fc and mlp.c_proj: 2 GEMMs of 2·h·i/t FLOPs a token; a full
// recomputation's only c_fc, as it stops after GELU); the rest is the attention's (c_attn, attn.c_proj and the core).
double mlp_share(const Model& shard, const Op& op, int tp) {
  const Layer& layer = shard.layers.at(static_cast<std::size_t>(op.layer));
  const bool recompute = is_full_recompute(op);
  const double per_sample = layer.forward_pass_flops_per_sample(recompute);
  if (per_sample <= 0) return 0.5;
  const TransformerConfig& c = *shard.transformer;
  const double gemm = 2.0 * static_cast<double>(shard.seq) * static_cast<double>(c.hidden) *
                      static_cast<double>(c.intermediate) / tp;
  return std::clamp((recompute ? 1 : 2) * gemm / per_sample, 0.0, 1.0);
}

}  // namespace

TensorParallelSplit::BlockPass TensorParallelSplit::block_pass(const Op& op, bool sequence_parallel) const {
  return {shard_.layers.at(static_cast<std::size_t>(op.layer)).name,
          gpt_block_layout(*shard_.transformer, micro_batch_, shard_.seq, shard_.activation_element_bytes, tp_,
                           sequence_parallel),
          mlp_share(shard_, op, tp_)};
}

// Only ops with operands split here (kind_of): input, params×12, saved, attention, output-.
void TensorParallelSplit::append_block_forward(Op op, std::vector<Op>& out) const {
  const Bytes hidden = hidden_bytes();
  const BlockPass pass = block_pass(op, false);
  const TensorSlice saved = op.args[13];
  out.push_back(part(op, Kernel::GptBlockAttentionForward, 1 - pass.mlp, "attention", true));
  Op attention_reduce =
      tensor_parallel_collective(op, CollectiveKind::AllReduce, hidden, "tp all-reduce " + pass.name + " attention output");
  attention_reduce.args = {TensorSlice{saved.tensor, saved.offset + pass.layout.residual_1, hidden}};
  out.push_back(std::move(attention_reduce));
  out.push_back(part(op, Kernel::GptBlockMlpForward, pass.mlp, "mlp"));
  if (is_full_recompute(op)) return;  // a recomputation stops after GELU: no mlp.c_proj, no second all-reduce
  Op mlp_reduce = tensor_parallel_collective(op, CollectiveKind::AllReduce, hidden, "tp all-reduce " + pass.name + " mlp output");
  mlp_reduce.args = {op.args[15]};
  out.push_back(std::move(mlp_reduce));
}

// grad_out, input, params×12, saved, attention, grad_input, grads×12.
void TensorParallelSplit::append_block_backward(Op op, std::vector<Op>& out) const {
  const Bytes hidden = hidden_bytes();
  const BlockPass pass = block_pass(op, false);
  const TensorSlice saved = op.args[14];
  out.push_back(part(op, Kernel::GptBlockMlpBackward, pass.mlp, "mlp", true));
  Op mlp_reduce = tensor_parallel_collective(op, CollectiveKind::AllReduce, hidden, "tp all-reduce " + pass.name + " mlp grad input");
  mlp_reduce.args = {TensorSlice{saved.tensor, saved.offset + pass.layout.ln_2_output, hidden}};
  out.push_back(std::move(mlp_reduce));
  out.push_back(part(op, Kernel::GptBlockAttentionBackward, 1 - pass.mlp, "attention"));
  Op attention_reduce =
      tensor_parallel_collective(op, CollectiveKind::AllReduce, hidden, "tp all-reduce " + pass.name + " attention grad input");
  attention_reduce.args = {TensorSlice{saved.tensor, saved.offset + pass.layout.residual_1, hidden}};
  out.push_back(std::move(attention_reduce));
  // ln_1's backward: no GEMM; it reads d(ln_1 output) and the input and adds into grad_input.
  Op norm = part(op, Kernel::GptBlockInputNormBackward, 0, "ln_1");
  norm.bytes_accessed = 3 * hidden;
  out.push_back(std::move(norm));
}

TensorId TensorParallelSplit::add_transient(const Op& at, const std::string& what, std::vector<TensorInfo>& tensors,
                                            std::vector<Op>& out) const {
  const auto id = static_cast<TensorId>(tensors.size());
  tensors.push_back({what, hidden_bytes(), Category::Temporaries, false, activation_, 0, false, {}});
  out.push_back(memory_op(at, OpKind::Alloc, id, what));
  return id;
}

void TensorParallelSplit::append_sequence_parallel(Op op, bool forward, TensorId gathered, std::vector<TensorInfo>& tensors,
                                                   std::vector<Op>& out) const {
  const Bytes hidden = hidden_bytes(), shard = hidden / tp_;
  const BlockPass pass = block_pass(op, true);
  const std::string& name = pass.name;
  const std::string what = forward ? name + " row-parallel output before its reduce-scatter (sequence parallel)"
                                   : name + " all-gathered gradient (sequence parallel)";
  const TensorId transient = add_transient(op, what, tensors, out);
  const Op block = op;
  const auto gather = [&](const std::string& label) {
    return tensor_parallel_collective(block, CollectiveKind::AllGather, shard, "tp all-gather " + name + " " + label);
  };
  const auto scatter = [&](const std::string& label) {
    return tensor_parallel_collective(block, CollectiveKind::ReduceScatter, hidden, "tp reduce-scatter " + name + " " + label);
  };
  // The norms' (and GPT-2's row-parallel biases') gradients, partial sums over this rank's tokens.
  const TransformerConfig& c = *shard_.transformer;
  Op grads_reduce = tensor_parallel_collective(block, CollectiveKind::AllReduce,
                               (c.family == TransformerFamily::Gpt2 ? 6 : 2) * c.hidden * grad_element_bytes_,
                               "tp all-reduce " + name + " norm and bias grads (sequence-parallel parameters)");
  if (!runs_in_parts(op)) {
    out.push_back(std::move(op));
    if (forward) {
      out.push_back(gather("attention input"));
      out.push_back(scatter("attention output"));
      out.push_back(gather("mlp input"));
      if (!is_full_recompute(block)) out.push_back(scatter("mlp output"));  // a recomputation stops after GELU
    } else {
      for (const char* region : {"mlp", "attention"}) {
        out.push_back(gather(std::string(region) + " grad output"));
        out.push_back(gather(std::string(region) + " input again"));
        out.push_back(scatter(std::string(region) + " grad input"));
      }
      out.push_back(std::move(grads_reduce));
    }
    out.push_back(memory_op(block, OpKind::Free, transient, what));
    return;
  }
  // The executed form: parts with the collectives between them, each part on the whole op's operands and two more.
  const GptBlockLayout& layout = pass.layout;
  const double mlp = pass.mlp;
  const TensorSlice saved = op.args[forward ? 13 : 14];
  const auto slot = [&](Bytes offset) { return TensorSlice{saved.tensor, saved.offset + offset, shard}; };
  const TensorSlice all = whole(gathered), partial = whole(transient);
  std::vector<TensorSlice> with_buffers(op.args.begin(), op.args.end());
  with_buffers.push_back(all);
  with_buffers.push_back(partial);
  // A part: the op's kernel, its share of the work, and (norms, residuals) the bytes it moves over this rank's tokens.
  const auto piece = [&](Kernel kernel, double share, const std::string& label, bool first = false) {
    Op p = part(block, kernel, share, label, first);
    if (share == 0) p.bytes_accessed = 3 * shard;
    p.args = with_buffers;
    return p;
  };
  // A collective of the executed form, on its [input, output] buffers.
  const auto push = [&out](Op collective_op, TensorSlice from, TensorSlice to) {
    collective_op.args = {from, to};
    out.push_back(std::move(collective_op));
  };
  if (forward) {  // input, params×12, saved, attention, output
    Op norm = piece(Kernel::LayerNormForward, 0, "ln_1", true);
    norm.args = {op.args[0], op.args[1], op.args[2], slot(layout.ln_1_output)};
    out.push_back(std::move(norm));
    push(gather("attention input"), slot(layout.ln_1_output), all);
    out.push_back(piece(Kernel::GptBlockAttentionForward, 1 - mlp, "attention"));
    push(scatter("attention output"), partial, slot(layout.residual_1));
    out.push_back(piece(Kernel::GptBlockResidualNorm, 0, "residual, ln_2"));
    push(gather("mlp input"), slot(layout.ln_2_output), all);
    out.push_back(piece(Kernel::GptBlockMlpForward, mlp, "mlp"));
    if (!is_full_recompute(block)) {  // a recomputation stops after GELU
      push(scatter("mlp output"), partial, op.args[15]);
      out.push_back(piece(Kernel::GptBlockResidual, 0, "residual"));
    }
  } else {  // grad_out, input, params×12, saved, attention, grad_input, grads×12
    out.push_back(piece(Kernel::GptBlockMlpDropoutBackward, 0, "mlp dropout", true));
    push(gather("mlp grad output"), op.args[16], partial);
    push(gather("mlp input again"), slot(layout.ln_2_output), all);
    out.push_back(piece(Kernel::GptBlockMlpBackward, mlp, "mlp"));
    push(scatter("mlp grad input"), partial, slot(layout.ln_2_output));
    out.push_back(piece(Kernel::GptBlockAttentionDropoutBackward, 0, "ln_2, attention dropout"));
    push(gather("attention grad output"), slot(layout.residual_1), partial);
    push(gather("attention input again"), slot(layout.ln_1_output), all);
    out.push_back(piece(Kernel::GptBlockAttentionBackward, 1 - mlp, "attention"));
    push(scatter("attention grad input"), partial, slot(layout.residual_1));
    out.push_back(piece(Kernel::GptBlockInputNormBackward, 0, "ln_1"));
    // ln_1.weight, ln_1.bias, attn.c_proj.bias, ln_2.weight, ln_2.bias, mlp.c_proj.bias (state_dict order, from 17)
    std::vector<TensorSlice> grads;
    for (const std::size_t k : {17u, 18u, 22u, 23u, 24u, 28u}) grads.push_back(op.args[k]);
    grads_reduce.args = grads;
    out.push_back(std::move(grads_reduce));
  }
  out.push_back(memory_op(block, OpKind::Free, transient, what));
}

void TensorParallelSplit::append_sequence_parallel_io(Op op, Kind kind, TensorId gathered, std::vector<TensorInfo>& tensors,
                                                      std::vector<Op>& out) const {
  const Bytes hidden = hidden_bytes(), shard = hidden / tp_;
  const std::string name = shard_.layers.at(static_cast<std::size_t>(op.layer)).name;
  const bool operands = !op.args.empty();
  switch (kind) {
    case Kind::SequenceParallelEmbeddingForward: {  // ids, wte, wpe, mask-, output
      const std::string what = name + " output before its reduce-scatter (sequence parallel)";
      const TensorId whole_output = add_transient(op, what, tensors, out);
      Op scatter =
          tensor_parallel_collective(op, CollectiveKind::ReduceScatter, hidden, "tp reduce-scatter " + name + " output");
      if (operands) {
        scatter.args = {whole(whole_output), op.args[4]};
        op.args = replaced(op.args, 4, whole(whole_output));
      }
      const Op at = op;
      out.push_back(std::move(op));
      out.push_back(std::move(scatter));
      out.push_back(memory_op(at, OpKind::Free, whole_output, what));
      return;
    }
    case Kind::SequenceParallelEmbeddingBackward: {  // grad_out, ids, mask-, grad_wte, grad_wpe, tied_grad-
      const std::string what = name + " all-gathered grad output (sequence parallel)";
      const TensorId whole_grad = add_transient(op, what, tensors, out);
      Op gather = collective_before(op, CollectiveKind::AllGather, shard, "tp all-gather " + name + " grad output");
      if (operands) {
        gather.args = {op.args[0], whole(whole_grad)};
        op.args = replaced(op.args, 0, whole(whole_grad));
      }
      const Op at = op;
      out.push_back(std::move(gather));
      out.push_back(std::move(op));
      out.push_back(memory_op(at, OpKind::Free, whole_grad, what));
      return;
    }
    case Kind::SequenceParallelHeadForward: {  // input, weight, bias-, output: the GEMM on every token
      Op gather = collective_before(op, CollectiveKind::AllGather, shard, "tp all-gather " + name + " input");
      if (operands && op.kernel == Kernel::LinearForward) {
        gather.args = {op.args[0], whole(gathered)};
        op.args = replaced(op.args, 0, whole(gathered));
      }
      out.push_back(std::move(gather));
      out.push_back(std::move(op));
      return;
    }
    case Kind::SequenceParallelHeadBackward: {  // grad_out, input, weight, grad_input-, grad_weight, grad_bias-
      const std::string what = name + " input gradient before its reduce-scatter (sequence parallel)";
      const TensorId whole_grad = add_transient(op, what, tensors, out);
      Op gather = collective_before(op, CollectiveKind::AllGather, shard, "tp all-gather " + name + " input again");
      Op scatter = tensor_parallel_collective(op, CollectiveKind::ReduceScatter, hidden,
                                              "tp reduce-scatter " + name + " grad input");
      if (operands && op.kernel == Kernel::LinearBackward && op.args.size() > 3 && op.args[3].present()) {
        gather.args = {op.args[1], whole(gathered)};
        scatter.args = {whole(whole_grad), op.args[3]};
        op.args = replaced(replaced(op.args, 1, whole(gathered)), 3, whole(whole_grad));
      }
      const Op at = op;
      out.push_back(std::move(gather));
      out.push_back(std::move(op));
      out.push_back(std::move(scatter));
      out.push_back(memory_op(at, OpKind::Free, whole_grad, what));
      return;
    }
    default: out.push_back(std::move(op)); return;
  }
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
  Op maxima = part(op, Kernel::VocabParallelLossMax, 0.2, "row maxima", true);
  Op max_reduce = tensor_parallel_collective(op, CollectiveKind::AllReduce, chunk, "tp all-reduce cross-entropy logits max");
  Op sums = part(op, Kernel::VocabParallelLossSums, 0.6, "target logit, sum of exp");
  Op target_reduce = tensor_parallel_collective(op, CollectiveKind::AllReduce, chunk, "tp all-reduce cross-entropy target logit");
  Op sum_reduce = tensor_parallel_collective(op, CollectiveKind::AllReduce, chunk, "tp all-reduce cross-entropy sum of exp");
  Op finish = part(op, Kernel::VocabParallelLossFinish, 0.2, "log_probs, loss");
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
