// TEMPORARY stand-in (see registry.h).
#include "strategy/registry.h"

namespace shardscope {
bool strategy_accepts(StrategyKind kind, std::string_view key) {
  using K = StrategyKind;
  const bool pipeline = kind == K::ModelParallel || kind == K::PipelineGPipe || kind == K::Pipeline1F1B;
  if (key == "strategy.bucket_cap_mb" || key == "strategy.gradient_as_bucket_view") return kind == K::Ddp || kind == K::Zero1;
  if (key == "strategy.gpu0_batch") return kind == K::BalancedDataParallel;
  if (key == "strategy.stages") return pipeline;
  if (key == "strategy.micro_batches" || key == "strategy.dp" || key == "strategy.dp_zero_stage") return pipeline && kind != K::ModelParallel;
  if (key == "strategy.prefetch") return kind == K::Zero3;
  if (key == "strategy.reduce_bucket_mb" || key == "strategy.allgather_bucket_mb") return kind == K::Zero2 || kind == K::Zero3;
  return true;
}
}  // namespace shardscope
