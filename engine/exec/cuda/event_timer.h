// The device's own time for a piece of work on a stream: CUDA events recorded before and after it
// (cudaEventElapsedTime, about 0.5 µs resolution), instead of the host's clock around a synchronised launch, which
// adds launch latency and the synchronisation's wake-up. One timer per stream thread (its events are reused).
// CUDA backend only.
#pragma once
#include "exec/exec_layer.h"
#include <cuda_runtime_api.h>

#include "core/units.h"

namespace shardscope::exec::cuda {

class EventTimer {
 public:
  EventTimer();  // on the current device
  ~EventTimer();
  EventTimer(const EventTimer&) = delete;
  EventTimer& operator=(const EventTimer&) = delete;
  void start(cudaStream_t stream);  // before the work is queued on `stream`
  void stop(cudaStream_t stream);   // after it is queued
  // Once the work is done (the stream synchronised): nanoseconds between start and stop on the device.
  TimeNs elapsed() const;

 private:
  cudaEvent_t start_ = nullptr;
  cudaEvent_t stop_ = nullptr;
};

}  // namespace shardscope::exec::cuda
