// Optimizer steps, following torch/optim/adam.py, adamw.py and sgd.py:
// - Adam/AdamW state: exp_avg and exp_avg_sq (zeros_like) per parameter, created in _init_group at the first
//   step; `step` is a CPU tensor (1.12+, capturable=False) or a Python int (1.8): no GPU bytes, 4 B each on the CPU
//   device (FrameworkBehaviour::optimizer_step_tensor_bytes).
// - 2.x _multi_tensor_adam: the only allocation is exp_avg_sq_sqrt = _foreach_sqrt(exp_avg_sqs), one tensor per
//   parameter, all alive together; with Adam weight_decay != 0, _foreach_add(grads, params) makes a list that is
//   deleted (del device_grads) before the sqrt. AdamW decays the parameters in place (_foreach_mul_).
// - 1.8 torch/optim/_functional.py adam: per parameter, denom = (exp_avg_sq.sqrt() / sqrt(bc2)).add_(eps):
//   the sqrt dies after the division; denom lives until the name is rebound for the next parameter.
//   Weight decay: grad = grad.add(param, alpha=wd), rebound at the next iteration.
// - SGD momentum: buf = clone(grad) at the first step (both versions); in-place afterwards.
#include "training/optimizer_step.h"

#include "training/model_pass.h"

namespace shardscope {

int optimizer_state_multiplier(OptimizerKind kind) {
  switch (kind) {
    case OptimizerKind::Sgd: return 0;
    case OptimizerKind::Momentum: return 1;
    case OptimizerKind::Adam:
    case OptimizerKind::AdamW: return 2;
  }
  return 0;
}

namespace {

// The optimizer works in fp32 whatever the model dtype: on the parameter itself (fp32 training) or on its fp32
// master copy (mixed precision), so state and step temporaries are 4 bytes per element.
Bytes fp32_bytes(const ParamSlot* p) { return p->numel * kFp32Bytes; }

Bytes total_bytes(const std::vector<ParamSlot*>& params) {
  Bytes sum = 0;
  for (const auto* p : params) sum += fp32_bytes(p);
  return sum;
}

void create_state(ProgramBuilder& b, const std::vector<ParamSlot*>& params, OptimizerKind kind, Bytes step_tensor_bytes) {
  for (auto* p : params) {
    if (!p->state.empty()) continue;
    if (kind == OptimizerKind::Momentum) {
      p->state.push_back(b.alloc("momentum_buffer " + p->name, fp32_bytes(p), Category::OptimizerState, true, ElementType::Fp32));
    } else if (kind == OptimizerKind::Adam || kind == OptimizerKind::AdamW) {
      // state['step'] first (adam.py creates it before exp_avg); not an operand of the step kernel.
      if (step_tensor_bytes > 0) b.alloc("step " + p->name, step_tensor_bytes, Category::OptimizerState, true, ElementType::Fp32);
      p->state.push_back(b.alloc("exp_avg " + p->name, fp32_bytes(p), Category::OptimizerState, true, ElementType::Fp32));
      p->state.push_back(b.alloc("exp_avg_sq " + p->name, fp32_bytes(p), Category::OptimizerState, true, ElementType::Fp32));
    }
  }
}

// A list of per-parameter temporaries alive together (a foreach result).
std::vector<TensorId> foreach_temporaries(ProgramBuilder& b, const std::vector<ParamSlot*>& params, const std::string& what) {
  std::vector<TensorId> list;
  for (const auto* p : params) list.push_back(b.alloc(what + " " + p->name, fp32_bytes(p), Category::Temporaries, false, ElementType::Fp32));
  return list;
}

void release_all(ProgramBuilder& b, const std::vector<TensorId>& list) {
  for (TensorId t : list) b.release(t);
}

// OptimizerStep operands (plan/kernel.h): per parameter the tensor it updates (the fp32 master under mixed
// precision), the gradient it reads, then its state tensors. A parameter stepped in pieces (ParamSlot::
// optimizer_pieces) gives one such group per piece: the update is elementwise, so the pieces step as the whole would.
void annotate_step(ProgramBuilder& b, OpIndex op, const std::vector<ParamSlot*>& params, const std::vector<TensorId>& fp32_grads) {
  std::vector<TensorSlice> args;
  for (std::size_t i = 0; i < params.size(); ++i) {
    const ParamSlot& p = *params[i];
    const TensorSlice updated = p.master >= 0 ? whole(p.master) : param_slice(p);
    if (p.optimizer_pieces.empty()) {
      args.push_back(updated);
      args.push_back(i < fp32_grads.size() ? whole(fp32_grads[i]) : grad_slice(p));
      for (TensorId state : p.state) args.push_back(whole(state));
      continue;
    }
    for (const OptimizerPiece& piece : p.optimizer_pieces) {
      args.push_back(TensorSlice{updated.tensor, updated.offset + piece.offset, piece.bytes});
      args.push_back(i < fp32_grads.size() ? TensorSlice{fp32_grads[i], piece.offset, piece.bytes} : piece.grad);
      for (TensorId state : p.state) args.push_back(TensorSlice{state, piece.offset, piece.bytes});
    }
  }
  b.set_kernel(op, Kernel::OptimizerStep, std::move(args));
}

void foreach_step(ProgramBuilder& b, const OptimizerConfig& config, const std::vector<ParamSlot*>& params,
                  const std::vector<TensorId>& fp32_grads) {
  const bool decayed_grads = config.weight_decay != 0 && config.kind != OptimizerKind::AdamW;
  std::vector<TensorId> decayed;
  if (decayed_grads) decayed = foreach_temporaries(b, params, "grad + wd·param");
  create_state(b, params, config.kind, config.step_tensor_bytes);
  if (config.kind == OptimizerKind::Adam || config.kind == OptimizerKind::AdamW) {
    release_all(b, decayed);  // del device_grads, before the sqrt
    decayed.clear();
    const auto sqrt = foreach_temporaries(b, params, "exp_avg_sq.sqrt()");
    annotate_step(b,
                  b.compute(ComputeKind::Optimizer, "optimizer step (foreach)", 12.0 * static_cast<double>(total_bytes(params) / 4),
                            7 * total_bytes(params), -1),
                  params, fp32_grads);
    release_all(b, sqrt);
    return;
  }
  annotate_step(b,
                b.compute(ComputeKind::Optimizer, "optimizer step (foreach)", 3.0 * static_cast<double>(total_bytes(params) / 4),
                          4 * total_bytes(params), -1),
                params, fp32_grads);
  release_all(b, decayed);
}

void loop_step(ProgramBuilder& b, const OptimizerConfig& config, const std::vector<ParamSlot*>& params,
               const std::vector<TensorId>& fp32_grads) {
  const bool adam = config.kind == OptimizerKind::Adam || config.kind == OptimizerKind::AdamW;
  const bool decayed_grads = config.weight_decay != 0 && config.kind != OptimizerKind::AdamW;
  if (adam) create_state(b, params, config.kind, config.step_tensor_bytes);  // Adam.step() creates all state before calling F.adam
  TensorId previous_decayed = -1, previous_denom = -1;
  for (auto* p : params) {
    if (previous_decayed >= 0) b.release(previous_decayed);  // `grad = grads[i]` rebinds the name
    previous_decayed = decayed_grads ? b.alloc("grad + wd·param " + p->name, fp32_bytes(p), Category::Temporaries, false, ElementType::Fp32) : -1;
    if (!adam) {
      if (config.kind == OptimizerKind::Momentum && p->state.empty())
        p->state.push_back(b.alloc("momentum_buffer " + p->name, fp32_bytes(p), Category::OptimizerState, true, ElementType::Fp32));
      continue;
    }
    const TensorId sqrt = b.alloc("exp_avg_sq.sqrt() " + p->name, fp32_bytes(p), Category::Temporaries, false, ElementType::Fp32);
    const TensorId denom = b.alloc("denom " + p->name, fp32_bytes(p), Category::Temporaries, false, ElementType::Fp32);
    b.release(sqrt);
    if (previous_denom >= 0) b.release(previous_denom);
    previous_denom = denom;
  }
  annotate_step(b,
                b.compute(ComputeKind::Optimizer, "optimizer step (per-parameter loop)",
                          (adam ? 12.0 : 3.0) * static_cast<double>(total_bytes(params) / 4), 7 * total_bytes(params), -1),
                params, fp32_grads);
  if (previous_denom >= 0) b.release(previous_denom);
  if (previous_decayed >= 0) b.release(previous_decayed);
}

}  // namespace

void lower_optimizer_step(ProgramBuilder& builder, const FrameworkBehaviour& behaviour, const OptimizerConfig& config,
                          const std::vector<ParamSlot*>& params, const std::vector<TensorId>& fp32_grads) {
  if (params.empty()) return;
  OptimizerConfig with_steps = config;
  with_steps.step_tensor_bytes = behaviour.optimizer_step_tensor_bytes;
  const TensorId handle = enter_record_function(builder, behaviour, "Optimizer.step");  // 1.x on the CPU only
  if (behaviour.optimizer_foreach) {
    foreach_step(builder, with_steps, params, fp32_grads);
  } else {
    loop_step(builder, with_steps, params, fp32_grads);
  }
  exit_record_function(builder, handle);
}

}  // namespace shardscope
