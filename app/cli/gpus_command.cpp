// The gpus command's reports over exec::detect_gpus().
#include "cli/gpus_command.h"

#include <ostream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace shardscope::cli {

void print_gpus_text(const exec::GpuInventory& inventory, std::ostream& out) {
  // No runtime version when the backend's library could not be loaded (the reason below says why).
  const std::string version = inventory.runtime_version.empty() ? "" : " (" + inventory.runtime_version + ")";
  out << (inventory.cuda_built ? "CUDA backend: built" + version + "\n" : std::string("CUDA backend: not built\n"));
  if (!inventory.usable()) {
    out << inventory.reason << "\n";
    return;
  }
  for (const exec::GpuInfo& gpu : inventory.gpus)
    out << fmt::format("GPU {}: {}, {} ({} free), compute capability {}.{}\n", gpu.index, gpu.name,
                       format_bytes(gpu.total_bytes), format_bytes(gpu.free_bytes), gpu.compute_major,
                       gpu.compute_minor);
}

std::string gpus_json(const exec::GpuInventory& inventory) {
  using nlohmann::json;
  json gpus = json::array();
  for (const exec::GpuInfo& gpu : inventory.gpus)
    gpus.push_back({{"index", gpu.index},
                    {"name", gpu.name},
                    {"total_bytes", gpu.total_bytes},
                    {"free_bytes", gpu.free_bytes},
                    {"compute_capability", fmt::format("{}.{}", gpu.compute_major, gpu.compute_minor)}});
  json root{{"cuda_built", inventory.cuda_built},
            {"runtime", inventory.cuda_built ? json(inventory.runtime_version) : json(nullptr)},
            {"gpus", gpus},
            {"reason", inventory.usable() ? json(nullptr) : json(inventory.reason)}};
  return root.dump(2);
}

}  // namespace shardscope::cli
