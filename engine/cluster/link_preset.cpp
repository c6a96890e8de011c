// The interconnect preset table. Bandwidths are the per-direction datasheet figures (PCIe: 16 / 32 GT/s × 16
// lanes, 128b/130b coding; NVLink: links × 25 GB/s per direction; InfiniBand / Ethernet: line rate / 8).
// Latencies are per-hop orders of magnitude, chosen so that small-message ring all-reduces come out near what
// nccl-tests prints on such systems; they are meant to be overridden (simulation.link_latency_us).
#include "cluster/link_preset.h"

namespace shardscope {

const std::vector<LinkPreset>& link_presets() {
  static const std::vector<LinkPreset> presets = {
      {"pcie4", "PCIe 4.0 x16", 31.5, 2.0},
      {"pcie5", "PCIe 5.0 x16", 63.0, 2.0},
      {"nvlink2", "NVLink 2 (V100 SXM2): 6 links × 25 GB/s", 150.0, 1.0},
      {"nvlink3", "NVLink 3 (A100 SXM4): 12 links × 25 GB/s", 300.0, 1.0},
      {"nvlink4", "NVLink 4 (H100 SXM5): 18 links × 25 GB/s", 450.0, 1.0},
      {"ib-hdr", "InfiniBand HDR, 200 Gb/s per GPU", 25.0, 5.0},
      {"ib-ndr", "InfiniBand NDR, 400 Gb/s per GPU", 50.0, 5.0},
      {"ethernet", "100 Gb Ethernet (TCP sockets)", 12.5, 20.0},
  };
  return presets;
}

std::optional<LinkPreset> find_link_preset(const std::string& name) {
  for (const auto& preset : link_presets())
    if (preset.name == name) return preset;
  return std::nullopt;
}

std::string link_preset_names() {
  std::string names;
  for (const auto& preset : link_presets()) names += (names.empty() ? "" : ", ") + preset.name;
  return names;
}

ClusterLinks default_cluster_links(const DevicePreset& device) {
  auto pair = [](const char* intra, const char* inter, int per_node) {
    return ClusterLinks{*find_link_preset(intra), *find_link_preset(inter), per_node};
  };
  if (device.gpu_arch == "sm90") return pair("nvlink4", "ib-ndr", 8);
  if (device.gpu_arch == "sm70") return pair("nvlink2", "ib-hdr", 8);
  if (device.name.rfind("A100", 0) == 0) return pair("nvlink3", "ib-hdr", 8);
  if (device.name.rfind("RTX", 0) == 0) return pair("pcie4", "ethernet", 4);
  return pair("pcie4", "ethernet", 8);
}

}  // namespace shardscope
