// The one symbol libshardscope_backend_cuda.so exports (every other one is hidden): the CUDA backend's entry
// points for exec/backends/cuda_plugin_loader.cpp. CUDA backend only.
#include "exec/backends/cuda_backend_abi.h"
#include "exec/cuda/cuda_backend.h"
#include "exec/cuda/cuda_devices.h"

extern "C" __attribute__((visibility("default"))) const shardscope::exec::CudaBackendEntryPoints*
shardscope_cuda_backend_entry_points() {
  using namespace shardscope::exec;
  static const CudaBackendEntryPoints entry_points{
      .detect_gpus = &cuda::detect_cuda_gpus,
      .make_backend = &cuda::make_cuda_backend,
  };
  return &entry_points;
}
