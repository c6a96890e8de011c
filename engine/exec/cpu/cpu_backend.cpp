// CpuBackend: communication launches mapped onto CpuCommunicator's in-place ring collectives and rooted
// scatter / gather (a reduce-scatter's per-member form onto its reduces); host copies. 16-bit buffers travel and
// reduce as fp32 (exec/cpu/fp32_staging.h) and are rounded once at the end, as a reduction accumulating in fp32.
#include "exec/cpu/cpu_backend.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>

#include "exec/cpu/blas_gemm.h"
#include "exec/cpu/cpu_kernel_dispatch.h"
#include "exec/cpu/fp32_staging.h"
#include "exec/shared_kernels/ring_chunks.h"
#include "exec/cpu/span_checks.h"
#include "exec/member_parts.h"

namespace shardscope::exec::cpu {

namespace {

std::span<float> floats(const DeviceBuffer& buffer) {
  return {reinterpret_cast<float*>(buffer.data), buffer.float_count()};
}

const DeviceBuffer& operand(const CommunicationLaunch& launch, std::size_t index, const char* what) {
  if (index >= launch.operands.size() || !launch.operands[index].present())
    throw std::invalid_argument(collective_kind_name(launch.collective) + ": operand " + std::to_string(index) +
                                " (" + what + ") is missing");
  return launch.operands[index];
}

int member_index(const std::vector<int>& group, int rank) {
  const auto it = std::find(group.begin(), group.end(), rank);
  if (it == group.end()) throw std::invalid_argument("rank " + std::to_string(rank) + " is not in the collective's group");
  return static_cast<int>(it - group.begin());
}

void require_elements(std::size_t actual, std::size_t expected, const CommunicationLaunch& launch, const char* what) {
  if (actual != expected)
    throw std::invalid_argument(collective_kind_name(launch.collective) + ": " + what + " has " + std::to_string(actual) +
                                " elements, expected " + std::to_string(expected));
}

}  // namespace

void CpuRankBackend::run_kernel(const KernelLaunch& launch) { run_cpu_kernel(launch); }

void CpuRankBackend::run_communication(const CommunicationLaunch& launch) {
  if (!has_16_bit_operand(launch.operands)) return run_fp32_communication(launch);
  CommunicationLaunch staged = launch;
  Fp32Staging staging(staged.operands);
  run_fp32_communication(staged);
  staging.write_back();
}

void CpuRankBackend::run_fp32_communication(const CommunicationLaunch& launch) {
  if (launch.kind == OpKind::Send) return communicator_.send(rank_, launch.peer, floats(operand(launch, 0, "buffer")));
  if (launch.kind == OpKind::Recv) return communicator_.recv(rank_, launch.peer, floats(operand(launch, 0, "buffer")));
  const std::vector<int>& group = launch.group;
  // A coalesced call (plan/kernel.h): one collective per listed buffer, in order; every member lists the same.
  // operand() names a missing buffer, so an op with none fails with a message rather than doing nothing.
  auto each_buffer = [&](auto&& collective) {
    for (std::size_t k = 0; k < std::max<std::size_t>(1, launch.operands.size()); ++k)
      collective(floats(operand(launch, k, "buffer")));
  };
  switch (launch.collective) {
    case CollectiveKind::AllReduce:
      return each_buffer([&](std::span<float> buffer) { communicator_.all_reduce(group, rank_, buffer); });
    case CollectiveKind::Broadcast:
      return each_buffer([&](std::span<float> buffer) { communicator_.broadcast(group, rank_, buffer, launch.root); });
    case CollectiveKind::Reduce:
      return each_buffer([&](std::span<float> buffer) { communicator_.reduce(group, rank_, buffer, launch.root); });
    case CollectiveKind::ReduceScatter: {
      // The per-member form (plan/kernel.h): each part reduced into its member, in place, one reduce after another.
      if (reduces_into_members(launch.operands)) {
        for (const MemberPart& part : member_parts(launch.operands, group.size()))
          communicator_.reduce(group, rank_, floats(launch.operands[part.operand]), group[static_cast<std::size_t>(part.member)]);
        return;
      }
      // NCCL's out-of-place form: the input is reduced in place (left with partial sums), this rank's chunk copied out.
      const auto input = floats(operand(launch, 0, "input"));
      const auto output = floats(operand(launch, 1, "output"));
      const ChunkRange chunk = chunk_range(input.size(), static_cast<int>(group.size()), member_index(group, rank_));
      require_elements(output.size(), chunk.size, launch, "output");
      const auto reduced = communicator_.reduce_scatter(group, rank_, input);
      std::copy(reduced.begin(), reduced.end(), output.begin());
      return;
    }
    case CollectiveKind::AllGather: {
      const auto input = floats(operand(launch, 0, "input"));
      if (launch.operands.size() > 2) return all_gather_into_list(launch, input);
      const auto output = floats(operand(launch, 1, "output"));
      const ChunkRange chunk = chunk_range(output.size(), static_cast<int>(group.size()), member_index(group, rank_));
      require_elements(input.size(), chunk.size, launch, "input");
      if (input.data() != output.data() + chunk.begin) std::copy(input.begin(), input.end(), output.begin() + chunk.begin);
      return communicator_.all_gather(group, rank_, output);
    }
    case CollectiveKind::Scatter: {  // root: [input, own output-]; others: [output] (plan/kernel.h)
      const bool root = rank_ == launch.root;
      const auto input = root ? floats(operand(launch, 0, "input")) : std::span<float>{};
      const std::size_t own = root ? 1 : 0;
      const bool has_own = own < launch.operands.size() && launch.operands[own].present();
      const auto output = root && !has_own ? std::span<float>{} : floats(operand(launch, own, "output"));
      return communicator_.scatter(group, rank_, input, output, launch.root);
    }
    case CollectiveKind::Barrier:
      return communicator_.barrier(group, rank_);
    case CollectiveKind::Gather: {  // root: [own input-, output]; others: [input]
      const bool root = rank_ == launch.root;
      const bool has_own = !launch.operands.empty() && launch.operands[0].present();
      const auto input = root && !has_own ? std::span<float>{} : floats(operand(launch, 0, "input"));
      const auto output = root ? floats(operand(launch, 1, "output")) : std::span<float>{};
      return communicator_.gather(group, rank_, input, output, launch.root);
    }
  }
  throw std::invalid_argument("the CPU backend does not run " + collective_kind_name(launch.collective));
}

// All-gather into a list of outputs, one per member (plan/kernel.h): each member's output is broadcast from that
// member, as ProcessGroupNCCL runs an all_gather whose outputs cannot be flattened (a coalesced series of
// broadcasts); no staging buffer outside the tracked allocator.
void CpuRankBackend::all_gather_into_list(const CommunicationLaunch& launch, std::span<float> input) {
  const std::vector<int>& group = launch.group;
  if (launch.operands.size() != group.size() + 1)
    throw std::invalid_argument("all-gather: " + std::to_string(launch.operands.size()) +
                                " operands, expected [input, output] or [input, one output per member of " +
                                std::to_string(group.size()) + "]");
  const int me = member_index(group, rank_);
  for (std::size_t d = 0; d < group.size(); ++d)
    require_elements(floats(operand(launch, d + 1, "output")).size(), input.size(), launch, "an output");
  const auto own = floats(operand(launch, static_cast<std::size_t>(me) + 1, "output"));
  if (own.data() != input.data()) {
    if (overlaps(own, input)) throw std::invalid_argument("all-gather: the input overlaps this rank's output without being it");
    std::copy(input.begin(), input.end(), own.begin());
  }
  for (std::size_t d = 0; d < group.size(); ++d)
    communicator_.broadcast(group, rank_, floats(launch.operands[d + 1]), group[d]);
}

void CpuRankBackend::copy_from_host(const DeviceBuffer& dst, std::span<const std::byte> src) {
  if (static_cast<Bytes>(src.size()) > dst.bytes)
    throw std::invalid_argument("copy_from_host: " + std::to_string(src.size()) + " bytes into a buffer of " +
                                std::to_string(dst.bytes));
  std::memcpy(dst.data, src.data(), src.size());
}

void CpuRankBackend::copy_to_host(std::span<std::byte> dst, const DeviceBuffer& src) {
  if (static_cast<Bytes>(dst.size()) > src.bytes)
    throw std::invalid_argument("copy_to_host: " + std::to_string(dst.size()) + " bytes from a buffer of " +
                                std::to_string(src.bytes));
  std::memcpy(dst.data(), src.data, dst.size());
}

void CpuRankBackend::fill_zero(const DeviceBuffer& dst) {
  if (dst.bytes > 0) std::memset(dst.data, 0, static_cast<std::size_t>(dst.bytes));
}

CpuBackend::CpuBackend(int world_size, int blas_threads) : communicator_(world_size) {
  set_blas_thread_count(blas_threads);
  for (int r = 0; r < world_size; ++r) ranks_.push_back(std::make_unique<CpuRankBackend>(r, communicator_));
}

}  // namespace shardscope::exec::cpu
