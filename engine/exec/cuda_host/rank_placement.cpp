// place_ranks: the global-rank numbering and GPU sharing rules of rank_placement.h.
#include "exec/cuda_host/rank_placement.h"

namespace shardscope::exec {

std::vector<int> RankPlacement::ranks_on(int node, int device) const {
  std::vector<int> found;
  for (const RankSlot& slot : ranks)
    if (slot.node == node && slot.device == device) found.push_back(slot.rank);
  return found;
}

RankPlacement place_ranks(int world, int nnodes, int gpus_per_node) {
  if (world < 1) throw std::invalid_argument("the world needs at least one rank");
  if (nnodes < 1) throw std::invalid_argument("--nnodes must be at least 1");
  if (gpus_per_node < 1) throw std::invalid_argument("no usable CUDA GPU on this node");
  if (world % nnodes != 0)
    throw std::invalid_argument("the world (" + std::to_string(world) + " ranks) does not split evenly over " +
                                std::to_string(nnodes) + " nodes");
  RankPlacement placement;
  placement.nnodes = nnodes;
  placement.ranks_per_node = world / nnodes;
  if (nnodes > 1 && placement.ranks_per_node > gpus_per_node)
    throw std::invalid_argument(std::to_string(placement.ranks_per_node) + " ranks per node but " +
                                std::to_string(gpus_per_node) +
                                " GPUs: across nodes every rank needs its own GPU (NCCL 2.28 refuses two ranks on "
                                "one GPU, and the local path for shared GPUs works inside one process only)");
  const int per_node = placement.ranks_per_node;
  for (int rank = 0; rank < world; ++rank) {
    const int local = rank % per_node;
    // One rank per GPU when there are enough; otherwise consecutive ranks share (floor(local × gpus / ranks)).
    const int device = per_node <= gpus_per_node ? local : local * gpus_per_node / per_node;
    placement.ranks.push_back({rank, rank / per_node, local, device});
  }
  placement.shares_devices = per_node > gpus_per_node;
  return placement;
}

std::string device_label(const RankPlacement& placement, int rank, const std::string& gpu_name) {
  const RankSlot& slot = placement.ranks.at(static_cast<std::size_t>(rank));
  std::string label = "GPU " + std::to_string(slot.device);
  if (placement.nnodes > 1) label = "node " + std::to_string(slot.node) + " " + label;
  label += " (" + gpu_name;
  const std::vector<int> sharing = placement.ranks_on(slot.node, slot.device);
  if (sharing.size() > 1) {
    label += ", shared by ranks ";
    for (std::size_t i = 0; i < sharing.size(); ++i) label += (i ? "," : "") + std::to_string(sharing[i]);
    label += ": local collectives";
  }
  return label + ")";
}

}  // namespace shardscope::exec
