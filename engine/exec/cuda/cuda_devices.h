// Detects the CUDA GPUs of this process (name, memory) or says why there are none. CUDA backend only.
#pragma once
#include "exec/exec_layer.h"
#include "exec/backend.h"
#include "run/gpu_inventory.h"

namespace shardscope::exec::cuda {

// Never throws. Usable GPU = cudaGetDeviceCount() == cudaSuccess && count > 0 (../shared/STACK.md); without a
// driver that call returns 35 (cudaErrorInsufficientDriver), with a driver and no device 100 (cudaErrorNoDevice).
GpuInventory detect_cuda_gpus();

// The driver's CUDA version, the runtime's and NCCL's, for the trace header; a call that fails leaves its field
// absent. Never throws.
RuntimeVersions query_runtime_versions();

}  // namespace shardscope::exec::cuda
