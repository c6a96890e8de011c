// Runs one KernelLaunch (exec/backend.h) with the CPU kernels: the operand order of plan/kernel.h mapped onto
// linear / activation / loss / optimizer kernels. Host memory only; no allocation, no communication.
#pragma once
#include "exec/exec_layer.h"
#include "exec/backend.h"

namespace shardscope::exec::cpu {

// Throws std::invalid_argument when operands are missing or their sizes disagree with the launch's shapes.
// Kernel::None and Kernel::LoadBatch do nothing here (the executor fills batches through copy_from_host).
void run_cpu_kernel(const KernelLaunch& launch);

}  // namespace shardscope::exec::cpu
