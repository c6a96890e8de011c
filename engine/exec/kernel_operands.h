// Operand lookup shared by the backends' kernel dispatchers: a required operand (a clear error naming the kernel and
// the operand when it is missing) and the test for an optional one (plan/kernel.h marks those).
#pragma once
#include "exec/exec_layer.h"
#include <stdexcept>
#include <string>

#include "exec/backend.h"

namespace shardscope::exec {

inline const DeviceBuffer& operand(const KernelLaunch& launch, std::size_t index, const char* what) {
  if (index >= launch.operands.size() || !launch.operands[index].present())
    throw std::invalid_argument(kernel_name(launch.kernel) + ": operand " + std::to_string(index) + " (" + what +
                                ") is missing");
  return launch.operands[index];
}

// A GPT-2 kernel's model config, which such a launch must carry.
inline const TransformerConfig& transformer_config(const KernelLaunch& launch) {
  if (launch.transformer == nullptr)
    throw std::invalid_argument(kernel_name(launch.kernel) + ": the launch carries no transformer config");
  return *launch.transformer;
}

inline bool has_operand(const KernelLaunch& launch, std::size_t index) {
  return index < launch.operands.size() && launch.operands[index].present();
}

}  // namespace shardscope::exec
