// Operand buffers of a KernelLaunch as typed spans for the CPU kernels (fp32, int64 ids, raw bytes, 1-byte masks).
#pragma once
#include "exec/exec_layer.h"
#include <cstddef>
#include <cstdint>
#include <span>

#include "exec/backend.h"

namespace shardscope::exec::cpu {

inline std::span<float> floats(const DeviceBuffer& buffer) {
  return {reinterpret_cast<float*>(buffer.data), buffer.float_count()};
}
inline std::span<const std::int64_t> int64s(const DeviceBuffer& buffer) {
  return {reinterpret_cast<const std::int64_t*>(buffer.data), static_cast<std::size_t>(buffer.bytes) / 8};
}
inline std::span<std::byte> raw_bytes(const DeviceBuffer& buffer) {
  return {buffer.data, static_cast<std::size_t>(buffer.bytes)};
}
inline std::span<std::uint8_t> byte_masks(const DeviceBuffer& buffer) {
  return {reinterpret_cast<std::uint8_t*>(buffer.data), static_cast<std::size_t>(buffer.bytes)};
}

}  // namespace shardscope::exec::cpu
