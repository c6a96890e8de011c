// Fp32Staging: 16-bit operands widened into fp32 scratch and rounded back (see fp32_staging.h).
#include "exec/cpu/fp32_staging.h"

#include <cstring>
#include <stdexcept>
#include <string>

#include "exec/sixteen_bit.h"

namespace shardscope::exec::cpu {

Fp32Staging::Fp32Staging(std::vector<DeviceBuffer>& operands, const KernelLaunch* launch, FloatPrefix float_prefix) {
  staged_.reserve(operands.size());
  for (std::size_t k = 0; k < operands.size(); ++k) {
    DeviceBuffer& operand = operands[k];
    if (!operand.present() || !is_16_bit(operand.element)) continue;
    const Staged* same = nullptr;
    for (const Staged& s : staged_)
      if (s.original.data == operand.data && s.original.bytes == operand.bytes) same = &s;
    if (same == nullptr) {
      Staged s;
      s.original = operand;
      s.float_bytes = staged_value_bytes(float_prefix, launch, k, operand);
      const auto values = static_cast<std::size_t>(s.float_bytes / 2);
      const auto tail = static_cast<std::size_t>(operand.bytes - s.float_bytes);
      s.scratch.resize(values + (tail + sizeof(float) - 1) / sizeof(float));
      widen(operand.element, operand.data, std::span<float>(s.scratch.data(), values));
      std::memcpy(s.scratch.data() + values, operand.data + s.float_bytes, tail);
      staged_.push_back(std::move(s));
      same = &staged_.back();
    }
    const auto values = static_cast<Bytes>(same->float_bytes / 2);
    operand = DeviceBuffer{reinterpret_cast<std::byte*>(const_cast<float*>(same->scratch.data())),
                           values * 4 + (same->original.bytes - same->float_bytes), ElementType::Fp32};
  }
}

void Fp32Staging::write_back() {
  for (Staged& s : staged_) {
    const auto values = static_cast<std::size_t>(s.float_bytes / 2);
    narrow(s.original.element, std::span<const float>(s.scratch.data(), values), s.original.data);
    std::memcpy(s.original.data + s.float_bytes, s.scratch.data() + values,
                static_cast<std::size_t>(s.original.bytes - s.float_bytes));
  }
}

}  // namespace shardscope::exec::cpu
