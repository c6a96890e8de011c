// LocalCollectives: the host meeting, and each collective as device copies plus cuda_kernels.h's accumulate.
#include "exec/cuda/local_collectives.h"

#include <algorithm>

#include "exec/shared_kernels/ring_chunks.h"
#include "exec/cuda/cuda_check.h"
#include "exec/cuda/cuda_kernels.h"
#include "exec/cuda/rooted_buffers.h"
#include "exec/member_parts.h"
#include "exec/run_control.h"

namespace shardscope::exec::cuda {

namespace {

float* as_floats(const DeviceBuffer& b) { return reinterpret_cast<float*>(b.data); }

void copy(float* dst, int dst_device, const float* src, int src_device, std::size_t floats) {
  if (floats == 0 || dst == src) return;
  check_cuda(cudaMemcpyPeer(dst, dst_device, src, src_device, floats * sizeof(float)), "cudaMemcpyPeer");
}

const DeviceBuffer& operand(const std::vector<DeviceBuffer>& operands, std::size_t index, const char* what) {
  if (index >= operands.size() || !operands[index].present())
    throw std::invalid_argument(std::string("local collective: operand ") + std::to_string(index) + " (" + what +
                                ") is missing");
  return operands[index];
}

}  // namespace

LocalCollectives::~LocalCollectives() {
  for (auto& [device, buffer] : scratch_) {
    cudaSetDevice(device);
    cudaFree(buffer.first);
  }
}

void LocalCollectives::abort() {
  {
    std::lock_guard lock(mutex_);
    aborted_ = true;
  }
  changed_.notify_all();
}

float* LocalCollectives::scratch(int device, std::size_t floats) {
  auto& [data, size] = scratch_[device];
  if (size < floats) {
    check_cuda(cudaSetDevice(device), "cudaSetDevice");
    if (data) cudaFree(data);
    data = nullptr;
    size = 0;
    check_cuda(cudaMalloc(&data, floats * sizeof(float)), "cudaMalloc (local collective scratch)");
    size = floats;
  }
  return data;
}

// Sums buffer k of every member into member `into`'s buffer, in group order; others are read only.
void LocalCollectives::all_reduce(const std::vector<int>& members, Meeting& m, std::size_t k, int into) {
  const Arrival& target = m.arrived.at(into);
  const DeviceBuffer& acc = operand(target.operands, k, "buffer");
  const std::size_t n = acc.float_count();
  float* sum = as_floats(acc);
  for (int rank : members) {
    if (rank == into) continue;
    const Arrival& other = m.arrived.at(rank);
    const DeviceBuffer& src = operand(other.operands, k, "buffer");
    if (src.float_count() != n) throw std::invalid_argument("local collective: members' buffers differ in size");
    const float* from = as_floats(src);
    if (other.device != target.device) {
      float* staged = scratch(target.device, n);
      copy(staged, target.device, from, other.device, n);
      from = staged;
    }
    check_cuda(cudaSetDevice(target.device), "cudaSetDevice");
    launch_accumulate(sum, from, n, nullptr);
    check_cuda(cudaStreamSynchronize(nullptr), "local reduction");
  }
}

void LocalCollectives::perform(const CommunicationLaunch& l, const std::vector<int>& members, Meeting& m) {
  if (l.kind == OpKind::Send || l.kind == OpKind::Recv) {
    const Arrival& sender = m.arrived.at(members[0]);
    const Arrival& receiver = m.arrived.at(members[1]);
    const DeviceBuffer& src = operand(sender.operands, 0, "buffer");
    const DeviceBuffer& dst = operand(receiver.operands, 0, "buffer");
    if (src.bytes != dst.bytes) throw std::invalid_argument("send / recv: the buffers differ in size");
    return copy(as_floats(dst), receiver.device, as_floats(src), sender.device, dst.float_count());
  }
  const int first = members.front();
  const auto count = static_cast<int>(members.size());
  switch (l.collective) {
    case CollectiveKind::AllReduce:
      for (std::size_t k = 0; k < std::max<std::size_t>(1, l.operands.size()); ++k) {
        all_reduce(members, m, k, first);
        const Arrival& from = m.arrived.at(first);
        for (int rank : members) {
          const Arrival& to = m.arrived.at(rank);
          copy(as_floats(to.operands[k]), to.device, as_floats(from.operands[k]), from.device,
               from.operands[k].float_count());
        }
      }
      return;
    case CollectiveKind::Reduce:
      for (std::size_t k = 0; k < std::max<std::size_t>(1, l.operands.size()); ++k) all_reduce(members, m, k, l.root);
      return;
    case CollectiveKind::Broadcast:
      for (std::size_t k = 0; k < std::max<std::size_t>(1, l.operands.size()); ++k) {
        const Arrival& from = m.arrived.at(l.root);
        const DeviceBuffer& src = operand(from.operands, k, "buffer");
        for (int rank : members) {
          const Arrival& to = m.arrived.at(rank);
          copy(as_floats(operand(to.operands, k, "buffer")), to.device, as_floats(src), from.device, src.float_count());
        }
      }
      return;
    case CollectiveKind::ReduceScatter: {
      // The per-member form (plan/kernel.h): each part summed into the member it is listed under, in place.
      if (reduces_into_members(m.arrived.at(first).operands)) {
        for (const MemberPart& part : member_parts(m.arrived.at(first).operands, members.size()))
          all_reduce(members, m, part.operand, members[static_cast<std::size_t>(part.member)]);
        return;
      }
      // Inputs summed into the first member's input (left with the sum, as the CPU backend leaves partial sums),
      // then every member's chunk copied out of it.
      all_reduce(members, m, 0, first);
      const Arrival& from = m.arrived.at(first);
      const DeviceBuffer& sum = from.operands[0];
      for (int i = 0; i < count; ++i) {
        const Arrival& to = m.arrived.at(members[static_cast<std::size_t>(i)]);
        const exec::ChunkRange chunk = exec::chunk_range(sum.float_count(), count, i);
        const DeviceBuffer& out = operand(to.operands, 1, "output");
        if (out.float_count() != chunk.size) throw std::invalid_argument("reduce-scatter: output size does not match");
        copy(as_floats(out), to.device, as_floats(sum) + chunk.begin, from.device, chunk.size);
      }
      return;
    }
    case CollectiveKind::AllGather: {
      if (l.operands.size() > 2) {  // [input, output per member]: member i's input into every member's output i
        for (int i = 0; i < count; ++i) {
          const Arrival& from = m.arrived.at(members[static_cast<std::size_t>(i)]);
          const DeviceBuffer& in = operand(from.operands, 0, "input");
          for (int rank : members) {
            const Arrival& to = m.arrived.at(rank);
            if (to.operands.size() != members.size() + 1)
              throw std::invalid_argument("all-gather: expected one output per member");
            const DeviceBuffer& out = operand(to.operands, static_cast<std::size_t>(i) + 1, "output");
            if (out.bytes != in.bytes) throw std::invalid_argument("all-gather: an output is not the input's size");
            copy(as_floats(out), to.device, as_floats(in), from.device, in.float_count());
          }
        }
        return;
      }
      for (int i = 0; i < count; ++i) {  // each member's input into every member's output
        const Arrival& from = m.arrived.at(members[static_cast<std::size_t>(i)]);
        const DeviceBuffer& in = operand(from.operands, 0, "input");
        for (int rank : members) {
          const Arrival& to = m.arrived.at(rank);
          const DeviceBuffer& out = operand(to.operands, 1, "output");
          const exec::ChunkRange chunk = exec::chunk_range(out.float_count(), count, i);
          if (in.float_count() != chunk.size) throw std::invalid_argument("all-gather: input size does not match");
          copy(as_floats(out) + chunk.begin, to.device, as_floats(in), from.device, chunk.size);
        }
      }
      return;
    }
    case CollectiveKind::Barrier:  // meeting here was the whole of it
      return;
    case CollectiveKind::Scatter:
    case CollectiveKind::Gather: {
      // Member k's part of the root's buffer starts after the parts of members 0..k-1 (group order); the root's
      // own part may be a view of its buffer, then left as it is (exec/cpu/cpu_communicator.h).
      const bool scatter = l.collective == CollectiveKind::Scatter;
      const Arrival& root = m.arrived.at(l.root);
      CommunicationLaunch as_root = l;
      as_root.operands = root.operands;
      const DeviceBuffer whole = rooted_buffers(as_root, true).root_buffer;
      std::size_t offset = 0;
      for (int rank : members) {
        const Arrival& member = m.arrived.at(rank);
        CommunicationLaunch as_member = l;
        as_member.operands = member.operands;
        const DeviceBuffer part = rooted_buffers(as_member, rank == l.root).part;
        const std::size_t n = part.float_count();
        if (offset + n > whole.float_count())
          throw std::invalid_argument(collective_kind_name(l.collective) + ": the members' parts exceed the root's buffer");
        float* in_root = as_floats(whole) + offset;
        if (scatter) {
          copy(as_floats(part), member.device, in_root, root.device, n);
        } else {
          copy(in_root, root.device, as_floats(part), member.device, n);
        }
        offset += n;
      }
      if (offset != whole.float_count())
        throw std::invalid_argument(collective_kind_name(l.collective) + ": the members' parts (" +
                                    std::to_string(offset) + " elements) do not add up to the root's buffer (" +
                                    std::to_string(whole.float_count()) + ")");
      return;
    }
  }
  throw std::invalid_argument("the CUDA backend does not run " + collective_kind_name(l.collective));
}

bool LocalCollectives::run(const CommunicationLaunch& l, int rank, int device, cudaStream_t stream, EventTimer*) {
  // The caller's stream holds nothing pending (every kernel is synchronised), but wait anyway: the buffers must be
  // final before another thread copies them.
  check_cuda(cudaSetDevice(device), "cudaSetDevice");
  check_cuda(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  const bool message = l.kind == OpKind::Send || l.kind == OpKind::Recv;
  const std::vector<int> members = message ? (l.kind == OpKind::Send ? std::vector<int>{rank, l.peer}
                                                                     : std::vector<int>{l.peer, rank})
                                           : l.group;
  std::vector<int> key_group = members;
  if (message) key_group.push_back(-1);  // keeps messages apart from a two-rank group's collectives
  std::unique_lock lock(mutex_);
  if (aborted_) throw RunStopped();
  const long sequence = sequence_[{key_group, rank}]++;
  const Key key{key_group, sequence};
  Meeting& meeting = meetings_[key];
  meeting.arrived[rank] = Arrival{device, l.operands};
  if (meeting.arrived.size() == members.size()) {
    try {
      perform(l, members, meeting);
      // cudaMemcpyPeer returns before the copy is done (it is ordered with each device's legacy default stream
      // only): wait on every member's device before the members, whose streams are non-blocking, go on.
      for (const auto& [member, arrival] : meeting.arrived) {
        check_cuda(cudaSetDevice(arrival.device), "cudaSetDevice");
        check_cuda(cudaStreamSynchronize(nullptr), "local collective copies");
      }
    } catch (const std::exception& e) {
      meeting.error = e.what();
    }
    meeting.done = true;
    changed_.notify_all();
  } else {
    changed_.wait(lock, [&] { return meeting.done || aborted_; });
  }
  const bool done = meeting.done;
  const std::string error = meeting.error;
  if (++meeting.leaving == static_cast<int>(members.size()) || !done) {
    if (done) meetings_.erase(key);
  }
  if (!done) throw RunStopped();
  if (!error.empty()) throw std::runtime_error(error);
  return false;  // spread over the members' devices and met on the host: the host's time is the op's time
}

}  // namespace shardscope::exec::cuda
