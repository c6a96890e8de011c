// A strategy's plan made tensor-parallel: programs replicated per tensor-parallel rank, groups remapped, and the
// tensor-parallel collectives put after the layers whose forward or backward needs them (tensor_parallel.h).
#include "strategy/tensor_parallel.h"

#include <stdexcept>
#include <string>

#include "model/tensor_parallel_shard.h"
#include "plan/block_recompute.h"
#include "scenario/parallel_layout.h"
#include "strategy/tensor_parallel_params.h"
#include "strategy/tensor_parallel_split.h"
#include "training/model_pass.h"

namespace shardscope {

namespace {

struct TpCollective {
  CollectiveKind kind;
  Bytes payload;  // what each member contributes: the whole buffer for all-reduce and reduce-scatter, the shard for all-gather
  std::string label;
  // What it reduces in place, where the base op names its operands (executed plans); several: one coalesced call.
  std::vector<TensorSlice> buffers = {};
};

// The operand an MLP Linear's collective works on, in place: LinearForward's output (operand 3) for the
// row-parallel all-reduce, LinearBackward's grad_input (operand 3) for the column-parallel one (plan/kernel.h). None
// where the op names no operands.
std::vector<TensorSlice> linear_operand(const Op& op, Kernel kernel) {
  if (op.kernel != kernel || op.args.size() <= 3 || !op.args[3].present()) return {};
  return {op.args[3]};
}

class Collectives {
 public:
  Collectives(const ResolvedScenario& scenario, const Model& shard)
      : shard_(shard), roles_(tensor_parallel_roles(shard)), tp_(scenario.settings.strategy.tp),
        sp_(scenario.settings.strategy.sequence_parallel), e_(shard.activation_element_bytes),
        grad_element_bytes_(element_bytes(element_type_of(scenario.settings.training.dtype))) {
    const auto& s = scenario.settings;
    micro_batch_ = s.training.batch / (is_pipeline(s.strategy.kind) ? s.strategy.micro_batches : 1);
  }

  std::int64_t micro_batch() const { return micro_batch_; }

  // Megatron-LM's all-gather buffer under sequence parallelism (core/utils.py GlobalMemoryBuffer, taken by
  // LinearWithGradAccumulationAndAsyncCommunication.forward and .backward in core/tensor_parallel/layers.py through
  // get_global_memory_buffer().get_tensor(dim_size, input.dtype, "mpu")): one tensor per (name, dtype), allocated by
  // torch.empty at the first column-parallel forward that all-gathers its [s/t, b, h] input into [s, b, h], kept for
  // the life of the process and reused as a view by every later all-gather of that size (each block's QKV and fc1
  // inputs, the LM head's, and the backward's re-gathers). Bytes of that buffer where `op` is the first to use it
  // (a block's or the LM head's forward), else 0.
  Bytes global_buffer_bytes(const Op& op) const {
    if (!sp_ || !shard_.transformer || op.kind != OpKind::Compute || op.compute_kind != ComputeKind::Forward ||
        op.layer < 0)
      return 0;
    const auto l = static_cast<std::size_t>(op.layer);
    if (roles_[l] != TensorParallelRole::Block && roles_[l] != TensorParallelRole::VocabHead) return 0;
    return bytes(shard_.layers[l].in_numel * tp_);  // b·s·h: the shard's input is the sequence's 1/tp
  }

