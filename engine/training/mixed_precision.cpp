// Master weights and the mixed-precision optimizer step (see mixed_precision.h).
#include "training/mixed_precision.h"

#include "training/model_pass.h"

namespace shardscope {

void create_master_weights(ProgramBuilder& builder, const std::vector<ParamSlot*>& params) {
  std::vector<TensorSlice> copies;
  Bytes bytes = 0;
  for (auto* p : params) {
    if (p->master >= 0) continue;
    p->master = builder.alloc("fp32 master " + p->name, p->numel * kFp32Bytes, Category::OptimizerState,
                              /*persistent=*/true, ElementType::Fp32);
    if (p->tensor < 0) continue;
    copies.push_back(whole(p->master));
    copies.push_back(param_slice(*p));
    bytes += p->bytes + p->numel * kFp32Bytes;
  }
  if (copies.empty()) return;
  const OpIndex copy = builder.compute(ComputeKind::Copy, "copy the 16-bit parameters into their fp32 masters", 0, bytes);
  builder.set_kernel(copy, Kernel::Copy, std::move(copies));
}

void lower_update(ProgramBuilder& builder, const FrameworkBehaviour& behaviour, const OptimizerConfig& config,
                  const std::vector<ParamSlot*>& params, bool mixed_precision, std::vector<TensorSlice> copy_back) {
  if (!mixed_precision || params.empty()) {
    lower_optimizer_step(builder, behaviour, config, params);
    return;
  }
  std::vector<TensorId> fp32_grads;
  std::vector<TensorSlice> unscale;  // (fp32 gradient, 16-bit gradient) pairs
  Bytes total = 0;
  for (auto* p : params) {
    const TensorId fp32 = builder.alloc("fp32 grad " + p->name, p->numel * kFp32Bytes, Category::Temporaries, false,
                                        ElementType::Fp32);
    fp32_grads.push_back(fp32);
    total += p->numel * kFp32Bytes;
    if (p->optimizer_pieces.empty()) {
      unscale.push_back(whole(fp32));
      unscale.push_back(grad_slice(*p));
    }
    for (const OptimizerPiece& piece : p->optimizer_pieces) {
      unscale.push_back(TensorSlice{fp32, piece.offset, piece.bytes});
      unscale.push_back(piece.grad);
    }
    if (p->tensor >= 0) {
      copy_back.push_back(param_slice(*p));
      copy_back.push_back(whole(p->master));
    }
  }
  const OpIndex cast = builder.compute(ComputeKind::Copy, "cast 16-bit gradients to fp32 master gradients", 0, total + total / 2);
  builder.set_kernel(cast, Kernel::UnscaleGradients, std::move(unscale));
  lower_optimizer_step(builder, behaviour, config, params, fp32_grads);
  for (TensorId grad : fp32_grads) builder.release(grad);
  const OpIndex copy = builder.compute(ComputeKind::Copy, "copy fp32 master weights into the 16-bit parameters", 0, total + total / 2);
  if (!copy_back.empty()) builder.set_kernel(copy, Kernel::Copy, std::move(copy_back));
}

}  // namespace shardscope
