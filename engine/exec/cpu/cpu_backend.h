// The CPU backend: host memory through CpuTrackingAllocator (one per rank), kernels over OpenBLAS, collectives
// and messages between rank threads through one CpuCommunicator. Synchronous: a call returns with its work done.
#pragma once
#include "exec/exec_layer.h"
#include <memory>
#include <vector>

#include "exec/backend.h"
#include "exec/cpu/cpu_communicator.h"

namespace shardscope::exec::cpu {

class CpuRankBackend final : public RankBackend {
 public:
  CpuRankBackend(int rank, CpuCommunicator& communicator) : rank_(rank), communicator_(communicator) {}
  int rank() const override { return rank_; }
  TrackingAllocator& allocator() override { return allocator_; }
  void run_kernel(const KernelLaunch& launch) override;
  void run_communication(const CommunicationLaunch& launch) override;
  void copy_from_host(const DeviceBuffer& dst, std::span<const std::byte> src) override;
  void copy_to_host(std::span<std::byte> dst, const DeviceBuffer& src) override;
  void fill_zero(const DeviceBuffer& dst) override;
  void synchronize(Stream) override {}  // every call already finished its work

 private:
  void run_fp32_communication(const CommunicationLaunch& launch);
  void all_gather_into_list(const CommunicationLaunch& launch, std::span<float> input);

  int rank_;
  CpuCommunicator& communicator_;
  CpuTrackingAllocator allocator_;
};

class CpuBackend final : public Backend {
 public:
  // Sets OpenBLAS to blas_threads threads (1 by default: several rank threads already run GEMMs at once).
  explicit CpuBackend(int world_size, int blas_threads = 1);
  std::string name() const override { return "cpu"; }
  RankBackend& rank(int rank) override { return *ranks_.at(static_cast<std::size_t>(rank)); }
  void abort(int failed_rank, std::string_view reason) override { communicator_.abort(failed_rank, reason); }

 private:
  CpuCommunicator communicator_;
  std::vector<std::unique_ptr<CpuRankBackend>> ranks_;
};

}  // namespace shardscope::exec::cpu
