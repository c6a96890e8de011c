// The versions a CUDA run records in its trace header (driver, CUDA runtime, NCCL), turned from the integers the
// CUDA and NCCL calls return into "13.0" / "2.28.9". Host logic with no CUDA header, so every build tests it; the
// cuda backend (exec/cuda/cuda_devices.cpp) makes the calls.
#pragma once
#include "exec/exec_layer.h"
#include <string>

namespace shardscope::exec {

// cudaDriverGetVersion / cudaRuntimeGetVersion's 1000 * major + 10 * minor: 13000 → "13.0", 12040 → "12.4".
std::string cuda_version_text(int version);
// ncclGetVersion's NCCL_VERSION_CODE (since 2.9: 10000 * major + 100 * minor + patch): 22809 → "2.28.9".
std::string nccl_version_text(int version);

}  // namespace shardscope::exec
