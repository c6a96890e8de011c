// NCCL communicators for one run: one per process group of the plan (Plan::groups, ring order = NCCL rank order)
// plus one over the whole world for send / recv, for the ranks of this process, one rank per GPU (NCCL 2.28 refuses
// two ranks of a communicator on one GPU). Unique ids come from node 0: generated here on one node, fetched over
// TCP (exec/cuda_host/tcp_rendezvous.h) on the others. Communicators are created per group inside
// ncclGroupStart/End from one thread (ncclCommInitRankConfig for every local member: the single-process multi-GPU
// form of the NCCL docs), non-blocking, so an abort never waits on a peer stuck in a blocking call.
// CUDA backend only.
#pragma once
#include "exec/exec_layer.h"
#include <nccl.h>

#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <shared_mutex>
#include <vector>

#include "exec/backend_choice.h"
#include "exec/cuda/cuda_communicator.h"
#include "exec/cuda_host/rank_placement.h"

namespace shardscope::exec::cuda {

class NcclCommunicator final : public CudaCommunicator {
 public:
  static constexpr std::chrono::seconds kFinalizeTimeout{30};  // then the communicators are aborted
  NcclCommunicator(const std::vector<std::vector<int>>& groups, const RankPlacement& placement,
                   const MultiNodeOptions& multinode, int gpus_per_node);
  ~NcclCommunicator() override;
  bool run(const CommunicationLaunch& launch, int rank, int device, cudaStream_t stream, EventTimer* timer) override;
  void abort() override;
  std::string kind() const override { return "NCCL"; }

 private:
  ncclComm_t comm_for(const std::vector<int>& group, int rank) const;
  ncclComm_t enqueue(const CommunicationLaunch& launch, int rank, cudaStream_t stream);
  ncclComm_t enqueue_gather_into_list(const CommunicationLaunch& launch, ncclComm_t comm, int me, cudaStream_t stream);
  ncclComm_t enqueue_rooted(const CommunicationLaunch& launch, ncclComm_t comm, int me, int root, cudaStream_t stream);
  // Non-blocking communicators: a call inside a group may return ncclInProgress (check_queued accepts it); a call
  // outside one or a group's end that does is settled (issued) by polling the communicator until it is ready.
  static void check_queued(ncclResult_t result, const char* what);
  void issued(ncclComm_t comm, ncclResult_t result, const char* what) const;
  void settle(ncclComm_t comm, const char* what) const;  // throws RunStopped after an abort
  void wait(cudaStream_t stream, ncclComm_t comm) const;
  bool done_or_throw(cudaStream_t stream, ncclComm_t comm) const;

  std::vector<std::vector<int>> groups_;  // the plan's groups, then the world
  std::map<std::pair<int, int>, ncclComm_t> comms_;  // (group index, global rank) for local ranks
  std::atomic<bool> aborted_{false};
  // Calls that touch a communicator hold it shared; abort() (which frees them with ncclCommAbort) holds it alone,
  // so no thread enqueues on or polls a communicator that is being torn down.
  mutable std::shared_mutex comms_mutex_;
};

}  // namespace shardscope::exec::cuda
