// How the NCCL communicator (nccl_communicator.cpp) lays a collective onto NCCL's calls, free of CUDA and NCCL headers
// so tests/exec/test_cuda_host_logic.cpp checks it without a GPU: a rank's index in a group (NCCL's rank numbering
// in the group's communicator, and the group-local root of broadcast / reduce / scatter / gather), and the chunk a
// member owns of an [input, output] all-gather or reduce-scatter (plan/kernel.h).
#pragma once
#include "exec/exec_layer.h"
#include <algorithm>
#include <cstddef>
#include <stdexcept>
#include <string>
#include <vector>

#include "exec/shared_kernels/ring_chunks.h"

namespace shardscope::exec::cuda {

// The rank's position in the group's rank list: its rank in that group's communicator (ncclCommInitRank), and the
// index a group-local root or peer must be given.
inline int group_index(const std::vector<int>& group, int rank) {
  const auto it = std::find(group.begin(), group.end(), rank);
  if (it == group.end()) throw std::invalid_argument("rank " + std::to_string(rank) + " is not in the collective's group");
  return static_cast<int>(it - group.begin());
}

// Member `me`'s chunk of a whole buffer of `whole` elements (torch.tensor_split sizes, as the CPU backend), and
// whether every chunk has the same size: only then do ncclAllGather / ncclReduceScatter (count per rank) apply.
struct ChunkedLayout {
  exec::ChunkRange chunk;
  bool even = false;
};
inline ChunkedLayout chunked_layout(std::size_t whole, int members, int me) {
  if (members < 1 || me < 0 || me >= members)
    throw std::invalid_argument("member " + std::to_string(me) + " of a group of " + std::to_string(members));
  return {exec::chunk_range(whole, members, me), whole % static_cast<std::size_t>(members) == 0};
}

}  // namespace shardscope::exec::cuda
