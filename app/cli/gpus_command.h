// `shardscope-cli gpus`: the CUDA GPUs the CUDA backend would use (index, name, memory), or why there are none
// (not built with CUDA, no driver, no device). Text or JSON.
#pragma once
#include <iosfwd>
#include <string>

#include "run/gpu_inventory.h"

namespace shardscope::cli {

void print_gpus_text(const exec::GpuInventory& inventory, std::ostream& out);
std::string gpus_json(const exec::GpuInventory& inventory);

}  // namespace shardscope::cli
