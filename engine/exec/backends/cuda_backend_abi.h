// What libshardscope_backend_cuda.so (engine/exec/cuda/, the CUDA backend as a plugin) offers the program that
// opens it: one extern "C" function, found with dlsym, returning the entry points below. The executables do not
// link the CUDA runtime, cuBLAS or NCCL, so their initialisers run only when a CUDA backend or the GPU list is
// asked for (exec/backends/cuda_plugin_loader.h opens the library then). The library and the program come from
// the same build and share these C++ types; the ABI version and the sizes refuse a library from another build.
#pragma once
#include "exec/exec_layer.h"
#include <cstddef>
#include <memory>

#include "exec/backend.h"
#include "exec/executor.h"
#include "plan/plan.h"
#include "run/gpu_inventory.h"

namespace shardscope::exec {

// Bumped whenever CudaBackendEntryPoints changes.
inline constexpr int kCudaBackendAbiVersion = 1;
inline constexpr const char* kCudaBackendLibraryName = "libshardscope_backend_cuda.so";
inline constexpr const char* kCudaBackendEntryPointSymbol = "shardscope_cuda_backend_entry_points";

struct CudaBackendEntryPoints {
  int abi_version = kCudaBackendAbiVersion;
  // sizeof of the types passed across, as the library was compiled: a cheap check that both sides agree.
  std::size_t plan_size = sizeof(Plan);
  std::size_t options_size = sizeof(ExecutionOptions);
  std::size_t inventory_size = sizeof(GpuInventory);
  // exec::cuda::detect_cuda_gpus: never throws.
  GpuInventory (*detect_gpus)() = nullptr;
  // exec::cuda::make_cuda_backend: throws as it does (BackendUnavailableError, std::runtime_error).
  std::unique_ptr<Backend> (*make_backend)(const Plan&, const ExecutionOptions&, const GpuInventory&) = nullptr;
};

}  // namespace shardscope::exec

// Defined by the plugin only (exec/cuda/cuda_backend_plugin.cpp).
extern "C" const shardscope::exec::CudaBackendEntryPoints* shardscope_cuda_backend_entry_points();
