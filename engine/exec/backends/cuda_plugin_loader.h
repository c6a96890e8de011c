// Finds and opens the CUDA backend plugin (libshardscope_backend_cuda.so, exec/backends/cuda_backend_abi.h) the
// first time a CUDA backend or the GPU list is asked for, so the CUDA libraries cost nothing to a command that
// does not use them. Looked up in this order: $SHARDSCOPE_CUDA_BACKEND (a full path), the running executable's
// folder (/proc/self/exe), then <that folder>/../lib. Only in builds with the CUDA backend.
#pragma once
#include "exec/exec_layer.h"
#include <string>
#include <vector>

#include "exec/backends/cuda_backend_abi.h"

namespace shardscope::exec {

// The paths to try, in order: env_value when set and not empty, then <exe_dir>/<name> and <exe_dir>/../lib/<name>
// (those two left out when exe_dir is empty).
std::vector<std::string> cuda_backend_library_candidates(const char* env_value, const std::string& exe_dir);

struct CudaPlugin {
  const CudaBackendEntryPoints* entry_points = nullptr;  // null: not loaded, `error` says why
  std::string error;  // "cannot load the CUDA backend (libshardscope_backend_cuda.so): tried PATH (dlerror); ..."
};

// Opens the plugin once per process (thread-safe) and returns the same result to every later call. The library is
// never closed: backends it made may live until exit.
const CudaPlugin& cuda_backend_plugin();

}  // namespace shardscope::exec
