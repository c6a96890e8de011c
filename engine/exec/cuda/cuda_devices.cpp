// detect_cuda_gpus: cudaGetDeviceCount, then the properties and cudaMemGetInfo of each device.
#include "exec/cuda/cuda_devices.h"

#include "exec/cuda/cuda_check.h"
#include "exec/cuda_host/runtime_versions.h"

namespace shardscope::exec::cuda {

namespace {

std::string versions() {
  int runtime = 0;
  cudaRuntimeGetVersion(&runtime);
  int nccl = 0;
  ncclGetVersion(&nccl);  // works without a GPU
  // NCCL_VERSION_CODE since 2.9: major*10000 + minor*100 + patch.
  return "CUDA runtime " + std::to_string(runtime / 1000) + "." + std::to_string(runtime % 1000 / 10) + ", NCCL " +
         std::to_string(nccl / 10000) + "." + std::to_string(nccl % 10000 / 100) + "." + std::to_string(nccl % 100);
}

}  // namespace

RuntimeVersions query_runtime_versions() {
  RuntimeVersions versions;
  int driver = 0, runtime = 0, nccl = 0;
  if (cudaDriverGetVersion(&driver) == cudaSuccess && driver > 0) versions.driver = cuda_version_text(driver);
  if (cudaRuntimeGetVersion(&runtime) == cudaSuccess) versions.cuda_runtime = cuda_version_text(runtime);
  if (ncclGetVersion(&nccl) == ncclSuccess) versions.nccl = nccl_version_text(nccl);
  cudaGetLastError();  // leaves no sticky-free error behind
  return versions;
}

GpuInventory detect_cuda_gpus() {
  GpuInventory inventory;
  inventory.cuda_built = true;
  inventory.runtime_version = versions();
  int count = 0;
  const cudaError_t error = cudaGetDeviceCount(&count);
  if (error != cudaSuccess) {
    cudaGetLastError();  // clears the sticky-free error so later calls start clean
    inventory.reason = "no usable CUDA GPU: cudaGetDeviceCount returned " + std::to_string(static_cast<int>(error)) +
                       " (" + cuda_error_text(error) + ")";
    return inventory;
  }
  if (count <= 0) {
    inventory.reason = "no usable CUDA GPU: cudaGetDeviceCount found 0 devices";
    return inventory;
  }
  for (int d = 0; d < count; ++d) {
    GpuInfo info;
    info.index = d;
    cudaDeviceProp properties{};
    if (cudaGetDeviceProperties(&properties, d) == cudaSuccess) {
      info.name = properties.name;
      info.compute_major = properties.major;
      info.compute_minor = properties.minor;
      info.total_bytes = static_cast<Bytes>(properties.totalGlobalMem);
    }
    std::size_t free = 0, total = 0;
    if (cudaSetDevice(d) == cudaSuccess && cudaMemGetInfo(&free, &total) == cudaSuccess) {
      info.free_bytes = static_cast<Bytes>(free);
      info.total_bytes = static_cast<Bytes>(total);
    }
    cudaGetLastError();
    inventory.gpus.push_back(std::move(info));
  }
  return inventory;
}

}  // namespace shardscope::exec::cuda
