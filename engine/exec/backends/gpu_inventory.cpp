// detect_gpus: asks the CUDA backend when this build has one; otherwise names the missing build option.
#include "exec/backends/backend_factory.h"

#ifdef SHARDSCOPE_HAVE_CUDA
#include "exec/cuda/cuda_devices.h"
#endif

namespace shardscope::exec {

GpuInventory detect_gpus() {
#ifdef SHARDSCOPE_HAVE_CUDA
  return cuda::detect_cuda_gpus();
#else
  GpuInventory inventory;
  inventory.reason =
      "this build has no CUDA backend (CMake found no CUDA toolkit with NCCL, or SHARDSCOPE_WITH_CUDA=OFF)";
  return inventory;
#endif
}

}  // namespace shardscope::exec