  // The collectives that follow `op` on every tensor-parallel rank.
  std::vector<TpCollective> after(const Op& op) const {
    std::vector<TpCollective> out;
    if (op.kind != OpKind::Compute) return out;
    if (op.compute_kind == ComputeKind::Loss && shard_.language_model) {
      const Bytes values = micro_batch_ * shard_.target_positions * 4;  // one fp32 per position
      for (const char* what : {"logits max", "target logit", "sum of exp"})
        out.push_back({CollectiveKind::AllReduce, values, std::string("tp all-reduce cross-entropy ") + what});
      return out;
    }
    if (op.layer < 0) return out;
    const bool forward = op.compute_kind == ComputeKind::Forward;
    if (!forward && op.compute_kind != ComputeKind::Backward) return out;
    const std::string label = op.label.str();
    if (forward && label.ends_with(kAttentionRecomputeSuffix)) return out;  // inside a tensor-parallel region
    const auto l = static_cast<std::size_t>(op.layer);
    const Layer& layer = shard_.layers[l];
    const std::string name = layer.name;
    // An MLP's pairs under sequence parallelism: the pass put their all-gathers and reduce-scatters in place
    // (training/model_pass_sequence_parallel.cpp), each beside the buffers it reads and writes.
    if (shard_.sequence_parallel_ranks > 1) return out;
    switch (roles_[l]) {
      case TensorParallelRole::RowParallel:
        if (forward)
          out.push_back({CollectiveKind::AllReduce, bytes(layer.out_numel), "tp all-reduce " + name + " output",
                         linear_operand(op, Kernel::LinearForward)});
        break;
      case TensorParallelRole::ColumnParallel:
        if (!forward && layer.kind == LayerKind::Linear && l > 0)
          out.push_back({CollectiveKind::AllReduce, bytes(layer.in_numel), "tp all-reduce " + name + " grad input",
                         linear_operand(op, Kernel::LinearBackward)});
        break;
      case TensorParallelRole::Block: {  // without sp, where the block is not split (strategy/tensor_parallel_split.h)
        const Bytes hidden = bytes(layer.in_numel);  // b·s·h, whole
        for (const char* region : {"attention", "mlp"})
          out.push_back({CollectiveKind::AllReduce, hidden,
                         "tp all-reduce " + name + " " + region + (forward ? " output" : " grad input")});
        if (is_full_recompute(op)) out.pop_back();  // it stops before the MLP's output projection and its all-reduce
        break;
      }
      // Under sequence parallelism the embedding's and the head's collectives come from tensor_parallel_split.h
      // (some before the op). EmbeddingForward's output (operand 4) holds this rank's lookups, summed in place.
      case TensorParallelRole::VocabEmbedding:
        if (forward && !sp_)
          out.push_back({CollectiveKind::AllReduce, bytes(layer.out_numel), "tp all-reduce " + name + " output",
                         op.kernel == Kernel::EmbeddingForward && op.args.size() > 4 ? std::vector{op.args[4]}
                                                                                    : std::vector<TensorSlice>{}});
        break;
      case TensorParallelRole::VocabHead:
        if (!forward && !sp_)
          out.push_back({CollectiveKind::AllReduce, bytes(layer.in_numel), "tp all-reduce " + name + " grad input",
                         linear_operand(op, Kernel::LinearBackward)});
        break;
      case TensorParallelRole::Replicated:
        // The final norm under sequence parallelism: its gradients are partial sums over this rank's rows, all-reduced
        // over the group (Megatron's _allreduce_layernorm_grads, as the blocks' in tensor_parallel_split.h).
        if (!forward && sp_ && shard_.transformer) {
          std::int64_t numel = 0;
          for (const ParamSpec& param : layer.params) numel += param.numel;
          TpCollective reduce{CollectiveKind::AllReduce, numel * grad_element_bytes_,
                              "tp all-reduce " + name + " grads (sequence-parallel parameters)"};
          if (op.kernel == Kernel::LayerNormBackward && op.args.size() > 5)  // grad_weight, grad_bias
            reduce.buffers = {op.args[4], op.args[5]};
          out.push_back(std::move(reduce));
        }
        break;
    }
    return out;
  }

 private:
  Bytes bytes(std::int64_t numel_per_sample) const { return micro_batch_ * numel_per_sample * e_; }

