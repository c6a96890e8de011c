// A kernel launch's operands as typed device pointers, checked to hold what the kernel reads or writes (a kernel
// must not run past a block): shared by the CUDA backend's dispatchers. CUDA backend only.
#pragma once
#include "exec/exec_layer.h"
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "exec/kernel_operands.h"

namespace shardscope::exec::cuda {

// The operand as floats, checked to hold at least `elements` of them.
inline float* floats(const KernelLaunch& l, std::size_t index, const char* what, std::size_t elements) {
  const DeviceBuffer& b = operand(l, index, what);
  if (b.float_count() < elements)
    throw std::invalid_argument(kernel_name(l.kernel) + ": " + what + " holds " + std::to_string(b.float_count()) +
                                " elements, needs " + std::to_string(elements));
  return reinterpret_cast<float*>(b.data);
}

inline const std::int64_t* int64s(const KernelLaunch& l, std::size_t index, const char* what, std::size_t elements) {
  const DeviceBuffer& b = operand(l, index, what);
  if (static_cast<std::size_t>(b.bytes) / 8 < elements)
    throw std::invalid_argument(kernel_name(l.kernel) + ": " + what + " holds " + std::to_string(b.bytes / 8) +
                                " int64 values, needs " + std::to_string(elements));
  return reinterpret_cast<const std::int64_t*>(b.data);
}

inline std::size_t cells(std::size_t rows, std::size_t cols) { return rows * cols; }

}  // namespace shardscope::exec::cuda
