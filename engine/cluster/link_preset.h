// Interconnect presets for the communication cost model (alpha-beta: per-hop latency, per-direction bandwidth),
// and the links a cluster of a given device uses by default. Data only; the formulas live in sim/.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "cluster/device_preset.h"

namespace shardscope {

struct LinkPreset {
  std::string name;         // "nvlink4"
  std::string description;  // "NVLink 4 (H100 SXM): 18 links × 25 GB/s"
  double gbps = 0;          // bandwidth per direction, GB/s (10^9 bytes/s), as nccl-tests reports busbw
  double latency_us = 0;    // alpha: fixed cost of one ring step / one message, microseconds
};

// The two links a collective can run over: within a node, and between nodes. A group whose ranks sit on more
// than one node (rank / gpus_per_node differs) is limited by the inter-node link.
struct ClusterLinks {
  LinkPreset intra_node;
  LinkPreset inter_node;
  int gpus_per_node = 8;
};

const std::vector<LinkPreset>& link_presets();
std::optional<LinkPreset> find_link_preset(const std::string& name);
// "pcie4, pcie5, nvlink2, ..." for messages and --help.
std::string link_preset_names();

// What a user of that device would expect: H100/H200 → NVLink 4 + InfiniBand NDR, 8 per node; A100 → NVLink 3 +
// HDR; V100 → NVLink 2 + HDR; RTX 4090 → PCIe 4 + 100 GbE, 4 per node; custom → PCIe 4 + 100 GbE.
ClusterLinks default_cluster_links(const DevicePreset& device);

}  // namespace shardscope
