// The device preset table. Capacities are the totals nvidia-smi prints (MiB) for each board;
// peak rates are the vendors' datasheet figures (dense, no sparsity); multiprocessor counts and threads per
// multiprocessor are the boards' cudaDeviceProp values (CUDA programming guide, compute capability tables).
#include "cluster/device_preset.h"

namespace shardscope {

const std::vector<DevicePreset>& device_presets() {
  static const std::vector<DevicePreset> presets = {
      {"V100-16", "NVIDIA V100 SXM2 16 GB", 16160 * kMiB, "sm70", 15.7, 125, 900, 80, 2048},
      {"V100-32", "NVIDIA V100 SXM2 32 GB", 32510 * kMiB, "sm70", 15.7, 125, 900, 80, 2048},
      {"A100-40", "NVIDIA A100 SXM4 40 GB", 40960 * kMiB, "sm80", 19.5, 312, 1555, 108, 2048},
      {"A100-80", "NVIDIA A100 SXM4 80 GB", 81920 * kMiB, "sm80", 19.5, 312, 2039, 108, 2048},
      {"H100-80", "NVIDIA H100 SXM5 80 GB", 81559 * kMiB, "sm90", 67, 989, 3350, 132, 2048},
      {"H200-141", "NVIDIA H200 SXM 141 GB", 143771 * kMiB, "sm90", 67, 989, 4800, 132, 2048},
      {"RTX-4090", "NVIDIA GeForce RTX 4090 24 GB", 24564 * kMiB, "sm89", 82.6, 165, 1008, 128, 1536},
      {"custom", "custom device (set capacity_gib)", 16 * kGiB, "sm80", 19.5, 312, 1555, 108, 2048},
      // The host running PyTorch's CPU tensors: no GPU architecture; the capacity (set capacity_gib to the host's
      // RAM) and rates are nominal, for the simulator only (a recording made on the CPU is about memory).
      {"CPU", "the host CPU (PyTorch CPU tensors; set capacity_gib)", 64 * kGiB, "", 1, 1, 50, 0, 0, false},
  };
  return presets;
}

std::optional<DevicePreset> find_device_preset(const std::string& name) {
  for (const auto& preset : device_presets())
    if (preset.name == name) return preset;
  return std::nullopt;
}

std::string device_preset_names() {
  std::string names;
  for (const auto& preset : device_presets()) names += (names.empty() ? "" : ", ") + preset.name;
  return names;
}

}  // namespace shardscope
