// Where each rank of a run lives: which node, which GPU of it, and which ranks share a GPU.
// Rule (documented in README "CUDA backend"): the world splits evenly over the nodes, ranks_per_node = world /
// nnodes, and global rank = node_rank × ranks_per_node + local index (with one rank per GPU that is
// node_rank × gpus_per_node + local index, NCCL's usual numbering). On one node with fewer GPUs than ranks,
// consecutive ranks share a GPU (device = local index × gpus / ranks_per_node), so neighbours of a pipeline or a
// ring meet on one device. Several nodes need a GPU per rank: ranks that share a GPU run collectives through the
// executor's local device-memory path, which only works inside one process. Pure logic; depends on nothing.
#pragma once
#include "exec/exec_layer.h"
#include <stdexcept>
#include <string>
#include <vector>

namespace shardscope::exec {

struct RankSlot {
  int rank = 0;
  int node = 0;
  int local_index = 0;  // among the ranks of its node
  int device = 0;       // CUDA device index on its node
};

struct RankPlacement {
  int nnodes = 1;
  int ranks_per_node = 0;
  std::vector<RankSlot> ranks;  // by global rank
  bool shares_devices = false;  // some GPU holds more than one rank
  // Ranks on `device` of `node`, ascending.
  std::vector<int> ranks_on(int node, int device) const;
  bool is_local(int rank, int node_rank) const { return ranks.at(static_cast<std::size_t>(rank)).node == node_rank; }
};

// Throws std::invalid_argument when the world does not split over the nodes, a node has no GPU, or several
// nodes would need to share GPUs.
RankPlacement place_ranks(int world, int nnodes, int gpus_per_node);

// "GPU 0 (NVIDIA H100, shared by ranks 0,1: local collectives)" — the trace header's device name.
std::string device_label(const RankPlacement& placement, int rank, const std::string& gpu_name);

}  // namespace shardscope::exec
