// The two version profiles of FrameworkBehaviour, and the allocations of torch.cat that differ between them.
#include "training/framework_behaviour.h"

#include <algorithm>

namespace shardscope {

FrameworkBehaviour framework_behaviour(const AccountingSettings& accounting, const std::string& gpu_arch,
                                       const DevicePreset& device) {
  FrameworkBehaviour b;
  if (accounting.mode == AccountingMode::PyTorch18) {
    b.name = "PyTorch 1.8/1.9";
    b.zero_grad_sets_none = false;
    b.ddp_single_first_bucket = false;
    b.ddp_explicit_cap_limits_first_rebuilt_bucket = false;
    b.optimizer_foreach = false;
    b.cublas_workspace_bytes = 0;
    b.zero_partition_sorted_by_size = false;
    b.cat_metadata_bytes = 128 * 24;
    b.mse_loss_keeps_input_sized_result = false;
    return b;
  }
  b.name = "PyTorch 2.x";
  b.cublas_workspace_bytes = gpu_arch == "sm90" ? 4096 * 8 * 1024 : 4096 * 1024 * 2 + 16 * 1024 * 8;
  b.forward_threads_hold_workspace = accounting.cublas_workspaces != "autograd-only";
  b.cublaslt_workspace_bytes = std::min<Bytes>(1024 * 1024, b.cublas_workspace_bytes);  // capped by the cuBLAS size
  b.gloo_late_flat_free_min_bytes = 32 * kMiB;
  b.reduction_multiprocessors = device.multiprocessors;
  b.reduction_max_threads_per_multiprocessor = device.max_threads_per_multiprocessor;
  if (!device.cuda) {
    // PyTorch's CPU tensors, 1.13 and 2.x alike: no cuBLAS handle (GEMMs go to MKL / OpenBLAS, whose scratch is not a
    // tensor), no CUDA reduction kernels; torch/optim/optimizer.py _default_to_fused_or_foreach picks foreach only
    // when every tensor is on CUDA (1.13's adam() defaults foreach to False), so the per-parameter loop runs; and
    // state['step'] = torch.tensor(0.) is on the parameters' device: 4 bytes each.
    b.name = "PyTorch 2.x (CPU)";
    b.cublas_workspace_bytes = 0;
    b.cublaslt_workspace_bytes = 0;
    b.reduction_multiprocessors = 0;
    b.reduction_max_threads_per_multiprocessor = 0;
    b.optimizer_foreach = false;
    b.optimizer_step_tensor_bytes = 4;
    b.record_function_handle_bytes = accounting.record_function_bytes;
  }
  return b;
}

TensorId enter_record_function(ProgramBuilder& builder, const FrameworkBehaviour& behaviour, const std::string& what) {
  if (behaviour.record_function_handle_bytes <= 0) return -1;
  const TensorId zeros = builder.alloc("record_function torch.zeros(1) (" + what + ")", 4, Category::Temporaries, false, ElementType::Fp32);
  const TensorId handle = builder.alloc("record_function handle (" + what + ")", behaviour.record_function_handle_bytes,
                                        Category::Temporaries, false, ElementType::Opaque);
  builder.release(zeros);  // self.handle rebound by __enter__
  return handle;
}

void exit_record_function(ProgramBuilder& builder, TensorId handle) {
  if (handle >= 0) builder.release(handle);
}

void lower_cat_scratch(ProgramBuilder& builder, const FrameworkBehaviour& behaviour, std::size_t inputs,
                       const std::string& what) {
  if (inputs < 2 || behaviour.cat_metadata_bytes <= 0) return;  // one input: flatten is a view, no cat
  builder.release(builder.alloc("cat metadata (" + what + ")", behaviour.cat_metadata_bytes, Category::Temporaries, false,
                                ElementType::Opaque));
}

}  // namespace shardscope
