// The CUDA backend: per rank a GPU (exec/cuda_host/rank_placement.h), a caching allocator on cudaMalloc with
// PyTorch 2.x rules (exec/cuda_host/device_caching_allocator.h), a compute and a communication stream, a cuBLAS
// handle; collectives through NCCL, or the local device-memory path when ranks share GPUs. Every call returns with
// its work done (kernels are launched and their stream synchronised): the executor's completion tracking stays
// host-side, and the op times in the trace are host wall-clock around the synchronised work. CUDA backend only.
#pragma once
#include "exec/exec_layer.h"
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <memory>
#include <mutex>
#include <vector>

#include "exec/backend.h"
#include "exec/cuda/cuda_communicator.h"
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
  void run_kernel(const KernelLaunch& launch) override;
  void run_communication(const CommunicationLaunch& launch) override;
  void copy_from_host(const DeviceBuffer& dst, std::span<const std::byte> src) override;
  void copy_to_host(std::span<std::byte> dst, const DeviceBuffer& src) override;
  void fill_zero(const DeviceBuffer& dst) override;
  void synchronize(Stream stream) override;
  std::optional<DeviceMemoryUse> device_memory() override;

 private:
  void use_device() const;

  int rank_;
  int device_;
  CudaCommunicator& communicator_;
  cudaStream_t compute_ = nullptr;
  cudaStream_t communication_ = nullptr;
  cublasHandle_t cublas_ = nullptr;
  std::mutex kernel_mutex_;  // a cuBLAS handle is not thread-safe; kernels may come from a copy-stream thread too
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
