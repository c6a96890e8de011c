// The CUDA GPUs this process can use, or why there are none — for `shardscope-cli gpus`, `run --backend cuda`
// and the window's Execute → GPU. Plain data below the executors, so the GUI's panels can show it without linking
// them; exec::detect_gpus() (exec/backends/backend_factory.h) fills it. Depends on core/ only.
// Usable GPU, as in ../shared/STACK.md: cudaGetDeviceCount() == cudaSuccess and count > 0.
#pragma once
#include <string>
#include <vector>

#include "core/units.h"

namespace shardscope::exec {

struct GpuInfo {
  int index = 0;
  std::string name;       // "NVIDIA H100 80GB HBM3"
  Bytes total_bytes = 0;  // cudaMemGetInfo
  Bytes free_bytes = 0;
  int compute_major = 0, compute_minor = 0;
};

struct GpuInventory {
  bool cuda_built = false;      // this build has the CUDA backend
  std::string runtime_version;  // "CUDA runtime 13.0, NCCL 2.28.9" when built
  std::vector<GpuInfo> gpus;
  std::string reason;  // when gpus is empty: "no usable CUDA GPU: cudaGetDeviceCount returned 35 (...)"
  bool usable() const { return !gpus.empty(); }
};

}  // namespace shardscope::exec
