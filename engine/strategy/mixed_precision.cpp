// Master weights and the mixed-precision optimizer step (see mixed_precision.h).
#include "strategy/mixed_precision.h"

#include "strategy/model_pass.h"

namespace shardscope {

void create_master_weights(ProgramBuilder& builder, const std::vector<ParamSlot*>& params) {
  for (auto* p : params) {
    if (p->master >= 0) continue;
    p->master = builder.alloc("fp32 master " + p->name, p->numel * kFp32Bytes, Category::OptimizerState, /*persistent=*/true);
  }
}

void lower_update(ProgramBuilder& builder, const FrameworkBehaviour& behaviour, const OptimizerConfig& config,
                  const std::vector<ParamSlot*>& params, bool mixed_precision) {
  if (!mixed_precision || params.empty()) {
    lower_optimizer_step(builder, behaviour, config, params);
    return;
  }
  std::vector<TensorId> fp32_grads;
  Bytes total = 0;
  for (auto* p : params) {
    fp32_grads.push_back(builder.alloc("fp32 grad " + p->name, p->numel * kFp32Bytes, Category::Temporaries));
    total += p->numel * kFp32Bytes;
  }
  builder.compute(ComputeKind::Copy, "cast 16-bit gradients to fp32 master gradients", 0, total + total / 2);
  lower_optimizer_step(builder, behaviour, config, params, fp32_grads);
  for (TensorId grad : fp32_grads) builder.release(grad);
  builder.compute(ComputeKind::Copy, "copy fp32 master weights into the 16-bit parameters", 0, total + total / 2);
}

}  // namespace shardscope
