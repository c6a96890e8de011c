// NcclCommunicator: id exchange, communicator set-up, collectives mapped onto NCCL calls, abort-aware waits.
#include "exec/cuda/nccl_communicator.h"

#include <algorithm>
#include <cstring>
#include <thread>

#include "exec/cuda/collective_layout.h"
#include "exec/cuda/cuda_check.h"
#include "exec/cuda/rooted_buffers.h"
#include "exec/cuda_host/tcp_rendezvous.h"
#include "exec/member_parts.h"
#include "exec/run_control.h"

namespace shardscope::exec::cuda {

namespace {

// collective_layout.h, unit-tested without a GPU.
int index_in(const std::vector<int>& group, int rank) { return group_index(group, rank); }

// Node 0 makes one unique id per communicator; the other nodes fetch them (raw ncclUniqueId bytes, in order) with
// the job token. Node 0 listens on the --master address itself, not on every interface.
std::vector<ncclUniqueId> unique_ids(std::size_t count, const MultiNodeOptions& multinode, int gpus_per_node) {
  std::vector<ncclUniqueId> ids(count);
  JoinSettings settings;
  settings.token = multinode.token;
  settings.timeout = multinode.join_timeout;
  if (multinode.node_rank == 0) {
    for (auto& id : ids) check_nccl(ncclGetUniqueId(&id), "ncclGetUniqueId");
    if (multinode.nnodes > 1) {
      std::vector<std::byte> payload(count * sizeof(ncclUniqueId));
      std::memcpy(payload.data(), ids.data(), payload.size());
      RendezvousServer server(master_listen_endpoint(multinode.master, multinode.nnodes));
      server.serve(multinode.nnodes, gpus_per_node, payload, settings);
    }
    return ids;
  }
  const std::vector<std::byte> payload = fetch_from_master(parse_endpoint(multinode.master),
                                                           {multinode.node_rank, gpus_per_node}, settings);
  if (payload.size() != count * sizeof(ncclUniqueId))
    throw RendezvousError("the master sent " + std::to_string(payload.size()) + " bytes of NCCL ids, expected " +
                          std::to_string(count * sizeof(ncclUniqueId)) + " (do all nodes run the same scenario?)");
  std::memcpy(ids.data(), payload.data(), payload.size());
  return ids;
}

}  // namespace

NcclCommunicator::NcclCommunicator(const std::vector<std::vector<int>>& groups, const RankPlacement& placement,
                                   const MultiNodeOptions& multinode, int gpus_per_node)
    : groups_(groups) {
  std::vector<int> world(placement.ranks.size());
  for (std::size_t r = 0; r < world.size(); ++r) world[r] = static_cast<int>(r);
  groups_.push_back(world);
  const std::vector<ncclUniqueId> ids = unique_ids(groups_.size(), multinode, gpus_per_node);
  for (std::size_t g = 0; g < groups_.size(); ++g) {
    const std::vector<int>& members = groups_[g];
    std::vector<int> local;
    for (int rank : members)
      if (placement.is_local(rank, multinode.node_rank)) local.push_back(rank);
    if (local.empty()) continue;  // a group of other nodes only: every node walks the groups in the same order
    // Non-blocking communicators (ncclConfig_t::blocking = 0): no NCCL call ever blocks this process's threads, so
    // abort() can always take the communicators back (ncclCommAbort) and no thread stays stuck in a call waiting
    // for a peer that failed. Every call may return ncclInProgress: issued() / settle() then poll the
    // communicator's state (NCCL docs, "Communicator creation" and "Fault tolerance").
    check_nccl(ncclGroupStart(), "ncclGroupStart");
    std::vector<ncclComm_t> created;
    for (int rank : local) {
      check_cuda(cudaSetDevice(placement.ranks[static_cast<std::size_t>(rank)].device), "cudaSetDevice");
      ncclComm_t comm = nullptr;
      ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
      config.blocking = 0;
      check_queued(ncclCommInitRankConfig(&comm, static_cast<int>(members.size()), ids[g], index_in(members, rank), &config),
                   "ncclCommInitRankConfig");
      comms_[{static_cast<int>(g), rank}] = comm;
      created.push_back(comm);
    }
    check_queued(ncclGroupEnd(), "ncclGroupEnd (communicator set-up)");
    for (ncclComm_t comm : created) settle(comm, "ncclCommInitRankConfig");
  }
}

NcclCommunicator::~NcclCommunicator() {
  std::unique_lock lock(comms_mutex_);  // after abort() there is nothing left here
  // NCCL docs ("Destroying a communicator"): one thread managing several ranks of a communicator finalizes them
  // inside one group, then destroys them; ncclCommDestroy alone would finalize them one by one and could wait on
  // the peers this same thread has not reached yet.
  // Non-blocking: Finalize returns at once (ncclInProgress); a communicator that has not settled within the
  // deadline (a peer that never finalizes) is aborted instead of destroyed, so tearing down never hangs.
  bool finalized = true;
  for (std::size_t g = 0; g < groups_.size(); ++g) {
    ncclGroupStart();
    for (auto& [key, comm] : comms_)
      if (key.first == static_cast<int>(g)) ncclCommFinalize(comm);
    ncclGroupEnd();
  }
  const auto deadline = std::chrono::steady_clock::now() + kFinalizeTimeout;
  for (auto& [key, comm] : comms_) {
    ncclResult_t state = ncclInProgress;
    while (ncclCommGetAsyncError(comm, &state) == ncclSuccess && state == ncclInProgress &&
           std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    if (state != ncclSuccess) finalized = false;
  }
  for (auto& [key, comm] : comms_) finalized ? ncclCommDestroy(comm) : ncclCommAbort(comm);
}

void NcclCommunicator::check_queued(ncclResult_t result, const char* what) {
  if (result != ncclInProgress) check_nccl(result, what);
}

void NcclCommunicator::issued(ncclComm_t comm, ncclResult_t result, const char* what) const {
  if (result == ncclInProgress) {
    settle(comm, what);
    return;
  }
  check_nccl(result, what);
}

void NcclCommunicator::settle(ncclComm_t comm, const char* what) const {
  for (;;) {
    if (aborted_) throw RunStopped();
    ncclResult_t state = ncclInProgress;
    check_nccl(ncclCommGetAsyncError(comm, &state), "ncclCommGetAsyncError");
    if (state != ncclInProgress) return check_nccl(state, what);
    std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
}

void NcclCommunicator::abort() {
  aborted_ = true;  // first, so that waiting threads stop polling and release the shared lock
  std::unique_lock lock(comms_mutex_);
  // ncclCommAbort may be called from another thread while a rank waits on the communicator: it makes the pending
  // kernels return, and the waiting thread sees aborted_ (NCCL docs, "Fault tolerance").
  for (auto& [key, comm] : comms_) ncclCommAbort(comm);
  comms_.clear();  // comm_for() now throws RunStopped
}

ncclComm_t NcclCommunicator::comm_for(const std::vector<int>& group, int rank) const {
  for (std::size_t g = 0; g < groups_.size(); ++g) {
    if (groups_[g] != group) continue;
    const auto it = comms_.find({static_cast<int>(g), rank});
    if (it != comms_.end()) return it->second;
  }
  if (aborted_) throw RunStopped();
  throw std::invalid_argument("no NCCL communicator for rank " + std::to_string(rank) + " in this group");
}

void NcclCommunicator::wait(cudaStream_t stream, ncclComm_t comm) const {
  // Poll rather than cudaStreamSynchronize, so an abort (another rank failed) or an NCCL error ends the wait.
  for (;;) {
    {
      std::shared_lock lock(comms_mutex_);
      if (done_or_throw(stream, comm)) return;
    }
    std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
}

// One poll, with the communicators held shared by the caller: done, not yet, or an exception (RunStopped after an
// abort, before the communicator is touched; an NCCL or CUDA error).
bool NcclCommunicator::done_or_throw(cudaStream_t stream, ncclComm_t comm) const {
  if (aborted_) throw RunStopped();
  const cudaError_t state = cudaStreamQuery(stream);
  if (state == cudaSuccess) return true;
  if (state != cudaErrorNotReady) check_cuda(state, "NCCL collective");
  cudaGetLastError();  // "not ready" is no failure: clear it, as c10::cuda::CUDAStream::query does
  ncclResult_t async = ncclSuccess;
  if (ncclCommGetAsyncError(comm, &async) == ncclSuccess && async != ncclSuccess && async != ncclInProgress)
    check_nccl(async, "NCCL collective (asynchronous error)");
  return false;
}

bool NcclCommunicator::run(const CommunicationLaunch& l, int rank, int device, cudaStream_t stream, EventTimer* timer) {
  check_cuda(cudaSetDevice(device), "cudaSetDevice");
  ncclComm_t comm = nullptr;
  {
    std::shared_lock lock(comms_mutex_);  // released before wait(), which takes it per poll
    if (aborted_) throw RunStopped();
    if (timer) timer->start(stream);
    comm = enqueue(l, rank, stream);
    if (timer) timer->stop(stream);
  }
  wait(stream, comm);
  return timer != nullptr;
}

// Queues the launch's NCCL calls (and copies) on `stream`; returns the communicator to wait on.
ncclComm_t NcclCommunicator::enqueue(const CommunicationLaunch& l, int rank, cudaStream_t stream) {
  auto buffer = [&](std::size_t index, const char* what) -> const DeviceBuffer& {
    if (index >= l.operands.size() || !l.operands[index].present())
      throw std::invalid_argument(collective_kind_name(l.collective) + ": operand " + std::to_string(index) + " (" +
                                  what + ") is missing");
    return l.operands[index];
  };
  if (l.kind == OpKind::Send || l.kind == OpKind::Recv) {
    ncclComm_t world = comm_for(groups_.back(), rank);
    const DeviceBuffer& b = buffer(0, "buffer");
    if (l.kind == OpKind::Send) {
      issued(world, ncclSend(b.data, b.float_count(), ncclFloat, l.peer, world, stream), "ncclSend");
    } else {
      issued(world, ncclRecv(b.data, b.float_count(), ncclFloat, l.peer, world, stream), "ncclRecv");
    }
    return world;
  }
  ncclComm_t comm = comm_for(l.group, rank);
  const int members = static_cast<int>(l.group.size());
  const int me = index_in(l.group, rank);
  switch (l.collective) {
    case CollectiveKind::AllReduce:
    case CollectiveKind::Broadcast:
    case CollectiveKind::Reduce: {
      // A coalesced call (plan/kernel.h): one collective per listed buffer, fused by an NCCL group.
      const int root = l.collective == CollectiveKind::AllReduce ? 0 : index_in(l.group, l.root);
      check_nccl(ncclGroupStart(), "ncclGroupStart");
      for (std::size_t k = 0; k < std::max<std::size_t>(1, l.operands.size()); ++k) {
        const DeviceBuffer& b = buffer(k, "buffer");
        if (l.collective == CollectiveKind::AllReduce)
          check_queued(ncclAllReduce(b.data, b.data, b.float_count(), ncclFloat, ncclSum, comm, stream), "ncclAllReduce");
        else if (l.collective == CollectiveKind::Broadcast)
          check_queued(ncclBroadcast(b.data, b.data, b.float_count(), ncclFloat, root, comm, stream), "ncclBroadcast");
        else
          check_queued(ncclReduce(b.data, b.data, b.float_count(), ncclFloat, ncclSum, root, comm, stream), "ncclReduce");
      }
      issued(comm, ncclGroupEnd(), "ncclGroupEnd");
      return comm;
    }
    case CollectiveKind::ReduceScatter: {
      // The per-member form (plan/kernel.h): one in-place ncclReduce per part, rooted at its member, fused by a group.
      if (reduces_into_members(l.operands)) {
        const std::vector<MemberPart> parts = member_parts(l.operands, l.group.size());  // may throw: before the group
        check_nccl(ncclGroupStart(), "ncclGroupStart");
        for (const MemberPart& part : parts) {
          const DeviceBuffer& b = l.operands[part.operand];
          check_queued(ncclReduce(b.data, b.data, b.float_count(), ncclFloat, ncclSum, part.member, comm, stream), "ncclReduce");
        }
        issued(comm, ncclGroupEnd(), "ncclGroupEnd");
        return comm;
      }
      const DeviceBuffer& input = buffer(0, "input");
      const DeviceBuffer& output = buffer(1, "output");
      const std::size_t count = input.float_count();
      const ChunkedLayout layout = chunked_layout(count, members, me);
      const exec::ChunkRange chunk = layout.chunk;
      if (output.float_count() != chunk.size)
        throw std::invalid_argument("reduce-scatter: output has " + std::to_string(output.float_count()) +
                                    " elements, expected " + std::to_string(chunk.size));
      auto* in = reinterpret_cast<float*>(input.data);
      if (layout.even) {
        issued(comm, ncclReduceScatter(in, output.data, chunk.size, ncclFloat, ncclSum, comm, stream), "ncclReduceScatter");
        return comm;
      }
      // Uneven chunks (torch.tensor_split sizes), which ncclReduceScatter (one count per rank) cannot express: one
      // ncclReduce per member's chunk, rooted at that member, fused by a group — what ProcessGroupNCCL does for
      // uneven reduce_scatter inputs. Each chunk crosses the ring once, as in a reduce-scatter, and only its owner
      // receives it (into the output; in place when the output is that chunk of the input).
      check_nccl(ncclGroupStart(), "ncclGroupStart");
      for (int member = 0; member < members; ++member) {
        const exec::ChunkRange part = chunked_layout(count, members, member).chunk;
        if (part.size == 0) continue;  // every member skips the same empty chunks
        void* into = member == me ? output.data : static_cast<void*>(in + part.begin);
        check_queued(ncclReduce(in + part.begin, into, part.size, ncclFloat, ncclSum, member, comm, stream), "ncclReduce");
      }
      issued(comm, ncclGroupEnd(), "ncclGroupEnd");
      return comm;
    }
    case CollectiveKind::AllGather: {
      if (l.operands.size() > 2) return enqueue_gather_into_list(l, comm, me, stream);
      const DeviceBuffer& input = buffer(0, "input");
      const DeviceBuffer& output = buffer(1, "output");
      const std::size_t count = output.float_count();
      const ChunkedLayout layout = chunked_layout(count, members, me);
      const exec::ChunkRange chunk = layout.chunk;
      if (input.float_count() != chunk.size)
        throw std::invalid_argument("all-gather: input has " + std::to_string(input.float_count()) +
                                    " elements, expected " + std::to_string(chunk.size));
      auto* out = reinterpret_cast<float*>(output.data);
      if (layout.even) {
        issued(comm, ncclAllGather(input.data, out, chunk.size, ncclFloat, comm, stream), "ncclAllGather");
        return comm;
      }
      // Uneven chunks: one ncclBroadcast per member's chunk, rooted at that member, fused by a group (how
      // ProcessGroupNCCL gathers uneven all_gather outputs). The root sends from its input (in place when the input
      // is its chunk of the output); everyone receives into the chunk's place in the output.
      check_nccl(ncclGroupStart(), "ncclGroupStart");
      for (int member = 0; member < members; ++member) {
        const exec::ChunkRange part = chunked_layout(count, members, member).chunk;
        if (part.size == 0) continue;
        const void* from = member == me ? static_cast<const void*>(input.data) : static_cast<const void*>(out + part.begin);
        check_queued(ncclBroadcast(from, out + part.begin, part.size, ncclFloat, member, comm, stream), "ncclBroadcast");
      }
      issued(comm, ncclGroupEnd(), "ncclGroupEnd");
      return comm;
    }
    case CollectiveKind::Scatter:
    case CollectiveKind::Gather:
      return enqueue_rooted(l, comm, me, index_in(l.group, l.root), stream);
    case CollectiveKind::Barrier: {
      // NCCL has no barrier: a one-element all-reduce on a scratch word (stream-ordered, outside the tracked
      // allocator, as enqueue_rooted's sizes) that run() waits on, so no member goes on before all have arrived.
      float* word = nullptr;
      check_cuda(cudaMallocAsync(reinterpret_cast<void**>(&word), sizeof(float), stream), "cudaMallocAsync (barrier)");
      issued(comm, ncclAllReduce(word, word, 1, ncclFloat, ncclSum, comm, stream), "ncclAllReduce (barrier)");
      check_cuda(cudaFreeAsync(word, stream), "cudaFreeAsync (barrier)");
      return comm;
    }
  }
  throw std::invalid_argument("the CUDA backend does not run " + collective_kind_name(l.collective));
}

}  // namespace shardscope::exec::cuda

namespace shardscope::exec::cuda {

// Scatter / gather with per-member sizes (NCCL has neither): every member's part size is all-gathered first (the root
// does not know them), then point-to-point sends and receives between the root and each member, grouped. The
// root's own part is a device copy, skipped when it is a view of the root's buffer. Waits for the sizes on the host.
ncclComm_t NcclCommunicator::enqueue_rooted(const CommunicationLaunch& l, ncclComm_t comm, int me, int root,
                                            cudaStream_t stream) {
  const bool scatter = l.collective == CollectiveKind::Scatter;
  const RootedBuffers buffers = rooted_buffers(l, me == root);
  const auto members = static_cast<int>(l.group.size());
  std::vector<std::int64_t> sizes(static_cast<std::size_t>(members));
  std::int64_t* device_sizes = nullptr;
  check_cuda(cudaMallocAsync(reinterpret_cast<void**>(&device_sizes), sizes.size() * sizeof(std::int64_t), stream),
             "cudaMallocAsync (scatter / gather sizes)");
  const auto own = static_cast<std::int64_t>(buffers.part.float_count());
  check_cuda(cudaMemcpyAsync(device_sizes + me, &own, sizeof own, cudaMemcpyHostToDevice, stream), "cudaMemcpyAsync");
  issued(comm, ncclAllGather(device_sizes + me, device_sizes, 1, ncclInt64, comm, stream), "ncclAllGather (sizes)");
  // Not cudaStreamSynchronize: the shared lock is held, and an abort must be able to end this wait.
  while (!done_or_throw(stream, comm)) std::this_thread::sleep_for(std::chrono::microseconds(20));
  // Only now the copy to the host: a copy into pageable memory returns only once it is done, so queued behind the
  // all-gather it would block here, under the shared lock, past an abort (abort() waits for that lock).
  check_cuda(cudaMemcpyAsync(sizes.data(), device_sizes, sizes.size() * sizeof(std::int64_t), cudaMemcpyDeviceToHost,
                             stream), "cudaMemcpyAsync");
  check_cuda(cudaFreeAsync(device_sizes, stream), "cudaFreeAsync");
  auto* part = reinterpret_cast<float*>(buffers.part.data);
  if (me != root) {
    const auto count = static_cast<std::size_t>(own);
    if (count == 0) return comm;
    if (scatter) {
      issued(comm, ncclRecv(part, count, ncclFloat, root, comm, stream), "ncclRecv (scatter)");
    } else {
      issued(comm, ncclSend(part, count, ncclFloat, root, comm, stream), "ncclSend (gather)");
    }
    return comm;
  }
  auto* whole = reinterpret_cast<float*>(buffers.root_buffer.data);
  std::size_t total = 0;
  for (std::int64_t size : sizes) total += static_cast<std::size_t>(size);
  if (total != buffers.root_buffer.float_count())
    throw std::invalid_argument(collective_kind_name(l.collective) + ": the members' parts (" + std::to_string(total) +
                                " elements) do not add up to the root's buffer (" +
                                std::to_string(buffers.root_buffer.float_count()) + ")");
  check_nccl(ncclGroupStart(), "ncclGroupStart");
  std::size_t offset = 0;
  for (int i = 0; i < members; ++i) {
    const auto count = static_cast<std::size_t>(sizes[static_cast<std::size_t>(i)]);
    float* in_root = whole + offset;
    offset += count;
    if (count == 0) continue;
    if (i == me) {
      if (in_root == part) continue;  // the root's chunk is a view of its buffer (DataParallel's chunk 0)
      check_cuda(cudaMemcpyAsync(scatter ? part : in_root, scatter ? in_root : part, count * sizeof(float),
                                 cudaMemcpyDeviceToDevice, stream), "cudaMemcpyAsync");
    } else if (scatter) {
      check_queued(ncclSend(in_root, count, ncclFloat, i, comm, stream), "ncclSend (scatter)");
    } else {
      check_queued(ncclRecv(in_root, count, ncclFloat, i, comm, stream), "ncclRecv (gather)");
    }
  }
  issued(comm, ncclGroupEnd(), "ncclGroupEnd");
  return comm;
}

}  // namespace shardscope::exec::cuda

namespace shardscope::exec::cuda {

// All-gather into a list of outputs, one per member (plan/kernel.h): a grouped series of broadcasts, member d's
// output broadcast from member d, as ProcessGroupNCCL runs an all_gather whose outputs cannot be flattened.
ncclComm_t NcclCommunicator::enqueue_gather_into_list(const CommunicationLaunch& l, ncclComm_t comm, int me,
                                                      cudaStream_t stream) {
  if (l.operands.size() != l.group.size() + 1)
    throw std::invalid_argument("all-gather: " + std::to_string(l.operands.size()) +
                                " operands, expected [input, output] or [input, one output per member of " +
                                std::to_string(l.group.size()) + "]");
  const DeviceBuffer& input = l.operands[0];
  for (const DeviceBuffer& output : l.operands)
    if (!output.present() || output.bytes != input.bytes)
      throw std::invalid_argument("all-gather: every output must be present and the input's size");
  const DeviceBuffer& own = l.operands[static_cast<std::size_t>(me) + 1];
  if (own.data != input.data)
    check_cuda(cudaMemcpyAsync(own.data, input.data, static_cast<std::size_t>(input.bytes), cudaMemcpyDeviceToDevice,
                               stream), "cudaMemcpyAsync");
  check_nccl(ncclGroupStart(), "ncclGroupStart");
  for (std::size_t d = 0; d < l.group.size(); ++d) {
    const DeviceBuffer& output = l.operands[d + 1];
    check_queued(ncclBroadcast(output.data, output.data, output.float_count(), ncclFloat, static_cast<int>(d), comm, stream),
               "ncclBroadcast (all-gather into a list)");
  }
  issued(comm, ncclGroupEnd(), "ncclGroupEnd");
  return comm;
}

}  // namespace shardscope::exec::cuda
