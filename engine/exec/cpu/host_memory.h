// How much host memory a CPU-backend run may use: MemAvailable from /proc/meminfo (Linux), so a plan whose ranks
// together need more than the machine has is refused before it starts, instead of being killed half-way.
#pragma once
#include "exec/exec_layer.h"
#include <optional>

#include "core/units.h"

namespace shardscope::exec {

// MemAvailable in bytes; none where /proc/meminfo cannot be read (then nothing is refused).
std::optional<Bytes> available_host_memory();

}  // namespace shardscope::exec
