// detect_gpus: asks the CUDA backend plugin when this build has one (opening it on first use; when it cannot be
// opened, the reason names the paths tried); otherwise names the missing build option.
#include "exec/backends/backend_factory.h"

#ifdef SHARDSCOPE_HAVE_CUDA
#include "exec/backends/cuda_plugin_loader.h"
#endif

namespace shardscope::exec {

GpuInventory detect_gpus() {
#ifdef SHARDSCOPE_HAVE_CUDA
  const CudaPlugin& plugin = cuda_backend_plugin();
  if (plugin.entry_points != nullptr) return plugin.entry_points->detect_gpus();
  GpuInventory inventory;
  inventory.cuda_built = true;  // built, but its library is missing or broken: the reason says which
  inventory.reason = plugin.error;
  return inventory;
#else
  GpuInventory inventory;
  inventory.reason =
      "this build has no CUDA backend (CMake found no CUDA toolkit with NCCL, or SHARDSCOPE_WITH_CUDA=OFF)";
  return inventory;
#endif
}

}  // namespace shardscope::exec
