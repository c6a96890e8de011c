// One int on the device that kernels set to report something to the host (a non-finite gradient, a token id
// outside the vocabulary): stream-ordered allocation, zeroed, read back with a synchronisation. CUDA backend only.
#pragma once
#include "exec/exec_layer.h"
#include <cuda_runtime_api.h>

#include "exec/cuda/cuda_check.h"

namespace shardscope::exec::cuda {

class DeviceFlag {
 public:
  explicit DeviceFlag(cudaStream_t stream) : stream_(stream) {
    check_cuda(cudaMallocAsync(reinterpret_cast<void**>(&flag_), sizeof(int), stream), "cudaMallocAsync (device flag)");
    check_cuda(cudaMemsetAsync(flag_, 0, sizeof(int), stream), "cudaMemsetAsync (device flag)");
  }
  DeviceFlag(const DeviceFlag&) = delete;
  DeviceFlag& operator=(const DeviceFlag&) = delete;
  ~DeviceFlag() { cudaFreeAsync(flag_, stream_); }

  int* get() const { return flag_; }
  // Waits for the stream's work so far, then whether a kernel set the flag.
  bool is_set() const {
    int host = 0;
    check_cuda(cudaMemcpyAsync(&host, flag_, sizeof(int), cudaMemcpyDeviceToHost, stream_), "cudaMemcpyAsync (device flag)");
    check_cuda(cudaStreamSynchronize(stream_), "cudaStreamSynchronize (device flag)");
    return host != 0;
  }

 private:
  cudaStream_t stream_;
  int* flag_ = nullptr;
};

}  // namespace shardscope::exec::cuda
