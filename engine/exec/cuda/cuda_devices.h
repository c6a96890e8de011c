// Detects the CUDA GPUs of this process (name, memory) or says why there are none. CUDA backend only.
#pragma once
#include "exec/exec_layer.h"
#include "run/gpu_inventory.h"

namespace shardscope::exec::cuda {

// Never throws. Usable GPU = cudaGetDeviceCount() == cudaSuccess && count > 0 (../shared/STACK.md); without a
// driver that call returns 35 (cudaErrorInsufficientDriver), with a driver and no device 100 (cudaErrorNoDevice).
GpuInventory detect_cuda_gpus();

}  // namespace shardscope::exec::cuda
