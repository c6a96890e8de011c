// Reduce-scatter's per-member form (plan/kernel.h): [{}, member 0's parts..., {}, member 1's parts..., ...], each
// part reduced into the member whose list it is in. Shared by the CPU backend and both CUDA collective paths (free
// of CUDA headers, so the CPU build compiles and tests it).
#pragma once
#include "exec/exec_layer.h"
#include <cstddef>
#include <stdexcept>
#include <string>
#include <vector>

#include "exec/backend.h"

namespace shardscope::exec {

// One part: the operand that holds it and the index, in the group, of the member it is reduced into.
struct MemberPart {
  std::size_t operand = 0;
  int member = 0;
};

// Whether the operands are the per-member form: only it starts with an absent slice ([input, output] never does).
inline bool reduces_into_members(const std::vector<DeviceBuffer>& operands) {
  return !operands.empty() && !operands.front().present();
}

// The parts in operand order; throws when the lists are not one per member of a group of `members`.
inline std::vector<MemberPart> member_parts(const std::vector<DeviceBuffer>& operands, std::size_t members) {
  std::vector<MemberPart> parts;
  int member = -1;
  for (std::size_t k = 0; k < operands.size(); ++k) {
    if (!operands[k].present()) {
      ++member;
      continue;
    }
    parts.push_back({k, member});
  }
  if (static_cast<std::size_t>(member + 1) != members)
    throw std::invalid_argument("reduce-scatter: " + std::to_string(member + 1) + " member lists, expected one per member of " +
                                std::to_string(members));
  return parts;
}

}  // namespace shardscope::exec
