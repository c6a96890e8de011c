// The two version profiles of FrameworkBehaviour.
#include "strategy/framework_behaviour.h"

namespace shardscope {

FrameworkBehaviour framework_behaviour(AccountingMode mode, const std::string& gpu_arch) {
  FrameworkBehaviour b;
  if (mode == AccountingMode::PyTorch18) {
    b.name = "PyTorch 1.8/1.9";
    b.zero_grad_sets_none = false;
    b.ddp_single_first_bucket = false;
    b.optimizer_foreach = false;
    b.cublas_workspace_bytes = 0;
    b.zero_partition_sorted_by_size = false;
    return b;
  }
  b.name = "PyTorch 2.x";
  b.cublas_workspace_bytes = gpu_arch == "sm90" ? 4096 * 8 * 1024 : 4096 * 1024 * 2 + 16 * 1024 * 8;
  return b;
}

}  // namespace shardscope
