// EventTimer: a pair of timing events per stream thread.
#include "exec/cuda/event_timer.h"

#include <cmath>

#include "exec/cuda/cuda_check.h"

namespace shardscope::exec::cuda {

EventTimer::EventTimer() {
  check_cuda(cudaEventCreate(&start_), "cudaEventCreate");
  check_cuda(cudaEventCreate(&stop_), "cudaEventCreate");
}

EventTimer::~EventTimer() {
  if (start_) cudaEventDestroy(start_);
  if (stop_) cudaEventDestroy(stop_);
}

void EventTimer::start(cudaStream_t stream) { check_cuda(cudaEventRecord(start_, stream), "cudaEventRecord"); }

void EventTimer::stop(cudaStream_t stream) { check_cuda(cudaEventRecord(stop_, stream), "cudaEventRecord"); }

TimeNs EventTimer::elapsed() const {
  check_cuda(cudaEventSynchronize(stop_), "cudaEventSynchronize");
  float ms = 0;
  check_cuda(cudaEventElapsedTime(&ms, start_, stop_), "cudaEventElapsedTime");
  return static_cast<TimeNs>(std::llround(static_cast<double>(ms) * 1e6));
}

}  // namespace shardscope::exec::cuda
