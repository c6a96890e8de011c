// The CUDA backend: per rank a GPU (exec/cuda_host/rank_placement.h), a caching allocator on cudaMalloc with
// PyTorch 2.x rules (exec/cuda_host/device_caching_allocator.h), a compute and a communication stream, a cuBLAS
// handle; collectives through NCCL, or the local device-memory path when ranks share GPUs. Every call returns with
// its work done (kernels are launched and their stream synchronised): the executor's completion tracking stays
// host-side. Op times in the trace are the device's (CUDA events around each op's work on its stream), except
// for the local collectives, which meet on the host. CUDA backend only.
#pragma once
#include "exec/exec_layer.h"
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "exec/backend.h"
#include "exec/cuda/cuda_communicator.h"
#include "exec/cuda/device_staging.h"
#include "exec/cuda/event_timer.h"
#include "exec/cuda_host/device_caching_allocator.h"
#include "exec/cuda_host/rank_placement.h"
#include "exec/executor.h"
#include "run/gpu_inventory.h"

namespace shardscope::exec::cuda {

class CudaRankBackend final : public RankBackend {
 public:
  CudaRankBackend(int rank, int device, CudaCommunicator& communicator);
  ~CudaRankBackend() override;
  int rank() const override { return rank_; }
  TrackingAllocator& allocator() override { return *allocator_; }
  void run_kernel(const KernelLaunch& launch) override { run_kernel_timed(launch); }
  void run_communication(const CommunicationLaunch& launch) override { run_communication_timed(launch); }
  std::optional<TimeNs> run_kernel_timed(const KernelLaunch& launch) override;
  std::optional<TimeNs> run_communication_timed(const CommunicationLaunch& launch) override;
  void copy_from_host(const DeviceBuffer& dst, std::span<const std::byte> src) override;
  void copy_to_host(std::span<std::byte> dst, const DeviceBuffer& src) override;
  void fill_zero(const DeviceBuffer& dst) override;
  void use_gemm_workspace(const std::string& thread, const DeviceBuffer& workspace) override;
  void synchronize(Stream stream) override;
  std::optional<DeviceMemoryUse> device_memory() override;

 private:
  void use_device() const;

  int rank_;
  int device_;
  CudaCommunicator& communicator_;
  cudaStream_t compute_ = nullptr;
  cudaStream_t communication_ = nullptr;
  // Two handles, as PyTorch's main thread (forward GEMMs) and autograd thread (backward GEMMs) each take one from
  // the per-thread handle pool, so each can work in its own plan workspace tensor. Both on the compute stream.
  cublasHandle_t cublas_ = nullptr;
  cublasHandle_t cublas_backward_ = nullptr;
  std::mutex kernel_mutex_;  // a cuBLAS handle is not thread-safe; kernels may come from a copy-stream thread too
  std::unique_ptr<EventTimer> kernel_timer_;         // under kernel_mutex_
  DeviceScratch kernel_scratch_;                     // 16-bit operands staged as fp32; under kernel_mutex_
  // One timer per thread that runs communication: calls from different threads may wait on their peers at once,
  // so they share no events and hold no lock while they wait.
  EventTimer& communication_timer();
  std::mutex timers_mutex_;
  std::map<std::thread::id, std::unique_ptr<EventTimer>> communication_timers_;  // under timers_mutex_
  // The same threads' fp32 scratch for 16-bit buffers (each thread its own: they run at once).
  DeviceScratch& communication_scratch();
  std::map<std::thread::id, std::unique_ptr<DeviceScratch>> communication_scratch_;  // under timers_mutex_
  std::unique_ptr<DeviceCachingAllocator> allocator_;
};

class CudaBackend final : public Backend {
 public:
  CudaBackend(const Plan& plan, const ExecutionOptions& options, const GpuInventory& inventory);
  ~CudaBackend() override;
  std::string name() const override { return "cuda"; }
  RankBackend& rank(int rank) override;
  void abort(int failed_rank, std::string_view reason) override;
  std::string device_name(int rank) const override;
  int physical_device(int rank) const override;
  Bytes device_capacity(int rank) const override;
  bool runs_rank(int rank) const override;
  RuntimeVersions runtime_versions() const override;
  const RankPlacement& placement() const { return placement_; }

 private:
  GpuInventory inventory_;
  MultiNodeOptions multinode_;
  RankPlacement placement_;
  std::unique_ptr<CudaCommunicator> communicator_;
  std::vector<std::unique_ptr<CudaRankBackend>> ranks_;  // by global rank; null for other nodes' ranks
};

std::unique_ptr<Backend> make_cuda_backend(const Plan& plan, const ExecutionOptions& options,
                                           const GpuInventory& inventory);

}  // namespace shardscope::exec::cuda
