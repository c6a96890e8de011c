// Scatter and gather operands (plan/kernel.h): the root's concatenated buffer and each member's own part. Shared by
// both CUDA communicators; same reading as exec/cpu/cpu_backend.cpp. CUDA backend only (header-only, no CUDA calls).
#pragma once
#include "exec/exec_layer.h"
#include <stdexcept>
#include <string>

#include "exec/backend.h"

namespace shardscope::exec::cuda {

struct RootedBuffers {
  DeviceBuffer root_buffer;  // root only: scatter's input, gather's output
  DeviceBuffer part;         // this member's part: scatter's output, gather's input (the root's may be absent: 0)
};

// scatter: root [input, own output-], others [output]; gather: root [own input-, output], others [input].
inline RootedBuffers rooted_buffers(const CommunicationLaunch& l, bool is_root) {
  const bool scatter = l.collective == CollectiveKind::Scatter;
  auto at = [&](std::size_t index, const char* what, bool optional) -> DeviceBuffer {
    if (index < l.operands.size() && l.operands[index].present()) return l.operands[index];
    if (optional) return {};
    throw std::invalid_argument(collective_kind_name(l.collective) + ": operand " + std::to_string(index) + " (" + what +
                                ") is missing");
  };
  if (!is_root) return {{}, at(0, scatter ? "output" : "input", false)};
  if (scatter) return {at(0, "input", false), at(1, "own output", true)};
  return {at(1, "output", false), at(0, "own input", true)};
}

}  // namespace shardscope::exec::cuda
