// How the CUDA backend's ranks communicate: NCCL (one rank per GPU) or the local device-memory path (ranks that
// share GPUs, one process). Both take plan/kernel.h's operand conventions and return with this rank's part done.
// CUDA backend only.
#pragma once
#include "exec/exec_layer.h"
#include <cuda_runtime_api.h>

#include <string>

#include "exec/backend.h"
#include "exec/cuda/event_timer.h"

namespace shardscope::exec::cuda {

class CudaCommunicator {
 public:
  virtual ~CudaCommunicator() = default;
  // On the calling rank's communication stream (NCCL) or the devices' default streams (local path); throws
  // RunStopped (exec/run_control.h) once abort() was called. Where the work is queued on `stream` (NCCL), `timer`
  // (when given) is started before it is queued and stopped right after, and run returns true: the device's time
  // for it can then be read. The local path meets on the host and returns false.
  virtual bool run(const CommunicationLaunch& launch, int rank, int device, cudaStream_t stream, EventTimer* timer) = 0;
  // Wakes / cancels every blocked or later call.
  virtual void abort() = 0;
  virtual std::string kind() const = 0;  // "NCCL" or "local collectives"
};

}  // namespace shardscope::exec::cuda
