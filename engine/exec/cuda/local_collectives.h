// The local device-memory path: collectives and messages among ranks of one process when some of them share a GPU
// (NCCL 2.28 refuses two ranks of one communicator on a GPU, ../shared/STACK.md). The members of a collective meet
// on the host; the last to arrive does the whole collective with device copies (cudaMemcpyPeer, which also copies
// within one device) and a reduction kernel on the first member's device, summing in group order, then releases
// the others. Slower than NCCL and labelled as such in the trace ("local collectives"). CUDA backend only.
#pragma once
#include "exec/exec_layer.h"
#include <condition_variable>
#include <map>
#include <mutex>
#include <vector>

#include "exec/cuda/cuda_communicator.h"

namespace shardscope::exec::cuda {

class LocalCollectives final : public CudaCommunicator {
 public:
  LocalCollectives() = default;
  ~LocalCollectives() override;
  bool run(const CommunicationLaunch& launch, int rank, int device, cudaStream_t stream, EventTimer* timer) override;
  void abort() override;
  std::string kind() const override { return "local collectives"; }

 private:
  struct Arrival {
    int device = 0;
    std::vector<DeviceBuffer> operands;
  };
  struct Meeting {
    std::map<int, Arrival> arrived;  // by global rank
    bool done = false;
    std::string error;
    int leaving = 0;
  };
  // (group or {sender, receiver, -1} for messages, sequence number)
  using Key = std::pair<std::vector<int>, long>;

  void perform(const CommunicationLaunch& launch, const std::vector<int>& members, Meeting& meeting);
  void all_reduce(const std::vector<int>& members, Meeting& m, std::size_t k, int into);
  float* scratch(int device, std::size_t floats);

  std::mutex mutex_;
  std::condition_variable changed_;
  std::map<Key, Meeting> meetings_;
  std::map<std::pair<std::vector<int>, int>, long> sequence_;  // (key group, rank) -> next sequence number
  bool aborted_ = false;
  std::map<int, std::pair<float*, std::size_t>> scratch_;  // per device, grown on demand (outside the allocator)
};

}  // namespace shardscope::exec::cuda