  const Model& shard_;
  std::vector<TensorParallelRole> roles_;
  int tp_;
  bool sp_;
  std::int64_t e_;
  std::int64_t grad_element_bytes_;
  std::int64_t micro_batch_ = 1;
};

// A row-parallel Linear's forward with its bias operand: Megatron-LM's RowParallelLinear.forward adds the whole bias
// once, to the all-reduced output. Our plan has no op after the all-reduce to add it, so tensor-parallel rank 0 adds
// it before (its partial product plus b, the others their partial products): the all-reduce's sum is the same up to
// the order of fp32 additions. The backward's bias gradient (the sum of the whole grad_output) is every rank's.
bool adds_row_bias(const Op& op, const std::vector<TensorParallelRole>& roles) {
  return op.kernel == Kernel::LinearForward && op.layer >= 0 && static_cast<std::size_t>(op.layer) < roles.size() &&
         roles[static_cast<std::size_t>(op.layer)] == TensorParallelRole::RowParallel && op.args.size() > 2;
}

OpArgs without_bias(const OpArgs& args) {
  std::vector<TensorSlice> out(args.begin(), args.end());
  out[2] = TensorSlice{};
  return out;
}

// One base program with the tensor-parallel collectives in place, and the ops they fall inside split around them
// (strategy/tensor_parallel_split.h); groups, peers and roots still the base plan's, the new collectives on group -1
// (set per rank below). Takes the base program's ops and tensors (moved, not copied).
Program with_collectives(Program base, const Collectives& collectives, const TensorParallelSplit& split,
                         ElementType activation) {
  Program out;
  out.rank = base.rank;
  out.tensors = std::move(base.tensors);
  out.data = base.data;
  // The first op that all-gathers into Megatron's global buffer gets the buffer's allocation before it.
  std::size_t first_gather = base.ops.size();
  Bytes buffer_bytes = 0;
  for (std::size_t i = 0; i < base.ops.size() && buffer_bytes == 0; ++i)
    if ((buffer_bytes = collectives.global_buffer_bytes(base.ops[i])) > 0) first_gather = i;
  std::vector<std::vector<TpCollective>> inserted(base.ops.size());
  std::vector<OpIndex> new_index(base.ops.size());
  OpIndex next = 0;
  for (std::size_t i = 0; i < base.ops.size(); ++i) {
    if (i == first_gather) ++next;
    if (const TensorParallelSplit::Parts parts = split.parts_of(base.ops[i]); parts.count > 1) {
      new_index[i] = next + static_cast<OpIndex>(parts.stands_for);
      next += static_cast<OpIndex>(parts.count);
      continue;
    }
    new_index[i] = next++;
    inserted[i] = collectives.after(base.ops[i]);
    next += static_cast<OpIndex>(inserted[i].size());
  }
  out.ops.reserve(static_cast<std::size_t>(next));
  // The tensor-parallel group's collectives, numbered in program order: those inserted here and those the pass put
  // in (group -1 in the base plan: sequence parallelism on an MLP).
  std::int32_t sequence = 0;
  double nll_scale = 1;
  TensorId gathered = -1;  // Megatron's all-gather buffer, once allocated
  for (std::size_t i = 0; i < base.ops.size(); ++i) {
    for (OpIndex& dep : base.ops[i].deps) dep = new_index[static_cast<std::size_t>(dep)];
    if (base.ops[i].kind == OpKind::Collective && base.ops[i].group < 0) base.ops[i].sequence = sequence++;
    if (i == first_gather) {
      const auto id = static_cast<TensorId>(out.tensors.size());
      gathered = id;
      // Persistent: the process holds it to the end (nothing frees the module-level buffer).
      out.tensors.push_back({"tp all-gather buffer (Megatron global memory buffer \"mpu\")", buffer_bytes,
                             Category::CommunicationBuffers, true, activation, 0, false, {}});
      out.ops.push_back(memory_op(base.ops[i], OpKind::Alloc, id, out.tensors.back().name.str()));
    }
    split.use_vocab_parallel_backward(base.ops[i], nll_scale);
    if (const std::size_t parts = split.parts_of(base.ops[i]).count; parts > 1) {
      const std::size_t from = out.ops.size();
      split.append_parts(std::move(base.ops[i]), gathered, out.tensors, out.ops);
      if (out.ops.size() - from != parts)  // new_index above counted `parts` ops for it
        throw std::logic_error("tensor-parallel split: op " + std::to_string(i) + " became " +
                               std::to_string(out.ops.size() - from) + " ops, not the " + std::to_string(parts) + " counted");
      for (std::size_t k = from; k < out.ops.size(); ++k)
        if (out.ops[k].kind == OpKind::Collective) out.ops[k].sequence = sequence++;
      continue;
    }
    const std::size_t at = out.ops.size();  // the op's collectives take its step, layer and micro-batch
    out.ops.push_back(std::move(base.ops[i]));
    for (auto& collective : inserted[i]) {
      Op c = tensor_parallel_collective(out.ops[at], collective.kind, collective.payload, std::move(collective.label));
      c.sequence = sequence++;
      c.args = collective.buffers;
      out.ops.push_back(std::move(c));
    }
  }
  return out;
}

}  // namespace

Plan expand_tensor_parallel(Plan base, const ResolvedScenario& scenario, const Model& shard) {
  const int tp = scenario.settings.strategy.tp;
  const Collectives collectives(scenario, shard);
  const auto roles = tensor_parallel_roles(shard);
  const bool places_inits = tensor_parallel_inits_placed(scenario.model);
  const ElementType parameter = element_type_of(scenario.settings.training.dtype);
  const ElementType activation = activation_element(shard, parameter);
  const TensorParallelSplit split(shard, tp, scenario.settings.strategy.sequence_parallel, collectives.micro_batch(),
                                  activation, element_bytes(parameter));
  Plan plan;
  plan.strategy = base.strategy;
  plan.behaviour = base.behaviour;
  plan.notes = base.notes;
  const int base_groups = static_cast<int>(base.groups.size());
  // Group g·tp + k: base group g among the ranks of tensor-parallel index k. Then one group per tensor-parallel set.
  for (const auto& group : base.groups)
    for (int k = 0; k < tp; ++k) {
      std::vector<int> ranks;
      ranks.reserve(group.size());
      for (int rank : group) ranks.push_back(rank * tp + k);
      plan.groups.push_back(std::move(ranks));
    }
  for (const auto& program : base.programs) {
    std::vector<int> ranks;
    for (int k = 0; k < tp; ++k) ranks.push_back(program.rank * tp + k);
    plan.groups.push_back(std::move(ranks));
  }
  plan.programs.reserve(base.programs.size() * static_cast<std::size_t>(tp));
  for (auto& base_program : base.programs) {
    const int base_rank = base_program.rank;
    const DataShard data = base_program.data;
    // The base program's memory is given back as it is used, for the copies to reuse.
    Program shaped = with_collectives(std::move(base_program), collectives, split, activation);
    const int tp_group = base_groups * tp + base_rank;
    for (int k = 0; k < tp; ++k) {
      Program program;
      if (k + 1 < tp) program = shaped;
      else program = std::move(shaped);  // the last rank of the group takes it
      program.rank = base_rank * tp + k;
      // An MLP under sequence parallelism: the base rank loads samples i + c·j of the step (DataShard {i, c}), j <
      // b; its tensor-parallel rank k loads those with j ≡ k (mod tp), samples (i + c·k) + (c·tp)·j', j' < b/tp,
      // so the group's ranks load the base rank's samples once each, and a pipeline's micro-batch m still covers
      // the base rank's micro-batch m (its rows j' from m·b/(tp·M) are the j from m·b/M). Each rank loads only its
      // rows: its share of x is what a column-parallel Linear all-gathers anyway, and y is read only for its rows'
      // loss (Megatron loads whole sequences on every tensor-parallel rank and scatters the embedding's output; an
      // MLP has no embedding, and loading the whole batch would hold t times the input for the same all-gather).
      if (shard.sequence_parallel_ranks > 1) program.data = {data.index + data.count * k, data.count * tp};
      for (Op& op : program.ops) {
        if (op.kind == OpKind::Collective) op.group = op.group < 0 ? tp_group : op.group * tp + k;
        if (op.root >= 0) op.root = op.root * tp + k;
        if (op.peer >= 0) op.peer = op.peer * tp + k;
        if (k > 0 && adds_row_bias(op, roles)) op.args = without_bias(op.args);
      }
      if (places_inits)
        for (TensorInfo& tensor : program.tensors)
          if (!tensor.initial_values.empty())
            tensor.initial_values =
                tensor_parallel_inits(tensor.initial_values, element_bytes(tensor.element), scenario.model, tp, k);
      plan.programs.push_back(std::move(program));
    }
  }
  plan.notes.push_back("tensor parallelism: " + std::to_string(tp) + " ranks per tensor-parallel group (tp fastest), " +
                       (scenario.settings.strategy.sequence_parallel ? "with" : "without") +
                       " sequence parallelism; parameters, gradients and optimizer state of the split layers 1/" +
                       std::to_string(tp) + " per rank, activations per Korthikanti et al. 2022" +
                       (!scenario.settings.strategy.sequence_parallel ? std::string()
                        : shard.sequence_parallel_ranks > 1
                            ? "; an MLP's rows split over the group outside its Linear pairs, the all-gathered and "
                              "reduce-scattered buffers counted as temporaries"
                            : "; Megatron-LM's all-gather buffer (b·s·h of the activation dtype, allocated at the "
                              "first block's forward and kept: GlobalMemoryBuffer) counted as a communication buffer; "
                              "each block's row-parallel partial output (forward) and all-gathered output gradient "
                              "(backward), the embedding's whole output and all-gathered gradient and the LM head's "
                              "whole input gradient, b·s·h each, as temporaries around their collectives; the norms' and "
                              "row-parallel biases' gradients, partial over a rank's rows, all-reduced over the group "
                              "(Megatron's _allreduce_layernorm_grads)"));
  return plan;
}

}  // namespace shardscope
