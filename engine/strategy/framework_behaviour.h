// Which PyTorch version's behaviour a lowering follows. Chosen by the accounting mode: `pytorch-1.8` follows
// 1.8/1.9; `pytorch-2` and `exact` follow current 2.x (exact only drops the allocator's rounding).
#pragma once
#include <string>

#include "core/units.h"
#include "scenario/scenario.h"

namespace shardscope {

struct FrameworkBehaviour {
  std::string name;  // "PyTorch 1.8/1.9", "PyTorch 2.x"
  // torch/optim/optimizer.py: zero_grad(set_to_none=True) is the default from 2.0 (PR #92731);
  // 1.x zeroes .grad in place, so gradients stay allocated between steps.
  bool zero_grad_sets_none = true;
  // torch/nn/parallel/distributed.py _ddp_init_helper: with find_unused_parameters=False the first
  // iteration uses one bucket (bucket_size_limits = [sys.maxsize], PR #72843, from 1.12); 1.8 uses
  // [1 MiB first bucket, bucket_cap_mb]. Both rebuild buckets at the start of the second forward.
  bool ddp_single_first_bucket = true;
  // torch/optim/adam.py: foreach is the default on CUDA in 2.x (_default_to_fused_or_foreach, fused off);
  // 1.8 runs the per-parameter loop of torch/optim/_functional.py.
  bool optimizer_foreach = true;
  // aten/src/ATen/cuda/CublasHandlePool.cpp: from 2.0 the cuBLAS workspace comes from the caching allocator,
  // cached per (handle, stream): 4096*1024*2 + 16*1024*8 = 8,519,680 B, or 32 MiB on sm90 (PR #89027).
  // 1.x lets cuBLAS allocate it outside the allocator (0 here).
  Bytes cublas_workspace_bytes = 0;
  // torch/distributed/optim/zero_redundancy_optimizer.py: parameters sorted by size (descending) before the
  // greedy partition from 1.10; 1.8/1.9 take them in registration order.
  bool zero_partition_sorted_by_size = true;
};

FrameworkBehaviour framework_behaviour(AccountingMode mode, const std::string& gpu_arch);

}  // namespace shardscope
